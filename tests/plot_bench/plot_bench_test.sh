#!/bin/sh
# tools/plot_bench.py on saved outputs (tests/plot_bench/data: dist-bench --quick,
# dist-bench --multi-worker --quick under distrun, run_vader.sh --quick for the three
# collectives, train_mlp --all --csv): every chart must be written as an SVG that names
# its lines. Exits 77 (skipped) when no python3 here has matplotlib.
#   plot_bench_test.sh SOURCE_DIR
src=${1:?usage: plot_bench_test.sh SOURCE_DIR}
data=$src/tests/plot_bench/data
python=
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import matplotlib' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "SKIPPED: no python3 with matplotlib (apt-get install python3-matplotlib; scripts/install-deps.sh installs it)"
  exit 77
fi
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT

"$python" "$src/tools/plot_bench.py" -o "$out" "$data/dist_bench_quick.txt" \
  "$data/multi_worker_quick.txt" "$data/vader_quick.txt" "$data/train_mlp.csv" || {
  echo "FAIL: plot_bench.py exited $?"
  exit 1
}
failed=0
# chart, then text its legend or title must hold
check() {
  name=$1
  file=$out/$name
  shift
  if [ ! -s "$file" ]; then
    echo "FAIL: $name was not written"
    failed=1
    return
  fi
  head -c 200 "$file" | grep -q '<svg\|<?xml' || { echo "FAIL: $file is no SVG"; failed=1; }
  for text in "$@"; do
    grep -qF "$text" "$file" || { echo "FAIL: $name does not say '$text'"; failed=1; }
  done
}
check allreduce_in_process_busbw.svg "library, 2 replicas" "plain thread reference, 4 threads" "bus bandwidth"
check allreduce_in_process_latency.svg "library _into, 4 replicas" "median time per call"
check allreduce_multi_worker_busbw.svg "raw Gloo" "Open MPI vader MPI_Allreduce, 2 processes" "TCP"
check allreduce_multi_worker_latency.svg "library, shared memory" "raw Gloo"
check bcast_allgather_multi_worker_busbw.svg "MPI_Bcast" "MPI_Allgather" "all-gather, library"
check bcast_allgather_multi_worker_latency.svg "broadcast, wrapped memory"
check training_curves.svg "held-out accuracy" "OneDevice" "Mirrored" "MultiWorkerMirrored" \
  "ParameterServer" "ClusterCoordinator"

# Input with no table it knows: exit 1 and say so.
echo "no tables here" > "$out/empty.txt"
if "$python" "$src/tools/plot_bench.py" -o "$out/none" "$out/empty.txt" 2>/dev/null; then
  echo "FAIL: plot_bench.py accepted a file without tables"
  failed=1
fi
[ "$failed" -eq 0 ] && echo "plot_bench.py wrote every chart from the sample outputs"
exit "$failed"
