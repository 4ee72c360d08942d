package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A dense tensor. Data come in from Java arrays (copied once, straight into the tensor)
 * or direct ByteBuffers (copied, or borrowed without a copy by {@link #wrap}), and go out
 * as a direct ByteBuffer view of the tensor's memory ({@link #data}) or into arrays.
 */
public final class Tensor extends Value {
  Tensor(long handle, boolean owned) {
    super(handle, owned);
  }

  private static Tensor make(DType dtype, long[] shape, Object data, long offset, long bytes, String device) {
    return new Tensor(NativeHand.tensorCreate(dtype.code(), shape, data, offset, bytes, device), true);
  }

  public static Tensor create(long[] shape, float[] data) { return create(shape, data, null); }
  public static Tensor create(long[] shape, float[] data, String device) {
    return make(DType.FLOAT32, shape, data, 0, 4L * data.length, device);
  }
  public static Tensor create(long[] shape, double[] data) { return create(shape, data, null); }
  public static Tensor create(long[] shape, double[] data, String device) {
    return make(DType.FLOAT64, shape, data, 0, 8L * data.length, device);
  }
  public static Tensor create(long[] shape, int[] data) { return create(shape, data, null); }
  public static Tensor create(long[] shape, int[] data, String device) {
    return make(DType.INT32, shape, data, 0, 4L * data.length, device);
  }
  public static Tensor create(long[] shape, long[] data) { return create(shape, data, null); }
  public static Tensor create(long[] shape, long[] data, String device) {
    return make(DType.INT64, shape, data, 0, 8L * data.length, device);
  }
  /** Raw bytes of any dtype (native byte order). */
  public static Tensor create(DType dtype, long[] shape, byte[] data, String device) {
    return make(dtype, shape, data, 0, data == null ? 0 : data.length, device);
  }
  /** From a direct buffer's remaining bytes (copied). */
  public static Tensor create(DType dtype, long[] shape, ByteBuffer data, String device) {
    if (!data.isDirect()) throw new IllegalArgumentException("Tensor.create needs a direct ByteBuffer");
    return make(dtype, shape, data, data.position(), data.remaining(), device);
  }

  public static Tensor scalar(float v) { return create(new long[0], new float[] {v}); }
  public static Tensor scalar(double v) { return create(new long[0], new double[] {v}); }
  public static Tensor scalar(int v) { return create(new long[0], new int[] {v}); }
  public static Tensor scalar(long v) { return create(new long[0], new long[] {v}); }

  /**
   * Borrows a direct buffer without copying (dist_tensor_wrap). The buffer is kept
   * reachable until the library releases it; then {@code onRelease} (may be null) runs,
   * on whichever thread drops the last reference.
   */
  public static Tensor wrap(DType dtype, long[] shape, ByteBuffer buffer, String device, Runnable onRelease) {
    if (buffer != null && !buffer.isDirect()) throw new IllegalArgumentException("Tensor.wrap needs a direct ByteBuffer");
    return new Tensor(NativeHand.tensorWrap(dtype.code(), shape, buffer, device,
        new Callbacks.Keep(buffer, onRelease)), true);
  }

  /** A tensor from a DLPack DLManagedTensor* (takes ownership on success). */
  public static Tensor fromDlpack(long managedTensor) {
    return new Tensor(NativeGen.tensorFromDlpack(managedTensor), true);
  }

  /** This tensor as a new DLManagedTensor* (the caller calls its deleter). */
  public long toDlpack() { try { return NativeGen.tensorToDlpack(h()); } finally { reachabilityFence(this); } }

  public DType dtype() { try { return DType.of(NativeGen.tensorDtype(h())); } finally { reachabilityFence(this); } }
  public int rank() { try { return NativeGen.tensorRank(h()); } finally { reachabilityFence(this); } }
  public long[] shape() { try { return NativeHand.tensorShape(h()); } finally { reachabilityFence(this); } }
  public long numElements() { try { return NativeGen.tensorNumElements(h()); } finally { reachabilityFence(this); } }
  public long byteSize() { try { return NativeGen.tensorByteSize(h()); } finally { reachabilityFence(this); } }
  public String device() { try { return NativeGen.tensorDevice(h()); } finally { reachabilityFence(this); } }

  /**
   * A view of the tensor's memory, native order, no copy: valid while the tensor is open.
   * A tensor the program does not close keeps its memory while the view (or a slice or
   * duplicate of it) is reachable, even when the Tensor object is not: the Cleaner releases
   * it after both. A tensor in device memory (a GPU's) is refused with a {@link DistributeException}
   * FAILED_PRECONDITION: copy it to the host first ({@code copyToDevice("CPU:0")}).
   */
  public ByteBuffer data() {
    try {
      return keepWith(NativeHand.tensorData(h()).order(ByteOrder.nativeOrder()));
    } finally {
      reachabilityFence(this);
    }
  }

  /*
   * The typed reads copy a host tensor's elements into a new array. Each checks, in the one
   * native call that copies, that the tensor's dtype is the array's (FLOAT32 for float[],
   * FLOAT64 for double[], INT32 for int[], INT64 for long[]; nothing is converted) and that
   * the tensor is in host memory, as the Go and Rust bindings do: another dtype is a
   * DistributeException INVALID_ARGUMENT naming both dtypes, a tensor in device memory a
   * DistributeException FAILED_PRECONDITION (copy it to the host first).
   */

  /** The elements of a FLOAT32 host tensor. */
  public float[] toFloatArray() {
    try {
      float[] a = new float[elements(4)];
      NativeHand.tensorCopyTo(h(), DType.FLOAT32.code(), a, 4L * a.length);
      return a;
    } finally {
      reachabilityFence(this);
    }
  }

  /** The elements of a FLOAT64 host tensor. */
  public double[] toDoubleArray() {
    try {
      double[] a = new double[elements(8)];
      NativeHand.tensorCopyTo(h(), DType.FLOAT64.code(), a, 8L * a.length);
      return a;
    } finally {
      reachabilityFence(this);
    }
  }

  /** The elements of an INT32 host tensor. */
  public int[] toIntArray() {
    try {
      int[] a = new int[elements(4)];
      NativeHand.tensorCopyTo(h(), DType.INT32.code(), a, 4L * a.length);
      return a;
    } finally {
      reachabilityFence(this);
    }
  }

  /** The elements of an INT64 host tensor. */
  public long[] toLongArray() {
    try {
      long[] a = new long[elements(8)];
      NativeHand.tensorCopyTo(h(), DType.INT64.code(), a, 8L * a.length);
      return a;
    } finally {
      reachabilityFence(this);
    }
  }

  /** The bytes of a host tensor of any dtype (native byte order); device memory is refused. */
  public byte[] toByteArray() {
    try {
      byte[] a = new byte[elements(0)];
      NativeHand.tensorCopyTo(h(), 0, a, a.length);
      return a;
    } finally {
      reachabilityFence(this);
    }
  }

  /**
   * The length of the array a read needs: the element count ({@code elementSize} 0: the byte
   * size). A mismatched element size is left to the native dtype check, which names both.
   */
  private int elements(int elementSize) {
    long n = elementSize == 0 ? byteSize() : numElements();
    if (elementSize != 0 && n * elementSize != byteSize()) return 0;
    if (n > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("the tensor has " + n + (elementSize == 0 ? " bytes" : " elements")
          + ": more than a Java array holds; read it through data()");
    }
    return (int) n;
  }

  public float scalarFloat() { try { return NativeGen.tensorScalarFloat32(h()); } finally { reachabilityFence(this); } }
  public double scalarDouble() { try { return NativeGen.tensorScalarFloat64(h()); } finally { reachabilityFence(this); } }
  public int scalarInt() { try { return NativeGen.tensorScalarInt32(h()); } finally { reachabilityFence(this); } }
  public long scalarLong() { try { return NativeGen.tensorScalarInt64(h()); } finally { reachabilityFence(this); } }

  public Tensor copyToDevice(String device) { try { return new Tensor(NativeGen.tensorCopyToDevice(h(), device), true); } finally { reachabilityFence(this); } }
}
