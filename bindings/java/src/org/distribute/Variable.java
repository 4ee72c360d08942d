package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** A variable (plain, Mirrored or SyncOnRead, by the current strategy). */
public final class Variable extends Value {
  Variable(long handle, boolean owned) {
    super(handle, owned);
  }

  public static Variable create(Value initialValue, VariableSynchronization sync,
      VariableAggregation aggregation, String name) {
    try {
      return new Variable(NativeGen.variableCreate(h(initialValue), sync.code(), aggregation.code(), name), true);
    } finally {
      reachabilityFence(initialValue);
    }
  }

  public static Variable create(Value initialValue, String name) {
    return create(initialValue, VariableSynchronization.AUTO, VariableAggregation.NONE, name);
  }

  /** The most variables one {@link #readAll} or {@link #applyUpdates} takes (DIST_MAX_BATCH_VARIABLES). */
  public static final int MAX_BATCH_VARIABLES = 65536;

  /** The variable's value (for a distributed variable, as TF reads it). */
  public Value read() { try { return Value.of(NativeGen.variableRead(h()), true); } finally { reachabilityFence(this); } }

  /**
   * Reads 1 to {@link #MAX_BATCH_VARIABLES} variables in one call, each as {@link #read}
   * reads it, in their order (new tensors). A ParameterServerStrategy's variables are
   * fetched together, one call per ps task, the tasks at once; others are read one by one.
   * Each value is a snapshot of its variable, not the batch one snapshot of all of them. A
   * variable may appear more than once. On error nothing is returned and the message names
   * the entry ("variables[2]: ...").
   */
  public static Value[] readAll(Variable... variables) {
    try {
      return Value.ofAll(NativeHand.variablesRead(Value.handles(variables)), true);
    } finally {
      reachabilityFence(variables);
    }
  }

  public void assign(Value v) { try { NativeGen.variableAssign(h(), h(v)); } finally { reachabilityFence(this); reachabilityFence(v); } }
  public void assignAdd(Value v) { try { NativeGen.variableAssignAdd(h(), h(v)); } finally { reachabilityFence(this); reachabilityFence(v); } }
  public void assignSub(Value v) { try { NativeGen.variableAssignSub(h(), h(v)); } finally { reachabilityFence(this); reachabilityFence(v); } }
  public String name() { try { return NativeGen.variableName(h()); } finally { reachabilityFence(this); } }
  public int deviceCount() { try { return NativeGen.variableDeviceCount(h()); } finally { reachabilityFence(this); } }
  public String device(int index) { try { return NativeGen.variableDevice(h(), index); } finally { reachabilityFence(this); } }
  public VariableSynchronization synchronization() { try { return VariableSynchronization.of(NativeGen.variableSynchronization(h())); } finally { reachabilityFence(this); } }
  public VariableAggregation aggregation() { try { return VariableAggregation.of(NativeGen.variableAggregation(h())); } finally { reachabilityFence(this); } }

  /**
   * Applies registered update {@code function} (see {@link UpdateFunctions}) where the
   * variable lives, with {@code args} and hyperparameters overriding the function's
   * defaults (null: none). A variable of a ParameterServerStrategy only.
   */
  public void applyUpdate(String function, Value[] args, String[] hyperparameterNames, double[] hyperparameterValues) {
    try {
      UpdateFunctions.requireSameLength("hyperparameterNames", hyperparameterNames, "hyperparameterValues", hyperparameterValues);
      NativeHand.variableApplyUpdate(h(), function, Value.handles(args), hyperparameterNames, hyperparameterValues);
    } finally {
      reachabilityFence(this);
      reachabilityFence(args);
    }
  }

  /**
   * {@link #applyUpdate} on 1 to {@link #MAX_BATCH_VARIABLES} variables of
   * ParameterServerStrategies at once: {@code variables[i]} with its arguments
   * {@code args[i]} (one row per variable, every row of the same length; null: a function
   * without arguments), every one with the same function and hyperparameters (null: none).
   * Each ps task gets one call for all the shards it holds, the tasks at once. In replica
   * context every replica calls it with the same variables. Every update is attempted: the
   * first failure is thrown, naming its entry ("variables[2]: ..."), the others staying
   * applied; a bad variable, argument or hyperparameter is refused before anything is sent.
   * Another shape of {@code args}, or hyperparameter arrays of different lengths, is an
   * {@code IllegalArgumentException}.
   */
  public static void applyUpdates(Variable[] variables, String function, Value[][] args,
      String[] hyperparameterNames, double[] hyperparameterValues) {
    try {
      UpdateFunctions.requireSameLength("hyperparameterNames", hyperparameterNames, "hyperparameterValues", hyperparameterValues);
      int count = variables == null ? 0 : variables.length;
      int rows = args == null ? 0 : args.length;
      if (args != null && rows != count) {
        throw new IllegalArgumentException("args has " + rows + " rows but there are " + count + " variables: expected one row per variable");
      }
      int numArgs = rows == 0 || args[0] == null ? 0 : args[0].length;
      // Row-major, as the C call reads it: variable i's arguments at i * numArgs.
      long[] flat = new long[Math.multiplyExact(rows, numArgs)];
      for (int i = 0; i < rows; i++) {
        int n = args[i] == null ? 0 : args[i].length;
        if (n != numArgs) {
          throw new IllegalArgumentException("args[" + i + "] has " + n + " values but args[0] has " + numArgs
              + ": every variable takes the same number of arguments");
        }
        for (int j = 0; j < n; j++) flat[i * numArgs + j] = h(args[i][j]);
      }
      NativeHand.variablesApplyUpdate(Value.handles(variables), function, flat, numArgs, hyperparameterNames, hyperparameterValues);
    } finally {
      reachabilityFence(variables);
      reachabilityFence(args);
    }
  }

  /** The number of shards of a ParameterServerStrategy's variable (1 when unpartitioned). */
  public int numShards() { try { return NativeGen.variableNumShards(h()); } finally { reachabilityFence(this); } }
  /** The ps task index holding shard {@code index}. */
  public int shardTask(int index) { try { return NativeGen.variableShardTask(h(), index); } finally { reachabilityFence(this); } }
}
