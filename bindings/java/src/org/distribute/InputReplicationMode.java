package org.distribute;

/** dist_input_replication_mode_t (DIST_INPUT_*). */
public enum InputReplicationMode implements Enums.Coded {
  PER_WORKER(1),
  PER_REPLICA(2);

  private final int code;

  InputReplicationMode(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static InputReplicationMode of(int code) {
    return Enums.of(InputReplicationMode.class, code);
  }
}
