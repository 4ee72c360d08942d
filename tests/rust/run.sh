#!/usr/bin/env bash
# The Rust binding's suite, as `make test-rust` runs it: cargo test --offline over the
# workspace in bindings/rust (distribute-sys, distribute, tests/rust, examples/rust) with
# Debian's rustc/cargo, against the build tree's library (build/lib, build/include_c and
# build/distribute-uninstalled.pc). A missing toolchain fails the run: it is installed by
# scripts/install-deps.sh. Ends with one summary line.
#   tests/rust/run.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)

fail() { echo "test-rust: $*" >&2; exit 1; }
for tool in /usr/bin/cargo /usr/bin/rustc /usr/bin/rustdoc; do
  [[ -x $tool ]] || fail "$tool is missing (Debian's rustc and cargo): run scripts/install-deps.sh"
done
for tool in bindgen /usr/bin/rustfmt pkg-config cc ar; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run scripts/install-deps.sh"
done
[[ -f $build/lib/libdistribute.so.0 && -f $build/include_c/distribute/version.h ]] ||
  fail "no library in $build: build first (cmake --preset default && cmake --build --preset default)"

# One toolchain (Debian's) even when rustup's is first on PATH: two in one target directory
# give E0786 "corrupt metadata".
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc CARGO_NET_OFFLINE=true
export PKG_CONFIG_PATH=$build                       # distribute-uninstalled.pc
export CARGO_TARGET_DIR=$build/cargo-target
export DIST_GENERATED_INCLUDE=$build/include_c      # the stale check's version.h
export TRAIN_MLP=$build/bin/train_mlp               # the example's accuracy against C's
[[ -x $TRAIN_MLP ]] || fail "$TRAIN_MLP is missing (the C example the Rust one is compared with)"
# The fake GPU plugin (tests/gpu_fake): tests/typed_reads.rs runs a child process on it to
# check that reads of device memory are refused. Built here in a CMake tree that lacks it.
export DIST_FAKE_GPU_PLUGIN=${DIST_FAKE_GPU_PLUGIN:-$build/lib/libdist_fake_gpu.so}
if [[ ! -f $DIST_FAKE_GPU_PLUGIN && -f $build/CMakeCache.txt ]]; then
  cmake --build "$build" --target dist_fake_gpu >/dev/null
fi
[[ -f $DIST_FAKE_GPU_PLUGIN ]] || fail "$DIST_FAKE_GPU_PLUGIN is missing (cmake --build $build --target dist_fake_gpu)"

cd "$root/bindings/rust"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
{ /usr/bin/cargo test --offline --workspace 2>&1; echo "cargo-exit: $?"; } | tee "$log" |
  grep -vE '^\s+(Compiling|Running|Doc-tests|Finished)|^running 0 tests|^$|test result: ok\. 0 passed|^cargo-exit:' || true
status=$(sed -n 's/^cargo-exit: //p' "$log")
read -r passed failed binaries < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1) } n++ } END { print p+0, f+0, n+0 }' "$log")
version=$(/usr/bin/rustc --version | awk '{print $2}')
if [[ $status -ne 0 || $failed -ne 0 || $passed -eq 0 ]]; then
  echo "rust: FAILED (cargo test exit $status): $passed passed, $failed failed in $binaries test binaries (rustc $version)"
  exit 1
fi
echo "rust: 100% tests passed, $passed tests in $binaries test binaries (cargo test --offline, rustc $version)"
