package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/**
 * Where a ParameterServerStrategy puts its variables: the placement policy and the
 * partitioner (setters return this; each refused value throws and changes nothing).
 */
public final class ParameterServerOptions extends Handle {
  /** Round-robin placement and no partitioner. */
  public ParameterServerOptions() {
    super(NativeGen.parameterServerOptionsCreate(), true, NativeGen::parameterServerOptionsDestroy);
  }

  public ParameterServerOptions placement(PlacementPolicy policy) { try { NativeGen.parameterServerOptionsSetPlacement(h(), policy.code()); return this; } finally { reachabilityFence(this); } }
  /** fixed_size_partitioner(numShards, axis): 1 to 4096 shards along {@code axis}. */
  public ParameterServerOptions fixedShards(long numShards, int axis) { try { NativeGen.parameterServerOptionsSetFixedShards(h(), numShards, axis); return this; } finally { reachabilityFence(this); } }
  /** min_max_variable_partitioner(maxPartitions, axis, minSliceSize bytes). */
  public ParameterServerOptions minMaxShards(long maxPartitions, int axis, long minSliceSize) {
    try {
      NativeGen.parameterServerOptionsSetMinMaxShards(h(), maxPartitions, axis, minSliceSize);
      return this;
    } finally {
      reachabilityFence(this);
    }
  }
  /** variable_axis_size_partitioner(maxShardBytes, axis, maxShards); maxShards 0: no limit. */
  public ParameterServerOptions maxShardBytes(long maxShardBytes, int axis, long maxShards) {
    try {
      NativeGen.parameterServerOptionsSetMaxShardBytes(h(), maxShardBytes, axis, maxShards);
      return this;
    } finally {
      reachabilityFence(this);
    }
  }
  /** Back to no partitioner. */
  public ParameterServerOptions clearPartitioner() { try { NativeGen.parameterServerOptionsClearPartitioner(h()); return this; } finally { reachabilityFence(this); } }
}
