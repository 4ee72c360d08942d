package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.io.IOException;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Owned handles a program forgets to close are released by the binding's Cleaner once
 * their Java objects are unreachable (issue 42: 200 strategies never closed left 220
 * threads after System.gc()). Each test observes the release itself, bounded by a timeout:
 * the library's threads a strategy starts ending (/proc/self/task), a wrapped buffer's release
 * callback running, a dataset function becoming collectable, or
 * {@link Handle#cleanedCount}. Borrowed handles, handles given to the library and closed
 * handles are never released by it.
 */
class CleanerTest {
  /** How long the collector and the Cleaner get before a test fails (never hangs). */
  private static final long WAIT_MS = 60_000;

  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  /** System.gc() until {@code done} holds; fails after WAIT_MS. */
  private static void collectUntil(String what, BooleanSupplier done) throws InterruptedException {
    long end = System.nanoTime() + WAIT_MS * 1_000_000;
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > end) fail("not released after " + WAIT_MS + " ms: " + what);
      System.gc();
      Thread.sleep(20);
    }
  }

  /**
   * The library's threads in this process (/proc/self/task: native threads, which are not
   * all Java threads), by name ("dist-replica-1", ...): the JVM's own threads (GC workers
   * it may start at any time) are not counted.
   */
  private static int libraryThreads() {
    String[] tasks = new File("/proc/self/task").list();
    assertNotNull(tasks, "/proc/self/task");
    int n = 0;
    for (String t : tasks) {
      try {
        if (Files.readString(Path.of("/proc/self/task", t, "comm")).startsWith("dist-")) n++;
      } catch (IOException gone) {
        // the thread ended while we looked
      }
    }
    return n;
  }

  /** A wrapped tensor whose release the counter sees (the library releases the buffer once). */
  private static Tensor counted(AtomicInteger released) {
    ByteBuffer b = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
    b.putFloat(0, 1.5f).putFloat(4, 2.5f);
    return Tensor.wrap(DType.FLOAT32, new long[] {2}, b, null, released::incrementAndGet);
  }

  /** Drops a counted tensor unclosed and waits until the Cleaner released it. */
  private static void cleanerRanOnce() throws InterruptedException {
    AtomicInteger sentinel = new AtomicInteger();
    dropCounted(sentinel);
    collectUntil("a sentinel tensor", () -> sentinel.get() == 1);
  }

  private static void dropCounted(AtomicInteger released) {
    counted(released); // unclosed, unreachable once this returns
  }

  /** The case: 200 MirroredStrategies never closed; their threads end after GC. */
  @Test
  void strategiesNeverClosedReleaseTheirThreads() throws Exception {
    try (Strategy warm = Strategy.mirrored(Util.cpus(2))) {
      warm.run((ctx, args) -> null, 0); // threads the library starts once are started
    }
    long cleanedBefore = Handle.cleanedCount(Strategy.class);
    int before = libraryThreads();
    int peak = makeStrategies(200);
    assertTrue(peak >= before + 200, "200 strategies held " + (peak - before) + " library threads");
    collectUntil("200 strategies' threads (" + libraryThreads() + " library threads, " + before + " before, "
        + peak + " at the peak)", () -> libraryThreads() <= before + 2);
    assertTrue(Handle.cleanedCount(Strategy.class) >= cleanedBefore + 200);
  }

  /**
   * Makes n two-replica strategies and runs each once (its threads start); returns the
   * library's thread count while all are held, then drops them, none closed.
   */
  private static int makeStrategies(int n) {
    List<Strategy> held = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Strategy s = Strategy.mirrored(Util.cpus(2));
      s.run((ctx, args) -> null, 0);
      held.add(s);
    }
    return libraryThreads();
  }

  /** A wrapped tensor never closed: the Cleaner releases it (the library calls onRelease once). */
  @Test
  void tensorNeverClosedIsReleased() throws Exception {
    AtomicInteger released = new AtomicInteger();
    long before = Handle.cleanedCount(Tensor.class);
    dropCounted(released);
    collectUntil("an unclosed tensor", () -> released.get() == 1);
    assertTrue(Handle.cleanedCount(Tensor.class) > before);
    cleanerRanOnce();
    assertEquals(1, released.get(), "released once");
  }

  /** close() releases at once, twice is nothing, and the Cleaner never releases it again. */
  @Test
  void closeReleasesOnceAndClearsTheRegistration() throws Exception {
    AtomicInteger released = new AtomicInteger();
    closeTwice(released);
    assertEquals(1, released.get(), "close() released it");
    cleanerRanOnce();
    cleanerRanOnce();
    assertEquals(1, released.get(), "the Cleaner did not release a closed tensor again");
  }

  private static void closeTwice(AtomicInteger released) {
    Tensor t = counted(released);
    t.close();
    t.close();
    assertTrue(t.isClosed());
    assertThrows(IllegalStateException.class, t::toFloatArray);
  }

  /** A data() view keeps the memory of a tensor nobody closes until the view is gone too. */
  @Test
  void dataViewKeepsTheTensor() throws Exception {
    AtomicInteger released = new AtomicInteger();
    ByteBuffer[] view = {viewOfDroppedTensor(released)};
    cleanerRanOnce();
    cleanerRanOnce();
    assertEquals(0, released.get(), "released while its data() view is reachable");
    assertEquals(2.5f, view[0].asFloatBuffer().get(1));
    view[0] = null;
    collectUntil("a tensor whose view was dropped", () -> released.get() == 1);
  }

  private static ByteBuffer viewOfDroppedTensor(AtomicInteger released) {
    return counted(released).data();
  }

  /**
   * Values a callback returns are given to the library, and callback arguments are borrowed:
   * the Cleaner releases neither (the results and the caller's own argument stay valid).
   */
  @Test
  void givenAwayAndBorrowedHandlesAreNotReleased() throws Exception {
    try (Strategy s = Strategy.mirrored(Util.cpus(2)); Tensor x = Tensor.scalar(3.0f)) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      List<Value[]> kept = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        kept.add(s.run((ctx, args) -> {
          Tensor arg = (Tensor) args[0]; // borrowed
          return new Value[] {Tensor.scalar(arg.scalarFloat() + ctx.replicaId())};
        }, 1, x));
      }
      cleanerRanOnce();
      cleanerRanOnce();
      assertEquals(3.0f, x.scalarFloat());
      for (Value[] r : kept) {
        try (Value v = r[0]; Tensor t0 = v.componentTensor(0); Tensor t1 = v.componentTensor(1)) {
          assertEquals(3.0f, t0.scalarFloat());
          assertEquals(4.0f, t1.scalarFloat());
        }
      }
    }
  }

  /** The dataset function of makeInputFnIterator is let go when the Cleaner releases the iterator. */
  @Test
  void inputFnIteratorReleasesItsFunction() throws Exception {
    try (Strategy s = Strategy.mirrored(Util.cpus(2))) {
      WeakReference<Object> fn = dropInputFnIterator(s);
      collectUntil("an unclosed iterator's dataset function", () -> fn.get() == null);
    }
  }

  private static WeakReference<Object> dropInputFnIterator(Strategy s) {
    long stop = 8; // captured: a new function object (a lambda capturing nothing is a shared constant)
    Functions.DatasetFunction f = ctx -> Dataset.range(0, stop, 1).batch(2, false);
    s.makeInputFnIterator(f); // unclosed
    return new WeakReference<>(f);
  }

  /** One handle of every owned class, none closed: the Cleaner releases every one. */
  @Test
  void everyOwnedHandleClassIsReleased() throws Exception {
    Map<Class<? extends Handle>, Long> before = new LinkedHashMap<>();
    for (Class<? extends Handle> c : List.of(Tensor.class, Value.class, Variable.class, Strategy.class,
        Dataset.class, DistributedDataset.class, DistributedIterator.class, InputOptions.class,
        InputContext.class, Device.class, CrossDeviceOps.class, CommunicationOptions.class, Cluster.class,
        ServerOptions.class, Server.class, ParameterServerOptions.class, ClosureArgs.class)) {
      before.put(c, Handle.cleanedCount(c));
    }
    makeOneOfEach(Util.freePorts(1)[0]);
    for (Map.Entry<Class<? extends Handle>, Long> e : before.entrySet()) {
      collectUntil("an unclosed " + e.getKey().getSimpleName(),
          () -> Handle.cleanedCount(e.getKey()) > e.getValue());
    }
  }

  private static void makeOneOfEach(int port) {
    Strategy s = Strategy.mirrored(Util.cpus(2));
    Tensor a = Tensor.scalar(1.0f);
    Tensor b = Tensor.scalar(2.0f);
    Value perReplica = Value.perReplica(a, b);
    assertEquals(ValueKind.PER_REPLICA, perReplica.kind());
    Strategy.Scope scope = s.scope();
    Variable v = Variable.create(a, "java_cleaner_variable");
    scope.close();
    assertEquals(1.0f, ((Tensor) v.read()).scalarFloat());
    Dataset d = Dataset.range(0, 8, 1).batch(4, false);
    InputOptions options = new InputOptions();
    DistributedDataset dist = s.distributeDataset(d, options);
    DistributedIterator it = dist.iterator();
    assertEquals(2, it.next(1)[0].numComponents());
    InputContext.create(1, 0, 2);
    Device.parse("/job:worker/task:0/device:CPU:0");
    CrossDeviceOps.hierarchicalCopy(1);
    new CommunicationOptions().timeoutMs(1000);
    new ParameterServerOptions();
    new ClosureArgs().add(a);
    Cluster c = new Cluster().addTask("worker", 0, "127.0.0.1:" + port).setTask("worker", 0);
    ServerOptions so = new ServerOptions().startupTimeoutMs(5000);
    Server server = new Server(c, so);
    assertEquals(port, server.port());
  }

  /**
   * A coordinator, its remote values and per-worker datasets, none closed: the Cleaner
   * releases each (a RemoteValue or PerWorker keeps its Coordinator until it goes itself).
   */
  @Test
  void coordinatorFamilyIsReleased() throws Exception {
    Coordinator.registerClosure("java_cleaner_twice", (strategy, args) -> {
      float x = ((Tensor) args.value(0)).scalarFloat();
      return Tensor.scalar(2 * x);
    });
    Coordinator.registerDatasetFunction("java_cleaner_data", ctx -> Dataset.range(0, 4, 1));
    long[] before = {Handle.cleanedCount(Coordinator.class), Handle.cleanedCount(RemoteValue.class),
        Handle.cleanedCount(PerWorker.class)};
    int[] ports = Util.freePorts(3); // chief, worker 0, ps 0
    List<Server> servers = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    try {
      for (String job : new String[] {"worker", "ps"}) {
        Thread t = new Thread(() -> {
          try (Cluster c = cluster(ports, job)) {
            Server server = new Server(c, null); // returns once the chief is up
            synchronized (servers) { servers.add(server); }
          }
        });
        t.start();
        threads.add(t);
      }
      assertEquals(6.0f, scheduleAndDrop(ports, threads, servers));
      collectUntil("an unclosed Coordinator", () -> Handle.cleanedCount(Coordinator.class) > before[0]);
      collectUntil("unclosed RemoteValues", () -> Handle.cleanedCount(RemoteValue.class) >= before[1] + 4);
      collectUntil("unclosed PerWorkers", () -> Handle.cleanedCount(PerWorker.class) >= before[2] + 2);
    } finally {
      for (Thread t : threads) t.join(Util.TIMEOUT_MS);
      for (Server server : servers) server.close();
      Coordinator.unregisterClosure("java_cleaner_twice");
      Coordinator.unregisterDatasetFunction("java_cleaner_data");
    }
  }

  private static Cluster cluster(int[] ports, String job) {
    return new Cluster()
        .addTask("chief", 0, "localhost:" + ports[0])
        .addTask("worker", 0, "localhost:" + ports[1])
        .addTask("ps", 0, "localhost:" + ports[2])
        .setTask(job, 0);
  }

  /** On the chief: a strategy, a coordinator, 4 closures and 2 per-worker values; closes none. */
  private static float scheduleAndDrop(int[] ports, List<Thread> threads, List<Server> servers)
      throws InterruptedException {
    Strategy strategy = Strategy.parameterServer(cluster(ports, "chief"), null, null);
    for (Thread t : threads) t.join(Util.TIMEOUT_MS);
    synchronized (servers) {
      assertEquals(2, servers.size());
    }
    Coordinator coordinator = new Coordinator(strategy);
    List<RemoteValue> values = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      values.add(coordinator.schedule("java_cleaner_twice", new ClosureArgs().add(Tensor.scalar((float) i))));
    }
    coordinator.createPerWorkerDataset("java_cleaner_data", null).makeIterator();
    coordinator.join();
    return ((Tensor) values.get(3).fetch()).scalarFloat();
  }
}
