package org.distribute;

/** dist_variable_aggregation_t (DIST_AGGREGATION_*). */
public enum VariableAggregation implements Enums.Coded {
  NONE(0),
  SUM(1),
  MEAN(2),
  ONLY_FIRST_REPLICA(3);

  private final int code;

  VariableAggregation(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static VariableAggregation of(int code) {
    return Enums.of(VariableAggregation.class, code);
  }
}
