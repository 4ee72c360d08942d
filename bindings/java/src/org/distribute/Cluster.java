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
}
