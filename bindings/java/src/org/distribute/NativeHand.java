package org.distribute;

import java.nio.ByteBuffer;

/** The hand-written JNI functions (native/distribute_jni.c): arrays, callbacks, memory. */
final class NativeHand {
  private NativeHand() {}

  static {
    Lib.load();
  }

  static native long createMirrored(String[] devices, long crossDeviceOps);
  static native long createCentralStorage(String[] devices, String parameterDevice);
  static native long clusterFromSlurm(String[] jobs, int[] taskCounts, int portBase, int tasksPerNode);
  static native long[] run(long strategy, Object state, long[] args, int numResults);
  static native long distributeValuesFromFunction(long strategy, Object state);
  static native long[] batchReduceTo(long strategy, int op, long[] values, long[] destinations);
  static native long update(long strategy, long variable, Object state, long[] args, int group);
  static native long[] batchAllReduce(long context, int op, long[] values);
  static native long mergeCall(long context, Object state, long[] args);
  static native long createPerReplica(long[] components, boolean mirrored);
  static native long tensorCreate(int dtype, long[] shape, Object data, long offset, long byteSize, String device);
  static native long tensorWrap(int dtype, long[] shape, ByteBuffer buffer, String device, Object keep);
  static native long[] tensorShape(long tensor);
  static native ByteBuffer tensorData(long tensor);
  static native void tensorCopyTo(long tensor, int dtype, Object array, long byteSize);
  static native long datasetFromTensorSlices(long[] components);
  static native long datasetFromGenerator(Object state, int numComponents);
  static native long datasetMap(long dataset, Object state, int numOutputs, int numParallelCalls);
  static native long datasetFromFiles(int kind, String[] paths, long recordBytes, long headerBytes, long footerBytes, int compression);
  static native long[] iteratorGetNext(long iterator, int count, boolean optional);
  static native long distributeDatasetsFromFunction(long strategy, Object state, long options);
  static native long[] makeInputFnIterator(long strategy, Object state);
  static native void deleteGlobalRef(long ref);
  static native void serverKeyValueSet(long server, String key, byte[] value);
  static native String lastErrorMessage();
  static native void closureRegister(String name, Object state);
  static native void datasetFunctionRegister(String name, Object state);
  static native void functionRegister(String name, Object state, int numArgs, String[] slotNames,
      double[] slotInitialValues, String[] hyperparameterNames, double[] hyperparameterDefaults);
  static native void variableApplyUpdate(long variable, String function, long[] args,
      String[] hyperparameterNames, double[] hyperparameterValues);
  static native long[] variablesRead(long[] variables);
  static native void variablesApplyUpdate(long[] variables, String function, long[] args, int numArgs,
      String[] hyperparameterNames, double[] hyperparameterValues);
}
