package org.distribute;

/**
 * A replica context: lent to a replica function for the duration of its call, or owned
 * after {@link Strategy#joinReplica} (close() leaves). Use it only on its own thread.
 */
public final class ReplicaContext extends Handle {
  private final Callbacks.State run;

  ReplicaContext(long handle, boolean owned) {
    this(handle, owned, null);
  }

  ReplicaContext(long handle, boolean owned, Callbacks.State run) {
    super(handle, owned);
    this.run = run;
  }

  @Override
  void destroy(long handle) {
    NativeGen.contextLeave(handle);
  }

  public int replicaId() { return NativeGen.contextReplicaId(h()); }
  public int numReplicasInSync() { return NativeGen.contextNumReplicasInSync(h()); }
  /** A new reference to the strategy. */
  public Strategy strategy() { return new Strategy(NativeGen.contextStrategy(h()), true); }
  public String device() { return NativeGen.contextDevice(h()); }
  public void setTimeoutMs(long ms) { NativeGen.contextSetTimeoutMs(h(), ms); }

  public Tensor allReduce(ReduceOp op, Value value) { return (Tensor) Value.of(NativeGen.contextAllReduce(h(), op.code(), h(value)), true); }
  /**
   * All-reduces {@code value} into {@code out}, an existing tensor of value's shape and of the
   * result's dtype (it may be {@code value} itself): no new tensor is made. A wrong {@code out}
   * throws INVALID_ARGUMENT on every replica and nothing is written.
   */
  public void allReduceInto(ReduceOp op, Value value, Tensor out) { NativeGen.contextAllReduceInto(h(), op.code(), h(value), h(out)); }
  public Value[] batchAllReduce(ReduceOp op, Value... values) { return Value.ofAll(NativeHand.batchAllReduce(h(), op.code(), Value.handles(values)), true); }
  public Tensor allGather(Value value, int axis) { return (Tensor) Value.of(NativeGen.contextAllGather(h(), h(value), axis), true); }
  public Tensor broadcast(Value value, int sourceReplica) { return (Tensor) Value.of(NativeGen.contextBroadcast(h(), h(value), sourceReplica), true); }

  /** merge_call: {@code fn} runs once in cross-replica context with every replica's args. */
  public Value mergeCall(Functions.MergeFunction fn, Value... args) {
    Callbacks.State st = new Callbacks.State(fn, run);
    try {
      return Value.of(NativeHand.mergeCall(h(), st, Value.handles(args)), true);
    } catch (DistributeException e) {
      throw st.wrap(e);
    }
  }
}
