#!/usr/bin/env bash
# Runs mpi-allreduce-bench on this host over Open MPI's shared-memory transport only:
#   tools/mpi_bench/run_vader.sh [BINARY] [--max-bytes N] [--quick]
# BINARY defaults to build/bin/mpi-allreduce-bench (BUILD_DIR overrides build/); NP sets
# the process count (default 2). Exits 77 (skipped) when Open MPI is not installed.
#
# btl self,vader with pml ob1 keeps every byte in shared memory: no TCP, UCX or
# InfiniBand component is even opened, so the numbers cannot silently come from loopback
# TCP. vader's single-copy mechanism is left at its default (CMA, process_vm_readv, for
# messages above its 4 KiB eager limit); set OMPI_MCA_btl_vader_single_copy_mechanism=none
# where ptrace is forbidden (some containers) and vader aborts with "Read -1, expected".
# --allow-run-as-root and --oversubscribe: containers run as root, CI hosts have 2 cores.
set -euo pipefail

command -v mpirun >/dev/null || {
  echo "SKIPPED: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
if [[ $# -gt 0 && $1 != -* ]]; then
  binary=$1
  shift
else
  binary=${BUILD_DIR:-$source_dir/build}/bin/mpi-allreduce-bench
fi
[[ -x $binary ]] || {
  echo "run_vader.sh: $binary is not an executable; build the mpi-allreduce-bench target" \
       "(configured only when CMake finds MPI) or pass the binary's path first" >&2
  exit 2
}

exec mpirun --allow-run-as-root --oversubscribe -n "${NP:-2}" \
  --mca btl self,vader --mca pml ob1 --bind-to none \
  "$binary" "$@"
