package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ParameterServerStrategy from Java: the placement options and their refusals, the registry
 * of update functions (a Java function registered and unregistered, the built-ins kept), and
 * a local-mode strategy (no TF_CONFIG) whose variable is updated by "sgd" and by a Java
 * function, with the values the TF rules give.
 */
class ParameterServerTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  private static void assertStatus(Status expected, String messagePart, Runnable call) {
    DistributeException e = assertThrows(DistributeException.class, call::run);
    assertEquals(expected, e.getStatus(), e.getMessage());
    assertTrue(e.getMessage().contains(messagePart), e.getMessage());
  }

  @Test
  void optionsAcceptWhatTheHeaderAllowsAndRefuseTheRest() {
    try (ParameterServerOptions o = new ParameterServerOptions()) {
      assertSame(o, o.placement(PlacementPolicy.GREEDY_BYTES).placement(PlacementPolicy.ROUND_ROBIN));
      assertSame(o, o.fixedShards(1, 0).fixedShards(4096, 2));
      assertSame(o, o.minMaxShards(8, 0, 262144));
      assertSame(o, o.maxShardBytes(1 << 20, 0, 0).maxShardBytes(64, 1, 16));
      assertSame(o, o.clearPartitioner());
      assertStatus(Status.INVALID_ARGUMENT, "num_shards", () -> o.fixedShards(0, 0));
      assertStatus(Status.INVALID_ARGUMENT, "4096", () -> o.fixedShards(4097, 0));
      assertStatus(Status.INVALID_ARGUMENT, "axis", () -> o.fixedShards(2, -1));
      assertStatus(Status.INVALID_ARGUMENT, "max_partitions", () -> o.minMaxShards(0, 0, 1));
      assertStatus(Status.INVALID_ARGUMENT, "min_slice_size", () -> o.minMaxShards(2, 0, 0));
      assertStatus(Status.INVALID_ARGUMENT, "max_shard_bytes", () -> o.maxShardBytes(0, 0, 0));
      assertStatus(Status.INVALID_ARGUMENT, "max_shards", () -> o.maxShardBytes(64, 0, -1));
      assertThrows(NullPointerException.class, () -> o.placement(null));
      assertEquals(PlacementPolicy.GREEDY_BYTES, PlacementPolicy.of(1));
      o.close();
      assertThrows(IllegalStateException.class, () -> o.fixedShards(2, 0));
    }
  }

  @Test
  void aJavaFunctionIsRegisteredAndUnregistered() {
    String name = "java_registered";
    assertFalse(UpdateFunctions.isRegistered(name));
    UpdateFunctions.register(name, (variables, args, hyperparameters) -> {}, 1,
        new String[] {"m"}, new double[] {0.0}, new String[] {"lr", "decay"}, new double[] {0.1, Double.NaN});
    assertTrue(UpdateFunctions.isRegistered(name));
    assertStatus(Status.ALREADY_EXISTS, name, () -> UpdateFunctions.register(name, (v, a, h) -> {}, 1));
    UpdateFunctions.unregister(name);
    assertFalse(UpdateFunctions.isRegistered(name));
    assertStatus(Status.NOT_FOUND, name, () -> UpdateFunctions.unregister(name));
    // The built-ins stay.
    for (String builtin : new String[] {"sgd", "momentum", "nesterov_momentum", "adagrad", "adam"}) {
      assertTrue(UpdateFunctions.isRegistered(builtin));
      assertStatus(Status.FAILED_PRECONDITION, builtin, () -> UpdateFunctions.unregister(builtin));
    }
    // Refusals register nothing.
    assertStatus(Status.INVALID_ARGUMENT, "num_args", () -> UpdateFunctions.register(name, (v, a, h) -> {}, 17));
    assertStatus(Status.INVALID_ARGUMENT, "name", () -> UpdateFunctions.register("", (v, a, h) -> {}, 1));
    assertThrows(IllegalArgumentException.class, () -> UpdateFunctions.register(name, (v, a, h) -> {}, 1,
        new String[] {"m", "v"}, new double[] {0.0}, null, null));
    assertThrows(NullPointerException.class, () -> UpdateFunctions.register(name, null, 1));
    assertFalse(UpdateFunctions.isRegistered(name));
  }

  private static Tensor floats(float... values) {
    return Tensor.create(new long[] {values.length}, values);
  }

  @Test
  void aLocalStrategyAppliesSgdAndAJavaFunction() {
    AtomicInteger calls = new AtomicInteger();
    List<String> seenHyperparameters = new ArrayList<>();
    // variable += scale * arg; the slot "steps" counts the calls (starting at 10).
    Functions.RegisteredUpdateFunction scaledAdd = (variables, args, hyperparameters) -> {
      calls.incrementAndGet();
      seenHyperparameters.add(hyperparameters.toString());
      float scale = hyperparameters.get("scale").floatValue();
      FloatBuffer variable = variables[0].data().asFloatBuffer();
      FloatBuffer steps = variables[1].data().asFloatBuffer();
      float[] arg = args[0].toFloatArray();
      for (int i = 0; i < arg.length; i++) {
        variable.put(i, variable.get(i) + scale * arg[i]);
        steps.put(i, steps.get(i) + 1);
      }
    };
    UpdateFunctions.register("java_scaled_add", scaledAdd, 1, new String[] {"steps"}, new double[] {10.0},
        new String[] {"scale"}, new double[] {1.0});
    try (Strategy strategy = Strategy.parameterServer(null, null, null)) {
      Variable w;
      try (Strategy.Scope scope = strategy.scope(); Tensor initial = floats(1, 2)) {
        w = Variable.create(initial, "w");
      }
      try (w) {
        assertEquals(1, w.numShards());
        assertEquals(0, w.shardTask(0));
        assertStatus(Status.OUT_OF_RANGE, "", () -> w.shardTask(1));
        // sgd: w - 0.5 * [2, 4] = [0, 0].
        try (Tensor gradient = floats(2, 4)) {
          w.applyUpdate("sgd", new Value[] {gradient}, new String[] {"learning_rate"}, new double[] {0.5});
        }
        try (Value v = w.read()) {
          assertArrayEquals(new float[] {0, 0}, ((Tensor) v).toFloatArray());
        }
        // The Java function, its default scale then 3: [0,0] + [1,2] + 3*[1,2] = [4, 8].
        try (Tensor arg = floats(1, 2)) {
          w.applyUpdate("java_scaled_add", new Value[] {arg}, null, null);
          w.applyUpdate("java_scaled_add", new Value[] {arg}, new String[] {"scale"}, new double[] {3.0});
        }
        assertEquals(2, calls.get());
        assertEquals(List.of("{scale=1.0}", "{scale=3.0}"), seenHyperparameters);
        try (Value v = w.read()) {
          assertArrayEquals(new float[] {4, 8}, ((Tensor) v).toFloatArray());
        }
        // Refused before the function runs: an undeclared hyperparameter, a wrong count.
        try (Tensor arg = floats(1, 2)) {
          assertStatus(Status.INVALID_ARGUMENT, "rate", () -> w.applyUpdate("java_scaled_add",
              new Value[] {arg}, new String[] {"rate"}, new double[] {1.0}));
          assertStatus(Status.NOT_FOUND, "no_such_function", () -> w.applyUpdate("no_such_function",
              new Value[] {arg}, null, null));
        }
        assertEquals(2, calls.get());
        // A Java exception fails the update and writes nothing.
        UpdateFunctions.register("java_failing", (v, a, h) -> { throw new IllegalArgumentException("no"); }, 0);
        assertStatus(Status.INVALID_ARGUMENT, "java_failing", () -> w.applyUpdate("java_failing", null, null, null));
        try (Value v = w.read()) {
          assertArrayEquals(new float[] {4, 8}, ((Tensor) v).toFloatArray());
        }
      }
    } finally {
      UpdateFunctions.unregister("java_scaled_add");
      if (UpdateFunctions.isRegistered("java_failing")) UpdateFunctions.unregister("java_failing");
    }
  }

  @Test
  void applyUpdateRefusesAVariableOfAnotherStrategyAndMismatchedArrays() {
    try (Tensor t = floats(1, 2); Variable v = Variable.create(t, "not_on_a_ps")) {
      assertThrows(IllegalArgumentException.class,
          () -> v.applyUpdate("sgd", new Value[] {t}, new String[] {"learning_rate"}, new double[0]));
      assertStatus(Status.INVALID_ARGUMENT, "variable",
          () -> v.applyUpdate("sgd", new Value[] {t}, new String[] {"learning_rate"}, new double[] {0.5}));
      assertStatus(Status.INVALID_ARGUMENT, "variable", () -> v.numShards());
    }
  }
}
