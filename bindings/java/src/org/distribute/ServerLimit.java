package org.distribute;

/**
 * dist_server_limit_t (DIST_SERVER_LIMIT_*): the bounds a task's server keeps, read and set
 * with {@link ServerOptions#getLimit} and {@link ServerOptions#setLimit}. A value out of a
 * bound's range is INVALID_ARGUMENT naming the bound; include_c/distribute/server.h has the
 * ranges and defaults.
 */
public enum ServerLimit implements Enums.Coded {
  /** Accepted connections in total: 0 to 1048576; 0 (the default): 1024, at least 4 per task. */
  MAX_CONNECTIONS(1),
  /** Accepted connections from one IP address: 0 to 1048576; 0 (the default): 256. */
  MAX_CONNECTIONS_PER_PEER(2),
  /** Calls at once on one connection: 1 to 2^31-1, default 128. */
  MAX_STREAMS_PER_CONNECTION(3),
  /** A connection without a call for this long is closed: 1 to 86400000 ms, default 120000. */
  CONNECTION_IDLE_TIMEOUT_MS(4),
  /** A connection whose handshake takes longer is closed: 1 to 86400000 ms, default 10000. */
  HANDSHAKE_TIMEOUT_MS(5),
  /** A tensor stream idle this long is cancelled: 1 to 86400000 ms, default 10000. */
  STREAM_IDLE_TIMEOUT_MS(6),
  /** The largest message either way: 10240 to 2^31-1 bytes, default 4 MiB. */
  MAX_MESSAGE_BYTES(7),
  /** The chief's key-value store, in bytes: at least 1, default 64 MiB. */
  MAX_STORE_BYTES(8),
  /** The chief's key-value store, in keys: at least 1, default 65536. */
  MAX_STORE_KEYS(9),
  /** The chief's barriers: at least 1, default 16384. */
  MAX_BARRIERS(10),
  /** Other tasks' waits pending at once on the chief: 0 to 65536; 0 (the default): by the cluster's size. */
  MAX_PENDING_WAITS(11),
  /** A ps task's variable and slot bytes: at least 1, default half the memory, at most 16 GiB. */
  MAX_VARIABLE_BYTES(12),
  /** A ps task's variable count: 1 to 4194304, default 1048576. */
  MAX_VARIABLES(13),
  /** The tensor bytes of one request to a ps task: at least 1, default 1 GiB. */
  MAX_VARIABLE_REQUEST_BYTES(14),
  /** The tensor bytes of a ps task's requests in flight: at least 1, default an eighth of the memory within 1 to 4 GiB. */
  MAX_VARIABLE_INFLIGHT_BYTES(15);

  private final int code;

  ServerLimit(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static ServerLimit of(int code) {
    return Enums.of(ServerLimit.class, code);
  }
}
