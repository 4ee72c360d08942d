#!/usr/bin/env bash
# packaging.layering: the core's folders build in the order of DESIGN.md. Each folder's
# library compiles against an include tree of its own (build/layers/<folder>) that holds
# only the folders its declarations reach; layering_check.py checks every tree and that
# each folder's files include only the layers it declares (a skip-level include fails
# there), and this script that an upward include really fails to compile.
# Usage: layering_test.sh <build dir> <c++ compiler>
set -euo pipefail
layers="$1/layers"
cxx="$2"

status=0
# The trees and every file's own includes against the folders' declarations
# (core/CMakeLists.txt writes them to layers/declared.txt; no list is repeated here).
python3 "$(dirname "$0")/layering_check.py" "$1" "$(cd "$(dirname "$0")/../.." && pwd)" || status=1

# An upward include must not compile: collective/ cannot see strategy/.
probe=$(mktemp --suffix=.cc)
trap 'rm -f "$probe"' EXIT
echo '#include "core/strategy/strategy.h"' >"$probe"
if "$cxx" -std=c++20 -fsyntax-only -I "$layers/collective" "$probe" 2>/dev/null; then
  echo "FAIL: core/collective compiled an include of core/strategy"
  status=1
fi
# ... while a downward one does: strategy/ sees collective/.
echo '#include "core/collective/collective.h"' >"$probe"
if ! "$cxx" -std=c++20 -fsyntax-only -I "$layers/strategy" "$probe"; then
  echo "FAIL: core/strategy could not include core/collective"
  status=1
fi
[[ $status -eq 0 ]] && echo "layering: every folder sees only the folders below it"
exit $status
