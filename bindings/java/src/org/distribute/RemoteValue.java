package org.distribute;

/** The result of a scheduled function (dist_remote_value_t, TF's RemoteValue). */
public final class RemoteValue extends Handle {
  RemoteValue(long handle) {
    super(handle, true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.remoteValueDestroy(handle);
  }

  /** Waits for the function: its result (owned), or null when it returned none. */
  public Value fetch() { return Value.of(NativeGen.remoteValueFetch(h()), true); }

  public boolean isReady() { return NativeGen.remoteValueIsReady(h()) != 0; }
}
