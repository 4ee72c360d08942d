package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;
import org.distribute.*;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the header gained after the binding was first written (TF_CONFIG's resolver fields,
 * compressed TFRecord files, the partial-batch split, job tokens) and the behaviour changes
 * of that round (integer MEAN is a float, integer MEAN variables refused, MultiWorkerMirrored
 * without TF_CONFIG as one local worker). Each function has a test and a misuse test; the
 * expectations are computed here (TFRecord files written with java.util.zip, splits by
 * formula), not read back from the library.
 */
class TfFidelityTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** No job token in the environment: the refusals below are about the job having none. */
  private static void assumeNoEnvironmentToken() {
    String token = System.getenv("DIST_JOB_TOKEN");
    String allow = System.getenv("DIST_ALLOW_UNAUTHENTICATED");
    Assumptions.assumeTrue((token == null || token.isEmpty()) && (allow == null || allow.isEmpty() || allow.equals("0")),
        "DIST_JOB_TOKEN or DIST_ALLOW_UNAUTHENTICATED is set");
  }

  // ---- dist_cluster_rpc_layer, dist_cluster_environment, dist_cluster_master ----

  @Test
  void clusterResolverFields() throws Exception {
    int port = freePort();
    String a0 = "127.0.0.1:" + port, a1 = "127.0.0.1:" + (port + 1);
    String workers = "\"cluster\": {\"worker\": [\"" + a0 + "\", \"" + a1 + "\"]}";
    String config = "{" + workers + ", \"task\": {\"type\": \"worker\", \"index\": 1},"
        + " \"rpc_layer\": \"grpc\", \"environment\": \"cloud\"}";
    String rpc, env, master;
    try (Cluster c = Cluster.fromTfConfig(config)) {
      rpc = c.rpcLayer();
      env = c.environment();
      master = c.master();
      assertEquals("grpc", rpc);
      assertEquals("cloud", env);
      // TFConfigClusterResolver.master(): the current task (worker 1), with the rpc layer
      assertEquals("grpc://" + a1, master);
      // the task's own address, as the cluster's other accessor gives it
      assertEquals("grpc://" + c.taskAddress("worker", 1), master);
    }
    // the strings are copies: still there after the cluster is gone
    assertEquals("grpc", rpc);
    assertEquals("cloud", env);
    assertEquals("grpc://" + a1, master);

    // no rpc_layer or environment: "" and a bare host:port; the index as a string, as TF accepts
    try (Cluster c = Cluster.fromTfConfig("{" + workers + ", \"task\": {\"type\": \"worker\", \"index\": \"0\"}}")) {
      assertEquals("", c.rpcLayer());
      assertEquals("", c.environment());
      assertEquals(a0, c.master());
    }
    // a single-task cluster has no master, as in TF
    try (Cluster c = Cluster.fromTfConfig("{\"cluster\": {\"chief\": [\"" + a0 + "\"]}, "
        + "\"task\": {\"type\": \"chief\", \"index\": 0}, \"rpc_layer\": \"grpc\"}")) {
      assertEquals("grpc", c.rpcLayer());
      assertEquals("", c.master());
    }
    // a cluster built by hand: no rpc layer or environment; the master follows the current task
    try (Cluster c = new Cluster().addTask("worker", 0, a0).addTask("worker", 1, a1)) {
      assertEquals("", c.rpcLayer());
      assertEquals("", c.environment());
      assertEquals("", c.master()); // no current task yet
      c.setTask("worker", 0);
      assertEquals(a0, c.master());
      c.setTask("worker", 1);
      assertEquals(a1, c.master());
    }
  }

  @Test
  void clusterResolverFieldsMisuse() {
    Cluster c = Cluster.fromTfConfig("{\"cluster\": {\"worker\": [\"127.0.0.1:1\", \"127.0.0.1:2\"]}, "
        + "\"task\": {\"type\": \"worker\", \"index\": 0}, \"rpc_layer\": \"grpc\"}");
    c.close();
    // a closed cluster never reaches the library (which would see a dangling pointer)
    assertThrows(IllegalStateException.class, c::rpcLayer);
    assertThrows(IllegalStateException.class, c::environment);
    assertThrows(IllegalStateException.class, c::master);
    // a non-string rpc_layer / environment is a TF_CONFIG error naming the key
    DistributeException e = assertThrows(DistributeException.class,
        () -> Cluster.fromTfConfig("{\"cluster\": {\"worker\": [\"127.0.0.1:1\"]}, \"rpc_layer\": 7}"));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertTrue(e.getMessage().contains("rpc_layer"), e.getMessage());
    e = assertThrows(DistributeException.class,
        () -> Cluster.fromTfConfig("{\"cluster\": {\"worker\": [\"127.0.0.1:1\"]}, \"environment\": [1]}"));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertTrue(e.getMessage().contains("environment"), e.getMessage());
  }

  // ---- dist_dataset_from_compressed_tfrecord_files ----

  private static int masked(byte[] b, int off, int len) {
    CRC32C crc = new CRC32C();
    crc.update(b, off, len);
    int c = (int) crc.getValue();
    return ((c >>> 15) | (c << 17)) + 0xa282ead8;
  }

  /** The TFRecord framing: uint64 length, masked CRC32C of it, the data, masked CRC32C of the data. */
  private static byte[] tfrecords(List<byte[]> records) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] r : records) {
      ByteBuffer head = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
      head.putLong(r.length);
      head.putInt(8, masked(head.array(), 0, 8));
      out.writeBytes(head.array());
      out.writeBytes(r);
      ByteBuffer tail = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(masked(r, 0, r.length));
      out.writeBytes(tail.array());
    }
    return out.toByteArray();
  }

  private static byte[] zlib(byte[] data) {
    Deflater d = new Deflater(Deflater.DEFAULT_COMPRESSION, false); // zlib header and adler32 (RFC 1950)
    d.setInput(data);
    d.finish();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[4096];
    while (!d.finished()) out.write(buf, 0, d.deflate(buf));
    d.end();
    return out.toByteArray();
  }

  private static byte[] gzip(byte[] data) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (GZIPOutputStream g = new GZIPOutputStream(out)) {
      g.write(data);
    }
    return out.toByteArray();
  }

  private static List<byte[]> readAll(Dataset d) {
    List<byte[]> got = new ArrayList<>();
    try (DistributedIterator it = d.iterator()) {
      Value[] e;
      while ((e = it.nextOrNull(1)) != null) {
        try (Tensor t = (Tensor) e[0]) {
          got.add(t.toByteArray());
        }
      }
    }
    return got;
  }

  private static void assertRecords(List<byte[]> expected, List<byte[]> got) {
    assertEquals(expected.size(), got.size());
    for (int i = 0; i < expected.size(); i++) assertArrayEquals(expected.get(i), got.get(i), "record " + i);
  }

  private static List<byte[]> sampleRecords() {
    byte[] big = new byte[70000];
    new Random(7).nextBytes(big);
    return List.of("first".getBytes(StandardCharsets.UTF_8), new byte[0],
        "hello, compressed world".getBytes(StandardCharsets.UTF_8), big);
  }

  @Test
  void compressedTFRecordFiles() throws Exception {
    Path dir = Files.createTempDirectory("dist-java-tfrecord");
    List<byte[]> records = sampleRecords();
    byte[] plain = tfrecords(records);
    Path p = Files.write(dir.resolve("plain.tfrecord"), plain);
    Path z = Files.write(dir.resolve("z.tfrecord"), zlib(plain));
    Path g = Files.write(dir.resolve("g.tfrecord.gz"), gzip(plain));
    // a gzip file of two members (records 0-1, then 2-3), as `cat a.gz b.gz` makes
    ByteArrayOutputStream two = new ByteArrayOutputStream();
    two.writeBytes(gzip(tfrecords(records.subList(0, 2))));
    two.writeBytes(gzip(tfrecords(records.subList(2, 4))));
    Path g2 = Files.write(dir.resolve("g2.tfrecord.gz"), two.toByteArray());

    try (Dataset d = Dataset.fromTFRecordFiles(Compression.NONE, p.toString())) {
      assertEquals(1, d.numComponents());
      assertRecords(records, readAll(d));
    }
    try (Dataset d = Dataset.fromTFRecordFiles(Compression.ZLIB, z.toString())) {
      assertRecords(records, readAll(d));
    }
    try (Dataset d = Dataset.fromTFRecordFiles(Compression.GZIP, g.toString())) {
      assertRecords(records, readAll(d));
    }
    try (Dataset d = Dataset.fromTFRecordFiles(Compression.GZIP, g2.toString())) {
      assertRecords(records, readAll(d));
    }
    // several files: their records in file order
    List<byte[]> twice = new ArrayList<>(records);
    twice.addAll(records);
    try (Dataset d = Dataset.fromTFRecordFiles(Compression.GZIP, g.toString(), g2.toString())) {
      assertRecords(twice, readAll(d));
    }
    // an element is the record's bytes as a 1-D UINT8 tensor
    try (Dataset d = Dataset.fromTFRecordFiles(Compression.ZLIB, z.toString()); DistributedIterator it = d.iterator()) {
      try (Tensor t = (Tensor) it.next(1)[0]) {
        assertEquals(DType.UINT8, t.dtype());
        assertArrayEquals(new long[] {records.get(0).length}, t.shape());
      }
    }
    assertEquals(Compression.GZIP, Compression.of(2));
    assertEquals(1, Compression.ZLIB.code());
  }

  @Test
  void compressedTFRecordFilesMisuse() throws Exception {
    Path dir = Files.createTempDirectory("dist-java-tfrecord-bad");
    byte[] plain = tfrecords(sampleRecords());
    Path p = Files.write(dir.resolve("plain.tfrecord"), plain);
    Path z = Files.write(dir.resolve("z.tfrecord"), zlib(plain));
    Path g = Files.write(dir.resolve("g.tfrecord"), gzip(plain));
    byte[] gz = gzip(plain);
    Path truncated = Files.write(dir.resolve("cut.tfrecord.gz"), Arrays.copyOf(gz, gz.length / 2));
    byte[] corrupt = gzip(plain);
    corrupt[corrupt.length / 2] ^= 0x55;
    corrupt[corrupt.length / 2 + 1] ^= 0x55;
    Path flipped = Files.write(dir.resolve("flip.tfrecord.gz"), corrupt);

    // compressed files read as uncompressed: the message says what they look like
    for (Compression none : new Compression[] {null, Compression.NONE}) {
      for (Path f : new Path[] {z, g}) {
        try (Dataset d = none == null ? Dataset.fromTFRecordFiles(f.toString()) : Dataset.fromTFRecordFiles(none, f.toString());
            DistributedIterator it = d.iterator()) {
          DistributeException e = assertThrows(DistributeException.class, () -> it.next(1));
          assertEquals(Status.DATA_LOSS, e.getStatus());
          assertTrue(e.getMessage().contains(f == z ? "looks ZLIB-compressed" : "looks GZIP-compressed"), e.getMessage());
          assertTrue(e.getMessage().contains(f.toString()), e.getMessage());
        }
      }
    }
    // a plain file read as GZIP or ZLIB, a truncated and a corrupt gzip file: DATA_LOSS naming the file
    Object[][] bad = {{Compression.GZIP, p}, {Compression.ZLIB, p}, {Compression.GZIP, truncated}, {Compression.GZIP, flipped},
        {Compression.ZLIB, g}};
    for (Object[] b : bad) {
      Path f = (Path) b[1];
      try (Dataset d = Dataset.fromTFRecordFiles((Compression) b[0], f.toString())) {
        DistributeException e = assertThrows(DistributeException.class, () -> readAll(d), b[0] + " " + f);
        assertEquals(Status.DATA_LOSS, e.getStatus(), e.getMessage());
        assertTrue(e.getMessage().contains(f.toString()), e.getMessage());
      }
    }
    // a missing file fails, with some status other than OK
    try (Dataset d = Dataset.fromTFRecordFiles(Compression.GZIP, dir.resolve("missing.gz").toString())) {
      assertThrows(DistributeException.class, () -> readAll(d));
    }
    // argument errors are caught before anything is created
    assertThrows(IllegalArgumentException.class, () -> Dataset.fromTFRecordFiles(Compression.GZIP, g.toString(), null));
    assertThrows(NullPointerException.class, () -> Dataset.fromTFRecordFiles((Compression) null, g.toString()));
    // no paths (a null array is none, as C's NULL with num_paths 0): an empty dataset, not an error
    try (Dataset d = Dataset.fromTFRecordFiles(Compression.GZIP, (String[]) null)) {
      assertTrue(readAll(d).isEmpty());
    }
    try (Dataset d = Dataset.fromTFRecordFiles(Compression.ZLIB)) {
      assertTrue(readAll(d).isEmpty());
    }
    assertThrows(IllegalArgumentException.class, () -> Compression.of(3));
  }

  // ---- dist_input_options_set_partial_batch_split ----

  /** Rows per replica of a batch of p rows of a global batch b over r replicas, computed here. */
  private static long[] expectedSplit(long p, long b, int r, PartialBatchSplit split) {
    long per = split == PartialBatchSplit.EVEN && p < b ? (p + r - 1) / r : (b + r - 1) / r;
    long[] sizes = new long[r];
    long left = p;
    for (int i = 0; i < r; i++) {
      sizes[i] = Math.min(per, left);
      left -= sizes[i];
    }
    return sizes;
  }

  /** range(n).batch(b) distributed over r replicas with `split`: each step's rows, per replica. */
  private static List<long[][]> distributed(long n, long b, int r, PartialBatchSplit split) {
    List<long[][]> steps = new ArrayList<>();
    try (Strategy s = Strategy.mirrored(Util.cpus(r));
        InputOptions o = new InputOptions();
        Dataset range = Dataset.range(n);
        Dataset batched = range.batch(b)) {
      if (split != null) o.partialBatchSplit(split);
      try (DistributedDataset dist = s.distributeDataset(batched, o); DistributedIterator it = dist.iterator()) {
        Value[] e;
        while ((e = it.nextOrNull(1)) != null) {
          try (Value v = e[0]) {
            long[][] step = new long[r][];
            for (int i = 0; i < r; i++) {
              try (Tensor c = v.componentTensor(i)) {
                step[i] = c.toLongArray();
              }
            }
            steps.add(step);
          }
        }
      }
    }
    return steps;
  }

  /** The rows range(n).batch(b) over r replicas should give, by the split's formula. */
  private static List<long[][]> expected(long n, long b, int r, PartialBatchSplit split) {
    List<long[][]> steps = new ArrayList<>();
    for (long start = 0; start < n; start += b) {
      long p = Math.min(b, n - start);
      long[] sizes = expectedSplit(p, b, r, split);
      long[][] step = new long[r][];
      long next = start;
      for (int i = 0; i < r; i++) {
        step[i] = new long[(int) sizes[i]];
        for (int k = 0; k < sizes[i]; k++) step[i][k] = next++;
      }
      steps.add(step);
    }
    return steps;
  }

  private static void assertSteps(List<long[][]> expected, List<long[][]> got, String what) {
    assertEquals(expected.size(), got.size(), what);
    for (int s = 0; s < expected.size(); s++) {
      for (int i = 0; i < expected.get(s).length; i++) {
        assertArrayEquals(expected.get(s)[i], got.get(s)[i], what + ": step " + s + ", replica " + i);
      }
    }
  }

  @Test
  void partialBatchSplit() {
    // the header's examples, written out: range(10).batch(4) over 2 replicas ends [8, 9] | [] in
    // order and [8] | [9] evenly; a last batch of 6 of 8 gives 4 + 2 in order, 3 + 3 evenly
    List<long[][]> inOrder = distributed(10, 4, 2, PartialBatchSplit.IN_ORDER);
    assertArrayEquals(new long[] {8, 9}, inOrder.get(2)[0]);
    assertArrayEquals(new long[] {}, inOrder.get(2)[1]);
    List<long[][]> even = distributed(10, 4, 2, PartialBatchSplit.EVEN);
    assertArrayEquals(new long[] {8}, even.get(2)[0]);
    assertArrayEquals(new long[] {9}, even.get(2)[1]);
    List<long[][]> six = distributed(14, 8, 2, PartialBatchSplit.EVEN);
    assertArrayEquals(new long[] {0, 1, 2, 3}, six.get(0)[0]); // full batches split the same
    assertArrayEquals(new long[] {8, 9, 10}, six.get(1)[0]);
    assertArrayEquals(new long[] {11, 12, 13}, six.get(1)[1]);
    assertArrayEquals(new long[] {8, 9, 10, 11}, distributed(14, 8, 2, PartialBatchSplit.IN_ORDER).get(1)[0]);
    // the default is IN_ORDER
    assertSteps(expected(10, 4, 2, PartialBatchSplit.IN_ORDER), distributed(10, 4, 2, null), "default");
    // more shapes, against the formula
    long[][] cases = {{10, 4, 2}, {14, 8, 2}, {10, 8, 4}, {11, 8, 4}, {13, 4, 3}, {7, 12, 4}, {16, 8, 4}};
    for (long[] c : cases) {
      for (PartialBatchSplit split : PartialBatchSplit.values()) {
        assertSteps(expected(c[0], c[1], (int) c[2], split), distributed(c[0], c[1], (int) c[2], split),
            "range(" + c[0] + ").batch(" + c[1] + ") over " + c[2] + " " + split);
      }
    }
    // setting it back restores the default split
    try (Strategy s = Strategy.mirrored(Util.cpus(2));
        InputOptions o = new InputOptions().partialBatchSplit(PartialBatchSplit.EVEN).partialBatchSplit(PartialBatchSplit.IN_ORDER);
        Dataset range = Dataset.range(6);
        Dataset batched = range.batch(4);
        DistributedDataset dist = s.distributeDataset(batched, o);
        DistributedIterator it = dist.iterator()) {
      Value.closeAll(it.next(1));
      try (Value v = it.next(1)[0]; Tensor c0 = v.componentTensor(0); Tensor c1 = v.componentTensor(1)) {
        assertArrayEquals(new long[] {4, 5}, c0.toLongArray());
        assertArrayEquals(new long[] {}, c1.toLongArray());
      }
    }
    assertEquals(PartialBatchSplit.EVEN, PartialBatchSplit.of(1));
  }

  @Test
  void partialBatchSplitMisuse() {
    try (InputOptions o = new InputOptions()) {
      // a typed enum: no value outside DIST_PARTIAL_BATCH_* can be passed; null is caught in Java
      assertThrows(NullPointerException.class, () -> o.partialBatchSplit(null));
      assertThrows(IllegalArgumentException.class, () -> PartialBatchSplit.of(2));
    }
    InputOptions closed = new InputOptions();
    closed.close();
    assertThrows(IllegalStateException.class, () -> closed.partialBatchSplit(PartialBatchSplit.EVEN));
  }

  // ---- dist_server_options_set_job_token, dist_server_options_set_allow_unauthenticated ----

  private static final String TOKEN = "the-job-secret-0123456789";

  private static Cluster workers(int[] ports, int current) {
    Cluster c = new Cluster();
    for (int i = 0; i < ports.length; i++) c.addTask("worker", i, "127.0.0.1:" + ports[i]);
    return c.setTask("worker", current);
  }

  @Test
  void serverJobToken() throws Exception {
    int[] ports = Util.freePorts(2);
    try (ServerOptions options = new ServerOptions().startupTimeoutMs(20000).jobToken(TOKEN);
        ServerOptions impostor = new ServerOptions().startupTimeoutMs(20000).jobToken("another-job-secret-0123");
        Cluster chiefTask = workers(ports, 0);
        Cluster workerTask = workers(ports, 1);
        Server chief = new Server(chiefTask, options)) {
      assertEquals(ports[0], chief.port());
      // another job's token is refused and changes nothing
      DistributeException e = assertThrows(DistributeException.class, () -> new Server(workerTask, impostor));
      assertEquals(Status.UNAUTHENTICATED, e.getStatus());
      assertTrue(e.getMessage().contains("token"), e.getMessage());
      // the job's token joins
      try (Server worker = new Server(workerTask, options)) {
        worker.keyValueSet("k", new byte[] {4, 2});
        try (Tensor t = chief.keyValueGet("k", 5000)) {
          assertArrayEquals(new byte[] {4, 2}, t.toByteArray());
        }
      }
    }
    // null and "" mean "the environment's, or none"; the token's bounds are 16 and 1024 characters
    try (ServerOptions o = new ServerOptions()) {
      o.jobToken(null).jobToken("").jobToken("0123456789abcdef").jobToken("x".repeat(1024)).jobToken("!~" + "a".repeat(14));
    }
  }

  @Test
  void serverJobTokenMisuse() {
    try (ServerOptions o = new ServerOptions()) {
      String[] malformed = {"too-short", "0123456789abcde", "x".repeat(1025), "with a space 0123456789",
          "tab\there-0123456789", "caf\u00e9-0123456789abcdef"};
      for (String token : malformed) {
        DistributeException e = assertThrows(DistributeException.class, () -> o.jobToken(token), token);
        assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
        assertTrue(e.getMessage().contains("dist_server_options_set_job_token"), e.getMessage());
      }
      DistributeException e = assertThrows(DistributeException.class, () -> o.jobToken("too-short"));
      assertTrue(e.getMessage().contains("token has 9 characters"), e.getMessage());
      o.jobToken(TOKEN); // still usable after the refusals
    }
    ServerOptions closed = new ServerOptions();
    closed.close();
    assertThrows(IllegalStateException.class, () -> closed.jobToken(TOKEN));
    assertThrows(IllegalStateException.class, () -> closed.allowUnauthenticated(true));
  }

  /** A task on a non-loopback address (TEST-NET-1, never contacted by the chief's start). */
  private static Cluster chiefWithRemoteWorker(int port) {
    return new Cluster().addTask("worker", 0, "127.0.0.1:" + port).addTask("worker", 1, "192.0.2.1:2222")
        .setTask("worker", 0);
  }

  @Test
  void serverAllowUnauthenticated() throws Exception {
    assumeNoEnvironmentToken();
    int port = freePort();
    try (Cluster c = chiefWithRemoteWorker(port); ServerOptions o = new ServerOptions().startupTimeoutMs(5000)) {
      // no token, a task off loopback: refused before anything listens
      DistributeException e = assertThrows(DistributeException.class, () -> new Server(c, o));
      assertEquals(Status.FAILED_PRECONDITION, e.getStatus());
      // allowed: the chief starts (it waits for no one)
      o.allowUnauthenticated(true);
      try (Server s = new Server(c, o)) {
        assertEquals(port, s.port());
        s.stop();
      }
      // and back off again
      o.allowUnauthenticated(false);
      e = assertThrows(DistributeException.class, () -> new Server(c, o));
      assertEquals(Status.FAILED_PRECONDITION, e.getStatus());
      // a token is the other way to run off loopback
      o.jobToken(TOKEN);
      try (Server s = new Server(c, o)) {
        assertEquals(port, s.port());
        s.stop();
      }
    }
    // a loopback-only job needs neither
    int p2 = freePort();
    try (Cluster c = new Cluster().addTask("worker", 0, "127.0.0.1:" + p2).setTask("worker", 0);
        ServerOptions o = new ServerOptions().startupTimeoutMs(5000);
        Server s = new Server(c, o)) {
      assertEquals(p2, s.port());
    }
  }

  @Test
  void serverAllowUnauthenticatedMisuse() throws Exception {
    assumeNoEnvironmentToken();
    int port = freePort();
    // a malformed token changes nothing: the job still has none and is refused off loopback
    try (Cluster c = chiefWithRemoteWorker(port); ServerOptions o = new ServerOptions().startupTimeoutMs(5000)) {
      assertThrows(DistributeException.class, () -> o.jobToken("short"));
      DistributeException e = assertThrows(DistributeException.class, () -> new Server(c, o));
      assertEquals(Status.FAILED_PRECONDITION, e.getStatus());
    }
    // a boolean in Java: the library's "expected 0 or 1" cannot be reached; closed options are caught
    ServerOptions closed = new ServerOptions();
    closed.close();
    assertThrows(IllegalStateException.class, () -> closed.allowUnauthenticated(false));
  }

  // ---- dist_communication_options_set_job_token ----

  @Test
  void communicationJobToken() throws Exception {
    int port = freePort();
    try (Cluster c = new Cluster().addTask("worker", 0, "127.0.0.1:" + port).setTask("worker", 0);
        CommunicationOptions o = new CommunicationOptions().timeoutMs(20000).replicasPerWorker(2).jobToken(TOKEN);
        Strategy s = Strategy.multiWorkerMirrored(c, o)) {
      assertEquals(2, s.numReplicasInSync());
      Value[] r = s.run((ctx, args) -> {
        try (Tensor t = Tensor.scalar(ctx.replicaId() + 1.0f)) {
          return new Value[] {ctx.allReduce(ReduceOp.SUM, t)};
        }
      }, 1);
      try (Value v = r[0]; Tensor c1 = v.componentTensor(1)) {
        assertEquals(3.0f, c1.scalarFloat());
      }
    }
    assumeNoEnvironmentToken();
    // the token reaches the strategy's server: off loopback, without one creation is refused at
    // once (FAILED_PRECONDITION); with one the chief starts and waits for the absent worker
    // (DEADLINE_EXCEEDED naming it)
    int p2 = freePort();
    try (Cluster c = chiefWithRemoteWorker(p2); CommunicationOptions o = new CommunicationOptions().timeoutMs(1500)) {
      DistributeException e = assertThrows(DistributeException.class, () -> Strategy.multiWorkerMirrored(c, o));
      assertEquals(Status.FAILED_PRECONDITION, e.getStatus(), e.getMessage());
      o.jobToken(TOKEN);
      e = assertThrows(DistributeException.class, () -> Strategy.multiWorkerMirrored(c, o));
      assertEquals(Status.DEADLINE_EXCEEDED, e.getStatus(), e.getMessage());
      assertTrue(e.getMessage().contains("worker") && e.getMessage().contains("1"), e.getMessage());
    }
  }

  @Test
  void communicationJobTokenMisuse() {
    try (CommunicationOptions o = new CommunicationOptions()) {
      DistributeException e = assertThrows(DistributeException.class, () -> o.jobToken("short"));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("job_token has 5 characters"), e.getMessage());
      e = assertThrows(DistributeException.class, () -> o.jobToken("with a space 0123456789"));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertThrows(DistributeException.class, () -> o.jobToken("y".repeat(1025)));
      o.jobToken(TOKEN).jobToken("").jobToken(null);
    }
    CommunicationOptions closed = new CommunicationOptions();
    closed.close();
    assertThrows(IllegalStateException.class, () -> closed.jobToken(TOKEN));
  }

  // ---- behaviour changes of the same round ----

  /** TF_CONFIG unset, "" or "{}": MultiWorkerMirrored is one local worker, no server, no error. */
  @Test
  void multiWorkerMirroredWithoutTfConfig() {
    String tfConfig = System.getenv("TF_CONFIG");
    Assumptions.assumeTrue(tfConfig == null || tfConfig.isEmpty() || tfConfig.equals("{}"), "TF_CONFIG names a cluster");
    try (CommunicationOptions o = new CommunicationOptions().replicasPerWorker(2);
        Strategy a = Strategy.multiWorkerMirrored(null, o);
        Strategy b = Strategy.multiWorkerMirrored(null, o); // no port taken: two live side by side
        Tensor one = Tensor.create(new long[] {1}, new float[] {1}, "CPU:0");
        Tensor two = Tensor.create(new long[] {1}, new float[] {2}, "CPU:1");
        Value pr = Value.perReplica(one, two)) {
      assertEquals(StrategyKind.MULTI_WORKER_MIRRORED, a.kind());
      assertEquals(2, a.numReplicasInSync());
      assertEquals(2, b.numReplicasInSync());
      try (Tensor sum = a.reduce(ReduceOp.SUM, pr)) {
        assertArrayEquals(new float[] {3}, sum.toFloatArray());
      }
    }
  }

  /** MEAN over integers is TF's true division: float64 for int32/int64, float32 for 8/16-bit ints. */
  @Test
  void integerMeanIsAFloat() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      try (Tensor a = Tensor.create(new long[] {2}, new int[] {2, 3}, "CPU:0");
          Tensor b = Tensor.create(new long[] {2}, new int[] {3, 4}, "CPU:1");
          Value pr = Value.perReplica(a, b);
          Tensor mean = s.reduce(ReduceOp.MEAN, pr);
          Tensor sum = s.reduce(ReduceOp.SUM, pr)) {
        assertEquals(DType.FLOAT64, mean.dtype());
        assertArrayEquals(new double[] {2.5, 3.5}, mean.toDoubleArray());
        assertEquals(DType.INT32, sum.dtype());
        assertArrayEquals(new int[] {5, 7}, sum.toIntArray());
      }
      try (Tensor a = Tensor.create(new long[] {1}, new long[] {1L << 40}, "CPU:0");
          Tensor b = Tensor.create(new long[] {1}, new long[] {1}, "CPU:1");
          Value pr = Value.perReplica(a, b);
          Tensor mean = s.reduce(ReduceOp.MEAN, pr)) {
        assertEquals(DType.FLOAT64, mean.dtype());
        assertArrayEquals(new double[] {((1L << 40) + 1) / 2.0}, mean.toDoubleArray());
      }
      for (DType small : new DType[] {DType.INT8, DType.UINT8, DType.INT16}) {
        int width = (int) small.size();
        byte[] x = new byte[width], y = new byte[width];
        x[0] = 3; // little-endian 3 and 4 in either width
        y[0] = 4;
        try (Tensor a = Tensor.create(small, new long[] {1}, x, "CPU:0");
            Tensor b = Tensor.create(small, new long[] {1}, y, "CPU:1");
            Value pr = Value.perReplica(a, b);
            Tensor mean = s.reduce(ReduceOp.MEAN, pr)) {
          assertEquals(DType.FLOAT32, mean.dtype(), small.toString());
          assertArrayEquals(new float[] {3.5f}, mean.toFloatArray(), small.toString());
        }
      }
      // all_reduce(MEAN) in replica context too
      Value[] r = s.run((ctx, args) -> {
        try (Tensor t = Tensor.scalar(ctx.replicaId() + 1)) {
          return new Value[] {ctx.allReduce(ReduceOp.MEAN, t)};
        }
      }, 1);
      try (Value v = r[0]; Tensor c0 = v.componentTensor(0); Tensor c1 = v.componentTensor(1)) {
        assertEquals(DType.FLOAT64, c0.dtype());
        assertEquals(1.5, c0.scalarDouble());
        assertEquals(1.5, c1.scalarDouble());
      }
    }
    // one replica in sync: the value unchanged, integer dtype included
    try (Strategy s = Strategy.mirrored(Util.cpus(1));
        Tensor a = Tensor.create(new long[] {2}, new int[] {2, 3}, "CPU:0");
        Value pr = Value.perReplica(a);
        Tensor mean = s.reduce(ReduceOp.MEAN, pr)) {
      assertEquals(DType.INT32, mean.dtype());
      assertArrayEquals(new int[] {2, 3}, mean.toIntArray());
    }
  }

  /** An integer variable with MEAN aggregation is refused at creation, as in TF; SUM is fine. */
  @Test
  void integerMeanVariableRefused() {
    try (Strategy s = Strategy.mirrored(Util.cpus(2)); Tensor zero = Tensor.scalar(0); Tensor zeroF = Tensor.scalar(0.0f);
        Strategy.Scope scope = s.scope()) {
      DistributeException e = assertThrows(DistributeException.class,
          () -> Variable.create(zero, VariableSynchronization.AUTO, VariableAggregation.MEAN, "int_mean"));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      try (Variable sum = Variable.create(zero, VariableSynchronization.AUTO, VariableAggregation.SUM, "int_sum");
          Variable mean = Variable.create(zeroF, VariableSynchronization.AUTO, VariableAggregation.MEAN, "float_mean")) {
        assertEquals(VariableAggregation.SUM, sum.aggregation());
        assertEquals(VariableAggregation.MEAN, mean.aggregation());
      }
    }
  }
}
