package org.distribute;

import java.lang.ref.Cleaner;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * An owning (or borrowed) native handle. Owned handles are released by {@link #close()};
 * borrowed ones (arguments of callbacks, the replica context of a run) are not, and are
 * valid only for the call that lent them.
 *
 * <p><b>Cleaner.</b> An owned handle a program forgets to close is released once the garbage
 * collector finds its Java object unreachable, as the Go binding's finalizers do: every
 * owned handle is registered with one {@link Cleaner} when it is made. The cleaning action
 * holds only the native pointer and the class's static destroy function, never the Java
 * object (which would keep it reachable forever). It runs on the Cleaner's own daemon thread
 * ("distribute-cleaner"), never one of a strategy's replica threads (where
 * dist_strategy_destroy is not allowed), one release at a time: a release may wait (the last
 * reference to a strategy stops its threads). {@link #close()} releases at once, is
 * idempotent, and clears the registration, so a handle is never released twice; a handle
 * given to the library ({@link #release()}) clears it too.
 *
 * <ul>
 *   <li>Borrowed handles get none, and neither does a {@link ReplicaContext} from {@link
 *       Strategy#joinReplica}: only close(), on the joining thread, may leave.
 *   <li>No call is in flight when a handle is released: every method that passes a handle to
 *       native code keeps its Java object (and every handle argument) reachable until the
 *       call returned ({@link java.lang.ref.Reference#reachabilityFence}); a {@link
 *       Tensor#data()} view keeps its tensor's memory until both are unreachable.
 *   <li>Order does not matter to the library (children keep their parents alive in C);
 *       where releasing a parent changes what a child does, the child's Java object refers
 *       to the parent's: a {@link RemoteValue} or {@link PerWorker} keeps its {@link
 *       Coordinator}.
 * </ul>
 */
public abstract class Handle implements AutoCloseable {
  /** The one Cleaner of the binding (its thread is a daemon: it never keeps the JVM alive). */
  private static final Cleaner CLEANER = Cleaner.create(r -> {
    Thread t = new Thread(r, "distribute-cleaner");
    t.setDaemon(true);
    return t;
  });

  /** Handles the Cleaner released (not close()), by class: see {@link #cleanedCount}. */
  private static final Map<Class<?>, AtomicLong> CLEANED = new ConcurrentHashMap<>();

  private long handle;
  private final boolean owned;
  private final LongConsumer destroy;
  /** The release the Cleaner runs (null: borrowed, or not cleaned). */
  private final Release release;
  private final Cleaner.Cleanable cleanable;

  /** A handle with a Cleaner when {@code owned} (see the class comment). */
  Handle(long handle, boolean owned, LongConsumer destroy) {
    this(handle, owned, owned, destroy);
  }

  /**
   * {@code cleaned}: whether the Cleaner may release the handle (owned handles only).
   * {@code destroy} must be a static function of the handle (a method reference such as
   * {@code NativeGen::strategyDestroy}, or a lambda capturing only longs): the Cleaner keeps
   * it, so it must not refer to this object.
   */
  Handle(long handle, boolean owned, boolean cleaned, LongConsumer destroy) {
    this.handle = handle;
    this.owned = owned;
    this.destroy = destroy;
    if (owned && cleaned && handle != 0) {
      release = new Release(handle, destroy, getClass());
      cleanable = CLEANER.register(this, release);
    } else {
      release = null;
      cleanable = null;
    }
  }

  /**
   * What the Cleaner runs: the pointer and the destroy function, never the Java object. The
   * native object is released when its last user is gone: the handle's Java object, and
   * every {@link Tensor#data()} view of its memory ({@link #keepWith}).
   */
  private static final class Release implements Runnable {
    private final AtomicLong handle;
    private final LongConsumer destroy;
    private final Class<?> type;
    private final AtomicInteger users = new AtomicInteger(1);

    Release(long handle, LongConsumer destroy, Class<?> type) {
      this.handle = new AtomicLong(handle);
      this.destroy = destroy;
      this.type = type;
    }

    /** The pointer, once: 0 after close(), release() or the Cleaner took it. */
    long take() {
      return handle.getAndSet(0);
    }

    /** One user (the Java object or a view) became unreachable. */
    @Override
    public void run() {
      if (users.decrementAndGet() != 0) return;
      long x = take();
      if (x == 0) return; // closed, or handed to the library
      destroy.accept(x);
      CLEANED.computeIfAbsent(type, k -> new AtomicLong()).incrementAndGet();
    }
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

  /**
   * How many handles of exactly {@code type} (Tensor, Strategy, ...) the Cleaner released in
   * this JVM because the program dropped them without {@code close()}: a diagnostic of
   * forgotten handles (the Go binding's tests read the same count).
   */
  public static long cleanedCount(Class<? extends Handle> type) {
    AtomicLong n = CLEANED.get(type);
    return n == null ? 0 : n.get();
  }

  /**
   * Keeps this handle's native object until {@code user} (a view of its memory) is
   * unreachable too, when the Cleaner releases it. close() still releases at once.
   */
  final <T> T keepWith(T user) {
    if (release != null && !isClosed()) {
      release.users.incrementAndGet();
      CLEANER.register(user, release);
    }
    return user;
  }

  /** Gives the handle away (to the library); this object becomes closed. */
  final long release() {
    long x = h();
    if (!owned) {
      throw new IllegalArgumentException(
          "a borrowed " + getClass().getSimpleName() + " cannot be handed to the library: return a new value");
    }
    handle = 0;
    if (release != null) {
      release.take(); // the Cleaner must not release it now: the library owns it
      cleanable.clean(); // runs nothing (the pointer is taken) and clears the registration
    }
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

  @Override
  public void close() {
    long x = handle;
    handle = 0;
    if (x == 0 || !owned) return;
    if (release == null) {
      destroy.accept(x); // not cleaned: a joined ReplicaContext
      return;
    }
    long y = release.take(); // 0 when the library already took it
    cleanable.clean(); // clears the registration (the action finds nothing to release)
    if (y != 0) destroy.accept(y);
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + (handle == 0 ? "[closed]" : "@" + Long.toHexString(handle));
  }
}
