package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Factories, properties, scopes, run and the replica-context collectives. */
class StrategyTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  @Test
  void factoriesAndProperties() {
    try (Strategy one = Strategy.oneDevice("CPU:1");
        Strategy mirrored = Strategy.mirrored(Util.cpus(3));
        Strategy central = Strategy.centralStorage(Util.cpus(2), null);
        Strategy def = Strategy.defaultStrategy();
        CrossDeviceOps ops = CrossDeviceOps.reductionToOneDevice("CPU:0");
        Strategy withOps = Strategy.mirrored(ops, "CPU:0", "CPU:1")) {
      assertEquals(StrategyKind.ONE_DEVICE, one.kind());
      assertEquals(1, one.numReplicasInSync());
      assertEquals("/device:CPU:1", one.workerDevice(0));
      assertEquals(StrategyKind.MIRRORED, mirrored.kind());
      assertEquals(3, mirrored.numReplicasInSync());
      assertEquals(3, mirrored.parameterDeviceCount());
      assertTrue(mirrored.parameterDevice(2).endsWith("CPU:2"));
      assertEquals(StrategyKind.CENTRAL_STORAGE, central.kind());
      assertEquals(1, central.parameterDeviceCount());
      assertEquals(StrategyKind.DEFAULT, def.kind());
      assertEquals(1, def.numReplicasInSync());
      assertEquals(CrossDeviceOpsKind.REDUCTION_TO_ONE_DEVICE, ops.kind());
      assertEquals(2, withOps.numReplicasInSync());
      DistributeException e = assertThrows(DistributeException.class, () -> mirrored.workerDevice(7));
      assertEquals(Status.OUT_OF_RANGE, e.getStatus());
    }
    try (CrossDeviceOps h = CrossDeviceOps.hierarchicalCopy(2); CrossDeviceOps m = CrossDeviceOps.sharedMemory(1 << 20)) {
      assertEquals(CrossDeviceOpsKind.HIERARCHICAL_COPY, h.kind());
      assertEquals(CrossDeviceOpsKind.SHARED_MEMORY, m.kind());
    }
  }

  /** NcclAllReduce: created and typed here; a strategy over CPU replicas refuses it. */
  @Test
  void ncclAllReduceOnlyOnGpus() {
    try (CrossDeviceOps n = CrossDeviceOps.ncclAllReduce(0); CrossDeviceOps packed = CrossDeviceOps.ncclAllReduce(2)) {
      assertEquals(CrossDeviceOpsKind.NCCL_ALL_REDUCE, n.kind());
      assertEquals(CrossDeviceOpsKind.NCCL_ALL_REDUCE, packed.kind());
      DistributeException e = assertThrows(DistributeException.class, () -> Strategy.mirrored(n, "CPU:0", "CPU:1"));
      assertEquals(Status.FAILED_PRECONDITION, e.getStatus());
      assertTrue(e.getMessage().contains("NcclAllReduce"), e.getMessage());
    }
    DistributeException e = assertThrows(DistributeException.class, () -> CrossDeviceOps.ncclAllReduce(-1));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertTrue(e.getMessage().contains("num_packs"), e.getMessage());
  }

  @Test
  void scopesAndCurrentStrategy() {
    try (Strategy s = Strategy.mirrored("CPU:0", "CPU:1")) {
      assertFalse(Strategy.hasStrategy());
      assertNotNull(Strategy.currentReplicaContext()); // the default strategy's
      try (Strategy.Scope scope = s.scope()) {
        assertTrue(Strategy.hasStrategy());
        assertTrue(Strategy.inCrossReplicaContext());
        assertNull(Strategy.currentReplicaContext());
        try (Strategy cur = Strategy.current()) {
          assertEquals(StrategyKind.MIRRORED, cur.kind());
        }
      }
      assertFalse(Strategy.hasStrategy());
      Strategy.experimentalSetStrategy(s);
      assertTrue(Strategy.hasStrategy());
      Strategy.experimentalSetStrategy(null);
      assertFalse(Strategy.hasStrategy());
      assertEquals(ReduceOp.SUM, Strategy.lossReduction());
    }
  }

  /** Replica threads are attached once: across many runs, few distinct Java threads appear. */
  @Test
  void runOnLibraryThreads() {
    try (Strategy s = Strategy.mirrored(Util.cpus(4))) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      Set<Thread> threads = ConcurrentHashMap.newKeySet();
      for (int step = 0; step < 50; step++) {
        final int k = step;
        Value[] r = s.run((ctx, args) -> {
          threads.add(Thread.currentThread());
          assertEquals(4, ctx.numReplicasInSync());
          assertFalse(Strategy.inCrossReplicaContext());
          try (Tensor t = Tensor.scalar((float) (ctx.replicaId() + k))) {
            return new Value[] {ctx.allReduce(ReduceOp.SUM, t), Tensor.scalar(ctx.replicaId())};
          }
        }, 2);
        try (Value sum = r[0]; Value ids = r[1]; Tensor red = s.reduce(ReduceOp.MEAN, sum)) {
          assertEquals(0 + 1 + 2 + 3 + 4 * k, red.scalarFloat());
          assertEquals(ValueKind.PER_REPLICA, ids.kind());
          for (int i = 0; i < 4; i++) {
            try (Tensor c = ids.componentTensor(i)) {
              assertEquals(i, c.scalarInt());
            }
          }
        }
      }
      assertEquals(4, threads.size(), "one Java thread per replica thread, kept across runs");
    }
  }

  @Test
  void collectives() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      Value[] r = s.run((ctx, args) -> {
        int id = ctx.replicaId();
        try (Tensor x = Tensor.create(new long[] {2}, new float[] {id, 10 * id}, ctx.device());
            Tensor y = Tensor.scalar(id + 1.0)) {
          Value[] both = ctx.batchAllReduce(ReduceOp.MAX, x, y);
          Tensor gathered = ctx.allGather(x, 0);
          Tensor bc = ctx.broadcast(x, 1);
          return new Value[] {both[0], both[1], gathered, bc};
        }
      }, 4);
      try (Tensor max = r[0].componentTensor(0); Tensor maxY = r[1].componentTensor(1);
          Tensor g = r[2].componentTensor(1); Tensor bc = r[3].componentTensor(0)) {
        assertArrayEquals(new float[] {1, 10}, max.toFloatArray());
        assertEquals(2.0, maxY.scalarDouble());
        assertArrayEquals(new long[] {4}, g.shape());
        assertArrayEquals(new float[] {0, 0, 1, 10}, g.toFloatArray());
        assertArrayEquals(new float[] {1, 10}, bc.toFloatArray());
      } finally {
        Value.closeAll(r);
      }
    }
  }

  /** allReduceInto: the sum written into a separate tensor, then into the input itself. */
  @Test
  void allReduceInto() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      float[][] separate = new float[2][];
      float[][] input = new float[2][];
      float[][] inPlace = new float[2][];
      s.run((ctx, args) -> {
        int id = ctx.replicaId();
        try (Tensor x = Tensor.create(new long[] {3}, new float[] {id + 1, 10 * id, -id}, ctx.device());
            Tensor out = Tensor.create(new long[] {3}, new float[3], ctx.device())) {
          ctx.allReduceInto(ReduceOp.SUM, x, out);
          separate[id] = out.toFloatArray();
          input[id] = x.toFloatArray();
          ctx.allReduceInto(ReduceOp.SUM, x, x);
          inPlace[id] = x.toFloatArray();
        }
        return null;
      }, 0);
      // Replica r contributes {r + 1, 10 r, -r}: the sum over r = 0, 1.
      float[] expected = {1 + 2, 0 + 10, 0 - 1};
      for (int r = 0; r < 2; r++) {
        assertArrayEquals(expected, separate[r], "replica " + r);
        assertArrayEquals(new float[] {r + 1, 10 * r, -r}, input[r], "input of replica " + r + " unchanged");
        assertArrayEquals(expected, inPlace[r], "replica " + r + " in place");
      }
    }
  }

  /** A wrong-shape out on one replica fails the call on every replica, and nothing is written. */
  @Test
  void allReduceIntoWrongShape() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      DistributeException[] errors = new DistributeException[2];
      float[][] after = new float[2][];
      float[][] retried = new float[2][];
      s.run((ctx, args) -> {
        int id = ctx.replicaId();
        try (Tensor x = Tensor.create(new long[] {1}, new float[] {1});
            Tensor out = Tensor.create(new long[] {1}, new float[] {-7});
            Tensor wrong = Tensor.create(new long[] {2}, new float[] {0, 0})) {
          errors[id] = assertThrows(DistributeException.class,
              () -> ctx.allReduceInto(ReduceOp.SUM, x, id == 1 ? wrong : out));
          after[id] = out.toFloatArray();
          ctx.allReduceInto(ReduceOp.SUM, x, out); // a right call still works
          retried[id] = out.toFloatArray();
        }
        return null;
      }, 0);
      for (int r = 0; r < 2; r++) {
        assertEquals(Status.INVALID_ARGUMENT, errors[r].getStatus());
        assertTrue(errors[r].getMessage().contains("replica 1"), errors[r].getMessage());
        assertTrue(errors[r].getMessage().contains("float32[2]"), errors[r].getMessage());
        assertArrayEquals(new float[] {-7}, after[r]);
        assertArrayEquals(new float[] {2}, retried[r]);
      }
    }
  }

  @Test
  void valuesFromFunctionGatherAndReduceTo() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      try (Value pr = s.distributeValuesFromFunction((id, n) -> {
        assertEquals(2, n);
        return Tensor.create(new long[] {1}, new float[] {id + 1}, "CPU:" + id);
      })) {
        assertEquals(ValueKind.PER_REPLICA, pr.kind());
        try (Tensor sum = s.reduce(ReduceOp.SUM, pr); Tensor g = (Tensor) s.gather(pr, 0);
            Value toDev = s.reduceToDevice(ReduceOp.SUM, pr, "CPU:1")) {
          assertArrayEquals(new float[] {3}, sum.toFloatArray());
          assertArrayEquals(new float[] {1, 2}, g.toFloatArray());
          assertEquals(3.0f, ((Tensor) toDev).toFloatArray()[0]);
          assertTrue(((Tensor) toDev).device().endsWith("CPU:1"));
        }
      }
    }
  }

  @Test
  void variables() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2)); Tensor init = Tensor.scalar(3.0f); Tensor two = Tensor.scalar(2.0f)) {
      Variable v;
      Variable onRead;
      try (Strategy.Scope scope = s.scope()) {
        v = Variable.create(init, "w");
        onRead = Variable.create(init, VariableSynchronization.ON_READ, VariableAggregation.SUM, "acc");
        try (Strategy.Scope colocated = s.colocateVarsWith(v); Variable c = Variable.create(init, "c")) {
          assertEquals(2, c.deviceCount());
        }
      }
      try (v; onRead) {
        assertTrue(s.variableCreatedInScope(v));
        assertEquals(ValueKind.MIRRORED_VARIABLE, v.kind());
        assertEquals(ValueKind.SYNC_ON_READ_VARIABLE, onRead.kind());
        assertEquals(VariableSynchronization.ON_READ, onRead.synchronization());
        assertEquals(2, v.deviceCount());
        assertTrue(v.device(1).endsWith("CPU:1"));
        v.assignAdd(two);
        try (Tensor r = (Tensor) v.read()) { assertEquals(5.0f, r.scalarFloat()); }
        v.assignSub(two);
        v.assignSub(two);
        try (Tensor r = (Tensor) v.read()) { assertEquals(1.0f, r.scalarFloat()); }
        try (Value container = s.valueContainer(v)) {
          assertEquals(ValueKind.MIRRORED_VARIABLE, container.kind());
        }
        // SyncOnRead SUM: each replica adds its id; reading sums the replicas' copies.
        s.run((ctx, args) -> {
          try (Tensor t = Tensor.scalar((float) ctx.replicaId())) {
            ((Variable) args[0]).assign(t);
          }
          return null;
        }, 0, onRead);
        try (Tensor r = (Tensor) onRead.read()) { assertEquals(1.0f, r.scalarFloat()); }
      }
    }
  }

  /** Bring your own threads: two Java threads join as the two replicas. */
  @Test
  void joinReplica() throws Exception {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      float[] got = new float[2];
      Thread[] threads = new Thread[2];
      Throwable[] errors = new Throwable[2];
      for (int i = 0; i < 2; i++) {
        final int id = i;
        threads[i] = new Thread(() -> {
          try (ReplicaContext ctx = s.joinReplica(id); Tensor t = Tensor.scalar(id + 5.0f);
              Tensor sum = ctx.allReduce(ReduceOp.SUM, t)) {
            assertEquals(id, ctx.replicaId());
            got[id] = sum.scalarFloat();
          } catch (Throwable e) {
            errors[id] = e;
          }
        });
        threads[i].start();
      }
      for (Thread t : threads) t.join();
      assertNull(errors[0]);
      assertNull(errors[1]);
      assertArrayEquals(new float[] {11, 11}, got);
    }
  }

  @Test
  void saveAndRestoreVariables() throws Exception {
    java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("dist-java");
    String path = dir.resolve("vars.safetensors").toString();
    try (Strategy s = Strategy.mirrored(Util.cpus(2)); Tensor init = Tensor.scalar(7.0f); Tensor one = Tensor.scalar(1.0f)) {
      Variable v;
      try (Strategy.Scope scope = s.scope()) {
        v = Variable.create(init, "saved");
      }
      try (v) {
        s.saveVariables(path);
        v.assign(one);
        s.restoreVariables(path);
        try (Tensor r = (Tensor) v.read()) { assertEquals(7.0f, r.scalarFloat()); }
      }
    }
  }
}
