#!/usr/bin/env bash
# Runs the plugin loader against the build tree the ways a user meets it:
#   plugin_loader_test.sh <plugin_loader> <libdistribute.so.0> <work dir>
# 1. --library PATH: loads, resolves, runs the Mirrored step.
# 2. no argument: finds the library through pkg-config (a .pc file naming the build's
#    libdir), as an installed library is found.
# 3. a missing library: exit 3 and a message naming the path, no crash.
# 4. a library older than required: exit 4 and a message with both versions.
# 5. a shared object that is not libdistribute: exit 4 naming the missing function.
# It also checks that the loader does not link libdistribute (no DT_NEEDED on it).
set -euo pipefail
loader=${1:?usage: plugin_loader_test.sh LOADER LIBRARY WORKDIR}
library=${2:?}
work=${3:?}
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work"

if command -v readelf >/dev/null; then
  if readelf -d "$loader" | grep -q 'NEEDED.*libdistribute'; then fail "the loader links libdistribute"; fi
fi

out=$(env -u LD_LIBRARY_PATH "$loader" --library "$library") || fail "--library run failed: $out"
echo "$out"
grep -q "gives 3.0 and 3.0" <<<"$out" || fail "unexpected step output"
grep -q "functions resolved" <<<"$out" || fail "no resolution line"

if command -v pkg-config >/dev/null; then
  mkdir -p "$work/pc"
  cat >"$work/pc/distribute.pc" <<PC
libdir=$(dirname "$(realpath "$library")")
Name: distribute
Description: test
Version: 0.1.0
Libs: -L\${libdir} -ldistribute
PC
  out=$(env -u LD_LIBRARY_PATH PKG_CONFIG_PATH="$work/pc" "$loader") || fail "pkg-config run failed: $out"
  grep -q "from $(dirname "$(realpath "$library")")/libdistribute.so.0" <<<"$out" || fail "not found through pkg-config: $out"
  echo "found through pkg-config: ok"
fi

set +e
err=$("$loader" --library "$work/missing/libdistribute.so.0" 2>&1); rc=$?
set -e
[[ $rc -eq 3 ]] || fail "a missing library gave status $rc: $err"
grep -q "cannot load libdistribute from '$work/missing/libdistribute.so.0'" <<<"$err" || fail "message: $err"
echo "missing library: ok (status 3)"

set +e
err=$("$loader" --library "$library" --require-version 0.99.0 2>&1); rc=$?
set -e
[[ $rc -eq 4 ]] || fail "a too old library gave status $rc: $err"
grep -q "this program needs 0.99.0 or newer" <<<"$err" || fail "message: $err"
echo "too old library: ok (status 4)"

set +e
err=$("$loader" --library "$(ldconfig -p 2>/dev/null | awk '/libz.so.1 / {print $NF; exit}')" 2>&1); rc=$?
set -e
if [[ $rc -ne 3 ]]; then  # libz found: it is not libdistribute
  [[ $rc -eq 4 ]] || fail "a foreign library gave status $rc: $err"
  grep -q "has no dist_version" <<<"$err" || fail "message: $err"
  echo "foreign library: ok (status 4)"
fi

set +e
err=$("$loader" --bogus 2>&1); rc=$?
set -e
[[ $rc -eq 2 ]] || fail "a bad argument gave status $rc"
echo "plugin loader: all checks passed"
