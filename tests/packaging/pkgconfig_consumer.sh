#!/usr/bin/env bash
# Builds and runs consumer/consumer.c against libdistribute found through pkg-config.
#   pkgconfig_consumer.sh installed   <build dir> <work dir> <consumer.c> <version> <libdir> <cc> <pkg-config> <cmake> [<config>]
#   pkgconfig_consumer.sh uninstalled <build dir> <work dir> <consumer.c> <version> <libdir> <cc> <pkg-config>
# installed:   `cmake --install <build dir> --prefix <work dir>/prefix`, then
#              PKG_CONFIG_PATH=<prefix>/<libdir>/pkgconfig must give that prefix's headers and library.
# uninstalled: PKG_CONFIG_PATH=<build dir> must pick distribute-uninstalled.pc (the build tree).
# The consumer is linked with -Wl,-rpath,$(pkg-config --variable=libdir distribute) and run
# without LD_LIBRARY_PATH.
set -euo pipefail

usage="usage: pkgconfig_consumer.sh installed|uninstalled BUILD WORK CONSUMER_C VERSION LIBDIR CC PKG_CONFIG [CMAKE [CONFIG]]"
mode=${1:?$usage}
build_dir=${2:?$usage}
work_dir=${3:?$usage}
consumer_c=${4:?$usage}
version=${5:?$usage}
install_libdir=${6:?$usage}
cc=${7:?$usage}
pkg_config=${8:-}
cmake=${9:-}
config=${10:-}

if [[ -z $pkg_config ]] || ! command -v "$pkg_config" >/dev/null; then
  echo "SKIPPED: pkg-config not found"
  exit 77
fi
command -v readelf >/dev/null || { echo "SKIPPED: readelf not found"; exit 77; }

rm -rf "$work_dir"
mkdir -p "$work_dir"
unset LD_LIBRARY_PATH PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_ALLOW_SYSTEM_CFLAGS PKG_CONFIG_ALLOW_SYSTEM_LIBS

fail() { echo "FAIL: $*"; exit 1; }

# Resolves a path that may contain ../ (a relocatable .pc gives ${pcfiledir}/../..).
canon() { realpath -m "$1"; }

