#!/usr/bin/env bash
# Runs dlopen_test against libdistribute loaded at run time.
#   dlopen.sh <dlopen_test executable> <libdistribute file> <SONAME>
# 1. dlopen_test must not be linked to libdistribute (no DT_NEEDED on it).
# 2. dlopen by path (the library file CMake built).
# 3. dlopen by bare SONAME, found through LD_LIBRARY_PATH, as bindings usually do.
set -euo pipefail

exe=${1:?usage: dlopen.sh EXE LIB SONAME}
lib=${2:?usage: dlopen.sh EXE LIB SONAME}
soname=${3:?usage: dlopen.sh EXE LIB SONAME}

command -v readelf >/dev/null || { echo "SKIPPED: readelf not found"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
echo "dlopen_test NEEDED: $(tr "\n" " " <<<"$needed")"
if grep -q '^libdistribute' <<<"$needed"; then
  fail "$exe is linked to libdistribute; it must only dlopen it"
fi
# Nothing defined in libdistribute may be an undefined reference of the test either.
undefined=$(nm -D --undefined-only "$exe" 2>/dev/null || true)
if grep -q ' dist_' <<<"$undefined"; then
  grep ' dist_' <<<"$undefined"
  fail "$exe references dist_* symbols at link level"
fi

unset LD_LIBRARY_PATH
echo "--- dlopen by path: $lib"
"$exe" "$lib" || fail "dlopen by path failed"

echo "--- dlopen by SONAME: $soname (LD_LIBRARY_PATH=$(dirname "$lib"))"
LD_LIBRARY_PATH=$(dirname "$lib") "$exe" "$soname" || fail "dlopen by SONAME failed"

echo "OK: libdistribute works through dlopen/dlsym"
