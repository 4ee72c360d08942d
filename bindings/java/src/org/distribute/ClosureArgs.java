package org.distribute;

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
    super(NativeGen.closureArgsCreate(), true);
  }

  ClosureArgs(long handle, boolean owned) {
    super(handle, owned);
  }

  @Override
  void destroy(long handle) {
    NativeGen.closureArgsDestroy(handle);
  }

  /** Appends a host tensor (copied when scheduled) or a ParameterServerStrategy variable. */
  public ClosureArgs add(Value value) {
    NativeGen.closureArgsAddValue(h(), Handle.h(value));
    return this;
  }

  /** Appends a per-worker iterator. */
  public ClosureArgs addPerWorker(PerWorker iterator) {
    NativeGen.closureArgsAddPerWorker(h(), Handle.h(iterator));
    return this;
  }

  public int count() { return NativeGen.closureArgsCount(h()); }

  public Kind kind(int index) { return Kind.values()[NativeGen.closureArgsKind(h(), index)]; }

  /** Argument {@code index}, a tensor or variable, borrowed from this list. */
  public Value value(int index) { return Value.of(NativeGen.closureArgsValue(h(), index), false); }

  /** In a closure function: this worker's iterator of argument {@code index}, borrowed. */
  public DistributedIterator iterator(int index) {
    return new DistributedIterator(NativeGen.closureArgsIterator(h(), index), false);
  }
}
