package org.distribute.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every public C function is wrapped: the header's DIST_API functions are exactly those
 * listed in bindings/java/COVERAGE.txt, and every native method of the binding has its JNI
 * symbol in libdistributejni.so (nothing left to fail with UnsatisfiedLinkError).
 */
class CoverageTest {
  private static Path root() {
    return Path.of(System.getenv().getOrDefault("DIST_JAVA_ROOT", "."));
  }

  @Test
  void everyPublicFunctionIsListed() throws Exception {
    Set<String> header = new TreeSet<>();
    Pattern p = Pattern.compile("DIST_API\\s+(?:DIST_NODISCARD\\s+)?[^;(]*?\\b(dist_\\w+)\\s*\\(");
    try (var files = Files.list(root().resolve("include_c/distribute"))) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Matcher m = p.matcher(Files.readString(f));
        while (m.find()) header.add(m.group(1));
      }
    }
    assertTrue(header.size() > 150, "parsed " + header.size());
    Set<String> listed = new TreeSet<>();
    for (String line : Files.readAllLines(root().resolve("bindings/java/COVERAGE.txt"))) {
      if (line.startsWith("#") || line.isBlank()) continue;
      String[] parts = line.split(" ");
      assertTrue(parts[1].equals("generated") || parts[1].equals("hand"), line);
      listed.add(parts[0]);
    }
    assertEquals(header, listed);
  }

  /** Every native method is called (or referenced) from the public classes (no glue only reachable inside). */
  @Test
  void everyNativeMethodIsUsedByThePublicApi() throws Exception {
    StringBuilder api = new StringBuilder();
    try (var files = Files.list(root().resolve("bindings/java/src/org/distribute"))) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String name = f.getFileName().toString();
        if (!name.equals("NativeGen.java") && !name.equals("NativeHand.java")) api.append(Files.readString(f));
      }
    }
    int count = 0;
    for (String cls : new String[] {"NativeGen", "NativeHand"}) {
      for (Method m : Class.forName("org.distribute." + cls).getDeclaredMethods()) {
        if (!Modifier.isNative(m.getModifiers())) continue;
        // A call, or a method reference (the destroy functions the Cleaner runs).
        boolean used = api.indexOf(cls + "." + m.getName() + "(") >= 0
            || Pattern.compile(cls + "::" + m.getName() + "\\b").matcher(api).find();
        assertTrue(used, cls + "." + m.getName() + " is not used by the public API");
        count++;
      }
    }
    assertTrue(count > 170);
  }

  @Test
  void everyNativeMethodIsLinked() throws Exception {
    String so = Path.of(System.getenv().getOrDefault("DIST_JAVA_OUT", "."), "libdistributejni.so").toString();
    Process proc = new ProcessBuilder("nm", "-D", "--defined-only", so).redirectErrorStream(true).start();
    Set<String> symbols = new HashSet<>();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(proc.getInputStream()))) {
      String line;
      while ((line = r.readLine()) != null) {
        String[] f = line.trim().split(" ");
        symbols.add(f[f.length - 1]);
      }
    }
    assertEquals(0, proc.waitFor());
    int count = 0;
    for (String cls : new String[] {"NativeGen", "NativeHand"}) {
      for (Method m : Class.forName("org.distribute." + cls).getDeclaredMethods()) {
        if (!Modifier.isNative(m.getModifiers())) continue;
        String sym = "Java_org_distribute_" + cls + "_" + m.getName().replace("_", "_1");
        assertTrue(symbols.contains(sym), "missing JNI symbol " + sym);
        count++;
      }
    }
    assertTrue(count > 170, "native methods: " + count);
  }
}
