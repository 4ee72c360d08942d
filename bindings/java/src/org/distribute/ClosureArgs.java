package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/**
 * The arguments of a function a {@link Coordinator} schedules (dist_closure_args_t): tensors
 * and ParameterServerStrategy variables ({@link #add}) and per-worker iterators
 * ({@link #addPerWorker}). A closure function gets borrowed arguments, resolved on its
 * worker: {@link #value} and {@link #iterator} lend what they hold for the call.
 */
public final class ClosureArgs extends Handle {
  /** The argument kinds (dist_closure_arg_kind_t). */
  public enum Kind { TENSOR, VARIABLE, ITERATOR }

  public ClosureArgs() {
    super(NativeGen.closureArgsCreate(), true, NativeGen::closureArgsDestroy);
  }

  ClosureArgs(long handle, boolean owned) {
    super(handle, owned, NativeGen::closureArgsDestroy);
  }

  /** Appends a host tensor (copied when scheduled) or a ParameterServerStrategy variable. */
  public ClosureArgs add(Value value) {
    try {
      NativeGen.closureArgsAddValue(h(), Handle.h(value));
      return this;
    } finally {
      reachabilityFence(this);
      reachabilityFence(value);
    }
  }

  /** Appends a per-worker iterator. */
  public ClosureArgs addPerWorker(PerWorker iterator) {
    try {
      NativeGen.closureArgsAddPerWorker(h(), Handle.h(iterator));
      return this;
    } finally {
      reachabilityFence(this);
      reachabilityFence(iterator);
    }
  }

  public int count() { try { return NativeGen.closureArgsCount(h()); } finally { reachabilityFence(this); } }

  public Kind kind(int index) { try { return Kind.values()[NativeGen.closureArgsKind(h(), index)]; } finally { reachabilityFence(this); } }

  /** Argument {@code index}, a tensor or variable, borrowed from this list. */
  public Value value(int index) { try { return Value.of(NativeGen.closureArgsValue(h(), index), false); } finally { reachabilityFence(this); } }

  /** In a closure function: this worker's iterator of argument {@code index}, borrowed. */
  public DistributedIterator iterator(int index) {
    try {
      return new DistributedIterator(NativeGen.closureArgsIterator(h(), index), false);
    } finally {
      reachabilityFence(this);
    }
  }
}
