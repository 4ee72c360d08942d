package org.distribute;

/** dist_placement_policy_t (DIST_PLACEMENT_*): how a ParameterServerStrategy assigns variables (or shards) to ps tasks. */
public enum PlacementPolicy implements Enums.Coded {
  /** Task 0, 1, ..., n-1, 0, ... in creation order (TF's replica_device_setter default). */
  ROUND_ROBIN(0),
  /** The task with the fewest bytes placed so far, the lowest index on a tie. */
  GREEDY_BYTES(1);

  private final int code;

  PlacementPolicy(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static PlacementPolicy of(int code) {
    return Enums.of(PlacementPolicy.class, code);
  }
}
