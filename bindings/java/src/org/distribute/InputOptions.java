package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** tf.distribute.InputOptions (setters return this). */
public final class InputOptions extends Handle {
  public InputOptions() {
    super(NativeGen.inputOptionsCreate(), true, NativeGen::inputOptionsDestroy);
  }

  public InputOptions prefetchDepth(long depth) { try { NativeGen.inputOptionsSetPrefetchDepth(h(), depth); return this; } finally { reachabilityFence(this); } }
  public InputOptions replicationMode(InputReplicationMode mode) { try { NativeGen.inputOptionsSetReplicationMode(h(), mode.code()); return this; } finally { reachabilityFence(this); } }
  public InputOptions autoShardPolicy(AutoShardPolicy policy) { try { NativeGen.inputOptionsSetAutoShardPolicy(h(), policy.code()); return this; } finally { reachabilityFence(this); } }
  public InputOptions fetchToDevice(boolean enable) { try { NativeGen.inputOptionsSetFetchToDevice(h(), enable ? 1 : 0); return this; } finally { reachabilityFence(this); } }
  public InputOptions perReplicaBatches(boolean enable) { try { NativeGen.inputOptionsSetPerReplicaBatches(h(), enable ? 1 : 0); return this; } finally { reachabilityFence(this); } }
  /** How a partial global batch is split across replicas ({@link PartialBatchSplit#IN_ORDER} by default). */
  public InputOptions partialBatchSplit(PartialBatchSplit split) { try { NativeGen.inputOptionsSetPartialBatchSplit(h(), split.code()); return this; } finally { reachabilityFence(this); } }
}
