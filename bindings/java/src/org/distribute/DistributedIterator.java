package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** An iterator over a dataset or a distributed dataset (dist_iterator_t). */
public final class DistributedIterator extends Handle {
  /** The dataset function of makeInputFnIterator (also held by a JNI global reference). */
  private final Object state;

  /**
   * An owned iterator; {@code stateRef} (0: none) is the JNI global reference to the dataset
   * function that the iterator's release deletes (the release captures only the two longs).
   */
  DistributedIterator(long handle, long stateRef, Object state) {
    super(handle, true, x -> {
      NativeGen.iteratorDestroy(x);
      NativeHand.deleteGlobalRef(stateRef);
    });
    this.state = state;
  }

  /** A borrowed iterator (a closure function's per-worker iterator). */
  DistributedIterator(long handle, boolean owned) {
    super(handle, owned, NativeGen::iteratorDestroy);
    this.state = null;
  }

  /** The next element's {@code count} values; DistributeException OUT_OF_RANGE at the end. */
  public Value[] next(int count) { try { return Value.ofAll(NativeHand.iteratorGetNext(h(), count, false), true); } finally { reachabilityFence(this); } }

  /** The next element, or null at the end (get_next_as_optional). */
  public Value[] nextOrNull(int count) { try { return Value.ofAll(NativeHand.iteratorGetNext(h(), count, true), true); } finally { reachabilityFence(this); } }
}
