package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** A per-worker dataset or iterator of a {@link Coordinator} (dist_per_worker_t). */
public final class PerWorker extends Handle {
  /** Keeps the coordinator reachable: its release drops the workers' resources. */
  private final Coordinator coordinator;

  PerWorker(long handle, Coordinator coordinator) {
    super(handle, true, NativeGen::perWorkerDestroy);
    this.coordinator = coordinator;
  }

  /** iter(per_worker_dataset): a fresh pass on every worker. */
  public PerWorker makeIterator() { try { return new PerWorker(NativeGen.perWorkerMakeIterator(h()), coordinator); } finally { reachabilityFence(this); } }
}
