package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Tensors in and out: arrays, direct buffers, wrapped memory, 64-bit dimensions. */
class TensorTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  @Test
  void primitiveArrays() {
    try (Tensor f = Tensor.create(new long[] {2, 3}, new float[] {1, 2, 3, 4, 5, 6});
        Tensor d = Tensor.create(new long[] {2}, new double[] {0.5, -1e300});
        Tensor i = Tensor.create(new long[] {3}, new int[] {-1, 0, Integer.MAX_VALUE});
        Tensor l = Tensor.create(new long[] {2}, new long[] {Long.MIN_VALUE, 1L << 40});
        Tensor b = Tensor.create(DType.UINT8, new long[] {3}, new byte[] {1, 2, (byte) 255}, "CPU:1")) {
      assertEquals(DType.FLOAT32, f.dtype());
      assertEquals(2, f.rank());
      assertArrayEquals(new long[] {2, 3}, f.shape());
      assertEquals(6, f.numElements());
      assertEquals(24, f.byteSize());
      assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, f.toFloatArray());
      assertArrayEquals(new double[] {0.5, -1e300}, d.toDoubleArray());
      assertArrayEquals(new int[] {-1, 0, Integer.MAX_VALUE}, i.toIntArray());
      assertArrayEquals(new long[] {Long.MIN_VALUE, 1L << 40}, l.toLongArray());
      assertArrayEquals(new byte[] {1, 2, (byte) 255}, b.toByteArray());
      assertTrue(b.device().endsWith("CPU:1"));
      assertEquals(DType.UINT8, b.dtype());
      assertEquals(4, DType.FLOAT32.size());
      assertEquals("float32", DType.FLOAT32.libraryName());
    }
    try (Tensor s = Tensor.scalar(1L << 40); Tensor x = Tensor.scalar(-7); Tensor y = Tensor.scalar(2.25)) {
      assertEquals(1L << 40, s.scalarLong());
      assertEquals(-7, x.scalarInt());
      assertEquals(2.25, y.scalarDouble());
      assertEquals(0, s.rank());
    }
  }

  /** data() is a view of the tensor's memory: no copy; writes through it are seen. */
  @Test
  void directBuffers() {
    ByteBuffer in = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
    in.asFloatBuffer().put(new float[] {1, 2, 3, 4});
    try (Tensor t = Tensor.create(DType.FLOAT32, new long[] {4}, in, null)) {
      ByteBuffer view = t.data();
      assertTrue(view.isDirect());
      assertEquals(16, view.capacity());
      assertEquals(3.0f, view.getFloat(8));
      view.putFloat(0, 42.0f);
      assertEquals(42.0f, t.toFloatArray()[0]);
      assertEquals(1.0f, in.getFloat(0), "create copied the buffer");
      try (Tensor moved = t.copyToDevice("CPU:2")) {
        assertTrue(moved.device().endsWith("CPU:2"));
        assertArrayEquals(new float[] {42, 2, 3, 4}, moved.toFloatArray());
      }
    }
  }

  /** wrap borrows the buffer (no copy); the release lambda runs once, when the last user is gone. */
  @Test
  void wrapWithReleaseLambda() throws Exception {
    ByteBuffer buf = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
    buf.putFloat(0, 1.5f).putFloat(4, 2.5f);
    CountDownLatch released = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    Tensor t = Tensor.wrap(DType.FLOAT32, new long[] {2}, buf, null, () -> {
      calls.incrementAndGet();
      released.countDown();
    });
    buf.putFloat(0, 9.0f); // shared memory: the tensor sees it
    assertArrayEquals(new float[] {9.0f, 2.5f}, t.toFloatArray());
    try (Strategy s = Strategy.mirrored(Util.cpus(2)); Value m = Value.mirrored(t, t)) {
      t.close();
      assertEquals(0, calls.get(), "the Mirrored value still uses the buffer");
      try (Tensor c = m.componentTensor(1)) {
        assertEquals(9.0f, c.toFloatArray()[0]);
      }
    }
    assertTrue(released.await(10, TimeUnit.SECONDS));
    assertEquals(1, calls.get());
    // a failed wrap does not run the release callback
    AtomicInteger failed = new AtomicInteger();
    assertThrows(DistributeException.class,
        () -> Tensor.wrap(DType.FLOAT32, new long[] {3}, ByteBuffer.allocateDirect(8), null, failed::incrementAndGet));
    assertEquals(0, failed.get());
  }

  /** 64-bit integers stay 64-bit: a dimension above 2^31. */
  @Test
  void sixtyFourBitDimensions() {
    long big = (1L << 31) + 7;
    try (Tensor t = Tensor.create(DType.FLOAT32, new long[] {big, 0}, new byte[0], null)) {
      assertArrayEquals(new long[] {big, 0}, t.shape());
      assertEquals(0, t.numElements());
    }
    try (Tensor t = Tensor.create(DType.UINT8, new long[] {1, 1L << 33}, new byte[0], null)) {
      fail("2^33 bytes from an empty array");
    } catch (DistributeException e) {
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("8589934592"), e.getMessage());
    }
    try (InputContext ic = InputContext.create(1, 0, 4)) {
      assertEquals(1L << 38, ic.perReplicaBatchSize(1L << 40));
    }
    try (Dataset d = Dataset.range(1L << 40, (1L << 40) + 3, 1); DistributedIterator it = d.iterator()) {
      for (long k = 0; k < 3; k++) {
        Value[] e = it.next(1);
        try (Tensor v = (Tensor) e[0]) {
          assertEquals((1L << 40) + k, v.scalarLong());
        }
      }
      assertNull(it.nextOrNull(1));
    }
  }
}
