package org.distribute;

/** tf.distribute.InputOptions (setters return this). */
public final class InputOptions extends Handle {
  public InputOptions() {
    super(NativeGen.inputOptionsCreate(), true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.inputOptionsDestroy(handle);
  }

  public InputOptions prefetchDepth(long depth) { NativeGen.inputOptionsSetPrefetchDepth(h(), depth); return this; }
  public InputOptions replicationMode(InputReplicationMode mode) { NativeGen.inputOptionsSetReplicationMode(h(), mode.code()); return this; }
  public InputOptions autoShardPolicy(AutoShardPolicy policy) { NativeGen.inputOptionsSetAutoShardPolicy(h(), policy.code()); return this; }
  public InputOptions fetchToDevice(boolean enable) { NativeGen.inputOptionsSetFetchToDevice(h(), enable ? 1 : 0); return this; }
  public InputOptions perReplicaBatches(boolean enable) { NativeGen.inputOptionsSetPerReplicaBatches(h(), enable ? 1 : 0); return this; }
  /** How a partial global batch is split across replicas ({@link PartialBatchSplit#IN_ORDER} by default). */
  public InputOptions partialBatchSplit(PartialBatchSplit split) { NativeGen.inputOptionsSetPartialBatchSplit(h(), split.code()); return this; }
}
