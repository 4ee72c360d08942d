import org.distribute.*;

/**
 * The Java binding's benchmark (not a test): an empty `run` step and an 8-byte all-reduce
 * step with 2 and 4 replicas, in microseconds per step (best of 5 rounds), next to the C
 * figures measured through the same library in the same run (bench_c, passed as lines on
 * stdin: "c <replicas> <empty_us> <allreduce_us>"). Run by bindings/java/bench/bench.sh.
 */
public final class Bench {
  static final int ROUNDS = 5;

  static double timeRuns(Strategy s, Functions.ReplicaFunction fn, int steps) {
    for (int i = 0; i < steps; i++) s.run(fn, 0);
    double best = Double.MAX_VALUE;
    for (int r = 0; r < ROUNDS; r++) {
      long t0 = System.nanoTime();
      for (int i = 0; i < steps; i++) s.run(fn, 0);
      best = Math.min(best, (System.nanoTime() - t0) / 1e3 / steps);
    }
    return best;
  }

  public static void main(String[] args) throws Exception {
    int steps = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    java.util.Map<Integer, double[]> c = new java.util.HashMap<>();
    try (java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in))) {
      String line;
      while ((line = in.readLine()) != null) {
        String[] f = line.trim().split("\\s+");
        if (f.length == 4 && f[0].equals("c")) c.put(Integer.parseInt(f[1]), new double[] {Double.parseDouble(f[2]), Double.parseDouble(f[3])});
      }
    }
    Device.setLogicalCpuDeviceCount(4);
    Functions.ReplicaFunction empty = (ctx, a) -> null;
    Functions.ReplicaFunction allReduce = (ctx, a) -> {
      try (Tensor t = Tensor.create(new long[] {2}, new float[] {1, 2}); Tensor out = ctx.allReduce(ReduceOp.SUM, t)) {
        return null;
      }
    };
    System.out.printf("distribute %s, Java %s, %d steps x %d rounds (best round), us per step%n",
        Distribute.version(), System.getProperty("java.version"), steps, ROUNDS);
    System.out.println("| step | replicas | C (us) | Java (us) | Java - C (us) | target: Java <= C + 10 us |");
    System.out.println("|---|---|---|---|---|---|");
    for (int n = 2; n <= 4; n += 2) {
      String[] devices = new String[n];
      for (int i = 0; i < n; i++) devices[i] = "CPU:" + i;
      try (Strategy s = Strategy.mirrored(devices)) {
        double e = timeRuns(s, empty, steps);
        double ar = timeRuns(s, allReduce, steps);
        double[] cc = c.getOrDefault(n, new double[] {Double.NaN, Double.NaN});
        System.out.printf("| empty run | %d | %.2f | %.2f | %+.2f | %s |%n", n, cc[0], e, e - cc[0], n == 2 ? (e <= cc[0] + 10 ? "met" : "missed") : "-");
        System.out.printf("| 8-byte all_reduce | %d | %.2f | %.2f | %+.2f | %s |%n", n, cc[1], ar, ar - cc[1], n == 2 ? (ar <= cc[1] + 10 ? "met" : "missed") : "-");
      }
    }
  }
}
