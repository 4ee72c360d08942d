#!/usr/bin/env bash
# Compiles every public header on its own (twice in one translation unit, to exercise the
# include guard), and all of them together, as strict C99 and strict C++11:
#   gcc -std=c99 -pedantic -Wall -Wextra -Wstrict-prototypes -Werror -fsyntax-only
#   g++ -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only
#   check_headers.sh <include_c dir> <generated include dir> [<dlpack include dir>]
# The headers are <dir>/distribute/*.h of both directories (so version.h is the generated
# one, and new headers are covered without editing this script); dlpack_interop.h needs
# <dlpack/dlpack.h>. clang/clang++ are used as well when installed.
set -euo pipefail

include_dir=${1:?usage: check_headers.sh INCLUDE_C GENERATED_INCLUDE [DLPACK_INCLUDE]}
generated_dir=${2:?usage: check_headers.sh INCLUDE_C GENERATED_INCLUDE [DLPACK_INCLUDE]}
dlpack_dir=${3:-}

compilers=()
for pair in gcc:g++ clang:clang++; do
  c=${pair%%:*}; cxx=${pair##*:}
  command -v "$c" >/dev/null && compilers+=("c:$c")
  command -v "$cxx" >/dev/null && compilers+=("c++:$cxx")
done
if ! command -v gcc >/dev/null && ! command -v g++ >/dev/null; then
  echo "SKIPPED: neither gcc nor g++ found"
  exit 77
fi

headers=()
for dir in "$include_dir" "$generated_dir"; do
  for header in "$dir"/distribute/*.h; do
    [[ -f $header ]] && headers+=("distribute/$(basename "$header")")
  done
done
[[ ${#headers[@]} -gt 0 ]] || { echo "FAIL: no headers under $include_dir/distribute"; exit 1; }
for required in distribute/distribute.h distribute/version.h distribute/dlpack_interop.h; do
  grep -qx "$required" <<<"$(printf '%s\n' "${headers[@]}")" || { echo "FAIL: $required not found"; exit 1; }
done

include_flags=(-I"$include_dir" -I"$generated_dir")
case $dlpack_dir in
  ""|/usr/include|/usr/local/include) ;;   # already searched; -I there breaks #include_next
  *) include_flags+=(-isystem "$dlpack_dir") ;;
esac

c_flags=(-std=c99 -pedantic -Wall -Wextra -Wstrict-prototypes -Werror -fsyntax-only -x c)
cxx_flags=(-std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++)

failures=0
checks=0
compile() {  # <lang:compiler> <label> <source text>
  local lang=${1%%:*} compiler=${1#*:} label=$2 source=$3 flags
  if [[ $lang == c ]]; then flags=("${c_flags[@]}"); else flags=("${cxx_flags[@]}"); fi
  checks=$((checks + 1))
  local output
  # The trailing declaration keeps a macro-only header (export.h) from making an empty
  # translation unit, which ISO C forbids.
  source+=$'\n''typedef int dist_header_check_t;'
  if ! output=$("$compiler" "${flags[@]}" "${include_flags[@]}" - <<<"$source" 2>&1); then
    echo "FAIL: $compiler ${flags[*]}: $label"
    sed 's/^/    /' <<<"$output"
    failures=$((failures + 1))
  fi
}

all_source=""
for header in "${headers[@]}"; do
  all_source+="#include \"$header\""$'\n'
done

for entry in "${compilers[@]}"; do
  for header in "${headers[@]}"; do
    compile "$entry" "$header alone" "#include \"$header\""$'\n'"#include \"$header\""$'\n'
  done
  compile "$entry" "all headers together" "$all_source"
done

# The umbrella header must include every public header but the optional dlpack_interop.h
# (which needs <dlpack/dlpack.h>).
if command -v gcc >/dev/null; then
  checks=$((checks + 1))
  deps=$(gcc -std=c99 -MM "${include_flags[@]}" -x c - <<<'#include "distribute/distribute.h"' | tr -s ' \\\n' '\n')
  for header in "${headers[@]}"; do
    [[ $header == distribute/dlpack_interop.h || $header == distribute/distribute.h ]] && continue
    if ! grep -q "/$header\$" <<<"$deps"; then
      echo "FAIL: distribute/distribute.h does not include $header"
      failures=$((failures + 1))
    fi
  done
fi

echo "compilers: ${compilers[*]}"
echo "headers:   ${headers[*]}"
if [[ $failures -ne 0 ]]; then
  echo "FAIL: $failures of $checks header compilations failed"
  exit 1
fi
echo "OK: $checks header compilations passed"
