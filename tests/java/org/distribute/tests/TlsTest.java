package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import org.distribute.*;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * TLS through the binding: ServerOptions.tlsFiles and CommunicationOptions.tlsFiles, with
 * certificates made for this run by tests/common/make_tls_certs.sh (openssl). A chief and a
 * worker over mutual TLS exchange a value; a plaintext worker cannot join; bad files are named
 * at creation; refused setters change nothing.
 */
class TlsTest {
  private static final String TOKEN = "the-job-secret-0123456789";
  private static Path certs;

  @BeforeAll
  static void makeCertificates() throws Exception {
    Util.setUp();
    certs = Files.createTempDirectory("dist_java_tls");
    String root = System.getenv("DIST_JAVA_ROOT");
    assertNotNull(root, "DIST_JAVA_ROOT (set by tests/java/run.sh)");
    Process p = new ProcessBuilder(root + "/tests/common/make_tls_certs.sh", certs.toString()).inheritIO().start();
    assertEquals(0, p.waitFor(), "make_tls_certs.sh");
  }

  @AfterAll
  static void removeCertificates() throws Exception {
    new ProcessBuilder("rm", "-rf", certs.toString()).start().waitFor();
  }

  private static String file(String name) {
    return certs.resolve(name).toString();
  }

  private static Cluster workers(int[] ports, int current) {
    Cluster c = new Cluster();
    for (int i = 0; i < ports.length; i++) c.addTask("worker", i, "127.0.0.1:" + ports[i]);
    return c.setTask("worker", current);
  }

  @Test
  void chiefAndWorkerOverMutualTls() throws Exception {
    int[] ports = Util.freePorts(2);
    try (ServerOptions job = new ServerOptions().startupTimeoutMs(1500).jobToken(TOKEN)
            .tlsFiles(file("node.pem"), file("node.key"), file("ca.pem"));
        ServerOptions plaintext = new ServerOptions().startupTimeoutMs(1500).jobToken(TOKEN);
        Cluster chiefTask = workers(ports, 0);
        Cluster workerTask = workers(ports, 1);
        Server chief = new Server(chiefTask, job)) {
      // a refused setter leaves the job's files in place
      assertThrows(DistributeException.class, () -> job.tlsFiles(null, null, file("ca.pem")));
      DistributeException e = assertThrows(DistributeException.class, () -> new Server(workerTask, plaintext));
      assertEquals(Status.UNAVAILABLE, e.getStatus());
      assertTrue(e.getMessage().contains("chief task worker:0"), e.getMessage());
      try (Server worker = new Server(workerTask, job)) {
        worker.keyValueSet("k", new byte[] {7, 1});
        try (Tensor t = chief.keyValueGet("k", 20000)) {
          assertArrayEquals(new byte[] {7, 1}, t.toByteArray());
        }
      }
    }
  }

  @Test
  void badFilesAreNamedAtCreation() throws Exception {
    int[] ports = Util.freePorts(1);
    try (Cluster c = workers(ports, 0);
        ServerOptions missing = new ServerOptions().tlsFiles(file("missing.pem"), file("node.key"), null);
        ServerOptions garbage = new ServerOptions().tlsFiles(file("node.pem"), file("garbage.pem"), "")) {
      DistributeException e = assertThrows(DistributeException.class, () -> new Server(c, missing));
      assertEquals(Status.NOT_FOUND, e.getStatus());
      assertTrue(e.getMessage().contains("missing.pem"), e.getMessage());
      e = assertThrows(DistributeException.class, () -> new Server(c, garbage));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("garbage.pem' holds no PEM private key"), e.getMessage());
    }
  }

  @Test
  void setterMisuse() {
    try (ServerOptions o = new ServerOptions(); CommunicationOptions co = new CommunicationOptions()) {
      o.tlsFiles("a.pem", "a.key", "ca.pem").tlsFiles("a.pem", "a.key", null).tlsFiles(null, null, null);
      co.tlsFiles("a.pem", "a.key", "ca.pem").tlsFiles("", "", "");
      DistributeException e = assertThrows(DistributeException.class, () -> o.tlsFiles("a.pem", null, null));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("dist_server_options_set_tls_files: cert_path is set but key_path is not"),
          e.getMessage());
      e = assertThrows(DistributeException.class, () -> co.tlsFiles(null, null, "ca.pem"));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("dist_communication_options_set_tls_files: ca_path is set"), e.getMessage());
    }
    ServerOptions closed = new ServerOptions();
    closed.close();
    assertThrows(IllegalStateException.class, () -> closed.tlsFiles("a.pem", "a.key", null));
    CommunicationOptions closedCo = new CommunicationOptions();
    closedCo.close();
    assertThrows(IllegalStateException.class, () -> closedCo.tlsFiles("a.pem", "a.key", null));
  }

  @Test
  void multiWorkerStrategyReadsTheFilesAtCreation() throws Exception {
    int[] ports = Util.freePorts(1);
    try (Cluster c = workers(ports, 0);
        CommunicationOptions o = new CommunicationOptions().timeoutMs(20000)
            .tlsFiles(file("node.pem"), file("missing.key"), file("ca.pem"))) {
      DistributeException e = assertThrows(DistributeException.class, () -> Strategy.multiWorkerMirrored(c, o));
      assertEquals(Status.NOT_FOUND, e.getStatus());
      assertTrue(e.getMessage().contains("missing.key"), e.getMessage());
      o.tlsFiles(file("node.pem"), file("node.key"), file("ca.pem"));
      try (Strategy s = Strategy.multiWorkerMirrored(c, o)) {
        assertEquals(StrategyKind.MULTI_WORKER_MIRRORED, s.kind());
      }
    }
  }
}
