package org.distribute.tests;

import java.net.ServerSocket;
import org.distribute.Device;

/** Shared set-up: four logical CPU devices, as the C suites use. */
final class Util {
  private Util() {}

  static final int NUM_CPUS = 4;
  static final long TIMEOUT_MS = 20000;

  static void setUp() {
    Device.setLogicalCpuDeviceCount(NUM_CPUS);
  }

  /** n ports free on 127.0.0.1 a moment ago (all held until every one is chosen: distinct). */
  static int[] freePorts(int n) throws Exception {
    ServerSocket[] s = new ServerSocket[n];
    int[] ports = new int[n];
    try {
      for (int i = 0; i < n; i++) {
        s[i] = new ServerSocket(0);
        ports[i] = s[i].getLocalPort();
      }
    } finally {
      for (ServerSocket x : s) if (x != null) x.close();
    }
    return ports;
  }

  static String[] cpus(int n) {
    String[] d = new String[n];
    for (int i = 0; i < n; i++) d[i] = "CPU:" + i;
    return d;
  }
}
