package org.distribute;

/**
 * Where a ParameterServerStrategy puts its variables: the placement policy and the
 * partitioner (setters return this; each refused value throws and changes nothing).
 */
public final class ParameterServerOptions extends Handle {
  /** Round-robin placement and no partitioner. */
  public ParameterServerOptions() {
    super(NativeGen.parameterServerOptionsCreate(), true);
  }

  @Override
  void destroy(long handle) {
    NativeGen.parameterServerOptionsDestroy(handle);
  }

  public ParameterServerOptions placement(PlacementPolicy policy) { NativeGen.parameterServerOptionsSetPlacement(h(), policy.code()); return this; }
  /** fixed_size_partitioner(numShards, axis): 1 to 4096 shards along {@code axis}. */
  public ParameterServerOptions fixedShards(long numShards, int axis) { NativeGen.parameterServerOptionsSetFixedShards(h(), numShards, axis); return this; }
  /** min_max_variable_partitioner(maxPartitions, axis, minSliceSize bytes). */
  public ParameterServerOptions minMaxShards(long maxPartitions, int axis, long minSliceSize) {
    NativeGen.parameterServerOptionsSetMinMaxShards(h(), maxPartitions, axis, minSliceSize);
    return this;
  }
  /** variable_axis_size_partitioner(maxShardBytes, axis, maxShards); maxShards 0: no limit. */
  public ParameterServerOptions maxShardBytes(long maxShardBytes, int axis, long maxShards) {
    NativeGen.parameterServerOptionsSetMaxShardBytes(h(), maxShardBytes, axis, maxShards);
    return this;
  }
  /** Back to no partitioner. */
  public ParameterServerOptions clearPartitioner() { NativeGen.parameterServerOptionsClearPartitioner(h()); return this; }
}
