package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ServerOptions.setLimit / getLimit (dist_server_options_set_limit / get_limit): every
 * ServerLimit is its DIST_SERVER_LIMIT_* constant, the defaults and ranges server.h documents,
 * refusals that name the bound and change nothing, unknown limits, and a limit that takes
 * effect in a running server.
 */
class ServerLimitsTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  /** A bound with its field name, documented default and range (server.h), written out here. */
  private record Row(ServerLimit limit, String name, long defaultValue, long min, long max) {}

  private static final long INT32_MAX = Integer.MAX_VALUE;
  private static final long DAY_MS = 86_400_000L;

  /** The bounds whose defaults do not depend on the machine's memory. */
  private static final Row[] ROWS = {
    new Row(ServerLimit.MAX_CONNECTIONS, "max_connections", 0, 0, 1L << 20),
    new Row(ServerLimit.MAX_CONNECTIONS_PER_PEER, "max_connections_per_peer", 0, 0, 1L << 20),
    new Row(ServerLimit.MAX_STREAMS_PER_CONNECTION, "max_streams_per_connection", 128, 1, INT32_MAX),
    new Row(ServerLimit.CONNECTION_IDLE_TIMEOUT_MS, "connection_idle_timeout_ms", 120_000, 1, DAY_MS),
    new Row(ServerLimit.HANDSHAKE_TIMEOUT_MS, "handshake_timeout_ms", 10_000, 1, DAY_MS),
    new Row(ServerLimit.STREAM_IDLE_TIMEOUT_MS, "stream_idle_timeout_ms", 10_000, 1, DAY_MS),
    new Row(ServerLimit.MAX_MESSAGE_BYTES, "max_message_bytes", 4L << 20, 10240, INT32_MAX),
    new Row(ServerLimit.MAX_STORE_BYTES, "max_store_bytes", 64L << 20, 1, Long.MAX_VALUE),
    new Row(ServerLimit.MAX_STORE_KEYS, "max_store_keys", 65536, 1, Long.MAX_VALUE),
    new Row(ServerLimit.MAX_BARRIERS, "max_barriers", 16384, 1, Long.MAX_VALUE),
    new Row(ServerLimit.MAX_PENDING_WAITS, "max_pending_waits", 0, 0, 65536),
    new Row(ServerLimit.MAX_VARIABLES, "max_variables", 1L << 20, 1, 1L << 22),
    new Row(ServerLimit.MAX_VARIABLE_REQUEST_BYTES, "max_variable_request_bytes", 1L << 30, 1, Long.MAX_VALUE),
  };

  @Test
  void everyLimitIsItsHeaderConstant() throws Exception {
    String root = System.getenv("DIST_JAVA_ROOT");
    assertNotNull(root, "DIST_JAVA_ROOT (set by tests/java/run.sh)");
    String header = Files.readString(Path.of(root, "include_c/distribute/server.h"));
    Map<String, Integer> defined = new HashMap<>();
    Matcher m = Pattern.compile("#define DIST_SERVER_LIMIT_(\\w+) (\\d+)").matcher(header);
    while (m.find()) defined.put(m.group(1), Integer.parseInt(m.group(2)));
    assertEquals(defined.size(), ServerLimit.values().length, "constants in server.h: " + defined);
    for (ServerLimit limit : ServerLimit.values()) {
      assertEquals(defined.get(limit.name()), Integer.valueOf(limit.code()), limit.name());
      assertEquals(limit, ServerLimit.of(limit.code()));
    }
  }

  @Test
  void defaultsRangesAndRefusals() {
    try (ServerOptions options = new ServerOptions()) {
      for (Row row : ROWS) {
        assertEquals(row.defaultValue, options.getLimit(row.limit), row.name + " default");
        assertSame(options, options.setLimit(row.limit, row.min));
        assertEquals(row.min, options.getLimit(row.limit), row.name);
        options.setLimit(row.limit, row.max);
        assertEquals(row.max, options.getLimit(row.limit), row.name);
        // Out of range: INVALID_ARGUMENT naming the bound and the value; the last value stays.
        DistributeException e = assertThrows(DistributeException.class, () -> options.setLimit(row.limit, row.min - 1));
        assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
        assertTrue(e.getMessage().contains(row.name + " (limit " + row.limit.code() + ") cannot be " + (row.min - 1)),
            e.getMessage());
        if (row.max < Long.MAX_VALUE) {
          e = assertThrows(DistributeException.class, () -> options.setLimit(row.limit, row.max + 1));
          assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
          assertTrue(e.getMessage().contains(row.name), e.getMessage());
        }
        assertEquals(row.max, options.getLimit(row.limit), row.name);
      }
      // The memory-dependent defaults stay within their documented bounds.
      long variableBytes = options.getLimit(ServerLimit.MAX_VARIABLE_BYTES);
      assertTrue(variableBytes >= 1 && variableBytes <= 16L << 30, "max_variable_bytes " + variableBytes);
      long inflight = options.getLimit(ServerLimit.MAX_VARIABLE_INFLIGHT_BYTES);
      assertTrue(inflight >= 1L << 30 && inflight <= 4L << 30, "max_variable_inflight_bytes " + inflight);
    }
  }

  @Test
  void examplesFromTheHeader() {
    try (ServerOptions options = new ServerOptions()) {
      assertEquals(128, options.getLimit(ServerLimit.MAX_STREAMS_PER_CONNECTION));
      assertEquals(10000, options.getLimit(ServerLimit.HANDSHAKE_TIMEOUT_MS));
      assertEquals(65536, options.getLimit(ServerLimit.MAX_STORE_KEYS));
      options.setLimit(ServerLimit.MAX_STREAMS_PER_CONNECTION, 7).setLimit(ServerLimit.HANDSHAKE_TIMEOUT_MS, 2500);
      assertEquals(7, options.getLimit(ServerLimit.MAX_STREAMS_PER_CONNECTION));
      assertEquals(2500, options.getLimit(ServerLimit.HANDSHAKE_TIMEOUT_MS));
      assertEquals(7, options.getLimit(ServerLimit.MAX_STREAMS_PER_CONNECTION.code()));  // by the C constant

      DistributeException e = assertThrows(DistributeException.class,
          () -> options.setLimit(ServerLimit.MAX_STREAMS_PER_CONNECTION, 0));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertEquals(Status.INVALID_ARGUMENT.code, e.getCode());
      assertTrue(e.getMessage().contains("max_streams_per_connection"), e.getMessage());
      assertEquals(7, options.getLimit(ServerLimit.MAX_STREAMS_PER_CONNECTION));  // unchanged
    }
  }

  @Test
  void unknownLimitsAreRefused() {
    try (ServerOptions options = new ServerOptions()) {
      DistributeException e = assertThrows(DistributeException.class, () -> options.setLimit(0, 5));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("limit is 0"), e.getMessage());
      assertTrue(e.getMessage().contains("dist_server_options_set_limit"), e.getMessage());
      e = assertThrows(DistributeException.class, () -> options.setLimit(16, 5));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("limit is 16"), e.getMessage());
      e = assertThrows(DistributeException.class, () -> options.getLimit(0));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("limit is 0"), e.getMessage());
      assertTrue(e.getMessage().contains("dist_server_options_get_limit"), e.getMessage());
      e = assertThrows(DistributeException.class, () -> options.getLimit(16));
      assertTrue(e.getMessage().contains("limit is 16"), e.getMessage());
      // The binding refuses a code it has no ServerLimit for, and a null limit.
      assertThrows(IllegalArgumentException.class, () -> ServerLimit.of(16));
      assertThrows(NullPointerException.class, () -> options.setLimit(null, 5));
    }
    ServerOptions closed = new ServerOptions();
    closed.close();
    assertThrows(IllegalStateException.class, () -> closed.getLimit(ServerLimit.MAX_BARRIERS));
  }

  /** The store's byte cap set through the binding bounds a running chief's store. */
  @Test
  void aLimitTakesEffectInTheServer() throws Exception {
    int[] ports = Util.freePorts(1);
    byte[] value = new byte[60];
    try (Cluster c = new Cluster().addTask("worker", 0, "127.0.0.1:" + ports[0]).setTask("worker", 0);
        ServerOptions o = new ServerOptions().startupTimeoutMs(5000).setLimit(ServerLimit.MAX_STORE_BYTES, 100);
        Server server = new Server(c, o)) {
      server.keyValueSet("a", value);  // 1 + 60 bytes
      DistributeException e = assertThrows(DistributeException.class, () -> server.keyValueSet("b", value));
      assertEquals(Status.RESOURCE_EXHAUSTED, e.getStatus());
      assertTrue(e.getMessage().contains("max_store_bytes"), e.getMessage());
    }
  }
}
