#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a bounded time each:
#   scripts/run-fuzzers.sh BUILD_DIR SECONDS
# Each starts from its committed corpus (tests/core/fuzz_corpus/<name without _fuzz>) and
# keeps what it finds in BUILD_DIR/fuzz-corpus/<name>, outside the source tree. A crash,
# leak, timeout or out-of-memory fails with the reproducer's path: fix the bug and commit
# the reproducer to the corpus, where the replay tests of every build run it.
set -euo pipefail

build_dir=${1:?usage: run-fuzzers.sh BUILD_DIR SECONDS}
seconds=${2:?usage: run-fuzzers.sh BUILD_DIR SECONDS}
source_dir=$(cd "$(dirname "$0")/.." && pwd)

# name:max_len
targets=(safetensors_fuzz:4096 tf_config_fuzz:1024 tfrecord_fuzz:4096 coordination_fuzz:2048 slurm_fuzz:512 shm_ring_fuzz:4200)

failed=0
for entry in "${targets[@]}"; do
  name=${entry%%:*}
  max_len=${entry##*:}
  binary="$build_dir/bin/$name"
  seeds="$source_dir/tests/core/fuzz_corpus/${name%_fuzz}"
  corpus="$build_dir/fuzz-corpus/$name"
  artifacts="$build_dir/fuzz-artifacts/$name/"
  mkdir -p "$corpus" "$artifacts"
  [[ -x "$binary" ]] || { echo "fuzz: $binary is missing" >&2; exit 1; }
  log="$build_dir/fuzz-artifacts/$name.log"
  if "$binary" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts" "$corpus" "$seeds" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $name: ${runs:-?} inputs in ${seconds} s, no failure"
  else
    echo "fuzz: $name FAILED; reproducer(s) in $artifacts, log $log:" >&2
    tail -n 30 "$log" >&2
    failed=1
  fi
done
exit "$failed"
