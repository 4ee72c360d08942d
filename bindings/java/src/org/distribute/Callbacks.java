package org.distribute;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The Java side of every C callback: native/distribute_jni.c calls these static methods
 * (on the library's threads, attached once). Each catches every Throwable, keeps the first
 * in the call's State (it becomes the cause of the DistributeException) and answers
 * {status, handles...}; the handles returned are handed to the library.
 */
final class Callbacks {
  private Callbacks() {}

  static final int OK = 0;
  static final int UNKNOWN = 2;
  static final int INVALID_ARGUMENT = 3;
  /** {OK}: the answer of a callback with nothing to return (read only by the glue). */
  private static final long[] OK_ONLY = {OK};

  static final class State {
    final Object fn;
    /** The run a merge_call belongs to: the library may call any replica's merge function. */
    final State parent;
    final AtomicReference<Throwable> error = new AtomicReference<>();

    State(Object fn) {
      this(fn, null);
    }

    State(Object fn, State parent) {
      if (fn == null) throw new NullPointerException("callback");
      this.fn = fn;
      this.parent = parent;
    }

    void record(Throwable t) {
      error.compareAndSet(null, t);
      if (parent != null) parent.error.compareAndSet(null, t);
    }

    /** The library's exception, with the first Throwable of a callback as its cause. */
    DistributeException wrap(DistributeException e) {
      Throwable t = error.get();
      if (t == null && parent != null) t = parent.error.get();
      if (t == null || t == e) return e;
      return new DistributeException(e.getCode(), e.getMessage(), t);
    }
  }

  /** Keeps a wrapped buffer reachable until the library releases it. */
  static final class Keep {
    final Object buffer;
    final Runnable onRelease;

    Keep(Object buffer, Runnable onRelease) {
      this.buffer = buffer;
      this.onRelease = onRelease;
    }
  }

  private static long[] fail(State st, Throwable t, int length) {
    st.record(t);
    long[] r = new long[length];
    r[0] = t instanceof DistributeException ? ((DistributeException) t).getCode()
        : t instanceof IllegalArgumentException ? INVALID_ARGUMENT : UNKNOWN;
    if (r[0] == OK) r[0] = UNKNOWN;
    // The message travels with the status (dist_set_last_error_message, on this callback's
    // thread): the library passes it on to every caller the failure reaches.
    String message = t.getMessage();
    NativeGen.setLastErrorMessage(message != null ? message : t.getClass().getName());
    return r;
  }

  private static void put(Value[] values, long[] out, int from, int room) {
    if (values == null) return;
    if (values.length > room) {
      throw new IllegalArgumentException("callback returned " + values.length + " values, room for " + room);
    }
    for (int i = 0; i < values.length; i++) if (values[i] != null) out[from + i] = values[i].release();
  }

  static long[] replica(Object state, long context, long[] args, int numResults) {
    State st = (State) state;
    ReplicaContext ctx = new ReplicaContext(context, false, st);
    Value[] a = Value.ofAll(args, false);
    try {
      Value[] r = ((Functions.ReplicaFunction) st.fn).call(ctx, a);
      if (numResults == 0 && (r == null || r.length == 0)) return OK_ONLY;
      long[] out = new long[1 + numResults];
      put(r, out, 1, numResults);
      return out;
    } catch (Throwable t) {
      return fail(st, t, 1 + numResults);
    } finally {
      ctx.invalidate(); // a context or argument kept past the call throws IllegalStateException
      Handle.invalidateAll(a);
    }
  }

  static long[] value(Object state, int replicaId, int numReplicas) {
    State st = (State) state;
    try {
      Value v = ((Functions.ValueFunction) st.fn).create(replicaId, numReplicas);
      return new long[] {OK, v == null ? 0 : v.release()};
    } catch (Throwable t) {
      return fail(st, t, 2);
    }
  }

  static long[] update(Object state, long variable, long[] args) {
    State st = (State) state;
    Variable var = new Variable(variable, false);
    Value[] a = Value.ofAll(args, false);
    try {
      Value v = ((Functions.UpdateFunction) st.fn).update(var, a);
      return new long[] {OK, v == null ? 0 : v.release()};
    } catch (Throwable t) {
      return fail(st, t, 2);
    } finally {
      var.invalidate();
      Handle.invalidateAll(a);
    }
  }

  static long[] merge(Object state, long strategy, long[] args) {
    State st = (State) state;
    Strategy s = new Strategy(strategy, false);
    Value[] a = Value.ofAll(args, false);
    try {
      Value v = ((Functions.MergeFunction) st.fn).merge(s, a);
      return new long[] {OK, v == null ? 0 : v.release()};
    } catch (Throwable t) {
      return fail(st, t, 2);
    } finally {
      s.invalidate();
      Handle.invalidateAll(a);
    }
  }

  static long[] generator(Object state, long index, int numComponents) {
    State st = (State) state;
    try {
      Value[] v = ((Functions.Generator) st.fn).next(index);
      long[] out = new long[2 + numComponents];
      if (v == null) {
        out[1] = 1;
      } else {
        if (v.length != numComponents) {
          throw new IllegalArgumentException("generator returned " + v.length + " components, expected " + numComponents);
        }
        put(v, out, 2, numComponents);
      }
      return out;
    } catch (Throwable t) {
      return fail(st, t, 2 + numComponents);
    }
  }

  static long[] map(Object state, long[] inputs, int numOutputs) {
    State st = (State) state;
    Value[] a = Value.ofAll(inputs, false);
    try {
      Value[] v = ((Functions.MapFunction) st.fn).apply(a);
      long[] out = new long[1 + numOutputs];
      put(v, out, 1, numOutputs);
      return out;
    } catch (Throwable t) {
      return fail(st, t, 1 + numOutputs);
    } finally {
      Handle.invalidateAll(a);
    }
  }

  static long[] dataset(Object state, long inputContext) {
    State st = (State) state;
    InputContext ic = new InputContext(inputContext, false);
    try {
      Dataset d = ((Functions.DatasetFunction) st.fn).create(ic);
      return new long[] {OK, d == null ? 0 : d.release()};
    } catch (Throwable t) {
      return fail(st, t, 2);
    } finally {
      ic.invalidate();
    }
  }

  static long[] closure(Object state, long strategy, long args) {
    State st = (State) state;
    Strategy s = new Strategy(strategy, false);
    ClosureArgs a = new ClosureArgs(args, false);
    try {
      Value v = ((Functions.ClosureFunction) st.fn).run(s, a);
      return new long[] {OK, v == null ? 0 : v.release()};
    } catch (Throwable t) {
      return fail(st, t, 2);
    } finally {
      s.invalidate();
      a.invalidate();
    }
  }

  static long[] registeredUpdate(Object state, long[] variables, long[] args, String[] names, double[] values) {
    State st = (State) state;
    Tensor[] vars = borrowedTensors(variables);
    Tensor[] a = borrowedTensors(args);
    try {
      java.util.Map<String, Double> hyperparameters = new java.util.LinkedHashMap<>();
      for (int i = 0; i < names.length; i++) hyperparameters.put(names[i], values[i]);
      ((Functions.RegisteredUpdateFunction) st.fn).apply(vars, a, hyperparameters);
      return OK_ONLY;
    } catch (Throwable t) {
      return fail(st, t, 1);
    } finally {
      Handle.invalidateAll(vars);
      Handle.invalidateAll(a);
    }
  }

  private static Tensor[] borrowedTensors(long[] handles) {
    Tensor[] t = new Tensor[handles == null ? 0 : handles.length];
    for (int i = 0; i < t.length; i++) t[i] = new Tensor(handles[i], false);
    return t;
  }

  static void release(Object keep) {
    Runnable r = ((Keep) keep).onRelease;
    if (r != null) {
      try {
        r.run();
      } catch (Throwable t) {
        Thread.getDefaultUncaughtExceptionHandler();
      }
    }
  }
}
