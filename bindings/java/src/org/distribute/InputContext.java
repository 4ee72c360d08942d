package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** tf.distribute.InputContext: lent to a dataset function, or created here. */
public final class InputContext extends Handle {
  InputContext(long handle, boolean owned) {
    super(handle, owned, NativeGen::inputContextDestroy);
  }

  public static InputContext create(int numInputPipelines, int inputPipelineId, int numReplicasInSync) {
    return new InputContext(NativeGen.inputContextCreate(numInputPipelines, inputPipelineId, numReplicasInSync), true);
  }

  public int numInputPipelines() { try { return NativeGen.inputContextNumInputPipelines(h()); } finally { reachabilityFence(this); } }
  public int inputPipelineId() { try { return NativeGen.inputContextInputPipelineId(h()); } finally { reachabilityFence(this); } }
  public int numReplicasInSync() { try { return NativeGen.inputContextNumReplicasInSync(h()); } finally { reachabilityFence(this); } }
  public long perReplicaBatchSize(long globalBatchSize) { try { return NativeGen.inputContextPerReplicaBatchSize(h(), globalBatchSize); } finally { reachabilityFence(this); } }
}
