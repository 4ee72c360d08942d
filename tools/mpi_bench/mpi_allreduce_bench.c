// mpi-allreduce-bench: MPI_Allreduce (float32 SUM) timed per call, printed as a table that
// `dist-bench --multi-worker` rows are compared against. Run it through run_vader.sh so
// that Open MPI uses only its shared-memory transport (btl vader) on one host.
// `--collective bcast` and `--collective allgather` time MPI_Bcast (from rank 0) and
// MPI_Allgather (each rank's block of the given size) instead, for the broadcast and
// all-gather table.
//
// Method, per size: warm-up calls (the first one validated), then one timed call per
// iteration. A barrier precedes each call so that every rank enters together; a call's
// time is the slowest rank's (MAX over ranks), as a collective is done only when its last
// rank is. The table gives the median and p90 of those times (the same order statistics
// as dist-bench's bench_stats.cc) and nccl-tests' bus bandwidth,
// bytes / median * 2(n-1)/n, which is comparable across process counts (for a broadcast
// bytes / median; for an all-gather n * bytes / median * (n-1)/n, as nccl-tests count).
//
// Buffers are out of place (never MPI_IN_PLACE), allocated once per size and written
// before the timing starts, so no call pays for page faults. The send buffer is rewritten
// before every call (outside the timing), as dist-bench --multi-worker rewrites its inputs:
// data a step has just written, not data the peers still hold from the call before.
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static const int64_t kSizes[] = {
    8, 64, 1024, 4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20,
};
#define NUM_SIZES ((int)(sizeof kSizes / sizeof kSizes[0]))

// Aim for this much timed work per size; quick mode is a smoke run, not a measurement.
static const double kTargetSeconds = 0.3, kQuickTargetSeconds = 0.02;
static const int kMinIters = 20, kMaxIters = 20000, kQuickMinIters = 3, kQuickMaxIters = 50;
static const int kWarmup = 10, kQuickWarmup = 2;

// MPI_COMM_WORLD is set to MPI_ERRORS_RETURN, so a failed call comes back here; abort the
// whole job, as one rank leaving alone would hang the others inside the next collective.
static void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
  fprintf(stderr, "mpi-allreduce-bench: %s failed: %s\n", what, text);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// Sorts `v`; median is the mean of the two middle values for an even count, p90 nearest-rank.
static void summarize(double* v, int n, double* median, double* p90) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  *median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  int i = (int)ceil(0.9 * n);
  *p90 = v[i > 0 ? i - 1 : 0];
}

// Small integers, different per rank and per element, so every partial sum is exact in
// float32 and a misplaced element shows.
static float input_value(int rank, int64_t i) { return (float)((rank + 1) * (1 + i % 13)); }

enum collective { kAllreduce, kBcast, kAllgather };
static const char* const kCollectiveNames[] = {"allreduce", "bcast", "allgather"};

// What element i of the result holds: the sum over ranks of input_value (allreduce), rank
// 0's input (bcast), or block i / count's rank's input (allgather).
static float expected_value(enum collective collective, int64_t i, int64_t count, int nprocs) {
  if (collective == kBcast) return input_value(0, i);
  if (collective == kAllgather) return input_value((int)(i / count), i % count);
  const int64_t rank_sum = (int64_t)nprocs * (nprocs + 1) / 2;
  return (float)(rank_sum * (1 + i % 13));
}

