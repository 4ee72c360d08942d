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

  private static float[] readFloats(Variable v) {
    try (Value x = v.read()) {
      return ((Tensor) x).toFloatArray();
    }
  }

  private static float[] floatsOf(Value v) {
    return ((Tensor) v).toFloatArray();
  }

  /**
   * Variable.readAll and Variable.applyUpdates on a local ParameterServerStrategy whose
   * variables have 2 shards: the batch read equals the variables' own reads (a variable
   * twice, and a variable of no strategy read one by one beside them), and "sgd" on two
   * variables at once gives w - learning_rate * g, computed here, for each.
   */
  @Test
  void aBatchReadsAndUpdatesSeveralVariablesAtOnce() {
    try (ParameterServerOptions options = new ParameterServerOptions().fixedShards(2, 0);
        Strategy strategy = Strategy.parameterServer(null, null, options);
        Tensor plainInitial = floats(7, 8, 9);
        Variable plain = Variable.create(plainInitial, "plain_beside_ps")) {
      Variable w;
      Variable b;
      Variable c;
      try (Strategy.Scope scope = strategy.scope();
          Tensor wInitial = floats(1, 2, 3, 4);
          Tensor bInitial = floats(0.5f, -1.5f);
          Tensor cInitial = floats(10, 20, 30, 40, 50, 60)) {
        w = Variable.create(wInitial, "batch_w");
        b = Variable.create(bInitial, "batch_b");
        c = Variable.create(cInitial, "batch_c");
      }
      try (w; b; c) {
        assertEquals(2, w.numShards());
        assertEquals(2, c.numShards());
        Value[] read = Variable.readAll(w, b, c, w, plain);
        try {
          assertEquals(5, read.length);
          assertArrayEquals(new float[] {1, 2, 3, 4}, floatsOf(read[0]));
          assertArrayEquals(new float[] {0.5f, -1.5f}, floatsOf(read[1]));
          assertArrayEquals(new float[] {10, 20, 30, 40, 50, 60}, floatsOf(read[2]));
          assertArrayEquals(new float[] {1, 2, 3, 4}, floatsOf(read[3]));
          assertArrayEquals(new float[] {7, 8, 9}, floatsOf(read[4]));
          assertNotSame(read[0], read[3]);
          Variable[] each = {w, b, c, w, plain};
          for (int i = 0; i < each.length; i++) {
            assertInstanceOf(Tensor.class, read[i]);
            assertArrayEquals(readFloats(each[i]), floatsOf(read[i]), "variables[" + i + "]");
          }
        } finally {
          Value.closeAll(read);
        }

        // sgd on w and c at once: v - 0.25 * g, per variable with its own gradient.
        float[] wBefore = readFloats(w);
        float[] cBefore = readFloats(c);
        float[] gw = {2, 4, 6, 8};
        float[] gc = {1, -2, 3, -4, 5, -6};
        float lr = 0.25f;
        try (Tensor gradientW = floats(gw); Tensor gradientC = floats(gc)) {
          Variable.applyUpdates(new Variable[] {w, c}, "sgd", new Value[][] {{gradientW}, {gradientC}},
              new String[] {"learning_rate"}, new double[] {lr});
        }
        float[] wExpected = new float[gw.length];
        for (int i = 0; i < gw.length; i++) wExpected[i] = wBefore[i] - lr * gw[i];
        float[] cExpected = new float[gc.length];
        for (int i = 0; i < gc.length; i++) cExpected[i] = cBefore[i] - lr * gc[i];
        assertArrayEquals(new float[] {0.5f, 1, 1.5f, 2}, wExpected);
        assertArrayEquals(wExpected, readFloats(w), 1e-6f);
        assertArrayEquals(cExpected, readFloats(c), 1e-6f);
        assertArrayEquals(new float[] {0.5f, -1.5f}, readFloats(b), "b is not in the batch");
        Value[] after = Variable.readAll(c, w);
        try {
          assertArrayEquals(cExpected, floatsOf(after[0]), 1e-6f);
          assertArrayEquals(wExpected, floatsOf(after[1]), 1e-6f);
        } finally {
          Value.closeAll(after);
        }

        // A function without arguments: null args, and rows of none.
        AtomicInteger calls = new AtomicInteger();
        UpdateFunctions.register("java_batch_double", (variables, args, hyperparameters) -> {
          calls.incrementAndGet();
          FloatBuffer v = variables[0].data().asFloatBuffer();
          for (int i = 0; i < v.limit(); i++) v.put(i, 2 * v.get(i));
        }, 0);
        try {
          Variable.applyUpdates(new Variable[] {b}, "java_batch_double", null, null, null);
          Variable.applyUpdates(new Variable[] {b}, "java_batch_double", new Value[][] {{}}, null, null);
          assertArrayEquals(new float[] {2, -6}, readFloats(b));
          assertTrue(calls.get() >= 2, "calls: " + calls.get());
        } finally {
          UpdateFunctions.unregister("java_batch_double");
        }
      }
    }
  }

  /**
   * Misuse of the batch calls: an empty or null array, more than MAX_BATCH_VARIABLES, a null
   * entry, a closed variable or argument, a variable that is not a ParameterServerStrategy's,
   * a SyncOnRead variable with no cross-replica value, the wrong number, shape or kind of
   * arguments, an unknown function or hyperparameter. Refusals name the entry and write nothing.
   */
  @Test
  void theBatchCallsRefuseMisuse() {
    try (Strategy strategy = Strategy.parameterServer(null, null, null);
        Tensor plainInitial = floats(1, 2);
        Variable plain = Variable.create(plainInitial, "plain_not_on_a_ps")) {
      Variable w;
      Variable x;
      try (Strategy.Scope scope = strategy.scope(); Tensor initial = floats(1, 2); Tensor other = floats(3, 4, 5)) {
        w = Variable.create(initial, "misuse_w");
        x = Variable.create(other, "misuse_x");
      }
      try (w; x; Tensor g = floats(1, 1); Tensor gx = floats(1, 1, 1); Tensor wrongShape = floats(1, 2, 3, 4)) {
        String[] lrName = {"learning_rate"};
        double[] lr = {1.0};
        // Reads.
        assertStatus(Status.INVALID_ARGUMENT, "count is 0", () -> Variable.readAll());
        assertStatus(Status.INVALID_ARGUMENT, "count is 0", () -> Variable.readAll((Variable[]) null));
        Variable[] tooMany = new Variable[Variable.MAX_BATCH_VARIABLES + 1];
        java.util.Arrays.fill(tooMany, w);
        assertStatus(Status.INVALID_ARGUMENT, "65536", () -> Variable.readAll(tooMany));
        assertStatus(Status.INVALID_ARGUMENT, "variables[1]: variable is NULL", () -> Variable.readAll(w, null));
        // Updates.
        assertStatus(Status.INVALID_ARGUMENT, "count is 0",
            () -> Variable.applyUpdates(new Variable[0], "sgd", new Value[0][], lrName, lr));
        assertStatus(Status.INVALID_ARGUMENT, "count is 0", () -> Variable.applyUpdates(null, "sgd", null, lrName, lr));
        assertStatus(Status.INVALID_ARGUMENT, "variables[1]: variable is NULL",
            () -> Variable.applyUpdates(new Variable[] {w, null}, "sgd", new Value[][] {{g}, {g}}, lrName, lr));
        assertStatus(Status.INVALID_ARGUMENT, "variables[1]: variable 'plain_not_on_a_ps' is not a variable of a ParameterServerStrategy",
            () -> Variable.applyUpdates(new Variable[] {w, plain}, "sgd", new Value[][] {{g}, {g}}, lrName, lr));
        assertStatus(Status.INVALID_ARGUMENT, "variables[1]: args[0]",
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", new Value[][] {{g}, {wrongShape}}, lrName, lr));
        // "sgd" takes one argument per variable: two, or none, are refused.
        assertStatus(Status.INVALID_ARGUMENT, "takes 1 arguments but 2",
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", new Value[][] {{g, g}, {gx, gx}}, lrName, lr));
        assertStatus(Status.INVALID_ARGUMENT, "takes 1 arguments but 0",
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", null, lrName, lr));
        // An argument that is not a tensor (a variable).
        assertStatus(Status.INVALID_ARGUMENT, "variables[1]: args[0]",
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", new Value[][] {{g}, {x}}, lrName, lr));
        assertStatus(Status.INVALID_ARGUMENT, "rate",
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", new Value[][] {{g}, {gx}}, new String[] {"rate"}, lr));
        assertStatus(Status.NOT_FOUND, "no_such_function",
            () -> Variable.applyUpdates(new Variable[] {w, x}, "no_such_function", new Value[][] {{g}, {gx}}, null, null));
        assertStatus(Status.INVALID_ARGUMENT, "function is NULL",
            () -> Variable.applyUpdates(new Variable[] {w, x}, null, new Value[][] {{g}, {gx}}, null, null));
        // Refused in the binding: args of another shape than one row per variable, ragged
        // rows, hyperparameter arrays of different lengths.
        assertThrows(IllegalArgumentException.class,
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", new Value[][] {{g}}, lrName, lr));
        assertThrows(IllegalArgumentException.class,
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", new Value[][] {{g}, {gx, gx}}, lrName, lr));
        assertThrows(IllegalArgumentException.class,
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", new Value[][] {{g}, null}, lrName, lr));
        assertThrows(IllegalArgumentException.class,
            () -> Variable.applyUpdates(new Variable[] {w, x}, "sgd", new Value[][] {{g}, {gx}}, lrName, new double[0]));
        // Nothing above was applied.
        assertArrayEquals(new float[] {1, 2}, readFloats(w));
        assertArrayEquals(new float[] {3, 4, 5}, readFloats(x));
        // A closed variable or argument: IllegalStateException before the library is called.
        Variable closed;
        try (Strategy.Scope scope = strategy.scope(); Tensor initial = floats(1, 2)) {
          closed = Variable.create(initial, "misuse_closed");
        }
        closed.close();
        assertThrows(IllegalStateException.class, () -> Variable.readAll(w, closed));
        assertThrows(IllegalStateException.class,
            () -> Variable.applyUpdates(new Variable[] {w, closed}, "sgd", new Value[][] {{g}, {g}}, lrName, lr));
        Tensor closedArgument = floats(1, 1);
        closedArgument.close();
        assertThrows(IllegalStateException.class,
            () -> Variable.applyUpdates(new Variable[] {w}, "sgd", new Value[][] {{closedArgument}}, lrName, lr));
        assertArrayEquals(new float[] {1, 2}, readFloats(w));
      }
    }
    // A SyncOnRead variable with aggregation NONE has no cross-replica value: its read in a
    // batch fails naming its entry, and nothing is returned.
    try (Strategy mirrored = Strategy.mirrored(Util.cpus(2)); Tensor init = Tensor.scalar(3.0f)) {
      Variable v;
      Variable none;
      try (Strategy.Scope scope = mirrored.scope()) {
        v = Variable.create(init, "batch_mirrored");
        none = Variable.create(init, VariableSynchronization.ON_READ, VariableAggregation.NONE, "batch_on_read_none");
      }
      try (v; none) {
        assertStatus(Status.INVALID_ARGUMENT, "variables[1]: SyncOnReadVariable", () -> Variable.readAll(v, none));
        Value[] one = Variable.readAll(v);
        try {
          assertEquals(3.0f, ((Tensor) one[0]).scalarFloat());
        } finally {
          Value.closeAll(one);
        }
        assertStatus(Status.INVALID_ARGUMENT, "not a variable of a ParameterServerStrategy", () -> Variable.applyUpdates(new Variable[] {v}, "sgd",
            new Value[][] {{init}}, new String[] {"learning_rate"}, new double[] {1.0}));
      }
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
