package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** A distribution strategy (tf.distribute.Strategy and StrategyExtended). */
public final class Strategy extends Handle {
  Strategy(long handle, boolean owned) {
    super(handle, owned, NativeGen::strategyDestroy);
  }

  // ---- Factories ----

  public static Strategy oneDevice(String device) {
    return new Strategy(NativeGen.strategyCreateOneDevice(device), true);
  }

  /** MirroredStrategy over {@code devices} (none: every local device). */
  public static Strategy mirrored(String... devices) {
    return mirrored(null, devices);
  }

  public static Strategy mirrored(CrossDeviceOps ops, String... devices) {
    try {
      return new Strategy(NativeHand.createMirrored(devices == null || devices.length == 0 ? null : devices, h(ops)), true);
    } finally {
      reachabilityFence(ops);
    }
  }

  /** CentralStorageStrategy; {@code parameterDevice} may be null. */
  public static Strategy centralStorage(String[] computeDevices, String parameterDevice) {
    return new Strategy(NativeHand.createCentralStorage(
        computeDevices == null || computeDevices.length == 0 ? null : computeDevices, parameterDevice), true);
  }

  /**
   * MultiWorkerMirroredStrategy; null cluster reads TF_CONFIG (unset, "", "{}" or no cluster in it:
   * one local worker, no server), null options the defaults.
   */
  public static Strategy multiWorkerMirrored(Cluster cluster, CommunicationOptions options) {
    try {
      return new Strategy(NativeGen.strategyCreateMultiWorkerMirrored(h(cluster), h(options)), true);
    } finally {
      reachabilityFence(cluster);
      reachabilityFence(options);
    }
  }

  /**
   * ParameterServerStrategy for this worker of {@code cluster} (null: TF_CONFIG; unset or
   * without a cluster: local mode, the variables in this process). Null communication
   * options or placement options: the defaults.
   */
  public static Strategy parameterServer(Cluster cluster, CommunicationOptions communication, ParameterServerOptions options) {
    try {
      return new Strategy(NativeGen.strategyCreateParameterServer(h(cluster), h(communication), h(options)), true);
    } finally {
      reachabilityFence(cluster);
      reachabilityFence(communication);
      reachabilityFence(options);
    }
  }

  /** A new reference to the default strategy. */
  public static Strategy defaultStrategy() {
    return new Strategy(NativeGen.strategyGetDefault(), true);
  }

  /** A new reference to the current strategy (dist_get_strategy). */
  public static Strategy current() {
    return new Strategy(NativeGen.getStrategy(), true);
  }

  public static boolean hasStrategy() { return NativeGen.hasStrategy() != 0; }
  public static boolean inCrossReplicaContext() { return NativeGen.inCrossReplicaContext() != 0; }

  /** The current replica context (borrowed), or null in cross-replica context. */
  public static ReplicaContext currentReplicaContext() {
    long c = NativeGen.currentReplicaContext();
    return c == 0 ? null : new ReplicaContext(c, false);
  }

  /** dist_experimental_set_strategy (null restores the default). */
  public static void experimentalSetStrategy(Strategy strategy) { try { NativeGen.experimentalSetStrategy(h(strategy)); } finally { reachabilityFence(strategy); } }

  public static ReduceOp lossReduction() { return ReduceOp.of(NativeGen.getLossReduction()); }

  // ---- Properties ----

  public StrategyKind kind() { try { return StrategyKind.of(NativeGen.strategyKind(h())); } finally { reachabilityFence(this); } }
  public int numReplicasInSync() { try { return NativeGen.strategyNumReplicasInSync(h()); } finally { reachabilityFence(this); } }
  public String workerDevice(int index) { try { return NativeGen.strategyWorkerDevice(h(), index); } finally { reachabilityFence(this); } }
  public int parameterDeviceCount() { try { return NativeGen.strategyParameterDeviceCount(h()); } finally { reachabilityFence(this); } }
  public String parameterDevice(int index) { try { return NativeGen.strategyParameterDevice(h(), index); } finally { reachabilityFence(this); } }
  public void setTimeoutMs(long ms) { try { NativeGen.strategySetTimeoutMs(h(), ms); } finally { reachabilityFence(this); } }

  /** Enters the scope on this thread; close the result to exit (try-with-resources). */
  public Scope scope() {
    try {
      NativeGen.strategyScopeEnter(h());
      return new Scope(this, false);
    } finally {
      reachabilityFence(this);
    }
  }

  /** A scope (or a colocation) to close on the thread that opened it. */
  public static final class Scope implements AutoCloseable {
    private final Strategy strategy;
    private final boolean colocation;
    private boolean open = true;

    Scope(Strategy strategy, boolean colocation) {
      this.strategy = strategy;
      this.colocation = colocation;
    }

    @Override
    public void close() {
      if (!open) return;
      open = false;
      try {
        if (colocation) NativeGen.strategyColocateVarsWithExit(strategy.h());
        else NativeGen.strategyScopeExit(strategy.h());
      } finally {
        reachabilityFence(strategy);
      }
    }
  }

  // ---- Running ----

  /**
   * Runs {@code fn} once per replica (replica 0 on this thread, the others on the library's
   * threads) and returns the merged results (numResults slots, null where no replica
   * filled one). A Java exception in {@code fn} fails the run; it is the cause of the
   * DistributeException thrown here.
   */
  public Value[] run(Functions.ReplicaFunction fn, int numResults, Value... args) {
    try {
      Callbacks.State st = new Callbacks.State(fn);
      try {
        return Value.ofAll(NativeHand.run(h(), st, Value.handles(args), numResults), true);
      } catch (DistributeException e) {
        throw st.wrap(e);
      }
    } finally {
      reachabilityFence(this);
      reachabilityFence(args);
    }
  }

