#!/bin/bash
# The GPU checks, on a machine with NVIDIA GPUs, from the bundle tools/gpu_run/bundle.sh
# made: the core tests' GPU cases and the C API's GPU suite on the real CUDA plugin, the same
# suite under compute-sanitizer's memcheck, MultiWorkerMirrored over NCCL (one worker; two
# when there are two GPUs), a PyTorch tensor through the library and back by DLPack (where
# python3 has torch), and dist-bench --gpu. Prints everything and keeps a copy in
# $OUT/gpu_log.txt. Each step is bounded; the summary at the end lists the failed ones.
B=$(cd "$(dirname "$0")" && pwd)
export B
OUT=${OUT:-/tmp/gpu_run}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
gpus=$(nvidia-smi -L | grep -c '^GPU')
nccl=$(find /usr/lib /usr/local /opt -name 'libnccl.so.2*' 2>/dev/null | head -1)
echo "GPUs: $gpus; NCCL: ${nccl:-none found}"
export LD_LIBRARY_PATH=$B/lib${nccl:+:$(dirname "$nccl")}:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for f in "$B"/lib/libdistribute_cuda.so.0 "$B"/bin/*; do ldd "$f" | grep 'not found' | sed "s|^|$f: |"; done
failed=()
step() {
  local limit=$1 name=$2
  shift 2
  echo
  echo "=== $name: $*"
  local start=$SECONDS
  timeout -k 5 "$limit" "$@"
  local rc=$?
  echo "=== $name rc=$rc ($((SECONDS - start)) s)"
  [ $rc -eq 0 ] || failed+=("$name")
}
# The core tests link the core statically: point them at the plugin (the C API's programs
# find it beside libdistribute).
for t in local_devices_test buffer_test tensor_test dlpack_exchange_test variable_test; do
  step 60 "$t" env DIST_CUDA_PLUGIN="$B/lib/libdistribute_cuda.so.0" "$B/bin/$t" '--gtest_filter=*Gpu*:*GPU*:*Cuda*' --gtest_brief=1
done
step 180 test_gpu_replicas "$B/bin/test_gpu_replicas"
step 90 mw_one_worker "$B/bin/distrun" -n 1 --timeout 60 -- "$B/bin/mw_gpu_worker" --expect-sum
if [ "$gpus" -ge 2 ]; then
  step 150 mw_two_workers "$B/bin/distrun" -n 2 --timeout 120 -- "$B/bin/mw_gpu_worker" --expect-sum
else
  # Two workers on one GPU: NCCL refuses two ranks on one device; both must fail with that
  # reason at once, not hang.
  # Two workers on one GPU (DIST_CUDA_PLUGIN set keeps mw_gpu_worker from giving each worker
  # its own GPU): NCCL refuses two ranks on one device, and both workers must fail with that
  # reason at once, not hang.
  step 90 mw_two_workers_one_gpu_fail_cleanly bash -c 'log=$(DIST_CUDA_PLUGIN="$B/lib/libdistribute_cuda.so.0" \
    "$B/bin/distrun" -n 2 --timeout 60 -- "$B/bin/mw_gpu_worker" --expect-sum 2>&1); rc=$?; echo "$log"
    [ $rc -ne 0 ] && grep -q "Duplicate GPU" <<< "$log"'
fi
if python3 -c 'import torch' 2>/dev/null; then
  step 120 torch_interop python3 "$B/torch_interop.py"
fi
if command -v compute-sanitizer > /dev/null; then
  # API errors are not reported: NCCL probes its kernels with calls that fail on purpose.
  step 300 memcheck compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$B/bin/test_gpu_replicas"
fi
step 300 dist_bench_gpu "$B/bin/dist-bench" --gpu
# With CPU_BENCH=1, the CPU benchmarks too, on this host's cores (larger and quieter than
# the 2-core development machine, whose timings move 2x between runs): the small
# in-process all-reduces and the cross-worker all-reduce over TCP and shared memory.
if [ "${CPU_BENCH:-0}" = 1 ]; then
  step 120 dist_bench_small "$B/bin/dist-bench" --no-input --max-bytes 8K
  step 240 dist_bench_two_workers "$B/bin/distrun" -n 2 -- "$B/bin/dist-bench" --multi-worker
  step 240 dist_bench_four_workers "$B/bin/distrun" -n 4 -- "$B/bin/dist-bench" --multi-worker
fi
echo
if [ ${#failed[@]} -eq 0 ]; then echo "=== all GPU checks passed"; else echo "=== FAILED: ${failed[*]}"; exit 1; fi
