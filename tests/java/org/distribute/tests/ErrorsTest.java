package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Failing callbacks, Java exceptions in callbacks, and bad input: clear errors, no crash. */
class ErrorsTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  /** A replica whose library call fails: the status and message reach the caller; the next run works. */
  @Test
  void failingReplicaThenNextRunWorks() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      DistributeException e = assertThrows(DistributeException.class, () -> s.run((ctx, args) -> {
        if (ctx.replicaId() == 1) {
          ctx.broadcast(null, 0); // INVALID_ARGUMENT from the library
        }
        try (Tensor t = Tensor.scalar(1.0f); Tensor r = ctx.allReduce(ReduceOp.SUM, t)) {
          return null;
        }
      }, 0));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("broadcast"), e.getMessage());
      assertTrue(e.getCause() instanceof DistributeException);
      // the strategy is usable again
      Value[] r = s.run((ctx, args) -> {
        try (Tensor t = Tensor.scalar(2.0f)) {
          return new Value[] {ctx.allReduce(ReduceOp.SUM, t)};
        }
      }, 1);
      try (Value v = r[0]; Tensor sum = v.componentTensor(1)) {
        assertEquals(4.0f, sum.scalarFloat());
      }
    }
  }

  static final class Boom extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Boom(String m) {
      super(m);
    }
  }

  /** An exception thrown in a Java replica function is the cause of the DistributeException. */
  @Test
  void javaExceptionInReplicaFunction() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      for (int round = 0; round < 3; round++) {
        DistributeException e = assertThrows(DistributeException.class, () -> s.run((ctx, args) -> {
          if (ctx.replicaId() == 1) throw new Boom("boom on replica 1");
          return null;
        }, 0));
        assertTrue(e.getCause() instanceof Boom, String.valueOf(e.getCause()));
        assertEquals("boom on replica 1", e.getCause().getMessage());
        assertTrue(e.getMessage().contains("replica 1"), e.getMessage());
        assertNotEquals(Status.OK, e.getStatus());
      }
      // checked exceptions too, and from the other callback kinds
      DistributeException e = assertThrows(DistributeException.class,
          () -> s.distributeValuesFromFunction((id, n) -> { throw new java.io.IOException("io"); }));
      assertTrue(e.getCause() instanceof java.io.IOException);
      Value[] ok = s.run((ctx, args) -> new Value[] {Tensor.scalar(1)}, 1);
      Value.closeAll(ok);
    }
  }

  @Test
  void exceptionInMergeAndUpdateFunctions() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2)); Tensor zero = Tensor.scalar(0.0f)) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      DistributeException e = assertThrows(DistributeException.class, () -> s.run((ctx, args) -> {
        ctx.mergeCall((strategy, margs) -> { throw new Boom("merge"); });
        return null;
      }, 0));
      // whichever replica's merge function the library called, the run carries the Boom
      assertTrue(e.getCause() instanceof Boom, String.valueOf(e.getCause()));
      Variable v;
      try (Strategy.Scope scope = s.scope()) {
        v = Variable.create(zero, "u");
      }
      try (v) {
        e = assertThrows(DistributeException.class, () -> s.update(v, (var, a) -> { throw new Boom("update"); }, true));
        assertEquals("update", e.getCause().getMessage());
      }
    }
  }

  private static boolean hasCause(Throwable t, Class<?> cls) {
    for (Throwable c = t.getCause(); c != null; c = c.getCause()) if (cls.isInstance(c)) return true;
    return false;
  }

  @Test
  void badInput() {
    Util.setUp();
    DistributeException e = assertThrows(DistributeException.class, () -> Strategy.oneDevice("NOPE:99"));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertFalse(e.getMessage().isEmpty());
    assertThrows(DistributeException.class, () -> Strategy.mirrored("CPU:0", "CPU:0"));
    assertThrows(DistributeException.class, () -> Strategy.oneDevice(null));
    // shape and data disagree
    e = assertThrows(DistributeException.class, () -> Tensor.create(new long[] {3}, new float[] {1, 2}));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertThrows(DistributeException.class, () -> Tensor.create(new long[] {-1}, new float[0]));
    // heap buffers cannot be borrowed
    assertThrows(IllegalArgumentException.class,
        () -> Tensor.wrap(DType.FLOAT32, new long[] {1}, ByteBuffer.allocate(4), null, null));
    assertThrows(IllegalArgumentException.class, () -> Tensor.create(new long[33], new float[1]));
    // null handles become the library's INVALID_ARGUMENT
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      e = assertThrows(DistributeException.class, () -> s.reduce(ReduceOp.SUM, null));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      // a plain tensor under SUM with several replicas
      try (Tensor t = Tensor.scalar(1.0f)) {
        assertThrows(DistributeException.class, () -> s.reduce(ReduceOp.SUM, t));
      }
      // cross-replica call from replica context: FAILED_PRECONDITION, and the run reports it
      e = assertThrows(DistributeException.class, () -> s.run((ctx, args) -> {
        try (Strategy inner = ctx.strategy(); Tensor t = Tensor.scalar(1.0f)) {
          inner.reduce(ReduceOp.MEAN, t);
        }
        return null;
      }, 0));
      assertEquals(Status.FAILED_PRECONDITION, e.getStatus());
      assertThrows(DistributeException.class, () -> s.setTimeoutMs(-5));
      // more results than room
      e = assertThrows(DistributeException.class,
          () -> s.run((ctx, args) -> new Value[] {Tensor.scalar(1), Tensor.scalar(2)}, 1));
      assertTrue(e.getCause() instanceof IllegalArgumentException);
    }
    // a borrowed context or argument kept past its callback: IllegalStateException, no crash
    try (Strategy s = Strategy.mirrored(Util.cpus(2)); Tensor one = Tensor.scalar(1.0f)) {
      ReplicaContext[] kept = new ReplicaContext[1];
      Value[] keptArg = new Value[1];
      s.run((ctx, args) -> {
        if (ctx.replicaId() == 0) {
          kept[0] = ctx;
          keptArg[0] = args[0];
        }
        return null;
      }, 0, one);
      assertThrows(IllegalStateException.class, () -> kept[0].replicaId());
      assertThrows(IllegalStateException.class, () -> keptArg[0].kind());
      // returning a borrowed argument is refused (the library would own it twice)
      DistributeException e2 = assertThrows(DistributeException.class, () -> s.run((ctx, args) -> args, 1, one));
      assertTrue(e2.getCause() instanceof IllegalArgumentException);
    }
    // closed handles are caught in Java
    Tensor t = Tensor.scalar(1.0f);
    t.close();
    t.close();
    assertThrows(IllegalStateException.class, t::scalarFloat);
    assertThrows(DistributeException.class, () -> Dataset.range(0, 10, 0));
    assertThrows(DistributeException.class, () -> Cluster.fromTfConfig("{not json"));
    assertThrows(DistributeException.class, () -> Device.parse("/device:XPU:abc"));
    assertThrows(IllegalArgumentException.class, () -> ReduceOp.of(42));
    assertEquals("INVALID_ARGUMENT", Status.INVALID_ARGUMENT.libraryName());
  }
}
