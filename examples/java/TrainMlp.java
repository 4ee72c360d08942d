// A short data-parallel training of examples/c/train_mlp's model, from Java: the same
// glyph images (12x12 digits, the same generator and seeds as train_mlp --make-data
// --quick), the same MLP (144-128-10, ReLU, softmax cross-entropy) and the same step:
// distribute_dataset splits each global batch of 64 across the replicas, each replica
// computes its gradient sums (float64) in a Java replica function, the sums are reduced
// across replicas, and the mirrored variables take -learning_rate * sum / rows.
//
// Default: train_mlp --quick's sizes (4096 training and 1024 held-out images, 3 epochs);
// --full: 16384 and 4096 images, 10 epochs, as `make demo`. --multi-worker: the same
// training under MultiWorkerMirrored, one process per worker started by distrun:
//   distrun -n 2 --replicas-per-worker 2 java -cp ... TrainMlp --multi-worker
//
//   java -cp distribute.jar:. TrainMlp [--full] [--replicas N] [--epochs N] [--check-accuracy X]
import org.distribute.*;

public final class TrainMlp {
  static final int SIDE = 12, D = SIDE * SIDE, C = 10;
  static final String[][] DIGITS = {
    {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
    {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
    {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
    {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
    {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
    {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
    {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
    {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
    {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
    {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
  };

  /** glyphs.c's splitmix64 generator. */
  static final class Rng {
    long state;
    Rng(long seed) { state = seed; }
    long next() {
      long z = (state += 0x9E3779B97F4A7C15L);
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      return z ^ (z >>> 31);
    }
    double uniform() { return (next() >>> 11) * (1.0 / 9007199254740992.0); }
    double normal() { double u = 1.0 - uniform(), v = uniform(); return Math.sqrt(-2 * Math.log(u)) * Math.cos(6.283185307179586 * v); }
    int below(int n) { return (int) Long.remainderUnsigned(next(), n); }
  }

  static void put(float[] img, int o, int r, int c, float v) {
    if (r < 0 || r >= SIDE || c < 0 || c >= SIDE) return;
    if (v > img[o + r * SIDE + c]) img[o + r * SIDE + c] = v;
  }

  /** glyphs_write_file's images (quantised to bytes, as the file stores them). */
  static void makeData(int count, long seed, float[] x, int[] y) {
    Rng rng = new Rng(seed);
    for (int i = 0; i < count; i++) {
      int label = rng.below(C), o = i * D;
      y[i] = label;
      int slant = rng.below(3) - 1;
      int bold = rng.uniform() < 0.3 ? 1 : 0;
      int left = (SIDE - 5 - bold) / 2 + rng.below(5) - 2;
      int top = (SIDE - 7) / 2 + rng.below(5) - 2;
      double ink = 0.6 + 0.4 * rng.uniform();
      for (int r = 0; r < 7; r++) {
        int shift = (int) Math.rint(slant * (3 - r) / 3.0);
        for (int c = 0; c < 5; c++) {
          if (DIGITS[label][r].charAt(c) != '#') continue;
          for (int b = 0; b <= bold; b++) {
            if (rng.uniform() < 0.05) continue;
            put(x, o, top + r, left + c + b + shift, (float) (ink * (0.7 + 0.3 * rng.uniform())));
          }
        }
      }
      if (rng.uniform() < 0.25) {
        int vertical = rng.below(2), length = 3 + rng.below(4);
        int row = rng.below(SIDE), col = rng.below(SIDE);
        for (int k = 0; k < length; k++) {
          put(x, o, row, col, (float) (0.4 + 0.3 * rng.uniform()));
          if (vertical != 0) row++; else col++;
        }
      }
      int strays = rng.below(5);
      for (int k = 0; k < strays; k++) put(x, o, rng.below(SIDE), rng.below(SIDE), (float) (0.4 + 0.6 * rng.uniform()));
      for (int p = 0; p < D; p++) {
        double noisy = x[o + p] + 0.10 * rng.normal();
        float v = (float) (noisy < 0 ? 0 : noisy > 1 ? 1 : noisy);
        x[o + p] = Math.round(v * 255.0f) / 255.0f;
      }
    }
  }

  /** One replica's forward and backward pass: gradient sums and {loss sum, correct, rows}. */
  static double[][] forwardBackward(int H, float[][] w, float[] x, int[] y, boolean grads) {
    int rows = y.length;
    double[][] g = {new double[D * H], new double[H], new double[H * C], new double[C], new double[3]};
    float[] h = new float[H], dh = new float[H];
    double[] z = new double[C];
    for (int n = 0; n < rows; n++) {
      int o = n * D;
      for (int j = 0; j < H; j++) {
        double s = w[1][j];
        for (int i = 0; i < D; i++) s += x[o + i] * w[0][i * H + j];
        h[j] = (float) Math.max(0, s);
      }
      double max = -1e300;
      int arg = 0;
      for (int k = 0; k < C; k++) {
        double s = w[3][k];
        for (int j = 0; j < H; j++) s += h[j] * w[2][j * C + k];
        z[k] = s;
        if (s > max) { max = s; arg = k; }
      }
      double sum = 0;
      for (int k = 0; k < C; k++) sum += Math.exp(z[k] - max);
      g[4][0] += Math.log(sum) + max - z[y[n]];
      g[4][1] += arg == y[n] ? 1 : 0;
      if (!grads) continue;
      java.util.Arrays.fill(dh, 0);
      for (int k = 0; k < C; k++) {
        double dz = Math.exp(z[k] - max) / sum - (k == y[n] ? 1 : 0);
        g[3][k] += dz;
        for (int j = 0; j < H; j++) {
          g[2][j * C + k] += h[j] * dz;
          dh[j] += (float) (w[2][j * C + k] * dz);
        }
      }
      for (int j = 0; j < H; j++) {
        if (h[j] <= 0) continue;
        g[1][j] += dh[j];
        for (int i = 0; i < D; i++) g[0][i * H + j] += x[o + i] * dh[j];
      }
    }
    g[4][2] = rows;
    return g;
  }

  public static void main(String[] argv) {
    int replicas = 4, epochs = -1, hidden = 128, batch = 64;
    double lr = 1.0, check = -1;
    boolean full = false, multiWorker = false;
    for (int i = 0; i < argv.length; i += 2) {
      switch (argv[i]) {
        case "--full": full = true; i--; break;
        case "--multi-worker": multiWorker = true; i--; break;
        case "--replicas": replicas = Integer.parseInt(argv[i + 1]); break;
        case "--epochs": epochs = Integer.parseInt(argv[i + 1]); break;
        case "--check-accuracy": check = Double.parseDouble(argv[i + 1]); break;
        default: System.err.println("usage: TrainMlp [--full] [--multi-worker] [--replicas N] [--epochs N] [--check-accuracy X]"); System.exit(2);
      }
    }
    if (epochs < 0) epochs = full ? 10 : 3;
    final int H = hidden;
    int nTrain = full ? 16384 : 4096, nTest = full ? 4096 : 1024;
    float[] xTrain = new float[nTrain * D], xTest = new float[nTest * D];
    int[] yTrain = new int[nTrain], yTest = new int[nTest];
    makeData(nTrain, 1 * 2, xTrain, yTrain);
    makeData(nTest, 1 * 2 + 1, xTest, yTest);

    String[] devices = new String[replicas];
    for (int i = 0; i < replicas; i++) devices[i] = "CPU:" + i;
    if (!multiWorker) Device.setLogicalCpuDeviceCount(replicas);
    long[][] shapes = {{D, H}, {H}, {H, C}, {C}};
    Rng init = new Rng(1);
    // --multi-worker: MultiWorkerMirrored over the workers TF_CONFIG names (started by
    // distrun, which also sets DIST_REPLICAS_PER_WORKER); every worker runs this same program.
    try (Strategy s = multiWorker ? Strategy.multiWorkerMirrored(null, null) : Strategy.mirrored(devices);
        Tensor xt = Tensor.create(new long[] {nTrain, D}, xTrain); Tensor yt = Tensor.create(new long[] {nTrain}, yTrain);
        Tensor xe = Tensor.create(new long[] {nTest, D}, xTest); Tensor ye = Tensor.create(new long[] {nTest}, yTest);
        Dataset train = Dataset.fromTensorSlices(xt, yt);
        Dataset test = Dataset.fromTensorSlices(xe, ye); Dataset testBatches = test.batch(4L * batch);
        DistributedDataset testDist = s.distributeDataset(testBatches)) {
      Variable[] params = new Variable[4];
      try (Strategy.Scope scope = s.scope()) {
        for (int p = 0; p < 4; p++) {
          long[] shp = shapes[p];
          int n = (int) (shp.length == 2 ? shp[0] * shp[1] : shp[0]);
          float[] v = new float[n];
          double limit = shp.length == 2 ? Math.sqrt(6.0 / (shp[0] + shp[1])) : 0.0;
          for (int i = 0; i < n; i++) v[i] = (float) (limit * (2.0 * init.uniform() - 1.0));
          try (Tensor t = Tensor.create(shp, v)) {
            params[p] = Variable.create(t, "param" + p);
          }
        }
      }
      double accuracy = 0;
      System.out.printf("distribute %s from Java: a 144-%d-10 MLP, %d training and %d held-out images, global batch %d%n",
          Distribute.version(), H, nTrain, nTest, batch);
      for (int epoch = 1; epoch <= epochs + 1; epoch++) {
        boolean training = epoch <= epochs;
        double[] totals = new double[3];
        // training: records -> shuffle (a new order each epoch) -> batch (full batches) -> distribute
        try (Dataset shuffled = train.shuffle(nTrain, 1000 + epoch);
            Dataset batches = shuffled.batch(batch, true);
            DistributedDataset trainDist = s.distributeDataset(batches);
            DistributedIterator it = (training ? trainDist : testDist).iterator()) {
          Value[] e;
          while ((e = it.nextOrNull(2)) != null) {
            Value[] args = {e[0], e[1], params[0], params[1], params[2], params[3]};
            Value[] r = s.run((ctx, a) -> {
              float[][] w = new float[4][];
              for (int p = 0; p < 4; p++) {
                try (Tensor t = (Tensor) ((Variable) a[2 + p]).read()) { w[p] = t.toFloatArray(); }
              }
              double[][] g = forwardBackward(H, w, ((Tensor) a[0]).toFloatArray(), ((Tensor) a[1]).toIntArray(), training);
              Value[] out = new Value[training ? 5 : 1];
              out[0] = Tensor.create(new long[] {3}, g[4]);
              if (training) for (int p = 0; p < 4; p++) out[1 + p] = Tensor.create(shapes[p], g[p]);
              return out;
            }, training ? 5 : 1, args);
            Value.closeAll(e);
            try (Tensor stats = s.reduce(ReduceOp.SUM, r[0])) {
              double[] st = stats.toDoubleArray();
              for (int k = 0; k < 3; k++) totals[k] += st[k];
              if (training && st[2] > 0) {
                for (int p = 0; p < 4; p++) {
                  try (Tensor sum = s.reduce(ReduceOp.SUM, r[1 + p])) {
                    double[] gs = sum.toDoubleArray();
                    float[] step = new float[gs.length];
                    for (int i = 0; i < gs.length; i++) step[i] = (float) (-lr * gs[i] / st[2]);
                    try (Tensor t = Tensor.create(shapes[p], step)) { params[p].assignAdd(t); }
                  }
                }
              }
            } finally {
              Value.closeAll(r);
            }
          }
        }
        if (training) {
          System.out.printf("epoch %d/%d  loss %.4f  accuracy %.4f%n", epoch, epochs, totals[0] / totals[2], totals[1] / totals[2]);
        } else {
          accuracy = totals[1] / totals[2];
          System.out.printf("%s (%d replicas): held-out accuracy %.4f on %d images%n",
              multiWorker ? "MultiWorkerMirrored" : "Mirrored", s.numReplicasInSync(), accuracy, (long) totals[2]);
        }
      }
      Value.closeAll(params);
      if (check >= 0 && accuracy < check) {
        System.err.printf("TrainMlp: held-out accuracy %.4f < %.4f%n", accuracy, check);
        System.exit(1);
      }
    }
  }
}
