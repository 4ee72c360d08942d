package org.distribute;

/**
 * A value (dist_value_t): a tensor, a distributed value (PerReplica, Mirrored) or a
 * variable. {@link #of} returns a {@link Tensor} or {@link Variable} where the kind says so.
 */
public class Value extends Handle {
  Value(long handle, boolean owned) {
    super(handle, owned);
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

  static long[] handles(Value... values) {
    long[] a = new long[values == null ? 0 : values.length];
    for (int i = 0; i < a.length; i++) a[i] = h(values[i]);
    return a;
  }

  @Override
  void destroy(long handle) {
    NativeGen.valueDestroy(handle);
  }

  public ValueKind kind() {
    return ValueKind.of(NativeGen.valueKind(h()));
  }

  public int numComponents() {
    return NativeGen.valueNumComponents(h());
  }

  /** Component {@code index} (a new handle). */
  public Value component(int index) {
    return of(NativeGen.valueComponent(h(), index), true);
  }

  /** Component {@code index} as a tensor (a variable component is read). */
  public Tensor componentTensor(int index) {
    return (Tensor) of(NativeGen.valueComponentTensor(h(), index), true);
  }

  /** A PerReplica value of the components (one per replica). */
  public static Value perReplica(Value... components) {
    return of(NativeHand.createPerReplica(handles(components), false), true);
  }

  /** A Mirrored value of the components. */
  public static Value mirrored(Value... components) {
    return of(NativeHand.createPerReplica(handles(components), true), true);
  }

  /** Closes every value (null entries allowed). */
  public static void closeAll(Value... values) {
    if (values == null) return;
    for (Value v : values) if (v != null) v.close();
  }
}
