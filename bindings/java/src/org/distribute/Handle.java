package org.distribute;

/**
 * An owning (or borrowed) native handle. Owned handles are released by {@link #close()};
 * borrowed ones (arguments of callbacks, the replica context of a run) are not, and are
 * valid only for the call that lent them.
 */
public abstract class Handle implements AutoCloseable {
  private long handle;
  private final boolean owned;

  Handle(long handle, boolean owned) {
    this.handle = handle;
    this.owned = owned;
  }

  /** The native pointer; IllegalStateException once closed. */
  final long h() {
    if (handle == 0) throw new IllegalStateException(getClass().getSimpleName() + " is closed");
    return handle;
  }

  static long h(Handle x) {
    return x == null ? 0 : x.h();
  }

  /** Whether close() releases the native object. */
  public final boolean isOwned() {
    return owned;
  }

  public final boolean isClosed() {
    return handle == 0;
  }

  /** Gives the handle away (to the library); this object becomes closed. */
  final long release() {
    long x = h();
    if (!owned) {
      throw new IllegalArgumentException(
          "a borrowed " + getClass().getSimpleName() + " cannot be handed to the library: return a new value");
    }
    handle = 0;
    return x;
  }

  /** Ends a borrowed handle's loan (after the callback that lent it returned). */
  final void invalidate() {
    if (!owned) handle = 0;
  }

  static void invalidateAll(Handle... handles) {
    if (handles == null) return;
    for (Handle h : handles) if (h != null) h.invalidate();
  }

  abstract void destroy(long handle);

  @Override
  public void close() {
    long x = handle;
    handle = 0;
    if (x != 0 && owned) destroy(x);
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + (handle == 0 ? "[closed]" : "@" + Long.toHexString(handle));
  }
}
