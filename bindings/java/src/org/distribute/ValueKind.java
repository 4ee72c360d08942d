package org.distribute;

/** dist_value_kind_t (DIST_VALUE_*). */
public enum ValueKind implements Enums.Coded {
  TENSOR(1),
  PER_REPLICA(2),
  MIRRORED(3),
  MIRRORED_VARIABLE(4),
  SYNC_ON_READ_VARIABLE(5),
  VARIABLE(6);

  private final int code;

  ValueKind(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static ValueKind of(int code) {
    return Enums.of(ValueKind.class, code);
  }
}
