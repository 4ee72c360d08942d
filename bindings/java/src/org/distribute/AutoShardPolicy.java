package org.distribute;

/** dist_auto_shard_policy_t (DIST_AUTO_SHARD_*). */
public enum AutoShardPolicy implements Enums.Coded {
  OFF(0),
  AUTO(1),
  FILE(2),
  DATA(3);

  private final int code;

  AutoShardPolicy(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static AutoShardPolicy of(int code) {
    return Enums.of(AutoShardPolicy.class, code);
  }
}
