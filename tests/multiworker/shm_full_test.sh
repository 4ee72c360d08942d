#!/usr/bin/env bash
# multiworker.shm_full: two workers on one host whose /dev/shm is too small for their
# segments (a 256 KiB tmpfs, in a mount namespace of their own, as a container's may be).
# With the default (AUTO) the job falls back to TCP and its results still equal a single
# process's; with DIST_SHARED_MEMORY=on both workers refuse at start-up saying why, and
# nobody dies of SIGBUS. Exit 77 (SKIPPED) where a mount namespace cannot be made.
# Usage: shm_full_test.sh DISTRUN MW_COLLECTIVES
set -euo pipefail
distrun=$1 program=$2
if [[ "${1:-}" != --inside ]]; then
  if ! unshare -m true 2>/dev/null; then
    echo "SKIPPED: cannot make a mount namespace (needs root or user namespaces)"
    exit 77
  fi
  exec unshare -m bash "$0" --inside "$distrun" "$program"
fi
distrun=$2 program=$3
mount -t tmpfs -o size=256k tmpfs /dev/shm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$distrun" -n 2 --replicas-per-worker 2 --timeout 100 -- "$program" --out "$work/result" >"$work/auto.log" 2>&1 ||
  { cat "$work/auto.log"; echo "FAIL: the job did not fall back to TCP"; exit 1; }
"$program" --out "$work/result" --single 4 >/dev/null
cmp -s "$work/result.single" "$work/result.0" && cmp -s "$work/result.single" "$work/result.1" ||
  { echo "FAIL: results over the fallback differ from a single process's"; exit 1; }
echo "AUTO with a full /dev/shm: fell back to TCP, results equal a single process's"

if DIST_SHARED_MEMORY=on "$distrun" -n 2 --timeout 100 -- "$program" --out "$work/result" >"$work/on.log" 2>&1; then
  cat "$work/on.log"; echo "FAIL: shared memory was required and the job ran anyway"; exit 1
fi
grep -q "FAILED_PRECONDITION" "$work/on.log" && grep -q "cannot share memory" "$work/on.log" ||
  { cat "$work/on.log"; echo "FAIL: the refusal does not say why"; exit 1; }
if grep -q -i "bus error\|SIGBUS" "$work/on.log"; then cat "$work/on.log"; echo "FAIL: a worker died of SIGBUS"; exit 1; fi
echo "ON with a full /dev/shm: refused at start-up:"
grep -m1 "cannot share memory" "$work/on.log"
