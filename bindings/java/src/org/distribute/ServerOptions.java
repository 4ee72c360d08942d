package org.distribute;

/** Options of a {@link Server} (setters return this). */
public final class ServerOptions extends Handle {
  public ServerOptions() {
    super(NativeGen.serverOptionsCreate(), true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.serverOptionsDestroy(handle);
  }

  public ServerOptions startupTimeoutMs(long ms) { NativeGen.serverOptionsSetStartupTimeoutMs(h(), ms); return this; }
  public ServerOptions heartbeatIntervalMs(long ms) { NativeGen.serverOptionsSetHeartbeatIntervalMs(h(), ms); return this; }
  public ServerOptions heartbeatTimeoutMs(long ms) { NativeGen.serverOptionsSetHeartbeatTimeoutMs(h(), ms); return this; }
}
