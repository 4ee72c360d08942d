package org.distribute;

/** Library-level functions. */
public final class Distribute {
  private Distribute() {}

  public static String version() { return NativeGen.version(); }
  public static int versionNumber() { return NativeGen.versionNumber(); }
  /** This thread's last error message (dist_last_error_message). */
  public static String lastErrorMessage() { return NativeHand.lastErrorMessage(); }
}
