package org.distribute;

/** The callback types of the C API, as functional interfaces (use lambdas). */
public final class Functions {
  private Functions() {}

  /** dist_replica_fn: runs on each replica's thread; returns up to numResults new values. */
  @FunctionalInterface
  public interface ReplicaFunction {
    Value[] call(ReplicaContext context, Value[] args) throws Exception;
  }

  /** dist_value_fn: replica {@code replicaId}'s component. */
  @FunctionalInterface
  public interface ValueFunction {
    Value create(int replicaId, int numReplicas) throws Exception;
  }

  /** dist_update_fn: called per component of the variable; may return a new value or null. */
  @FunctionalInterface
  public interface UpdateFunction {
    Value update(Variable component, Value[] args) throws Exception;
  }

  /** dist_merge_fn: runs once, in cross-replica context; may return a new value or null. */
  @FunctionalInterface
  public interface MergeFunction {
    Value merge(Strategy strategy, Value[] args) throws Exception;
  }

  /** dist_generator_fn: element {@code index}, or null at the end. */
  @FunctionalInterface
  public interface Generator {
    Value[] next(long index) throws Exception;
  }

  /** dist_map_fn. */
  @FunctionalInterface
  public interface MapFunction {
    Value[] apply(Value[] inputs) throws Exception;
  }

  /** dist_dataset_fn: this input pipeline's dataset (handed to the library). */
  @FunctionalInterface
  public interface DatasetFunction {
    Dataset create(InputContext context) throws Exception;
  }

  /**
   * dist_registered_update_fn: runs where the variable lives (a ps task's thread, or the
   * caller's in local mode) with every other update of it held off. {@code variables} are
   * the variable and then its slots, whose memory ({@link Tensor#data}) is the stored value:
   * write them in place. {@code hyperparameters} holds every declared one, resolved, in
   * declaration order. Throw to refuse (after writing nothing). Must not call back into
   * strategies or variables.
   */
  @FunctionalInterface
  public interface RegisteredUpdateFunction {
    void apply(Tensor[] variables, Tensor[] args, java.util.Map<String, Double> hyperparameters) throws Exception;
  }

  /**
   * dist_closure_fn: a function the coordinator schedules, run on a worker with the
   * worker's ParameterServerStrategy and the resolved arguments (both borrowed for the
   * call). Returns a tensor (handed to the library: the remote value's result) or null.
   */
  @FunctionalInterface
  public interface ClosureFunction {
    Value run(Strategy strategy, ClosureArgs args) throws Exception;
  }
}
