package org.distribute;

/** A parsed device name. */
public final class Device extends Handle {
  Device(long handle) {
    super(handle, true);
  }

  public static Device parse(String name) { return new Device(NativeGen.deviceParse(name)); }
  /** Local device {@code index}. */
  public static Device local(int index) { return new Device(NativeGen.localDeviceGet(index)); }
  public static int localCount() { return NativeGen.localDeviceCount(); }
  public static void setLogicalCpuDeviceCount(int count) { NativeGen.setLogicalCpuDeviceCount(count); }
  public static String gpuUnavailableReason() { return NativeGen.gpuUnavailableReason(); }

  @Override
  void destroy(long handle) {
    NativeGen.deviceDestroy(handle);
  }

  public String name() { return NativeGen.deviceName(h()); }
  public String job() { return NativeGen.deviceJob(h()); }
  public int replica() { return NativeGen.deviceReplica(h()); }
  public int task() { return NativeGen.deviceTask(h()); }
  public DeviceType type() { return DeviceType.of(NativeGen.deviceType(h())); }
  public int index() { return NativeGen.deviceIndex(h()); }
}
