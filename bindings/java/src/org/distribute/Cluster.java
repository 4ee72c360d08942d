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

  /**
   * The cluster of a Slurm job step for this task (dist_cluster_from_slurm, TF's
   * SlurmClusterResolver): {@code jobs} maps job names to task counts (null or empty: every
   * task a worker); portBase 0 means 8888; tasksPerNode 0 means Slurm's count.
   */
  public static Cluster fromSlurm(java.util.Map<String, Integer> jobs, int portBase, int tasksPerNode) {
    int n = jobs == null ? 0 : jobs.size();
    String[] names = new String[n];
    int[] counts = new int[n];
    int i = 0;
    if (jobs != null) {
      for (java.util.Map.Entry<String, Integer> e : jobs.entrySet()) {
        names[i] = e.getKey();
        counts[i++] = e.getValue() == null ? 0 : e.getValue();
      }
    }
    return new Cluster(NativeHand.clusterFromSlurm(names, counts, portBase, tasksPerNode));
  }

  /**
   * The cluster of a Kubernetes StatefulSet pod behind a headless service
   * (dist_cluster_from_statefulset); null or 0 arguments are read from POD_NAME/HOSTNAME,
   * DIST_K8S_SERVICE, DIST_K8S_REPLICAS and DIST_K8S_PORT.
   */
  public static Cluster fromStatefulSet(String podName, String service, int replicas, int port) {
    return new Cluster(NativeGen.clusterFromStatefulset(podName, service, replicas, port));
  }

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
