package org.distribute;

/** dist_reduce_op_t (DIST_REDUCE_*). */
public enum ReduceOp implements Enums.Coded {
  SUM(1),
  MEAN(2),
  MIN(3),
  MAX(4),
  PRODUCT(5);

  private final int code;

  ReduceOp(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static ReduceOp of(int code) {
    return Enums.of(ReduceOp.class, code);
  }
}
