package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.net.ServerSocket;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Version, devices, clusters, servers, communication options, a one-worker MultiWorkerMirrored. */
class MiscTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void versionAndDevices() {
    assertTrue(Distribute.version().matches("\\d+\\.\\d+\\.\\d+.*"));
    String[] v = Distribute.version().split("[.]");
    assertEquals(Integer.parseInt(v[0]) * 10000 + Integer.parseInt(v[1]) * 100 + Integer.parseInt(v[2].replaceAll("\\D.*", "")),
        Distribute.versionNumber());
    assertTrue(Device.localCount() >= Util.NUM_CPUS);
    try (Device d = Device.local(1)) {
      assertEquals(DeviceType.CPU, d.type());
      assertEquals(1, d.index());
    }
    try (Device d = Device.parse("/job:worker/replica:0/task:3/device:CPU:2")) {
      assertEquals("worker", d.job());
      assertEquals(3, d.task());
      assertEquals(0, d.replica());
      assertEquals(2, d.index());
      assertTrue(d.name().endsWith("CPU:2"));
    }
    String reason = Device.gpuUnavailableReason();
    assertTrue(reason == null || !reason.isEmpty());
    assertNotNull(Distribute.lastErrorMessage());
  }

  /** The cluster resolvers: a StatefulSet pod from arguments; Slurm outside srun is NOT_FOUND. */
  @Test
  void clusterResolvers() {
    try (Cluster c = Cluster.fromStatefulSet("train-1", "train", 3, 7000)) {
      assertEquals(1, c.taskIndex());
      assertEquals(3, c.numWorkers());
      assertEquals("train-2.train:7000", c.taskAddress("worker", 2));
    }
    DistributeException e = assertThrows(DistributeException.class, () -> Cluster.fromStatefulSet("train", "train", 3, 0));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    if (System.getenv("SLURM_PROCID") == null) {
      e = assertThrows(DistributeException.class, () -> Cluster.fromSlurm(java.util.Map.of("worker", 2), 0, 0));
      assertEquals(Status.NOT_FOUND, e.getStatus());
      assertTrue(e.getMessage().contains("SLURM_PROCID"), e.getMessage());
    }
    e = assertThrows(DistributeException.class, () -> Cluster.fromSlurm(java.util.Map.of("worker", 2), 70000, 0));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
  }

  @Test
  void clusterAndServer() throws Exception {
    int port = freePort();
    String config = "{\"cluster\": {\"worker\": [\"127.0.0.1:" + port + "\", \"127.0.0.1:" + (port + 1)
        + "\"]}, \"task\": {\"type\": \"worker\", \"index\": 1}}";
    try (Cluster c = Cluster.fromTfConfig(config)) {
      assertEquals("worker", c.taskType());
      assertEquals(1, c.taskIndex());
      assertFalse(c.isChief());
      assertEquals(2, c.numWorkers());
      assertEquals(2, c.numTasks("worker"));
      assertEquals(1, c.taskIndexAt("worker", 1));
      assertEquals("127.0.0.1:" + port, c.taskAddress("worker", 0));
    }
    try (Cluster c = new Cluster().addTask("worker", 0, "127.0.0.1:" + port).setTask("worker", 0);
        ServerOptions o = new ServerOptions().startupTimeoutMs(5000).heartbeatIntervalMs(200).heartbeatTimeoutMs(5000);
        Server server = new Server(c, o)) {
      assertTrue(c.isChief());
      assertEquals(port, server.port());
      server.keyValueSet("k", new byte[] {1, 2, 3});
      try (Tensor t = server.keyValueGet("k", 1000)) {
        assertArrayEquals(new byte[] {1, 2, 3}, t.toByteArray());
      }
      server.barrier("b", 1000);
      server.peerHealth();
      DistributeException e = assertThrows(DistributeException.class, () -> server.keyValueGet("missing", 10));
      assertNotEquals(Status.OK, e.getStatus());
      server.stop();
      server.join();
    }
  }

  @Test
  void multiWorkerMirroredOneWorker() throws Exception {
    int port = freePort();
    try (Cluster c = new Cluster().addTask("worker", 0, "127.0.0.1:" + port).setTask("worker", 0);
        CommunicationOptions o = new CommunicationOptions().implementation(CommunicationImplementation.RING)
            .sharedMemory(SharedMemoryMode.ON).bytesPerPack(0).timeoutMs(20000).replicasPerWorker(2);
        Strategy s = Strategy.multiWorkerMirrored(c, o)) {
      assertEquals(StrategyKind.MULTI_WORKER_MIRRORED, s.kind());
      assertEquals(2, s.numReplicasInSync());
      Value[] r = s.run((ctx, args) -> {
        try (Tensor t = Tensor.scalar(ctx.replicaId() + 1.0f)) {
          return new Value[] {ctx.allReduce(ReduceOp.SUM, t)};
        }
      }, 1);
      try (Value v = r[0]; Tensor sum = s.reduce(ReduceOp.MEAN, v)) {
        assertEquals(3.0f, sum.scalarFloat());
      }
    }
    try (CommunicationOptions o = new CommunicationOptions()) {
      assertThrows(DistributeException.class, () -> o.timeoutMs(-1));
      o.sharedMemory(SharedMemoryMode.OFF).sharedMemory(SharedMemoryMode.AUTO);
    }
  }
}
