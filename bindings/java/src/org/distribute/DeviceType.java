package org.distribute;

/** dist_device_type_t (DIST_DEVICE_*). */
public enum DeviceType implements Enums.Coded {
  CPU(1),
  GPU(2);

  private final int code;

  DeviceType(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static DeviceType of(int code) {
    return Enums.of(DeviceType.class, code);
  }
}
