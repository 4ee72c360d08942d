package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/**
 * A value (dist_value_t): a tensor, a distributed value (PerReplica, Mirrored) or a
 * variable. {@link #of} returns a {@link Tensor} or {@link Variable} where the kind says so.
 */
public class Value extends Handle {
  Value(long handle, boolean owned) {
    super(handle, owned, NativeGen::valueDestroy);
  }

  /** Wraps a handle, choosing the class by its kind. */
  static Value of(long handle, boolean owned) {
    if (handle == 0) return null;
    switch (NativeGen.valueKind(handle)) {
      case 1:
        return new Tensor(handle, owned);
      case 4:
      case 5:
      case 6:
        return new Variable(handle, owned);
      default:
        return new Value(handle, owned);
    }
  }

  static final Value[] NONE = new Value[0];

  static Value[] ofAll(long[] handles, boolean owned) {
    if (handles == null) return owned ? null : NONE;
    Value[] v = new Value[handles.length];
    for (int i = 0; i < handles.length; i++) v[i] = of(handles[i], owned);
    return v;
  }

  /** The pointers of {@code values}: the caller keeps the array reachable past its native call. */
  static long[] handles(Value... values) {
    long[] a = new long[values == null ? 0 : values.length];
    for (int i = 0; i < a.length; i++) a[i] = h(values[i]);
    return a;
  }

  public ValueKind kind() {
    try {
      return ValueKind.of(NativeGen.valueKind(h()));
    } finally {
      reachabilityFence(this);
    }
  }

  public int numComponents() {
    try {
      return NativeGen.valueNumComponents(h());
    } finally {
      reachabilityFence(this);
    }
  }

  /** Component {@code index} (a new handle). */
  public Value component(int index) {
    try {
      return of(NativeGen.valueComponent(h(), index), true);
    } finally {
      reachabilityFence(this);
    }
  }

  /** Component {@code index} as a tensor (a variable component is read). */
  public Tensor componentTensor(int index) {
    try {
      return (Tensor) of(NativeGen.valueComponentTensor(h(), index), true);
    } finally {
      reachabilityFence(this);
    }
  }

  /** A PerReplica value of the components (one per replica). */
  public static Value perReplica(Value... components) {
    try {
      return of(NativeHand.createPerReplica(handles(components), false), true);
    } finally {
      reachabilityFence(components);
    }
  }

  /** A Mirrored value of the components. */
  public static Value mirrored(Value... components) {
    try {
      return of(NativeHand.createPerReplica(handles(components), true), true);
    } finally {
      reachabilityFence(components);
    }
  }

  /** Closes every value (null entries allowed). */
  public static void closeAll(Value... values) {
    if (values == null) return;
    for (Value v : values) if (v != null) v.close();
  }
}
