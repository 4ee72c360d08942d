package org.distribute.tests;

import java.util.Arrays;
import org.distribute.*;

/**
 * Run by TypedReadTest.deviceMemoryIsRefused in a child JVM whose DIST_CUDA_PLUGIN is the
 * fake GPU plugin: makes a FLOAT32 tensor in (fake) GPU memory and prints, for every read,
 * "name: STATUS: message". Any read that touched the device pointer would crash this JVM.
 */
public final class FakeGpuReads {
  private FakeGpuReads() {}

  private interface Read {
    Object read(Tensor t);
  }

  private static void attempt(String name, Tensor t, Read r) {
    try {
      Object a = r.read(t);
      System.out.println(name + ": READ " + a + " (device memory was read)");
    } catch (DistributeException e) {
      System.out.println(name + ": " + e.getStatus() + ": " + e.getMessage());
    }
  }

  public static void main(String[] args) {
    String why = Device.gpuUnavailableReason();
    if (why != null && !why.isEmpty()) throw new IllegalStateException("no fake GPU: " + why);
    try (Tensor g = Tensor.create(new long[] {3}, new float[] {1.5f, -2f, 3.25f}, "GPU:0");
        Tensor s = Tensor.create(new long[0], new float[] {7.5f}, "GPU:0")) {
      System.out.println("tensor on " + g.device());
      attempt("toFloatArray", g, Tensor::toFloatArray);
      attempt("toDoubleArray", g, Tensor::toDoubleArray);
      attempt("toIntArray", g, Tensor::toIntArray);
      attempt("toLongArray", g, Tensor::toLongArray);
      attempt("toByteArray", g, Tensor::toByteArray);
      attempt("data", g, Tensor::data);
      try (Tensor h = g.copyToDevice("CPU:0")) {
        System.out.println("after copyToDevice: " + Arrays.toString(h.toFloatArray()));
      }
      // The library's own scalar reads copy a GPU tensor to the host first.
      System.out.println("scalar read of a GPU tensor: " + s.scalarFloat());
    }
    System.out.println("FakeGpuReads: done");
  }
}
