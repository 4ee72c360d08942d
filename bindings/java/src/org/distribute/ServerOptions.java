package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** Options of a {@link Server} (setters return this). */
public final class ServerOptions extends Handle {
  public ServerOptions() {
    super(NativeGen.serverOptionsCreate(), true, NativeGen::serverOptionsDestroy);
  }

  public ServerOptions startupTimeoutMs(long ms) { try { NativeGen.serverOptionsSetStartupTimeoutMs(h(), ms); return this; } finally { reachabilityFence(this); } }
  public ServerOptions heartbeatIntervalMs(long ms) { try { NativeGen.serverOptionsSetHeartbeatIntervalMs(h(), ms); return this; } finally { reachabilityFence(this); } }
  public ServerOptions heartbeatTimeoutMs(long ms) { try { NativeGen.serverOptionsSetHeartbeatTimeoutMs(h(), ms); return this; } finally { reachabilityFence(this); } }
  /**
   * The job token every request between this job's servers carries: 16 to 1024 printable ASCII
   * characters without spaces, the same in every process of the job; null or "": DIST_JOB_TOKEN
   * from the environment (distrun sets one), or none. A malformed token is INVALID_ARGUMENT and
   * changes nothing.
   */
  public ServerOptions jobToken(String token) { try { NativeGen.serverOptionsSetJobToken(h(), token); return this; } finally { reachabilityFence(this); } }
  /**
   * Lets a job without a token run on non-loopback addresses (as DIST_ALLOW_UNAUTHENTICATED=1),
   * trusting everyone who can reach its ports; by default such a job runs only on loopback.
   */
  public ServerOptions allowUnauthenticated(boolean allow) { try { NativeGen.serverOptionsSetAllowUnauthenticated(h(), allow ? 1 : 0); return this; } finally { reachabilityFence(this); } }
  /**
   * TLS for this task's server and its connection to the chief: this task's certificate chain
   * and its unencrypted private key (PEM files), and the CAs to trust (null or "": none; set,
   * TLS is mutual). All three null or "": the DIST_TLS_CERT, DIST_TLS_KEY and DIST_TLS_CA
   * environment variables, or no TLS. The files are read when a {@link Server} is created (a
   * missing one is NOT_FOUND, a bad one INVALID_ARGUMENT, naming it); a certificate without a
   * key, a key without a certificate or a CA alone is INVALID_ARGUMENT here and changes nothing.
   */
  public ServerOptions tlsFiles(String certPath, String keyPath, String caPath) {
    try {
      NativeGen.serverOptionsSetTlsFiles(h(), certPath, keyPath, caPath);
      return this;
    } finally {
      reachabilityFence(this);
    }
  }
  /**
   * Sets one bound of the server (dist_server_options_set_limit; the ranges are in
   * {@link ServerLimit}). A value out of range is INVALID_ARGUMENT naming the bound and changes
   * nothing; bounds that depend on each other are checked when a {@link Server} is created.
   */
  public ServerOptions setLimit(ServerLimit limit, long value) {
    return setLimit(limit.code(), value);
  }
  /**
   * {@link #setLimit(ServerLimit, long)} by the C constant (DIST_SERVER_LIMIT_*), for a bound
   * newer than this binding; one the library does not know is INVALID_ARGUMENT.
   */
  public ServerOptions setLimit(int limit, long value) { try { NativeGen.serverOptionsSetLimit(h(), limit, value); return this; } finally { reachabilityFence(this); } }
  /**
   * The bound these options give (dist_server_options_get_limit): what was set, else its
   * default (0 for the connection caps and pending waits, whose defaults follow the cluster).
   */
  public long getLimit(ServerLimit limit) {
    return getLimit(limit.code());
  }
  /** {@link #getLimit(ServerLimit)} by the C constant; one the library does not know is INVALID_ARGUMENT. */
  public long getLimit(int limit) { try { return NativeGen.serverOptionsGetLimit(h(), limit); } finally { reachabilityFence(this); } }
}
