package org.distribute;

/**
 * This process's registry of update functions (dist_function_register): functions that a
 * ParameterServerStrategy runs where a variable lives ({@link Variable#applyUpdate}).
 * Every process of a job registers the same ones at start-up; "sgd", "momentum",
 * "nesterov_momentum", "adagrad" and "adam" are built in.
 */
public final class UpdateFunctions {
  private UpdateFunctions() {}

  /**
   * Registers {@code fn} as {@code name}, taking {@code numArgs} argument tensors, with slot
   * variables {@code slotNames} (each starting at the matching {@code slotInitialValues}
   * element) and hyperparameters {@code hyperparameterNames} with their defaults
   * ({@link Double#NaN}: required). Null arrays stand for none. The library keeps {@code fn}
   * until {@link #unregister}.
   */
  public static void register(String name, Functions.RegisteredUpdateFunction fn, int numArgs,
      String[] slotNames, double[] slotInitialValues, String[] hyperparameterNames,
      double[] hyperparameterDefaults) {
    requireSameLength("slotNames", slotNames, "slotInitialValues", slotInitialValues);
    requireSameLength("hyperparameterNames", hyperparameterNames, "hyperparameterDefaults", hyperparameterDefaults);
    NativeHand.functionRegister(name, new Callbacks.State(fn), numArgs, slotNames, slotInitialValues,
        hyperparameterNames, hyperparameterDefaults);
  }

  /** A function with no slots and no hyperparameters. */
  public static void register(String name, Functions.RegisteredUpdateFunction fn, int numArgs) {
    register(name, fn, numArgs, null, null, null, null);
  }

  /** NOT_FOUND when absent; FAILED_PRECONDITION for a built-in. */
  public static void unregister(String name) { NativeGen.functionUnregister(name); }

  public static boolean isRegistered(String name) { return NativeGen.functionIsRegistered(name) != 0; }

  static void requireSameLength(String namesArg, String[] names, String valuesArg, double[] values) {
    int n = names == null ? 0 : names.length;
    int v = values == null ? 0 : values.length;
    if (n != v) {
      throw new IllegalArgumentException(namesArg + " has " + n + " entries but " + valuesArg + " has " + v);
    }
  }
}
