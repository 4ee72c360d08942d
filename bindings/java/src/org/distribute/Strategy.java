package org.distribute;

/** A distribution strategy (tf.distribute.Strategy and StrategyExtended). */
public final class Strategy extends Handle {
  Strategy(long handle, boolean owned) {
    super(handle, owned);
  }

  @Override
  void destroy(long handle) {
    NativeGen.strategyDestroy(handle);
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
    return new Strategy(NativeHand.createMirrored(devices == null || devices.length == 0 ? null : devices, h(ops)), true);
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
    return new Strategy(NativeGen.strategyCreateMultiWorkerMirrored(h(cluster), h(options)), true);
  }

  /**
   * ParameterServerStrategy for this worker of {@code cluster} (null: TF_CONFIG; unset or
   * without a cluster: local mode, the variables in this process). Null communication
   * options or placement options: the defaults.
   */
  public static Strategy parameterServer(Cluster cluster, CommunicationOptions communication, ParameterServerOptions options) {
    return new Strategy(NativeGen.strategyCreateParameterServer(h(cluster), h(communication), h(options)), true);
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
  public static void experimentalSetStrategy(Strategy strategy) { NativeGen.experimentalSetStrategy(h(strategy)); }

  public static ReduceOp lossReduction() { return ReduceOp.of(NativeGen.getLossReduction()); }

  // ---- Properties ----

  public StrategyKind kind() { return StrategyKind.of(NativeGen.strategyKind(h())); }
  public int numReplicasInSync() { return NativeGen.strategyNumReplicasInSync(h()); }
  public String workerDevice(int index) { return NativeGen.strategyWorkerDevice(h(), index); }
  public int parameterDeviceCount() { return NativeGen.strategyParameterDeviceCount(h()); }
  public String parameterDevice(int index) { return NativeGen.strategyParameterDevice(h(), index); }
  public void setTimeoutMs(long ms) { NativeGen.strategySetTimeoutMs(h(), ms); }

  /** Enters the scope on this thread; close the result to exit (try-with-resources). */
  public Scope scope() {
    NativeGen.strategyScopeEnter(h());
    return new Scope(this, false);
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
      if (colocation) NativeGen.strategyColocateVarsWithExit(strategy.h());
      else NativeGen.strategyScopeExit(strategy.h());
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
    Callbacks.State st = new Callbacks.State(fn);
    try {
      return Value.ofAll(NativeHand.run(h(), st, Value.handles(args), numResults), true);
    } catch (DistributeException e) {
      throw st.wrap(e);
    }
  }

  public Value distributeValuesFromFunction(Functions.ValueFunction fn) {
    Callbacks.State st = new Callbacks.State(fn);
    try {
      return Value.of(NativeHand.distributeValuesFromFunction(h(), st), true);
    } catch (DistributeException e) {
      throw st.wrap(e);
    }
  }

  public Value valueContainer(Value value) { return Value.of(NativeGen.strategyValueContainer(h(), h(value)), true); }

  /** Joins as replica {@code replicaId} on this thread; close the context to leave. */
  public ReplicaContext joinReplica(int replicaId) {
    return new ReplicaContext(NativeGen.strategyJoinReplica(h(), replicaId), true);
  }

  // ---- Cross-replica ----

  public Tensor reduce(ReduceOp op, Value value) { return (Tensor) Value.of(NativeGen.strategyReduce(h(), op.code(), h(value)), true); }
  public Value reduceAxis(ReduceOp op, Value value, int axis) { return Value.of(NativeGen.strategyReduceAxis(h(), op.code(), h(value), axis), true); }
  public Value gather(Value value, int axis) { return Value.of(NativeGen.strategyGather(h(), h(value), axis), true); }
  public Value reduceTo(ReduceOp op, Value value, Value destinations) { return Value.of(NativeGen.strategyReduceTo(h(), op.code(), h(value), h(destinations)), true); }
  public Value reduceToDevice(ReduceOp op, Value value, String device) { return Value.of(NativeGen.strategyReduceToDevice(h(), op.code(), h(value), device), true); }

  public Value[] batchReduceTo(ReduceOp op, Value[] values, Value[] destinations) {
    return Value.ofAll(NativeHand.batchReduceTo(h(), op.code(), Value.handles(values), Value.handles(destinations)), true);
  }

  /** StrategyExtended.update: fn per component of {@code variable}; group merges the results. */
  public Value update(Variable variable, Functions.UpdateFunction fn, boolean group, Value... args) {
    Callbacks.State st = new Callbacks.State(fn);
    try {
      return Value.of(NativeHand.update(h(), h(variable), st, Value.handles(args), group ? 1 : 0), true);
    } catch (DistributeException e) {
      throw st.wrap(e);
    }
  }

  /** colocate_vars_with; close the result to exit. */
  public Scope colocateVarsWith(Value variable) {
    NativeGen.strategyColocateVarsWithEnter(h(), h(variable));
    return new Scope(this, true);
  }

  public boolean variableCreatedInScope(Value variable) { return NativeGen.strategyVariableCreatedInScope(h(), h(variable)) != 0; }
  public void saveVariables(String path) { NativeGen.strategySaveVariables(h(), path); }
  public void restoreVariables(String path) { NativeGen.strategyRestoreVariables(h(), path); }

  // ---- Input ----

  public DistributedDataset distributeDataset(Dataset dataset, InputOptions options) {
    return new DistributedDataset(NativeGen.strategyDistributeDataset(h(), h(dataset), h(options)));
  }

  public DistributedDataset distributeDataset(Dataset dataset) { return distributeDataset(dataset, null); }

  public DistributedDataset distributeDatasetsFromFunction(Functions.DatasetFunction fn, InputOptions options) {
    Callbacks.State st = new Callbacks.State(fn);
    try {
      return new DistributedDataset(NativeHand.distributeDatasetsFromFunction(h(), st, h(options)));
    } catch (DistributeException e) {
      throw st.wrap(e);
    }
  }

  public DistributedIterator makeDatasetIterator(Dataset dataset) {
    return new DistributedIterator(NativeGen.strategyMakeDatasetIterator(h(), h(dataset)), 0, null);
  }

  public DistributedIterator makeInputFnIterator(Functions.DatasetFunction fn) {
    Callbacks.State st = new Callbacks.State(fn);
    try {
      long[] r = NativeHand.makeInputFnIterator(h(), st);
      return new DistributedIterator(r[0], r[1], st);
    } catch (DistributeException e) {
      throw st.wrap(e);
    }
  }
}
