package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.concurrent.atomic.AtomicInteger;
import org.distribute.*;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The worked examples of tf.distribute.StrategyExtended's reference page (as in
 * tests/c/test_reference_examples.c), written with Java lambdas:
 *
 *   def merge_fn(strategy, value, var):
 *     reduced = strategy.extended.batch_reduce_to(SUM, [(value, var)])[0]   # or reduce_to
 *     strategy.extended.update(var, lambda var, value: var.assign(value), args=(reduced,))
 *   value = tf.identity(1.); get_replica_context().merge_call(merge_fn, args=(value, var))
 *
 * gives {2.0, 2.0} under Mirrored(2), 2.0 under CentralStorage(2), 1.0 under OneDevice.
 */
class ReferenceExamplesTest {
  @BeforeAll
  static void setUp() {
    Util.setUp();
  }

  private static final class Counts {
    final AtomicInteger merges = new AtomicInteger();
    final AtomicInteger assigns = new AtomicInteger();
  }

  private static Variable runExample(Strategy s, boolean useReduceTo, Counts counts) {
    Variable v;
    try (Strategy.Scope scope = s.scope(); Tensor zero = Tensor.scalar(0.0f)) {
      v = Variable.create(zero, "Variable");
      s.run((ctx, args) -> {
        try (Tensor value = Tensor.create(new long[0], new float[] {1.0f}, ctx.device())) {
          Value merged = ctx.mergeCall((strategy, margs) -> {
            counts.merges.incrementAndGet();
            assertEquals(2, margs.length);
            Value reduced = useReduceTo
                ? strategy.reduceTo(ReduceOp.SUM, margs[0], margs[1])
                : strategy.batchReduceTo(ReduceOp.SUM, new Value[] {margs[0]}, new Value[] {margs[1]})[0];
            try (reduced;
                Value updated = strategy.update((Variable) margs[1], (var, uargs) -> {
                  counts.assigns.incrementAndGet();
                  var.assign(uargs[0]);
                  return null;
                }, true, reduced)) {
              return null;
            }
          }, value, args[0]);
          assertNull(merged);
        }
        return null;
      }, 0, v);
    }
    assertEquals(1, counts.merges.get());
    return v;
  }

  private static void expectVariable(Variable v, float expected) {
    try (Value read = v.read()) {
      assertEquals(expected, ((Tensor) read).scalarFloat());
    }
  }

  private void checkMirrored(boolean useReduceTo) {
    try (Strategy s = Strategy.mirrored("CPU:0", "CPU:1")) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      Counts c = new Counts();
      try (Variable v = runExample(s, useReduceTo, c)) {
        assertEquals(ValueKind.MIRRORED_VARIABLE, v.kind());
        assertEquals(2, v.numComponents());
        assertEquals("Variable", v.name());
        assertEquals(2, c.assigns.get());
        for (int i = 0; i < 2; i++) {
          try (Tensor t = v.componentTensor(i)) {
            assertEquals(2.0f, t.scalarFloat());
          }
        }
        expectVariable(v, 2.0f);
      }
    }
  }

  private void checkCentralStorage(boolean useReduceTo) {
    try (Strategy s = Strategy.centralStorage(new String[] {"CPU:0", "CPU:1"}, "CPU:0")) {
      s.setTimeoutMs(Util.TIMEOUT_MS);
      Counts c = new Counts();
      try (Variable v = runExample(s, useReduceTo, c)) {
        assertEquals(ValueKind.VARIABLE, v.kind());
        assertEquals(1, v.numComponents());
        assertEquals(1, c.assigns.get());
        expectVariable(v, 2.0f);
        try (Tensor read = (Tensor) v.read()) {
          assertEquals("/device:CPU:0", read.device());
        }
      }
    }
  }

  private void checkOneDevice(boolean useReduceTo) {
    try (Strategy s = Strategy.oneDevice("CPU:0")) {
      Counts c = new Counts();
      try (Variable v = runExample(s, useReduceTo, c)) {
        assertEquals(ValueKind.VARIABLE, v.kind());
        assertEquals(1, c.assigns.get());
        expectVariable(v, 1.0f);
      }
    }
  }

  @Test void batchReduceToMirrored() { checkMirrored(false); }
  @Test void batchReduceToCentralStorage() { checkCentralStorage(false); }
  @Test void batchReduceToOneDevice() { checkOneDevice(false); }
  @Test void reduceToMirrored() { checkMirrored(true); }
  @Test void reduceToCentralStorage() { checkCentralStorage(true); }
  @Test void reduceToOneDevice() { checkOneDevice(true); }

  /** v = Variable(5.0, aggregation=SUM); update(v, lambda v: v.assign(1.0)) gives Mirrored {1.0, 1.0}. */
  @Test
  void updateExample() {
    try (Strategy s = Strategy.mirrored("CPU:0", "CPU:1"); Tensor five = Tensor.scalar(5.0f)) {
      Variable v;
      try (Strategy.Scope scope = s.scope()) {
        v = Variable.create(five, VariableSynchronization.AUTO, VariableAggregation.SUM, null);
      }
      try (v) {
        assertEquals(VariableAggregation.SUM, v.aggregation());
        try (Value result = s.update(v, (var, args) -> {
          assertEquals(0, args.length);
          try (Tensor one = Tensor.scalar(1.0f)) {
            var.assign(one);
          }
          return var.read();
        }, true)) {
          assertEquals(ValueKind.MIRRORED, result.kind());
          assertEquals(2, result.numComponents());
          for (int i = 0; i < 2; i++) {
            try (Tensor c = (Tensor) result.component(i)) {
              assertEquals(1.0f, c.scalarFloat());
              assertEquals("/device:CPU:" + i, c.device());
            }
          }
        }
        expectVariable(v, 1.0f);
      }
    }
  }

  /** A partial batch of 6 split [0,1,2,3] / [4,5]: reduce(MEAN, axis=0) is 15 / 6 = 2.5, not 3. */
  @Test
  void reduceAxisPartialBatch() {
    try (Strategy s = Strategy.mirrored("CPU:0", "CPU:1");
        Tensor a = Tensor.create(new long[] {4}, new float[] {0, 1, 2, 3}, "CPU:0");
        Tensor b = Tensor.create(new long[] {2}, new float[] {4, 5}, "CPU:1");
        Value partial = Value.perReplica(a, b)) {
      DistributeException e = assertThrows(DistributeException.class, () -> s.reduce(ReduceOp.SUM, partial));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      try (Tensor mean = (Tensor) s.reduceAxis(ReduceOp.MEAN, partial, 0);
          Tensor sum = (Tensor) s.reduceAxis(ReduceOp.SUM, partial, 0);
          Tensor meanLast = (Tensor) s.reduceAxis(ReduceOp.MEAN, partial, -1);
          Tensor max = (Tensor) s.reduceAxis(ReduceOp.MAX, partial, 0)) {
        assertEquals(2.5f, mean.scalarFloat());
        assertEquals(15.0f, sum.scalarFloat());
        assertEquals(2.5f, meanLast.scalarFloat());
        assertEquals(5.0f, max.scalarFloat());
      }
    }
  }
}
