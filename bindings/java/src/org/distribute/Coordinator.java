package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/**
 * The coordinator of TF 2 parameter-server training (dist_coordinator_t, TF's
 * ClusterCoordinator), created on the chief over a ParameterServerStrategy. Worker and ps
 * tasks register the same closure and dataset functions ({@link #registerClosure},
 * {@link #registerDatasetFunction}) and serve with a {@link Server}.
 */
public final class Coordinator extends Handle {
  public Coordinator(Strategy strategy) {
    super(create(strategy), true, NativeGen::coordinatorDestroy);
  }

  private static long create(Strategy strategy) {
    try {
      return NativeGen.coordinatorCreate(Handle.h(strategy));
    } finally {
      reachabilityFence(strategy);
    }
  }

  /** Registers closure function {@code name} in this process; kept until unregistered. */
  public static void registerClosure(String name, Functions.ClosureFunction fn) {
    NativeHand.closureRegister(name, new Callbacks.State(fn));
  }

  public static void unregisterClosure(String name) { NativeGen.closureUnregister(name); }

  public static boolean isClosureRegistered(String name) { return NativeGen.closureIsRegistered(name) != 0; }

  /** Registers dataset function {@code name} for per-worker datasets. */
  public static void registerDatasetFunction(String name, Functions.DatasetFunction fn) {
    NativeHand.datasetFunctionRegister(name, new Callbacks.State(fn));
  }

  public static void unregisterDatasetFunction(String name) { NativeGen.datasetFunctionUnregister(name); }

  /** Schedules registered closure {@code function} with {@code args} (may be null). */
  public RemoteValue schedule(String function, ClosureArgs args) {
    try {
      return new RemoteValue(NativeGen.coordinatorSchedule(h(), function, Handle.h(args)), this);
    } finally {
      reachabilityFence(this);
      reachabilityFence(args);
    }
  }

  public void join() { try { NativeGen.coordinatorJoin(h()); } finally { reachabilityFence(this); } }

  public boolean done() { try { return NativeGen.coordinatorDone(h()) != 0; } finally { reachabilityFence(this); } }

  public int numWorkers() { try { return NativeGen.coordinatorNumWorkers(h()); } finally { reachabilityFence(this); } }

  /** A per-worker dataset distributed as distribute_dataset does (options may be null). */
  public PerWorker createPerWorkerDataset(String datasetFunction, InputOptions options) {
    try {
      return new PerWorker(NativeGen.coordinatorCreatePerWorkerDataset(h(), datasetFunction, Handle.h(options)), this);
    } finally {
      reachabilityFence(this);
      reachabilityFence(options);
    }
  }

  /** A per-worker dataset as distribute_datasets_from_function makes it (options may be null). */
  public PerWorker createPerWorkerDatasetFromFunction(String datasetFunction, InputOptions options) {
    try {
      return new PerWorker(
          NativeGen.coordinatorCreatePerWorkerDatasetFromFunction(h(), datasetFunction, Handle.h(options)), this);
    } finally {
      reachabilityFence(this);
      reachabilityFence(options);
    }
  }
}
