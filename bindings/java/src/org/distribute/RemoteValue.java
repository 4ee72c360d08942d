package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** The result of a scheduled function (dist_remote_value_t, TF's RemoteValue). */
public final class RemoteValue extends Handle {
  /** Keeps the coordinator reachable: its release cancels the closures still queued. */
  private final Coordinator coordinator;

  RemoteValue(long handle, Coordinator coordinator) {
    super(handle, true, NativeGen::remoteValueDestroy);
    this.coordinator = coordinator;
  }

  /** Waits for the function: its result (owned), or null when it returned none. */
  public Value fetch() { try { return Value.of(NativeGen.remoteValueFetch(h()), true); } finally { reachabilityFence(this); } }

  public boolean isReady() { try { return NativeGen.remoteValueIsReady(h()) != 0; } finally { reachabilityFence(this); } }
}