case $mode in
  installed)
    [[ -n $cmake ]] || fail "$usage"
    prefix=$work_dir/prefix
    install_args=(--install "$build_dir" --prefix "$prefix")
    [[ -n $config ]] && install_args+=(--config "$config")
    if ! "$cmake" "${install_args[@]}" >"$work_dir/install.log" 2>&1; then
      cat "$work_dir/install.log"
      fail "cmake ${install_args[*]} failed"
    fi
    pc_dir=$prefix/$install_libdir/pkgconfig
    [[ -f $pc_dir/distribute.pc ]] || fail "cmake --install did not install $pc_dir/distribute.pc"
    [[ ! -e $pc_dir/distribute-uninstalled.pc ]] ||
      fail "distribute-uninstalled.pc must not be installed (it points into the build tree)"
    # The tools come with the library: the launcher, and the benchmark, which must find the
    # installed library by itself (its run path), with no LD_LIBRARY_PATH.
    [[ -x $prefix/bin/distrun ]] || fail "cmake --install did not install bin/distrun"
    [[ -x $prefix/bin/dist-bench ]] || fail "cmake --install did not install bin/dist-bench"
    "$prefix/bin/distrun" --help >/dev/null 2>&1 || fail "the installed distrun --help failed"
    bench_lib=$(ldd "$prefix/bin/dist-bench" | awk '/libdistribute/ {print $3}')
    [[ $(canon "$bench_lib") == $(canon "$prefix/$install_libdir")/* ]] ||
      fail "the installed dist-bench loads libdistribute from '$bench_lib', not from $prefix/$install_libdir"
    export PKG_CONFIG_PATH=$pc_dir
    expected_libdir=$(canon "$prefix/$install_libdir")
    ;;
  uninstalled)
    [[ -f $build_dir/distribute-uninstalled.pc ]] ||
      fail "$build_dir/distribute-uninstalled.pc does not exist"
    export PKG_CONFIG_PATH=$build_dir
    expected_libdir=
    ;;
  *)
    fail "$usage"
    ;;
esac

echo "PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
"$pkg_config" --exists --print-errors distribute || fail "pkg-config does not find distribute"
if grep -q -- '--validate' <<<"$("$pkg_config" --help 2>&1 || true)"; then
  "$pkg_config" --validate distribute || fail "pkg-config --validate distribute reports problems"
fi
got_version=$("$pkg_config" --modversion distribute)
[[ $got_version == "$version" ]] || fail "pkg-config --modversion distribute is $got_version, expected $version"
"$pkg_config" --atleast-version="$version" distribute || fail "pkg-config --atleast-version=$version distribute failed"

cflags=$("$pkg_config" --cflags distribute)
libs=$("$pkg_config" --libs distribute)
libdir=$("$pkg_config" --variable=libdir distribute)
echo "cflags: $cflags"
echo "libs:   $libs"
echo "libdir: $libdir"

if [[ $mode == uninstalled ]]; then
  # pkgconf/pkg-config prefer NAME-uninstalled.pc on PKG_CONFIG_PATH; --uninstalled says so.
  "$pkg_config" --uninstalled distribute ||
    fail "PKG_CONFIG_PATH=$build_dir did not pick distribute-uninstalled.pc"
  [[ -f $libdir/libdistribute.so ]] || fail "libdir $libdir (build tree) has no libdistribute.so"
else
  # Every path the installed .pc gives must lie under the prefix it was installed to:
  # a .pc that hard-codes the configure-time CMAKE_INSTALL_PREFIX breaks
  # `cmake --install --prefix` (and DESTDIR staging, and relocated packages).
  for var in prefix libdir includedir; do
    value=$("$pkg_config" --variable="$var" distribute)
    case $(canon "$value")/ in
      "$(canon "$prefix")"/*) ;;
      *) fail "installed distribute.pc: $var=$value is not under the install prefix $prefix;" \
              "the .pc hard-codes the configure-time prefix instead of being relocatable" \
              "(e.g. prefix=\${pcfiledir}/../.. in pkgconfig/distribute.pc.in)" ;;
    esac
  done
  [[ $(canon "$libdir") == "$expected_libdir" ]] || fail "libdir $libdir is not $expected_libdir"
  # libdistribute looks for its CUDA plugin beside itself: when the plugin was built, it
  # must be installed next to the library.
  if [[ -f $build_dir/lib/libdistribute_cuda.so.0 && ! -f $prefix/$install_libdir/libdistribute_cuda.so.0 ]]; then
    fail "the CUDA plugin libdistribute_cuda.so.0 was built but not installed in $prefix/$install_libdir"
  fi
  includedir=$("$pkg_config" --variable=includedir distribute)
  for header in distribute.h version.h export.h status.h tensor.h; do
    [[ -f $includedir/distribute/$header ]] || fail "$includedir/distribute/$header was not installed"
  done
fi

consumer=$work_dir/consumer
# shellcheck disable=SC2086  # cflags and libs are word lists
"$cc" -std=c99 -pedantic -Wall -Wextra -Werror "$consumer_c" $cflags $libs \
  -Wl,-rpath,"$libdir" -o "$consumer" || fail "compiling the consumer failed"

dynamic=$(readelf -d "$consumer")
grep -q 'Shared library: \[libdistribute.so.0\]' <<<"$dynamic" ||
  fail "the consumer does not have DT_NEEDED libdistribute.so.0"

output=$("$consumer") || { echo "$output"; fail "the consumer failed"; }
echo "$output"
[[ $output == "consumer OK: distribute $version" ]] || fail "unexpected consumer output"

# The consumer must have loaded the library pkg-config pointed to.
if command -v ldd >/dev/null; then
  loaded=$(ldd "$consumer" | awk '$1 == "libdistribute.so.0" { print $3 }')
  [[ -n $loaded && "$(canon "$(dirname "$loaded")")" == "$(canon "$libdir")" ]] ||
    fail "the consumer loads $loaded, not the one in $libdir"
fi
echo "OK: pkg-config ($mode) consumer built and ran"
