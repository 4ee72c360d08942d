package org.distribute;

/** dist_strategy_kind_t (DIST_STRATEGY_*). */
public enum StrategyKind implements Enums.Coded {
  DEFAULT(1),
  ONE_DEVICE(2),
  MIRRORED(3),
  CENTRAL_STORAGE(4),
  MULTI_WORKER_MIRRORED(5),
  PARAMETER_SERVER(6);

  private final int code;

  StrategyKind(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static StrategyKind of(int code) {
    return Enums.of(StrategyKind.class, code);
  }
}
