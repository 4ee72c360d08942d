package org.distribute;

/** Loads the JNI library (libdistributejni.so, linked to libdistribute.so.0) once. */
final class Lib {
  private static boolean loaded;

  private Lib() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty("org.distribute.jni");
    if (path != null) System.load(path); else System.loadLibrary("distributejni");
    loaded = true;
  }
}
