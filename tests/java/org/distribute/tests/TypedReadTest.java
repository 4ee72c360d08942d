package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Typed reads check the dtype and the memory (issue 42): toIntArray() of a FLOAT32 tensor
 * holding 1.0 once returned [1065353216]. Every read of the wrong dtype is INVALID_ARGUMENT
 * naming both dtypes; a tensor in device memory is FAILED_PRECONDITION for every read,
 * byte reads and data() included (a GPU pointer read from Java would crash the JVM). The
 * device cases run in a child JVM on the fake GPU plugin (DIST_CUDA_PLUGIN, whose device
 * pointers fault when the host dereferences them), so the rest of the suite keeps its
 * CPU-only devices.
 */
class TypedReadTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  /** One tensor of each dtype, holding 1 and 2 (float16/bfloat16 as raw bytes). */
  private static Map<DType, Supplier<Tensor>> makers() {
    return Map.of(
        DType.FLOAT32, () -> Tensor.create(new long[] {2}, new float[] {1, 2}),
        DType.FLOAT64, () -> Tensor.create(new long[] {2}, new double[] {1, 2}),
        DType.INT32, () -> Tensor.create(new long[] {2}, new int[] {1, 2}),
        DType.INT64, () -> Tensor.create(new long[] {2}, new long[] {1, 2}),
        DType.UINT8, () -> Tensor.create(DType.UINT8, new long[] {2}, new byte[] {1, 2}, null),
        DType.INT16, () -> Tensor.create(DType.INT16, new long[] {2}, new byte[] {1, 0, 2, 0}, null),
        DType.FLOAT16, () -> Tensor.create(DType.FLOAT16, new long[] {2}, new byte[] {0, 0x3c, 0, 0x40}, null),
        DType.BFLOAT16, () -> Tensor.create(DType.BFLOAT16, new long[] {2}, new byte[] {(byte) 0x80, 0x3f, 0, 0x40}, null));
  }

  /** A typed read and the dtype it stands for. */
  private interface Read {
    Object read(Tensor t);
  }

  private static final Map<String, DType> READS = Map.of(
      "toFloatArray", DType.FLOAT32, "toDoubleArray", DType.FLOAT64,
      "toIntArray", DType.INT32, "toLongArray", DType.INT64);

  private static Read read(String name) {
    switch (name) {
      case "toFloatArray": return Tensor::toFloatArray;
      case "toDoubleArray": return Tensor::toDoubleArray;
      case "toIntArray": return Tensor::toIntArray;
      case "toLongArray": return Tensor::toLongArray;
      default: throw new AssertionError(name);
    }
  }

  /** The case: toIntArray() of FLOAT32 1.0 is refused, not 1065353216. */
  @Test
  void intReadOfFloatTensorIsRefused() {
    try (Tensor f = Tensor.scalar(1.0f)) {
      DistributeException e = assertThrows(DistributeException.class, f::toIntArray);
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertEquals("Tensor.toIntArray: the tensor is float32, asked for int32", e.getMessage());
      assertArrayEquals(new float[] {1.0f}, f.toFloatArray(), "the tensor is still readable as itself");
    }
  }

  /** Every typed read against every dtype: its own reads the values, every other is refused. */
  @Test
  void everyTypedReadChecksTheDtype() {
    int refused = 0;
    for (Map.Entry<DType, Supplier<Tensor>> m : makers().entrySet()) {
      DType have = m.getKey();
      try (Tensor t = m.getValue().get()) {
        assertEquals(have, t.dtype());
        for (Map.Entry<String, DType> r : READS.entrySet()) {
          Read read = read(r.getKey());
          if (r.getValue() == have) {
            Object a = read.read(t);
            double[] got = new double[2];
            if (a instanceof float[]) { got[0] = ((float[]) a)[0]; got[1] = ((float[]) a)[1]; }
            if (a instanceof double[]) { got[0] = ((double[]) a)[0]; got[1] = ((double[]) a)[1]; }
            if (a instanceof int[]) { got[0] = ((int[]) a)[0]; got[1] = ((int[]) a)[1]; }
            if (a instanceof long[]) { got[0] = ((long[]) a)[0]; got[1] = ((long[]) a)[1]; }
            assertArrayEquals(new double[] {1, 2}, got, r.getKey() + " of " + have);
            continue;
          }
          DistributeException e = assertThrows(DistributeException.class, () -> read.read(t),
              r.getKey() + " of a " + have + " tensor");
          assertEquals(Status.INVALID_ARGUMENT, e.getStatus(), e.getMessage());
          assertEquals("Tensor." + r.getKey() + ": the tensor is " + have.libraryName() + ", asked for "
              + r.getValue().libraryName(), e.getMessage());
          refused++;
        }
        // Bytes are dtype-agnostic: the tensor's byte size, whatever the dtype.
        assertEquals(t.byteSize(), t.toByteArray().length, "toByteArray of " + have);
      }
    }
    assertEquals(8 * 4 - 4, refused, "8 dtypes x 4 reads, 4 of them matching");
  }

  /** The scalar reads are the library's (dist_tensor_scalar_*), which convert nothing either. */
  @Test
  void scalarReadsCheckTheDtype() {
    try (Tensor f = Tensor.scalar(1.0f); Tensor d = Tensor.scalar(1.0); Tensor i = Tensor.scalar(1);
        Tensor l = Tensor.scalar(1L)) {
      List<Executable> wrong = new ArrayList<>();
      wrong.add(f::scalarInt);
      wrong.add(f::scalarLong);
      wrong.add(f::scalarDouble);
      wrong.add(d::scalarFloat);
      wrong.add(i::scalarFloat);
      wrong.add(i::scalarLong);
      wrong.add(l::scalarInt);
      wrong.add(l::scalarDouble);
      for (Executable x : wrong) {
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(DistributeException.class, x).getStatus());
      }
      assertEquals(1.0f, f.scalarFloat());
      assertEquals(1L, l.scalarLong());
    }
  }

  /** A read of a closed tensor is an IllegalStateException, before any native call. */
  @Test
  void closedTensorIsRefused() {
    Tensor t = Tensor.scalar(3);
    t.close();
    assertThrows(IllegalStateException.class, t::toIntArray);
    assertThrows(IllegalStateException.class, t::toByteArray);
  }

  /**
   * A tensor in device memory: every read is refused with FAILED_PRECONDITION (the dtype is
   * checked first), and the remedy the message names works. Runs {@link FakeGpuReads} in a
   * child JVM with DIST_CUDA_PLUGIN = the fake GPU plugin that tests/java/run.sh found
   * beside libdistribute (DIST_JAVA_FAKE_GPU); a read of device memory there would crash the
   * child, not pass.
   */
  @Test
  void deviceMemoryIsRefused() throws Exception {
    String plugin = System.getenv("DIST_JAVA_FAKE_GPU");
    assertNotNull(plugin, "DIST_JAVA_FAKE_GPU: the fake GPU plugin (tests/java/run.sh sets it; "
        + "cmake --build <build dir> --target dist_fake_gpu builds it)");
    assertTrue(Files.isRegularFile(Path.of(plugin)), plugin);
    String out = System.getenv("DIST_JAVA_OUT");
    assertNotNull(out, "DIST_JAVA_OUT (set by tests/java/run.sh)");
    String java = ProcessHandle.current().info().command().orElse("java");
    ProcessBuilder pb = new ProcessBuilder(java, "-Xcheck:jni", "-Djava.library.path=" + out,
        "-cp", out + "/distribute.jar:" + out + "/test-classes", FakeGpuReads.class.getName());
    pb.environment().put("DIST_CUDA_PLUGIN", plugin);
    pb.environment().put("DIST_FAKE_GPU_COUNT", "1");
    pb.redirectErrorStream(true);
    Process p = pb.start();
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    try (InputStream in = p.getInputStream()) {
      in.transferTo(text);
    }
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM did not finish");
    String log = text.toString(StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), log);
    assertFalse(log.contains("WARNING in native method"), log);
    // One line per read, each as FakeGpuReads prints it.
    for (String name : new String[] {"toFloatArray", "toByteArray", "data"}) {
      assertTrue(log.contains(name + ": FAILED_PRECONDITION: Tensor." + name + ": the tensor is on "),
          name + " of a GPU tensor:\n" + log);
    }
    for (String name : new String[] {"toDoubleArray", "toIntArray", "toLongArray"}) {
      assertTrue(log.contains(name + ": INVALID_ARGUMENT: Tensor." + name + ": the tensor is float32, asked for "),
          name + " of a float32 GPU tensor:\n" + log);
    }
    assertTrue(log.contains("in device memory, which Java cannot read: copy it to the host first (copyToDevice(\"CPU:0\"))"), log);
    assertTrue(log.contains("after copyToDevice: [1.5, -2.0, 3.25]"), log);
    assertTrue(log.contains("scalar read of a GPU tensor: 7.5"), log);
    assertTrue(log.contains("FakeGpuReads: done"), log);
  }
}
