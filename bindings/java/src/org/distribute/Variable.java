package org.distribute;

/** A variable (plain, Mirrored or SyncOnRead, by the current strategy). */
public final class Variable extends Value {
  Variable(long handle, boolean owned) {
    super(handle, owned);
  }

  public static Variable create(Value initialValue, VariableSynchronization sync,
      VariableAggregation aggregation, String name) {
    return new Variable(NativeGen.variableCreate(h(initialValue), sync.code(), aggregation.code(), name), true);
  }

  public static Variable create(Value initialValue, String name) {
    return create(initialValue, VariableSynchronization.AUTO, VariableAggregation.NONE, name);
  }

  /** The variable's value (for a distributed variable, as TF reads it). */
  public Value read() { return Value.of(NativeGen.variableRead(h()), true); }
  public void assign(Value v) { NativeGen.variableAssign(h(), h(v)); }
  public void assignAdd(Value v) { NativeGen.variableAssignAdd(h(), h(v)); }
  public void assignSub(Value v) { NativeGen.variableAssignSub(h(), h(v)); }
  public String name() { return NativeGen.variableName(h()); }
  public int deviceCount() { return NativeGen.variableDeviceCount(h()); }
  public String device(int index) { return NativeGen.variableDevice(h(), index); }
  public VariableSynchronization synchronization() { return VariableSynchronization.of(NativeGen.variableSynchronization(h())); }
  public VariableAggregation aggregation() { return VariableAggregation.of(NativeGen.variableAggregation(h())); }
}
