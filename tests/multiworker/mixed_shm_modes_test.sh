#!/usr/bin/env bash
# multiworker.mixed_shm_modes: two workers whose shared-memory modes differ
# (DIST_SHARED_MEMORY=on in one process, off in the other) both refuse at start-up with
# FAILED_PRECONDITION naming each worker's choice; before the transport census they
# waited in different transports until the strategy's timeout (DEADLINE_EXCEEDED).
# Usage: mixed_shm_modes_test.sh DISTRUN MW_COLLECTIVES
set -euo pipefail
distrun=$1 program=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timeout_s=100
start=$(date +%s)
# DIST_RANK picks the mode. distrun stops the job when the first worker fails: each
# worker ignores SIGTERM (an ignored signal stays ignored across exec) so that the other
# one still finishes its own refusal (--grace: however long that takes on a loaded
# machine, up to the timeout), and writes to a log of its own.
if "$distrun" -n 2 --timeout "$timeout_s" --grace "$timeout_s" -- bash -c '
    if [[ $DIST_RANK == 1 ]]; then export DIST_SHARED_MEMORY=off; else export DIST_SHARED_MEMORY=on; fi
    trap "" TERM
    exec "$0" --out "$1/result" >"$1/rank$DIST_RANK.log" 2>&1' "$program" "$work" >"$work/log" 2>&1; then
  cat "$work/log" "$work"/rank*.log; echo "FAIL: workers with different shared-memory modes ran"; exit 1
fi
elapsed=$(($(date +%s) - start))
for rank in 0 1; do
  grep "FAILED_PRECONDITION" "$work/rank$rank.log" | grep "different cross-worker transports" |
    grep "worker:0 shared memory (on)" | grep -q "worker:1 TCP (shared memory off)" ||
    { cat "$work/log" "$work"/rank*.log; echo "FAIL: rank $rank does not name both choices"; exit 1; }
done
echo "mixed shared-memory modes: both workers refused in ${elapsed} s:"
grep -m1 "different cross-worker transports" "$work/rank0.log"
