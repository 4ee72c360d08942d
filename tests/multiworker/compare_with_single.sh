#!/usr/bin/env bash
# compare_with_single.sh DISTRUN PROGRAM WORKERS REPLICAS_PER_WORKER
# Runs PROGRAM on WORKERS workers of REPLICAS_PER_WORKER replicas under distrun, then as
# one process with WORKERS * REPLICAS_PER_WORKER replicas, and requires every worker's
# output to equal the single process's byte for byte.
set -euo pipefail
distrun=$1 program=$2 workers=$3 per_worker=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$distrun" -n "$workers" --replicas-per-worker "$per_worker" --timeout 100 -- \
  "$program" --out "$dir/result"
"$program" --out "$dir/result" --single $((workers * per_worker))
for ((rank = 0; rank < workers; ++rank)); do
  if ! cmp "$dir/result.single" "$dir/result.$rank"; then
    echo "worker $rank's results differ from the single process's" >&2
    exit 1
  fi
done
echo "all $workers workers equal the single process with $((workers * per_worker)) replicas"
