#!/bin/bash
# Packs what the GPU checks need into .gpurun/ (about 30 MB, stripped): the GPU test and
# benchmark programs, libdistribute, the CUDA plugin, the CUDA runtime it was linked with,
# and the Debian libraries they load (gRPC, Abseil, Gloo, ...), for a GPU machine that has a
# driver and NCCL but not this project's build dependencies (the device tool's machines
# run another distribution). NCCL itself (200 MB) is not packed: run.sh finds the machine's.
#
#   tools/gpu_run/bundle.sh [build-dir]      # default: build/
#   then on the GPU machine: bash .gpurun/run.sh   (the device tool: carry [".gpurun"])
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=$root/.gpurun
if [ ! -f "$build/lib/libdistribute_cuda.so.0" ]; then
  echo "bundle.sh: $build has no CUDA plugin (configure with the toolkit at /usr/local/cuda)" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
programs=(bin/dist-bench bin/dist-bench-gpu bin/distrun bin/mw_gpu_worker bin/buffer_test
          bin/tensor_test bin/dlpack_exchange_test bin/local_devices_test bin/variable_test tests/c/test_gpu_replicas)
for p in "${programs[@]}"; do cp "$build/$p" "$out/bin/"; done
cp -L "$build/lib/libdistribute.so.0" "$out/lib/libdistribute.so.0"
cp "$build/lib/libdistribute_cuda.so.0" "$out/lib/"
# Every library they load except the C/C++ runtime (newer on the GPU machine), the driver and
# NCCL (the machine's own), and libdistribute (packed above).
for f in "$out"/bin/* "$out"/lib/*; do ldd "$f"; done | awk '/=> \//{print $1" "$3}' | sort -u |
  grep -v -E '^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libdistribute|libnccl|libcuda)\.' |
  while read -r name path; do cp -L "$path" "$out/lib/$name"; done
strip --strip-unneeded "$out"/bin/* "$out"/lib/*
cp "$root/tools/gpu_run/run.sh" "$root/tools/gpu_run/torch_interop.py" "$out/"
du -sh "$out"