// Checks the first result on every rank (`total` elements); returns 0 on every rank if
// all ranks matched.
static int validate(enum collective collective, const float* recv, int64_t count, int64_t total, int rank, int nprocs) {
  int bad = 0;
  for (int64_t i = 0; i < total; ++i) {
    const float expected = expected_value(collective, i, count, nprocs);
    if (recv[i] != expected) {
      fprintf(stderr, "mpi-allreduce-bench: rank %d: element %lld of %lld is %g, expected %g\n",
              rank, (long long)i, (long long)total, (double)recv[i], (double)expected);
      bad = 1;
      break;
    }
  }
  int any_bad = 0;
  check(MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce (validation)");
  return any_bad;
}

struct options {
  int64_t max_bytes;
  int quick;
  enum collective collective;
};

// Returns 0 and fills `out`, or 2 after printing usage (on rank 0 only).
static int parse_args(int argc, char** argv, int rank, struct options* out) {
  out->max_bytes = 16 << 20;
  out->quick = 0;
  out->collective = kAllreduce;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      out->quick = 1;
    } else if (strcmp(argv[i], "--collective") == 0 && i + 1 < argc) {
      const char* name = argv[++i];
      int found = -1;
      for (int c = 0; c < (int)(sizeof kCollectiveNames / sizeof kCollectiveNames[0]); ++c) {
        if (strcmp(name, kCollectiveNames[c]) == 0) found = c;
      }
      if (found < 0) {
        if (rank == 0) fprintf(stderr, "mpi-allreduce-bench: --collective wants allreduce, bcast or allgather, got '%s'\n", name);
        return 2;
      }
      out->collective = (enum collective)found;
    } else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc) {
      char* end = NULL;
      errno = 0;
      const long long v = strtoll(argv[++i], &end, 10);
      if (errno != 0 || *end != '\0' || v < kSizes[0]) {
        if (rank == 0) fprintf(stderr, "mpi-allreduce-bench: --max-bytes wants an integer >= 8, got '%s'\n", argv[i]);
        return 2;
      }
      out->max_bytes = v;
    } else {
      if (rank == 0) {
        fprintf(stderr,
                "usage: mpi-allreduce-bench [--max-bytes N] [--quick] [--collective C]\n"
                "  --max-bytes N  largest message in bytes (default 16777216; sizes go up to 64 MiB)\n"
                "  --collective C allreduce (default), bcast (from rank 0) or allgather (N bytes per rank)\n"
                "  --quick        few iterations: a smoke run, not a measurement\n");
      }
      return 2;
    }
  }
  return 0;
}

// One call of the collective: the result lands in `recv` on every rank (a broadcast's
// root copies its input there first, outside the timing, so that it validates alike).
static void call_once(enum collective c, float* send, float* recv, int count, int rank) {
  switch (c) {
    case kAllreduce:
      check(MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
      break;
    case kBcast:
      check(MPI_Bcast(rank == 0 ? send : recv, count, MPI_FLOAT, 0, MPI_COMM_WORLD), "MPI_Bcast");
      break;
    case kAllgather:
      check(MPI_Allgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD), "MPI_Allgather");
      break;
  }
}

// Times `iters` calls into `seconds` (this rank's own times).
static void time_calls(enum collective c, float* send, float* recv, int count, int rank, int iters,
                       double* seconds) {
  for (int i = 0; i < iters; ++i) {
    memset(send, 1 + i % 7, (size_t)count * sizeof(float));  // finite floats, never denormal
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const double t0 = MPI_Wtime();
    call_once(c, send, recv, count, rank);
    seconds[i] = MPI_Wtime() - t0;
  }
}

