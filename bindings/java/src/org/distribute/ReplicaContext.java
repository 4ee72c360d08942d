package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

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
    // A joined context (owned) gets no Cleaner: only close(), on the joining thread, may
    // leave (dist_context_leave is per OS thread), as in the Go binding.
    super(handle, owned, false, NativeGen::contextLeave);
    this.run = run;
  }

  public int replicaId() { try { return NativeGen.contextReplicaId(h()); } finally { reachabilityFence(this); } }
  public int numReplicasInSync() { try { return NativeGen.contextNumReplicasInSync(h()); } finally { reachabilityFence(this); } }
  /** A new reference to the strategy. */
  public Strategy strategy() { try { return new Strategy(NativeGen.contextStrategy(h()), true); } finally { reachabilityFence(this); } }
  public String device() { try { return NativeGen.contextDevice(h()); } finally { reachabilityFence(this); } }
  public void setTimeoutMs(long ms) { try { NativeGen.contextSetTimeoutMs(h(), ms); } finally { reachabilityFence(this); } }

  public Tensor allReduce(ReduceOp op, Value value) { try { return (Tensor) Value.of(NativeGen.contextAllReduce(h(), op.code(), h(value)), true); } finally { reachabilityFence(this); reachabilityFence(value); } }
  /**
   * All-reduces {@code value} into {@code out}, an existing tensor of value's shape and of the
   * result's dtype (it may be {@code value} itself): no new tensor is made. A wrong {@code out}
   * throws INVALID_ARGUMENT on every replica and nothing is written.
   */
  public void allReduceInto(ReduceOp op, Value value, Tensor out) { try { NativeGen.contextAllReduceInto(h(), op.code(), h(value), h(out)); } finally { reachabilityFence(this); reachabilityFence(value); reachabilityFence(out); } }
  public Value[] batchAllReduce(ReduceOp op, Value... values) { try { return Value.ofAll(NativeHand.batchAllReduce(h(), op.code(), Value.handles(values)), true); } finally { reachabilityFence(this); reachabilityFence(values); } }
  public Tensor allGather(Value value, int axis) { try { return (Tensor) Value.of(NativeGen.contextAllGather(h(), h(value), axis), true); } finally { reachabilityFence(this); reachabilityFence(value); } }
  public Tensor broadcast(Value value, int sourceReplica) { try { return (Tensor) Value.of(NativeGen.contextBroadcast(h(), h(value), sourceReplica), true); } finally { reachabilityFence(this); reachabilityFence(value); } }

  /** merge_call: {@code fn} runs once in cross-replica context with every replica's args. */
  public Value mergeCall(Functions.MergeFunction fn, Value... args) {
    try {
      Callbacks.State st = new Callbacks.State(fn, run);
      try {
        return Value.of(NativeHand.mergeCall(h(), st, Value.handles(args)), true);
      } catch (DistributeException e) {
        throw st.wrap(e);
      }
    } finally {
      reachabilityFence(this);
      reachabilityFence(args);
    }
  }
}
