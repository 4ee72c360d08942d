package org.distribute.tests;

import org.distribute.Device;

/** Shared set-up: four logical CPU devices, as the C suites use. */
final class Util {
  private Util() {}

  static final int NUM_CPUS = 4;
  static final long TIMEOUT_MS = 20000;

  static void setUp() {
    Device.setLogicalCpuDeviceCount(NUM_CPUS);
  }

  static String[] cpus(int n) {
    String[] d = new String[n];
    for (int i = 0; i < n; i++) d[i] = "CPU:" + i;
    return d;
  }
}
