#!/usr/bin/env bash
# packaging.layering: the core's folders build in the order of DESIGN.md. Each folder's
# library compiles against an include tree of its own (build/layers/<folder>) that holds
# only the folders it builds on; this test checks that every tree holds exactly the
# folders below it, and that an upward include really fails to compile.
# Usage: layering_test.sh <build dir> <c++ compiler>
set -euo pipefail
layers="$1/layers"
cxx="$2"

# folder: the folders it may include (itself first), bottom-up.
expected=(
  "util: util"
  "device: device util"
  "tensor: tensor device util"
  "collective: collective tensor device util"
  "cluster: cluster util"
  "ps: ps collective tensor device util"
  "server: server ps cluster collective tensor device util"
  "gloo: gloo server ps cluster collective tensor device util"
  "shm: shm server ps cluster collective tensor device util"
  "gpu: gpu server ps cluster collective tensor device util"
  "backend: backend gpu shm gloo server ps cluster collective tensor device util"
  "values: values collective tensor device util"
  "strategy: strategy backend gpu shm gloo server ps cluster values collective tensor device util"
  "input: input strategy backend gpu shm gloo server ps cluster values collective tensor device util"
  "coordinator: coordinator input strategy backend gpu shm gloo server ps cluster values collective tensor device util"
)
status=0
for line in "${expected[@]}"; do
  folder=${line%%:*}
  want=$(tr ' ' '\n' <<<"${line#*: }" | sort | xargs)
  have=$(ls "$layers/$folder/core" 2>/dev/null | sort | xargs)
  if [[ "$want" != "$have" ]]; then
    echo "FAIL: core/$folder sees [$have], expected [$want]"
    status=1
  fi
done

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
