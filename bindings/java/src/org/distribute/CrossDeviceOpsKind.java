package org.distribute;

/** dist_cross_device_ops_kind_t (DIST_CROSS_DEVICE_OPS_*). */
public enum CrossDeviceOpsKind implements Enums.Coded {
  REDUCTION_TO_ONE_DEVICE(1),
  HIERARCHICAL_COPY(2),
  SHARED_MEMORY(3),
  NCCL_ALL_REDUCE(4);

  private final int code;

  CrossDeviceOpsKind(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static CrossDeviceOpsKind of(int code) {
    return Enums.of(CrossDeviceOpsKind.class, code);
  }
}
