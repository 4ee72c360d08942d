package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** A dataset distributed over a strategy's replicas. */
public final class DistributedDataset extends Handle {
  DistributedDataset(long handle) {
    super(handle, true, NativeGen::distributedDatasetDestroy);
  }

  public DistributedIterator iterator() { try { return new DistributedIterator(NativeGen.distributedDatasetMakeIterator(h()), 0, null); } finally { reachabilityFence(this); } }
  public int numComponents() { try { return NativeGen.distributedDatasetNumComponents(h()); } finally { reachabilityFence(this); } }
}
