package org.distribute;

/** dist_variable_sync_t (DIST_SYNC_*). */
public enum VariableSynchronization implements Enums.Coded {
  AUTO(0),
  NONE(1),
  ON_WRITE(2),
  ON_READ(3);

  private final int code;

  VariableSynchronization(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static VariableSynchronization of(int code) {
    return Enums.of(VariableSynchronization.class, code);
  }
}
