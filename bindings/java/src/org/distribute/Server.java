package org.distribute;

/** A task's server (tf.distribute.Server): coordination service, key-value store, barriers. */
public final class Server extends Handle {
  public Server(Cluster cluster, ServerOptions options) {
    super(NativeGen.serverCreate(h(cluster), h(options)), true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.serverDestroy(handle);
  }

  public int port() { return NativeGen.serverPort(h()); }
  public void stop() { NativeGen.serverStop(h()); }
  public void join() { NativeGen.serverJoin(h()); }
  public void keyValueSet(String key, byte[] value) { NativeHand.serverKeyValueSet(h(), key, value); }
  /** The value as a UINT8 tensor. */
  public Tensor keyValueGet(String key, long timeoutMs) { return (Tensor) Value.of(NativeGen.serverKeyValueGet(h(), key, timeoutMs), true); }
  public void barrier(String name, long timeoutMs) { NativeGen.serverBarrier(h(), name, timeoutMs); }
  public void peerHealth() { NativeGen.serverPeerHealth(h()); }
}
