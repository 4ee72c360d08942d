package org.distribute;

/** A variable (plain, Mirrored or SyncOnRead, by the current strategy). */
public final class Variable extends Value {
  Variable(long handle, boolean owned) {
    super(handle, owned);
  }

  public static Variable create(Value initialValue, VariableSynchronization sync,
      VariableAggregation aggregation, String name) {
    return new Variable(NativeGen.variableCreate(h(initialValue), sync.code(), aggregation.code(), name), true);
  }

  public static Variable create(Value initialValue, String name) {
    return create(initialValue, VariableSynchronization.AUTO, VariableAggregation.NONE, name);
  }

  /** The variable's value (for a distributed variable, as TF reads it). */
  public Value read() { return Value.of(NativeGen.variableRead(h()), true); }
  public void assign(Value v) { NativeGen.variableAssign(h(), h(v)); }
  public void assignAdd(Value v) { NativeGen.variableAssignAdd(h(), h(v)); }
  public void assignSub(Value v) { NativeGen.variableAssignSub(h(), h(v)); }
  public String name() { return NativeGen.variableName(h()); }
  public int deviceCount() { return NativeGen.variableDeviceCount(h()); }
  public String device(int index) { return NativeGen.variableDevice(h(), index); }
  public VariableSynchronization synchronization() { return VariableSynchronization.of(NativeGen.variableSynchronization(h())); }
  public VariableAggregation aggregation() { return VariableAggregation.of(NativeGen.variableAggregation(h())); }

  /**
   * Applies registered update {@code function} (see {@link UpdateFunctions}) where the
   * variable lives, with {@code args} and hyperparameters overriding the function's
   * defaults (null: none). A variable of a ParameterServerStrategy only.
   */
  public void applyUpdate(String function, Value[] args, String[] hyperparameterNames, double[] hyperparameterValues) {
    UpdateFunctions.requireSameLength("hyperparameterNames", hyperparameterNames, "hyperparameterValues", hyperparameterValues);
    NativeHand.variableApplyUpdate(h(), function, Value.handles(args), hyperparameterNames, hyperparameterValues);
  }

  /** The number of shards of a ParameterServerStrategy's variable (1 when unpartitioned). */
  public int numShards() { return NativeGen.variableNumShards(h()); }
  /** The ps task index holding shard {@code index}. */
  public int shardTask(int index) { return NativeGen.variableShardTask(h(), index); }
}
