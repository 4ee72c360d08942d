package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Datasets, distributed datasets (with a partial batch), generator/map/dataset-function lambdas. */
class DatasetTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  private static long[] longs(Tensor t) {
    return t.toLongArray();
  }

  /** range(10).batch(4) over 2 replicas: [0 1|2 3], [4 5|6 7], then the partial [8 9|]. */
  @Test
  void distributedDatasetWithPartialBatch() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2));
        Dataset range = Dataset.range(10);
        Dataset batched = range.batch(4);
        DistributedDataset dist = s.distributeDataset(batched);
        DistributedIterator it = dist.iterator()) {
      assertEquals(1, dist.numComponents());
      long[][][] expected = {{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {{8, 9}, {}}};
      long total = 0;
      for (long[][] step : expected) {
        Value[] e = it.nextOrNull(1);
        assertNotNull(e);
        try (Value v = e[0]) {
          assertEquals(ValueKind.PER_REPLICA, v.kind());
          for (int r = 0; r < 2; r++) {
            try (Tensor c = v.componentTensor(r)) {
              assertArrayEquals(step[r], longs(c));
              assertArrayEquals(new long[] {step[r].length}, c.shape());
            }
          }
          try (Tensor sum = (Tensor) s.reduceAxis(ReduceOp.SUM, v, 0)) {
            total += sum.scalarLong();
          }
        }
      }
      assertEquals(45, total);
      assertNull(it.nextOrNull(1));
      DistributeException end = assertThrows(DistributeException.class, () -> it.next(1));
      assertEquals(Status.OUT_OF_RANGE, end.getStatus());
    }
  }

  /** A run over the distributed elements: each replica sees its rows. */
  @Test
  void runOverDistributedElements() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2));
        Tensor x = Tensor.create(new long[] {6}, new float[] {1, 2, 3, 4, 5, 6});
        Dataset d = Dataset.fromTensorSlices(x);
        Dataset b = d.batch(4);
        DistributedIterator it = s.makeDatasetIterator(b)) {
      float total = 0;
      Value[] e;
      while ((e = it.nextOrNull(1)) != null) {
        Value[] r = s.run((ctx, args) -> {
          try (Tensor local = Tensor.create(new long[0], new float[] {sum(((Tensor) args[0]).toFloatArray())})) {
            return new Value[] {ctx.allReduce(ReduceOp.SUM, local)};
          }
        }, 1, e);
        try (Value v = r[0]; Tensor t = v.componentTensor(0)) {
          total += t.scalarFloat();
        }
        Value.closeAll(e);
      }
      assertEquals(21.0f, total);
    }
  }

  private static float sum(float[] a) {
    float s = 0;
    for (float v : a) s += v;
    return s;
  }

  /** map with AUTOTUNE (DIST_AUTOTUNE) keeps the input order; other negative values are refused. */
  @Test
  void mapAutotune() {
    assertEquals(-1, Dataset.AUTOTUNE); // tf.data.AUTOTUNE
    try (Dataset range = Dataset.range(20);
        Dataset tripled = range.map(1, Dataset.AUTOTUNE,
            in -> new Value[] {Tensor.scalar(3 * ((Tensor) in[0]).scalarLong())});
        DistributedIterator it = tripled.iterator()) {
      for (long i = 0; i < 20; i++) {
        try (Tensor t = (Tensor) it.next(1)[0]) {
          assertEquals(3 * i, t.scalarLong());
        }
      }
      assertNull(it.nextOrNull(1));
      DistributeException e = assertThrows(DistributeException.class,
          () -> range.map(1, -2, in -> in).close());
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("AUTOTUNE"), e.getMessage());
    }
  }

  /** Generator and map as lambdas; the generator restarts for each iterator. */
  @Test
  void generatorAndMap() {
    AtomicInteger mapped = new AtomicInteger();
    try (Dataset gen = Dataset.fromGenerator(1, index -> index < 5 ? new Value[] {Tensor.scalar(index * 10L)} : null);
        Dataset sq = gen.map(2, 2, in -> {
          mapped.incrementAndGet();
          long v = ((Tensor) in[0]).scalarLong();
          return new Value[] {Tensor.scalar(v + 1), Tensor.scalar((double) v / 10)};
        });
        Dataset two = sq.skip(1).take(3).prefetch(2)) {
      assertEquals(2, two.numComponents());
      for (int pass = 0; pass < 2; pass++) {
        List<Long> got = new ArrayList<>();
        try (DistributedIterator it = two.iterator()) {
          Value[] e;
          while ((e = it.nextOrNull(2)) != null) {
            try (Tensor a = (Tensor) e[0]; Tensor b = (Tensor) e[1]) {
              got.add(a.scalarLong());
              assertEquals((a.scalarLong() - 1) / 10.0, b.scalarDouble());
            }
          }
        }
        assertEquals(List.of(11L, 21L, 31L), got);
      }
      assertTrue(mapped.get() >= 6);
    }
    // the other transformations
    try (Dataset r = Dataset.range(0, 8, 1); Dataset sh = r.shard(2, 1); Dataset rep = sh.repeat(2);
        Dataset shuf = rep.shuffle(4, 7); DistributedIterator it = shuf.iterator()) {
      long total = 0;
      int n = 0;
      Value[] e;
      while ((e = it.nextOrNull(1)) != null) {
        try (Tensor t = (Tensor) e[0]) {
          total += t.scalarLong();
          n++;
        }
      }
      assertEquals(8, n);
      assertEquals(2 * (1 + 3 + 5 + 7), total);
    }
  }

  /** A generator that fails: the error reaches the iterator's caller with the Java cause's status. */
  @Test
  void failingGenerator() {
    try (Dataset gen = Dataset.fromGenerator(1, index -> {
          if (index == 2) throw new DistributeException(Status.DATA_LOSS.code, "bad record");
          return new Value[] {Tensor.scalar(index)};
        });
        DistributedIterator it = gen.iterator()) {
      Value.closeAll(it.next(1));
      Value.closeAll(it.next(1));
      DistributeException e = assertThrows(DistributeException.class, () -> it.next(1));
      assertEquals(Status.DATA_LOSS, e.getStatus());
      // The callback's own message travels with the status (dist_set_last_error_message).
      assertTrue(e.getMessage().contains("bad record"), e.getMessage());
    }
  }

  /** distribute_datasets_from_function with its InputContext, and make_input_fn_iterator. */
  @Test
  void datasetFunctionWithInputContext() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2));
        InputOptions options = new InputOptions().replicationMode(InputReplicationMode.PER_WORKER)
            .autoShardPolicy(AutoShardPolicy.DATA).prefetchDepth(2).fetchToDevice(true)) {
      AtomicInteger calls = new AtomicInteger();
      try (DistributedDataset dist = s.distributeDatasetsFromFunction(ctx -> {
            calls.incrementAndGet();
            assertEquals(1, ctx.numInputPipelines());
            assertEquals(0, ctx.inputPipelineId());
            assertEquals(2, ctx.numReplicasInSync());
            long perReplica = ctx.perReplicaBatchSize(4);
            assertEquals(2, perReplica);
            try (Dataset r = Dataset.range(8)) {
              return r.batch(perReplica);
            }
          }, options);
          DistributedIterator it = dist.iterator()) {
        Value[] e = it.next(1);
        try (Value v = e[0]; Tensor c0 = v.componentTensor(0); Tensor c1 = v.componentTensor(1)) {
          assertArrayEquals(new long[] {0, 1}, c0.toLongArray());
          assertArrayEquals(new long[] {2, 3}, c1.toLongArray());
        }
      }
      assertTrue(calls.get() >= 1);
      try (DistributedIterator it = s.makeInputFnIterator(ctx -> {
        try (Dataset r = Dataset.range(4)) {
          return r.batch(ctx.perReplicaBatchSize(2));
        }
      })) {
        Value[] e = it.next(1);
        try (Value v = e[0]; Tensor c1 = v.componentTensor(1)) {
          assertArrayEquals(new long[] {1}, c1.toLongArray());
        }
      }
    }
  }

  @Test
  void fileSources() throws Exception {
    java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("dist-java-files");
    java.nio.file.Path text = dir.resolve("a.txt");
    java.nio.file.Files.writeString(text, "alpha\nbeta\n");
    java.nio.file.Path fixed = dir.resolve("r.bin");
    java.nio.file.Files.write(fixed, new byte[] {9, 1, 2, 3, 4, 5, 6});
    try (Dataset lines = Dataset.fromTextFiles(text.toString()); DistributedIterator it = lines.iterator()) {
      int n = 0;
      Value[] e;
      while ((e = it.nextOrNull(1)) != null) {
        Value.closeAll(e);
        n++;
      }
      assertEquals(2, n);
    }
    try (Dataset recs = Dataset.fromFixedLengthRecords(new String[] {fixed.toString()}, 3, 1, 0);
        DistributedIterator it = recs.iterator()) {
      Value[] e = it.next(1);
      try (Tensor t = (Tensor) e[0]) {
        assertArrayEquals(new byte[] {1, 2, 3}, t.toByteArray());
      }
    }
    assertThrows(DistributeException.class, () -> {
      try (Dataset d = Dataset.fromTFRecordFiles(dir.resolve("missing.tfrecord").toString());
          DistributedIterator it = d.iterator()) {
        it.next(1);
      }
    });
  }
}
