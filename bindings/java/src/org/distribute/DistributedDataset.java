package org.distribute;

/** A dataset distributed over a strategy's replicas. */
public final class DistributedDataset extends Handle {
  DistributedDataset(long handle) {
    super(handle, true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.distributedDatasetDestroy(handle);
  }

  public DistributedIterator iterator() { return new DistributedIterator(NativeGen.distributedDatasetMakeIterator(h()), 0, null); }
  public int numComponents() { return NativeGen.distributedDatasetNumComponents(h()); }
}