  public Value distributeValuesFromFunction(Functions.ValueFunction fn) {
    try {
      Callbacks.State st = new Callbacks.State(fn);
      try {
        return Value.of(NativeHand.distributeValuesFromFunction(h(), st), true);
      } catch (DistributeException e) {
        throw st.wrap(e);
      }
    } finally {
      reachabilityFence(this);
    }
  }

  public Value valueContainer(Value value) { try { return Value.of(NativeGen.strategyValueContainer(h(), h(value)), true); } finally { reachabilityFence(this); reachabilityFence(value); } }

  /** Joins as replica {@code replicaId} on this thread; close the context to leave. */
  public ReplicaContext joinReplica(int replicaId) {
    try {
      return new ReplicaContext(NativeGen.strategyJoinReplica(h(), replicaId), true);
    } finally {
      reachabilityFence(this);
    }
  }

  // ---- Cross-replica ----

  public Tensor reduce(ReduceOp op, Value value) { try { return (Tensor) Value.of(NativeGen.strategyReduce(h(), op.code(), h(value)), true); } finally { reachabilityFence(this); reachabilityFence(value); } }
  public Value reduceAxis(ReduceOp op, Value value, int axis) { try { return Value.of(NativeGen.strategyReduceAxis(h(), op.code(), h(value), axis), true); } finally { reachabilityFence(this); reachabilityFence(value); } }
  public Value gather(Value value, int axis) { try { return Value.of(NativeGen.strategyGather(h(), h(value), axis), true); } finally { reachabilityFence(this); reachabilityFence(value); } }
  public Value reduceTo(ReduceOp op, Value value, Value destinations) { try { return Value.of(NativeGen.strategyReduceTo(h(), op.code(), h(value), h(destinations)), true); } finally { reachabilityFence(this); reachabilityFence(value); reachabilityFence(destinations); } }
  public Value reduceToDevice(ReduceOp op, Value value, String device) { try { return Value.of(NativeGen.strategyReduceToDevice(h(), op.code(), h(value), device), true); } finally { reachabilityFence(this); reachabilityFence(value); } }

  public Value[] batchReduceTo(ReduceOp op, Value[] values, Value[] destinations) {
    try {
      return Value.ofAll(NativeHand.batchReduceTo(h(), op.code(), Value.handles(values), Value.handles(destinations)), true);
    } finally {
      reachabilityFence(this);
      reachabilityFence(values);
      reachabilityFence(destinations);
    }
  }

  /** StrategyExtended.update: fn per component of {@code variable}; group merges the results. */
  public Value update(Variable variable, Functions.UpdateFunction fn, boolean group, Value... args) {
    try {
      Callbacks.State st = new Callbacks.State(fn);
      try {
        return Value.of(NativeHand.update(h(), h(variable), st, Value.handles(args), group ? 1 : 0), true);
      } catch (DistributeException e) {
        throw st.wrap(e);
      }
    } finally {
      reachabilityFence(this);
      reachabilityFence(variable);
      reachabilityFence(args);
    }
  }

  /** colocate_vars_with; close the result to exit. */
  public Scope colocateVarsWith(Value variable) {
    try {
      NativeGen.strategyColocateVarsWithEnter(h(), h(variable));
      return new Scope(this, true);
    } finally {
      reachabilityFence(this);
      reachabilityFence(variable);
    }
  }

  public boolean variableCreatedInScope(Value variable) { try { return NativeGen.strategyVariableCreatedInScope(h(), h(variable)) != 0; } finally { reachabilityFence(this); reachabilityFence(variable); } }
  public void saveVariables(String path) { try { NativeGen.strategySaveVariables(h(), path); } finally { reachabilityFence(this); } }
  public void restoreVariables(String path) { try { NativeGen.strategyRestoreVariables(h(), path); } finally { reachabilityFence(this); } }

  // ---- Input ----

  public DistributedDataset distributeDataset(Dataset dataset, InputOptions options) {
    try {
      return new DistributedDataset(NativeGen.strategyDistributeDataset(h(), h(dataset), h(options)));
    } finally {
      reachabilityFence(this);
      reachabilityFence(dataset);
      reachabilityFence(options);
    }
  }

  public DistributedDataset distributeDataset(Dataset dataset) { return distributeDataset(dataset, null); }

  public DistributedDataset distributeDatasetsFromFunction(Functions.DatasetFunction fn, InputOptions options) {
    try {
      Callbacks.State st = new Callbacks.State(fn);
      try {
        return new DistributedDataset(NativeHand.distributeDatasetsFromFunction(h(), st, h(options)));
      } catch (DistributeException e) {
        throw st.wrap(e);
      }
    } finally {
      reachabilityFence(this);
      reachabilityFence(options);
    }
  }

  public DistributedIterator makeDatasetIterator(Dataset dataset) {
    try {
      return new DistributedIterator(NativeGen.strategyMakeDatasetIterator(h(), h(dataset)), 0, null);
    } finally {
      reachabilityFence(this);
      reachabilityFence(dataset);
    }
  }

  public DistributedIterator makeInputFnIterator(Functions.DatasetFunction fn) {
    try {
      Callbacks.State st = new Callbacks.State(fn);
      try {
        long[] r = NativeHand.makeInputFnIterator(h(), st);
        return new DistributedIterator(r[0], r[1], st);
      } catch (DistributeException e) {
        throw st.wrap(e);
      }
    } finally {
      reachabilityFence(this);
    }
  }
}
