package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** How a MirroredStrategy reduces across devices. */
public final class CrossDeviceOps extends Handle {
  CrossDeviceOps(long handle) {
    super(handle, true, NativeGen::crossDeviceOpsDestroy);
  }

  public static CrossDeviceOps reductionToOneDevice(String device) { return new CrossDeviceOps(NativeGen.crossDeviceOpsCreateReductionToOneDevice(device)); }
  public static CrossDeviceOps hierarchicalCopy(int numPacks) { return new CrossDeviceOps(NativeGen.crossDeviceOpsCreateHierarchicalCopy(numPacks)); }
  public static CrossDeviceOps sharedMemory(long bytesPerPack) { return new CrossDeviceOps(NativeGen.crossDeviceOpsCreateSharedMemory(bytesPerPack)); }
  /** NcclAllReduce; only a strategy over GPU replicas accepts it. */
  public static CrossDeviceOps ncclAllReduce(int numPacks) { return new CrossDeviceOps(NativeGen.crossDeviceOpsCreateNcclAllReduce(numPacks)); }

  public CrossDeviceOpsKind kind() { try { return CrossDeviceOpsKind.of(NativeGen.crossDeviceOpsKind(h())); } finally { reachabilityFence(this); } }
}
