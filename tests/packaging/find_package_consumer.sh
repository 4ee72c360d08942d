#!/usr/bin/env bash
# Installs libdistribute into <work dir>/prefix and builds tests/packaging/cmake_consumer
# against it with find_package(distribute 0.1 CONFIG REQUIRED) + distribute::distribute.
#   find_package_consumer.sh <build dir> <work dir> <consumer source dir> <version> <cmake> <c compiler> [<generator> [<config>]]
# Also checks that asking for an incompatible version (next major) fails to configure,
# and that the consumer runs without LD_LIBRARY_PATH (CMake gives it a RUNPATH).
set -euo pipefail

usage="usage: find_package_consumer.sh BUILD WORK CONSUMER_SRC VERSION CMAKE CC [GENERATOR [CONFIG]]"
build_dir=${1:?$usage}
work_dir=${2:?$usage}
consumer_src=${3:?$usage}
version=${4:?$usage}
cmake=${5:?$usage}
cc=${6:?$usage}
generator=${7:-}
config=${8:-}

fail() { echo "FAIL: $*"; exit 1; }
run_logged() {  # <log> <command...>: run quietly, show the log on failure
  local log=$1; shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    return 1
  fi
}

rm -rf "$work_dir"
mkdir -p "$work_dir"
unset LD_LIBRARY_PATH CMAKE_PREFIX_PATH distribute_DIR distribute_ROOT

prefix=$work_dir/prefix
install_args=(--install "$build_dir" --prefix "$prefix")
[[ -n $config ]] && install_args+=(--config "$config")
run_logged "$work_dir/install.log" "$cmake" "${install_args[@]}" || fail "cmake ${install_args[*]} failed"

configure_args=(-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc"
                -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
[[ -n $generator ]] && configure_args+=(-G "$generator")
[[ -n $config ]] && configure_args+=(-DCMAKE_BUILD_TYPE="$config")

# 1. The compatible version: configure, build, run.
consumer_build=$work_dir/build
run_logged "$work_dir/configure.log" "$cmake" -S "$consumer_src" -B "$consumer_build" "${configure_args[@]}" ||
  fail "configuring the find_package consumer failed"
grep -qF -- "-- Found distribute $version in $prefix/" "$work_dir/configure.log" ||
  { cat "$work_dir/configure.log"; fail "find_package did not find distribute $version under $prefix"; }
build_args=(--build "$consumer_build")
[[ -n $config ]] && build_args+=(--config "$config")
run_logged "$work_dir/build.log" "$cmake" "${build_args[@]}" || fail "building the find_package consumer failed"

exe=$(find "$consumer_build" -type f -name cmake_consumer -perm -u+x | head -n 1)
[[ -n $exe ]] || fail "no cmake_consumer executable under $consumer_build"
output=$("$exe") || { echo "$output"; fail "the find_package consumer failed"; }
echo "$output"
[[ $output == "cmake consumer OK: distribute $version" ]] || fail "unexpected consumer output"
if command -v ldd >/dev/null; then
  loaded=$(ldd "$exe" | awk '$1 == "libdistribute.so.0" { print $3 }')
  case $(realpath -m "$loaded") in
    "$(realpath -m "$prefix")"/*) echo "loads $loaded" ;;
    *) fail "the consumer loads '$loaded', not the installed library under $prefix" ;;
  esac
fi

cpp_exe=$(find "$consumer_build" -type f -name cpp_consumer -perm -u+x | head -n 1)
[[ -n $cpp_exe ]] || fail "no cpp_consumer executable under $consumer_build"
cpp_output=$("$cpp_exe") || { echo "$cpp_output"; fail "the C++ wrapper consumer failed"; }
echo "$cpp_output"
[[ $cpp_output == "cpp consumer OK: distribute $version, 2 elements" ]] || fail "unexpected C++ consumer output"

# 2. An incompatible version (next major) must be rejected by distributeConfigVersion.cmake.
major=${version%%.*}
bad_version=$((major + 1)).0
if "$cmake" -S "$consumer_src" -B "$work_dir/build-bad-version" "${configure_args[@]}" \
     -DDIST_FIND_VERSION="$bad_version" >"$work_dir/configure-bad-version.log" 2>&1; then
  cat "$work_dir/configure-bad-version.log"
  fail "find_package(distribute $bad_version) accepted version $version"
fi
grep -q 'compatible with requested version' "$work_dir/configure-bad-version.log" ||
  { cat "$work_dir/configure-bad-version.log"; fail "find_package(distribute $bad_version) failed for another reason"; }
echo "find_package(distribute $bad_version) is rejected, as it should be"

echo "OK: find_package(distribute $version) consumer built and ran"
