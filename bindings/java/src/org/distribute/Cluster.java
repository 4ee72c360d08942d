package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** A cluster spec and the current task (TF_CONFIG). */
public final class Cluster extends Handle {
  Cluster(long handle) {
    super(handle, true, NativeGen::clusterDestroy);
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

  public Cluster addTask(String job, int index, String address) { try { NativeGen.clusterAddTask(h(), job, index, address); return this; } finally { reachabilityFence(this); } }
  public Cluster setTask(String job, int index) { try { NativeGen.clusterSetTask(h(), job, index); return this; } finally { reachabilityFence(this); } }
  public String taskType() { try { return NativeGen.clusterTaskType(h()); } finally { reachabilityFence(this); } }
  public int taskIndex() { try { return NativeGen.clusterTaskIndex(h()); } finally { reachabilityFence(this); } }
  public boolean isChief() { try { return NativeGen.clusterIsChief(h()) != 0; } finally { reachabilityFence(this); } }
  public int numWorkers() { try { return NativeGen.clusterNumWorkers(h()); } finally { reachabilityFence(this); } }
  public int numTasks(String job) { try { return NativeGen.clusterNumTasks(h(), job); } finally { reachabilityFence(this); } }
  public int taskIndexAt(String job, int position) { try { return NativeGen.clusterTaskIndexAt(h(), job, position); } finally { reachabilityFence(this); } }
  public String taskAddress(String job, int index) { try { return NativeGen.clusterTaskAddress(h(), job, index); } finally { reachabilityFence(this); } }
  /** TF_CONFIG's "rpc_layer" (e.g. "grpc"); "" when it has none or for a cluster built with {@link #Cluster()}. */
  public String rpcLayer() { try { return NativeGen.clusterRpcLayer(h()); } finally { reachabilityFence(this); } }
  /** TF_CONFIG's "environment" (e.g. "cloud"); "" when it has none. */
  public String environment() { try { return NativeGen.clusterEnvironment(h()); } finally { reachabilityFence(this); } }
  /**
   * TFConfigClusterResolver.master(): the current task's address, "rpc_layer://host:port" with an
   * rpc layer, "host:port" without; "" for a single-task cluster or no current task.
   */
  public String master() { try { return NativeGen.clusterMaster(h()); } finally { reachabilityFence(this); } }
}