// Benchmarks one size and prints its row on rank 0; returns nonzero on a wrong result.
static int bench_size(int64_t bytes, const struct options* opt, int rank, int nprocs) {
  const int count = (int)(bytes / (int64_t)sizeof(float));
  // calloc, not malloc: GCC cannot see that the fill loops below run, and warns.
  float* send = calloc((size_t)count, sizeof(float));
  const int64_t total = opt->collective == kAllgather ? (int64_t)count * nprocs : count;
  float* recv = calloc((size_t)total, sizeof(float));
  const int max_iters = opt->quick ? kQuickMaxIters : kMaxIters;
  double* seconds = malloc(sizeof(double) * (size_t)max_iters);
  double* slowest = malloc(sizeof(double) * (size_t)max_iters);
  if (send == NULL || recv == NULL || seconds == NULL || slowest == NULL) {
    fprintf(stderr, "mpi-allreduce-bench: rank %d: out of memory for %lld bytes\n", rank, (long long)bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  for (int64_t i = 0; i < count; ++i) send[i] = input_value(rank, i);
  for (int64_t i = 0; i < total; ++i) recv[i] = -1.0f;  // a call that writes nothing fails validation

  call_once(opt->collective, send, recv, count, rank);
  if (opt->collective == kBcast && rank == 0) memcpy(recv, send, (size_t)count * sizeof(float));
  int failed = validate(opt->collective, recv, count, total, rank, nprocs);
  if (!failed) {
    // The warm-up also sizes the run; every rank must agree on the count, hence the MAX.
    const int warmup = opt->quick ? kQuickWarmup : kWarmup;
    time_calls(opt->collective, send, recv, count, rank, warmup, seconds);
    double local = 0, per_call = 0;
    for (int i = 0; i < warmup; ++i) local += seconds[i] / warmup;
    check(MPI_Allreduce(&local, &per_call, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce (sizing)");
    const double target = opt->quick ? kQuickTargetSeconds : kTargetSeconds;
    const int min_iters = opt->quick ? kQuickMinIters : kMinIters;
    const double wanted = per_call > 0 ? target / per_call : max_iters;
    const int iters = wanted < min_iters ? min_iters : wanted > max_iters ? max_iters : (int)wanted;

    time_calls(opt->collective, send, recv, count, rank, iters, seconds);
    check(MPI_Allreduce(seconds, slowest, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce (times)");
    if (rank == 0) {
      double median = 0, p90 = 0;
      summarize(slowest, iters, &median, &p90);
      const double factor = opt->collective == kAllreduce ? 2.0 * (nprocs - 1) / nprocs
                            : opt->collective == kBcast   ? 1.0
                                                          : (double)(nprocs - 1);
      const double busbw = (double)bytes / median * factor / 1e9;
      printf(" %11lld %12.2f %12.2f %16.3f\n", (long long)bytes, median * 1e6, p90 * 1e6, busbw);
      fflush(stdout);
    }
  }
  free(slowest);
  free(seconds);
  free(recv);
  free(send);
  return failed;
}

static void print_header(int nprocs, const struct options* opt) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  check(MPI_Get_library_version(version, &length), "MPI_Get_library_version");
  version[strcspn(version, "\n")] = '\0';
  static const char* const kWhat[] = {"MPI_Allreduce, float32 SUM, out of place",
                                      "MPI_Bcast from rank 0, float32", "MPI_Allgather, bytes per rank, float32"};
  printf("# mpi-allreduce-bench: %s; %d processes; %s; "
         "send buffer rewritten before each call; time = MAX over ranks per call%s\n", version, nprocs,
         kWhat[opt->collective], opt->quick ? "; --quick" : "");
  printf("# %10s %12s %12s %16s\n", "bytes", "mpi med(us)", "mpi p90(us)", "mpi busbw(GB/s)");
  fflush(stdout);
}

int main(int argc, char** argv) {
  int rc = MPI_Init(&argc, &argv);
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "mpi-allreduce-bench: MPI_Init failed (error %d)\n", rc);
    return 1;
  }
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int rank = 0, nprocs = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &nprocs), "MPI_Comm_size");

  struct options opt;
  int status = parse_args(argc, argv, rank, &opt);  // same argv on every rank: same answer
  if (status == 0) {
    if (rank == 0) print_header(nprocs, &opt);
    for (int s = 0; s < NUM_SIZES && kSizes[s] <= opt.max_bytes && status == 0; ++s) {
      if (bench_size(kSizes[s], &opt, rank, nprocs) != 0) {
        if (rank == 0) fprintf(stderr, "mpi-allreduce-bench: wrong result at %lld bytes\n", (long long)kSizes[s]);
        status = 1;
      }
    }
  }
  check(MPI_Finalize(), "MPI_Finalize");
  return status;
}
