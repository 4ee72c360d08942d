package org.distribute;

/** MultiWorkerMirrored's communication options (setters return this). */
public final class CommunicationOptions extends Handle {
  public CommunicationOptions() {
    super(NativeGen.communicationOptionsCreate(), true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.communicationOptionsDestroy(handle);
  }

  public CommunicationOptions implementation(CommunicationImplementation i) { NativeGen.communicationOptionsSetImplementation(h(), i.code()); return this; }
  /** Shared memory between workers on one host: AUTO (DIST_SHARED_MEMORY, else when they share it), ON (required), OFF. */
  public CommunicationOptions sharedMemory(SharedMemoryMode mode) { NativeGen.communicationOptionsSetSharedMemory(h(), mode.code()); return this; }
  public CommunicationOptions bytesPerPack(long bytes) { NativeGen.communicationOptionsSetBytesPerPack(h(), bytes); return this; }
  public CommunicationOptions timeoutMs(long ms) { NativeGen.communicationOptionsSetTimeoutMs(h(), ms); return this; }
  public CommunicationOptions replicasPerWorker(int n) { NativeGen.communicationOptionsSetReplicasPerWorker(h(), n); return this; }
  /** The job token of the strategy's server (see {@link ServerOptions#jobToken}); null or "": DIST_JOB_TOKEN, or none. */
  public CommunicationOptions jobToken(String token) { NativeGen.communicationOptionsSetJobToken(h(), token); return this; }
  /**
   * TLS for the strategy's server (see {@link ServerOptions#tlsFiles}); the files are read when
   * the strategy is created. All three null or "": the DIST_TLS_* environment variables, or none.
   */
  public CommunicationOptions tlsFiles(String certPath, String keyPath, String caPath) {
    NativeGen.communicationOptionsSetTlsFiles(h(), certPath, keyPath, caPath);
    return this;
  }
}
