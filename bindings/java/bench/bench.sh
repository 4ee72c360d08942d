#!/usr/bin/env bash
# The Java binding's benchmark (not a test): prints a table of the empty `run` step and an
# 8-byte all-reduce step (2 and 4 replicas), Java next to C through the same library.
#   PKG_CONFIG_PATH=$PWD/build bindings/java/bench/bench.sh [OUT_DIR] [STEPS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "${1:-build/java}" && cd "${1:-build/java}" && pwd)"
steps="${2:-2000}"
"$here/../build.sh" "$out" >/dev/null
libdir="$(cd "$(pkg-config --variable=libdir distribute)" && pwd)"
mkdir -p "$out/bench"
${CC:-cc} -std=c11 -O2 -Wall "$here/bench_c.c" $(pkg-config --cflags --libs distribute) -Wl,-rpath,"$libdir" -o "$out/bench/bench_c"
javac -d "$out/bench" -cp "$out/distribute.jar" "$here/Bench.java"
"$out/bench/bench_c" "$steps" | java -Djava.library.path="$out" -cp "$out/distribute.jar:$out/bench" Bench "$steps"
