package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** A task's server (tf.distribute.Server): coordination service, key-value store, barriers. */
public final class Server extends Handle {
  public Server(Cluster cluster, ServerOptions options) {
    super(create(cluster, options), true, NativeGen::serverDestroy);
  }

  private static long create(Cluster cluster, ServerOptions options) {
    try {
      return NativeGen.serverCreate(h(cluster), h(options));
    } finally {
      reachabilityFence(cluster);
      reachabilityFence(options);
    }
  }

  public int port() { try { return NativeGen.serverPort(h()); } finally { reachabilityFence(this); } }
  public void stop() { try { NativeGen.serverStop(h()); } finally { reachabilityFence(this); } }
  public void join() { try { NativeGen.serverJoin(h()); } finally { reachabilityFence(this); } }
  public void keyValueSet(String key, byte[] value) { try { NativeHand.serverKeyValueSet(h(), key, value); } finally { reachabilityFence(this); } }
  /** The value as a UINT8 tensor. */
  public Tensor keyValueGet(String key, long timeoutMs) { try { return (Tensor) Value.of(NativeGen.serverKeyValueGet(h(), key, timeoutMs), true); } finally { reachabilityFence(this); } }
  public void barrier(String name, long timeoutMs) { try { NativeGen.serverBarrier(h(), name, timeoutMs); } finally { reachabilityFence(this); } }
  public void peerHealth() { try { NativeGen.serverPeerHealth(h()); } finally { reachabilityFence(this); } }
}
