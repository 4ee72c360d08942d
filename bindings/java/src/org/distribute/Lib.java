package org.distribute;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Loads the JNI library (libdistributejni.so, linked to libdistribute.so.0) once, from the
 * first of: the file named by {@code -Dorg.distribute.jni=PATH}; {@code System.loadLibrary}
 * ({@code -Djava.library.path}, the JVM's default directories); the library directory of
 * the prefix the jar is installed in ({@code <prefix>/share/java/distribute.jar} next to
 * {@code <prefix>/lib[64|/<multiarch>]/libdistributejni.so}, as {@code cmake --install}
 * lays them out). The installed JNI library finds libdistribute beside itself.
 */
final class Lib {
  private static final String NAME = "distributejni";
  private static boolean loaded;

  private Lib() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty("org.distribute.jni");
    if (path != null) {
      System.load(path);
      loaded = true;
      return;
    }
    UnsatisfiedLinkError first;
    try {
      System.loadLibrary(NAME);
      loaded = true;
      return;
    } catch (UnsatisfiedLinkError e) {
      first = e;
    }
    List<File> tried = new ArrayList<>();
    for (File dir : besideJar()) {
      File lib = new File(dir, System.mapLibraryName(NAME));
      tried.add(lib);
      if (lib.isFile()) {
        System.load(lib.getAbsolutePath());
        loaded = true;
        return;
      }
    }
    UnsatisfiedLinkError e = new UnsatisfiedLinkError(
        first.getMessage() + "; not beside the jar either (tried " + tried + "): run java with"
            + " -Dorg.distribute.jni=/path/to/" + System.mapLibraryName(NAME));
    e.initCause(first);
    throw e;
  }

  /**
   * The library directories of the prefix the jar lies in: the one the build installed the
   * JNI library to (the resource libdir.txt: a path relative to the jar's directory, written
   * by CMake), then lib, lib64 and Debian's multiarch lib/<tuple>.
   */
  private static Set<File> besideJar() {
    Set<File> dirs = new LinkedHashSet<>();
    File jarDir;
    try {
      File jar = new File(Lib.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (!jar.isFile()) return dirs;  // classes from a directory: no installed layout
      jarDir = jar.getParentFile();
    } catch (Exception e) {  // no code source, not a file: URI, a security manager
      return dirs;
    }
    String relative = installedLibdir();
    if (relative != null) dirs.add(canonical(new File(jarDir, relative)));
    File prefix = new File(jarDir, "../..");
    dirs.add(canonical(new File(prefix, "lib")));
    dirs.add(canonical(new File(prefix, "lib64")));
    dirs.add(canonical(new File(prefix, "lib/" + multiarchTuple())));
    return dirs;
  }

  private static String installedLibdir() {
    try (InputStream in = Lib.class.getResourceAsStream("libdir.txt")) {
      if (in == null) return null;  // a jar built by build.sh, not by CMake
      BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      String line = r.readLine();
      return line == null || line.trim().isEmpty() ? null : line.trim();
    } catch (java.io.IOException e) {
      return null;
    }
  }

  private static String multiarchTuple() {
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    switch (arch) {
      case "amd64":
      case "x86_64":
        return "x86_64-linux-gnu";
      case "aarch64":
      case "arm64":
        return "aarch64-linux-gnu";
      case "ppc64le":
        return "powerpc64le-linux-gnu";
      default:
        return arch + "-linux-gnu";
    }
  }

  private static File canonical(File f) {
    try {
      return f.getCanonicalFile();
    } catch (java.io.IOException e) {
      return f.getAbsoluteFile();
    }
  }
}
