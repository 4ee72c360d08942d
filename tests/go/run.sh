#!/usr/bin/env bash
# The Go binding's suite (`make test-go`): gofmt and go vet on the hand-written code, the
# binding's tests (also under -race with GODEBUG=cgocheck=2), the example and the README
# example, all offline (GOPROXY=off) against the build tree's library. Built with the tag
# distribute_testhooks, which adds distribute.FinalizedHandles for finalizer_hooks_test.go.
#   DIST_BUILD_DIR   build directory (default: build), with distribute-uninstalled.pc
#   DIST_PC_DIR      where to find distribute(-uninstalled).pc instead (e.g. an install prefix's lib/pkgconfig)
#   DIST_GO_RACE=0   skip the -race pass (it is on by default)
#   DIST_FAKE_GPU_PLUGIN  libdist_fake_gpu.so (default: beside libdistribute, built if missing)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${DIST_BUILD_DIR:-$root/build}
command -v go >/dev/null || { echo "test-go: FAILED: no Go toolchain (scripts/install-deps.sh installs golang-go)" >&2; exit 1; }
command -v pkg-config >/dev/null || { echo "test-go: FAILED: no pkg-config" >&2; exit 1; }
export PKG_CONFIG_PATH=${DIST_PC_DIR:-$build}
libdir=$(pkg-config --variable=libdir distribute) || { echo "test-go: FAILED: distribute.pc not found in $PKG_CONFIG_PATH (build first)" >&2; exit 1; }
export CGO_LDFLAGS="-Wl,-rpath,$libdir"
export GOPROXY=off GOFLAGS=-mod=mod GOSUMDB=off GO111MODULE=on
export GOCACHE=${GOCACHE:-$build/go/cache} GOPATH=${GOPATH_OVERRIDE:-$build/go/path}
export PATH=$build/bin:$PATH DIST_GO_BUILD_DIR=$build
# The fake GPU plugin (tests/gpu_fake) beside libdistribute: typed_read_test.go runs a child
# process on it to check that reads of device memory are refused. A CMake build tree that
# lacks it builds it here (one small target); without it that test fails.
export DIST_FAKE_GPU_PLUGIN=${DIST_FAKE_GPU_PLUGIN:-$libdir/libdist_fake_gpu.so}
if [[ ! -f $DIST_FAKE_GPU_PLUGIN && -f $libdir/../CMakeCache.txt ]]; then
  cmake --build "$libdir/.." --target dist_fake_gpu >/dev/null
fi
tags=distribute_testhooks
mkdir -p "$GOCACHE" "$GOPATH"

fail=0
step() { echo "test-go: $*"; }
for dir in bindings/go tests/go examples/go; do
  unformatted=$(cd "$root/$dir" && gofmt -l .)
  if [[ -n "$unformatted" ]]; then echo "test-go: gofmt: $dir: $unformatted" >&2; fail=1; fi
  (cd "$root/$dir" && go vet -tags $tags ./...) || { echo "test-go: go vet failed in $dir" >&2; fail=1; }
done
[[ $fail -eq 0 ]] && step "gofmt and go vet: clean (bindings/go, tests/go, examples/go)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
(cd "$root/tests/go" && go test -tags $tags -count=1 -v ./... 2>&1) | tee "$log" | grep -E '^(--- (FAIL|SKIP)|FAIL|ok|panic)' 
rc=${PIPESTATUS[0]}
set -e
passed=$(grep -c '^--- PASS' "$log" || true)
failed=$(grep -c '^--- FAIL' "$log" || true)
if [[ $rc -ne 0 ]]; then grep -B2 -A20 -E '^\s*--- FAIL|^panic' "$log" | head -80 >&2; fail=1; fi

race="skipped (DIST_GO_RACE=0)"
if [[ ${DIST_GO_RACE:-1} != 0 ]]; then
  if (cd "$root/tests/go" && GODEBUG=cgocheck=2 go test -tags $tags -race -count=1 ./... 2>&1 | tail -5 | grep -v '^distribute: this job'); then
    race="passed"
  else
    race="FAILED"; fail=1
  fi
fi
if [[ $fail -ne 0 ]]; then
  echo "test-go: FAILED: $passed tests passed, $failed failed; -race/cgocheck=2 $race" >&2
  exit 1
fi
echo "test-go: $passed tests passed, 0 failed (go test); -race with GODEBUG=cgocheck=2: $race; gofmt/go vet clean; GOPROXY=off"
