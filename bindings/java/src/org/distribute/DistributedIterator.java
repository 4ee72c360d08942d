package org.distribute;

/** An iterator over a dataset or a distributed dataset (dist_iterator_t). */
public final class DistributedIterator extends Handle {
  private long stateRef;
  private final Object state;
  private int count = -1;

  DistributedIterator(long handle, long stateRef, Object state) {
    super(handle, true);
    this.stateRef = stateRef;
    this.state = state;
  }

  /** A borrowed iterator (a closure function's per-worker iterator). */
  DistributedIterator(long handle, boolean owned) {
    super(handle, owned);
    this.state = null;
  }

  @Override
  void destroy(long handle) {
    NativeGen.iteratorDestroy(handle);
    NativeHand.deleteGlobalRef(stateRef);
    stateRef = 0;
  }

  /** The next element's {@code count} values; DistributeException OUT_OF_RANGE at the end. */
  public Value[] next(int count) { return Value.ofAll(NativeHand.iteratorGetNext(h(), count, false), true); }

  /** The next element, or null at the end (get_next_as_optional). */
  public Value[] nextOrNull(int count) { return Value.ofAll(NativeHand.iteratorGetNext(h(), count, true), true); }
}
