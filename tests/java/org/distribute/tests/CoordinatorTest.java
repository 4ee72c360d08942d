package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The coordinator from Java: registration round trips and refusals, closure arguments, a
 * coordinator refused over a local-mode strategy, and one job in this process (a ps task, a
 * worker task whose server runs a Java closure, and the chief's strategy and coordinator on
 * free loopback ports) whose closures add to a ps variable and return twice their argument.
 */
class CoordinatorTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  private static void assertStatus(Status expected, Runnable call) {
    DistributeException e = assertThrows(DistributeException.class, call::run);
    assertEquals(expected, e.getStatus(), e.getMessage());
  }

  @Test
  void registrationAndArguments() {
    Coordinator.registerClosure("java_noop", (s, a) -> null);
    assertStatus(Status.ALREADY_EXISTS, () -> Coordinator.registerClosure("java_noop", (s, a) -> null));
    assertTrue(Coordinator.isClosureRegistered("java_noop"));
    Coordinator.unregisterClosure("java_noop");
    assertFalse(Coordinator.isClosureRegistered("java_noop"));
    assertStatus(Status.NOT_FOUND, () -> Coordinator.unregisterClosure("java_noop"));
    Coordinator.registerDatasetFunction("java_data", c -> Dataset.range(0, 4, 1));
    Coordinator.unregisterDatasetFunction("java_data");
    try (ClosureArgs args = new ClosureArgs(); Tensor x = Tensor.scalar(3.0f)) {
      args.add(x);
      assertEquals(1, args.count());
      assertEquals(ClosureArgs.Kind.TENSOR, args.kind(0));
      assertEquals(3.0f, ((Tensor) args.value(0)).toFloatArray()[0]);
      assertStatus(Status.OUT_OF_RANGE, () -> args.kind(1));
      assertStatus(Status.INVALID_ARGUMENT, () -> args.iterator(0));
    }
    try (Strategy local = Strategy.parameterServer(null, null, null)) {
      assertStatus(Status.INVALID_ARGUMENT, () -> new Coordinator(local));
    }
  }

  @Test
  void closuresRunOnAWorkerOfThisProcess() throws Exception {
    Coordinator.registerClosure("java_add_and_double", (strategy, args) -> {
      Variable counter = (Variable) args.value(0);
      float x = ((Tensor) args.value(1)).toFloatArray()[0];
      try (Tensor one = Tensor.scalar(1.0f)) {
        counter.assignAdd(one);
      }
      return Tensor.scalar(2 * x);
    });
    // Distinct: the sockets are held together while the ports are picked.
    int[] ports = Util.freePorts(3); // chief, worker 0, ps 0
    java.util.function.Function<String, Cluster> clusterAs = job -> new Cluster()
        .addTask("chief", 0, "localhost:" + ports[0])
        .addTask("worker", 0, "localhost:" + ports[1])
        .addTask("ps", 0, "localhost:" + ports[2])
        .setTask(job, 0);
    List<Server> servers = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (String job : new String[] {"worker", "ps"}) {
      Thread t = new Thread(() -> {
        try (Cluster c = clusterAs.apply(job)) {
          Server s = new Server(c, null);
          synchronized (servers) { servers.add(s); }
        }
      });
      t.start();
      threads.add(t);
    }
    try (Cluster chief = clusterAs.apply("chief");
         Strategy strategy = Strategy.parameterServer(chief, null, null)) {
      for (Thread t : threads) t.join();
      assertEquals(2, servers.size());
      try (Coordinator coordinator = new Coordinator(strategy)) {
        Variable counter;
        try (Strategy.Scope scope = strategy.scope(); Tensor zero = Tensor.scalar(0.0f)) {
          counter = Variable.create(zero, VariableSynchronization.AUTO, VariableAggregation.SUM, "java_counter");
        }
        List<RemoteValue> values = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
          try (ClosureArgs args = new ClosureArgs(); Tensor x = Tensor.scalar((float) i)) {
            values.add(coordinator.schedule("java_add_and_double", args.add(counter).add(x)));
          }
        }
        coordinator.join();
        for (int i = 0; i < values.size(); i++) {
          assertTrue(values.get(i).isReady());
          try (Value r = values.get(i).fetch()) {
            assertEquals(2.0f * i, ((Tensor) r).toFloatArray()[0]);
          }
          values.get(i).close();
        }
        try (Value total = counter.read()) {
          assertEquals(10.0f, ((Tensor) total).toFloatArray()[0]);
        }
        assertEquals(1, coordinator.numWorkers());
        assertTrue(coordinator.done());
        coordinator.schedule("java_unknown", null).close();
        assertStatus(Status.NOT_FOUND, coordinator::join);
        try (PerWorker dataset = coordinator.createPerWorkerDataset("java_none", null);
             PerWorker iterator = dataset.makeIterator();
             PerWorker fromFunction = coordinator.createPerWorkerDatasetFromFunction("java_none", null);
             ClosureArgs args = new ClosureArgs()) {
          args.addPerWorker(iterator);
          assertEquals(ClosureArgs.Kind.ITERATOR, args.kind(0));
          assertStatus(Status.INVALID_ARGUMENT, () -> args.addPerWorker(dataset));
        }
        counter.close();
      }
    } finally {
      for (Server s : servers) s.close();
    }
  }
}
