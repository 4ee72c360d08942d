#!/usr/bin/env bash
# Checks libdistribute's dynamic symbol table and SONAME.
#   check_exports.sh <libdistribute.so file> <expected SONAME> [<version node> [<include dir>...]]
# - `nm -D --defined-only` must list only dist_* functions (tagged @@<version node>) and
#   the version node itself (type A); anything else is a leak (libstdc++ templates, absl,
#   a missing version script) and is listed.
# - the SONAME must be the expected one (libdistribute.so.MAJOR).
# - with include dirs: the exported functions are exactly those the public headers
#   (<dir>/distribute/*.h) declare with DIST_API.
set -euo pipefail

lib=${1:?usage: check_exports.sh LIB SONAME [VERSION_NODE]}
expected_soname=${2:?usage: check_exports.sh LIB SONAME [VERSION_NODE]}
node=${3:-DIST_0}

for tool in nm readelf; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool not found"; exit 77; }
done
[[ -f $lib ]] || { echo "FAIL: no such library: $lib"; exit 1; }

symbols=$(nm -D --defined-only "$lib")
fail=0

# Lines are "<value> <type> <name>"; the version node has no @@.
leaks=$(awk -v node="$node" '
  $2 == "A" && $3 == node { next }
  $3 ~ /^dist_[A-Za-z0-9_]*@@/ && $2 == "T" { split($3, p, "@@"); if (p[2] == node) next }
  { print }' <<<"$symbols")
if [[ -n $leaks ]]; then
  echo "FAIL: $lib exports symbols other than dist_*@@$node and the version node $node:"
  sed 's/^/  /' <<<"$leaks"
  fail=1
fi

if ! grep -Eq "^[0-9a-f]+ A ${node}\$" <<<"$symbols"; then
  echo "FAIL: version node $node (type A) not found: is the version script applied?"
  fail=1
fi

count=$(grep -c ' T dist_' <<<"$symbols" || true)
if [[ $count -eq 0 ]]; then
  echo "FAIL: no dist_* function is exported"
  fail=1
fi

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [[ $soname != "$expected_soname" ]]; then
  echo "FAIL: SONAME is '${soname}', expected '${expected_soname}'"
  fail=1
fi

# Every exported function must be one that a public header declares with DIST_API (a
# dist_* helper escaping from the core would pass the name filter but is not API), and
# every declared function must be exported (else consumers fail to link).
if [[ $# -ge 4 ]]; then
  headers=()
  for dir in "${@:4}"; do
    for header in "$dir"/distribute/*.h; do
      [[ -f $header ]] && headers+=("$header")
    done
  done
  declared=$(grep -h 'DIST_API' "${headers[@]}" | grep -oE '\bdist_[a-z0-9_]+[[:space:]]*\(' |
             sed -E 's/[[:space:]]*\($//' | sort -u)
  exported=$(awk '$2 == "T" { split($3, p, "@"); print p[1] }' <<<"$symbols" | sort -u)
  undeclared=$(comm -23 <(echo "$exported") <(echo "$declared"))
  if [[ -n $undeclared ]]; then
    echo "FAIL: exported but not declared with DIST_API in ${*:4}:"
    sed 's/^/  /' <<<"$undeclared"
    fail=1
  fi
  missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
  if [[ -n $missing ]]; then
    echo "FAIL: declared with DIST_API in the public headers but not exported:"
    sed 's/^/  /' <<<"$missing"
    fail=1
  fi
fi

if [[ $fail -ne 0 ]]; then
  exit 1
fi
echo "OK: $count dist_* functions exported under $node, nothing else; SONAME $soname"
