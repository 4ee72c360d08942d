package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** MultiWorkerMirrored's communication options (setters return this). */
public final class CommunicationOptions extends Handle {
  public CommunicationOptions() {
    super(NativeGen.communicationOptionsCreate(), true, NativeGen::communicationOptionsDestroy);
  }

  public CommunicationOptions implementation(CommunicationImplementation i) { try { NativeGen.communicationOptionsSetImplementation(h(), i.code()); return this; } finally { reachabilityFence(this); } }
  /** Shared memory between workers on one host: AUTO (DIST_SHARED_MEMORY, else when they share it), ON (required), OFF. */
  public CommunicationOptions sharedMemory(SharedMemoryMode mode) { try { NativeGen.communicationOptionsSetSharedMemory(h(), mode.code()); return this; } finally { reachabilityFence(this); } }
  public CommunicationOptions bytesPerPack(long bytes) { try { NativeGen.communicationOptionsSetBytesPerPack(h(), bytes); return this; } finally { reachabilityFence(this); } }
  public CommunicationOptions timeoutMs(long ms) { try { NativeGen.communicationOptionsSetTimeoutMs(h(), ms); return this; } finally { reachabilityFence(this); } }
  public CommunicationOptions replicasPerWorker(int n) { try { NativeGen.communicationOptionsSetReplicasPerWorker(h(), n); return this; } finally { reachabilityFence(this); } }
  /** The job token of the strategy's server (see {@link ServerOptions#jobToken}); null or "": DIST_JOB_TOKEN, or none. */
  public CommunicationOptions jobToken(String token) { try { NativeGen.communicationOptionsSetJobToken(h(), token); return this; } finally { reachabilityFence(this); } }
  /**
   * TLS for the strategy's server (see {@link ServerOptions#tlsFiles}); the files are read when
   * the strategy is created. All three null or "": the DIST_TLS_* environment variables, or none.
   */
  public CommunicationOptions tlsFiles(String certPath, String keyPath, String caPath) {
    try {
      NativeGen.communicationOptionsSetTlsFiles(h(), certPath, keyPath, caPath);
      return this;
    } finally {
      reachabilityFence(this);
    }
  }
}
