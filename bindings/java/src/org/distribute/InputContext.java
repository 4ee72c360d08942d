package org.distribute;

/** tf.distribute.InputContext: lent to a dataset function, or created here. */
public final class InputContext extends Handle {
  InputContext(long handle, boolean owned) {
    super(handle, owned);
  }

  public static InputContext create(int numInputPipelines, int inputPipelineId, int numReplicasInSync) {
    return new InputContext(NativeGen.inputContextCreate(numInputPipelines, inputPipelineId, numReplicasInSync), true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.inputContextDestroy(handle);
  }

  public int numInputPipelines() { return NativeGen.inputContextNumInputPipelines(h()); }
  public int inputPipelineId() { return NativeGen.inputContextInputPipelineId(h()); }
  public int numReplicasInSync() { return NativeGen.inputContextNumReplicasInSync(h()); }
  public long perReplicaBatchSize(long globalBatchSize) { return NativeGen.inputContextPerReplicaBatchSize(h(), globalBatchSize); }
}
