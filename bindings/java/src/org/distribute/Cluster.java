package org.distribute;

/** A cluster spec and the current task (TF_CONFIG). */
public final class Cluster extends Handle {
  Cluster(long handle) {
    super(handle, true);
  }

  public Cluster() {
    this(NativeGen.clusterCreate());
  }

  public static Cluster fromTfConfig(String json) { return new Cluster(NativeGen.clusterFromTfConfig(json)); }

  @Override
  void destroy(long handle) {
    NativeGen.clusterDestroy(handle);
  }

  public Cluster addTask(String job, int index, String address) { NativeGen.clusterAddTask(h(), job, index, address); return this; }
  public Cluster setTask(String job, int index) { NativeGen.clusterSetTask(h(), job, index); return this; }
  public String taskType() { return NativeGen.clusterTaskType(h()); }
  public int taskIndex() { return NativeGen.clusterTaskIndex(h()); }
  public boolean isChief() { return NativeGen.clusterIsChief(h()) != 0; }
  public int numWorkers() { return NativeGen.clusterNumWorkers(h()); }
  public int numTasks(String job) { return NativeGen.clusterNumTasks(h(), job); }
  public int taskIndexAt(String job, int position) { return NativeGen.clusterTaskIndexAt(h(), job, position); }
  public String taskAddress(String job, int index) { return NativeGen.clusterTaskAddress(h(), job, index); }
  /** TF_CONFIG's "rpc_layer" (e.g. "grpc"); "" when it has none or for a cluster built with {@link #Cluster()}. */
  public String rpcLayer() { return NativeGen.clusterRpcLayer(h()); }
  /** TF_CONFIG's "environment" (e.g. "cloud"); "" when it has none. */
  public String environment() { return NativeGen.clusterEnvironment(h()); }
  /**
   * TFConfigClusterResolver.master(): the current task's address, "rpc_layer://host:port" with an
   * rpc layer, "host:port" without; "" for a single-task cluster or no current task.
   */
  public String master() { return NativeGen.clusterMaster(h()); }
}
