#!/usr/bin/env bash
# Lockstep between processes: distrun -n 2 runs the engine with 2 threads per process as
# the 4 replicas of one MultiWorkerMirroredStrategy. Both processes must print the same
# state hash at every checkpoint, and the last one must equal the single-threaded
# reference's (computed by the same binary without the library).
#   lockstep_test.sh <distrun> <nbody_engine>
set -euo pipefail
distrun=${1:?usage: lockstep_test.sh DISTRUN ENGINE}
engine=${2:?usage: lockstep_test.sh DISTRUN ENGINE}
args=(--bodies 256 --steps 2000 --hash-every 500)
fail() { echo "FAIL: $*"; exit 1; }

reference=$(env -u TF_CONFIG "$engine" "${args[@]}" --threads 1 | sed -n 's/.*reference (1 thread, no library) hash \([0-9a-f]*\) at step 2000.*/\1/p')
[[ -n $reference ]] || fail "no reference hash"
echo "reference hash at step 2000: $reference"

out=$("$distrun" -n 2 --timeout 240 -- "$engine" "${args[@]}" --threads 2) || { echo "$out"; fail "distrun failed"; }
echo "$out"
rank0=$(grep '^\[0\] step ' <<<"$out" | sed 's/^\[0\] //')
rank1=$(grep '^\[1\] step ' <<<"$out" | sed 's/^\[1\] //')
[[ $(wc -l <<<"$rank0") -eq 4 ]] || fail "rank 0 printed $(wc -l <<<"$rank0") checkpoints, expected 4"
[[ $rank0 == "$rank1" ]] || fail "the processes disagree"
grep -q "^step 2000 hash $reference\$" <<<"$rank0" || fail "the last hash differs from the reference"
grep -q "4 replicas in sync (2 threads here)" <<<"$out" || fail "not 4 replicas"
echo "lockstep: both processes printed the same 4 hashes, the last equal to the reference"
