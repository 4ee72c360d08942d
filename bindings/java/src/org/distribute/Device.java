package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** A parsed device name. */
public final class Device extends Handle {
  Device(long handle) {
    super(handle, true, NativeGen::deviceDestroy);
  }

  public static Device parse(String name) { return new Device(NativeGen.deviceParse(name)); }
  /** Local device {@code index}. */
  public static Device local(int index) { return new Device(NativeGen.localDeviceGet(index)); }
  public static int localCount() { return NativeGen.localDeviceCount(); }
  public static void setLogicalCpuDeviceCount(int count) { NativeGen.setLogicalCpuDeviceCount(count); }
  public static String gpuUnavailableReason() { return NativeGen.gpuUnavailableReason(); }

  public String name() { try { return NativeGen.deviceName(h()); } finally { reachabilityFence(this); } }
  public String job() { try { return NativeGen.deviceJob(h()); } finally { reachabilityFence(this); } }
  public int replica() { try { return NativeGen.deviceReplica(h()); } finally { reachabilityFence(this); } }
  public int task() { try { return NativeGen.deviceTask(h()); } finally { reachabilityFence(this); } }
  public DeviceType type() { try { return DeviceType.of(NativeGen.deviceType(h())); } finally { reachabilityFence(this); } }
  public int index() { try { return NativeGen.deviceIndex(h()); } finally { reachabilityFence(this); } }
}
