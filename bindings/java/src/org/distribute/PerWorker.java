package org.distribute;

/** A per-worker dataset or iterator of a {@link Coordinator} (dist_per_worker_t). */
public final class PerWorker extends Handle {
  PerWorker(long handle) {
    super(handle, true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.perWorkerDestroy(handle);
  }

  /** iter(per_worker_dataset): a fresh pass on every worker. */
  public PerWorker makeIterator() { return new PerWorker(NativeGen.perWorkerMakeIterator(h())); }
}
