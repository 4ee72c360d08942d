#!/usr/bin/env bash
# Builds the C API reference with docs/Doxyfile and fails on any warning Doxygen prints: a
# public function, type or constant without a doc comment, or a comment it cannot read.
#   doxygen_test.sh <source dir> <work dir> <generated include dir>
# The HTML lands in <work dir>/html, the warnings in <work dir>/doxygen-warnings.log.
set -euo pipefail

usage="usage: doxygen_test.sh SOURCE_DIR WORK_DIR GENERATED_INCLUDE_DIR"
source_dir=${1:?$usage}
work_dir=${2:?$usage}
generated_dir=${3:?$usage}

command -v doxygen >/dev/null || {
  echo "SKIPPED: doxygen not found (scripts/install-deps.sh installs it)"
  exit 77
}
[[ -f $generated_dir/distribute/version.h ]] || {
  echo "FAIL: no generated $generated_dir/distribute/version.h (configure the build first)"
  exit 1
}

rm -rf "$work_dir"
mkdir -p "$work_dir"
log=$work_dir/doxygen-warnings.log
output=$work_dir/doxygen-output.txt

start_us=${EPOCHREALTIME//[.,]/}
status=0
(cd "$source_dir" &&
  DIST_DOCS_OUTPUT=$work_dir DIST_DOCS_GENERATED_DIR=$generated_dir doxygen docs/Doxyfile) \
  >"$output" 2>&1 || status=$?
elapsed_ms=$(( (${EPOCHREALTIME//[.,]/} - start_us) / 1000 ))
echo "doxygen $(doxygen --version): ${elapsed_ms} ms"

# QUIET = YES: anything printed, or written to the warnings file, is a problem.
if [[ $status -ne 0 || -s $output || -s $log ]]; then
  [[ -s $output ]] && cat "$output"
  [[ -s $log ]] && cat "$log"
  echo "FAIL: doxygen (exit $status) warned, above: give every public function, type and" \
       "constant a /** ... */ comment (docs/api.md) and fix each warning"
  exit 1
fi
[[ -f $work_dir/html/index.html ]] || { echo "FAIL: no $work_dir/html/index.html"; exit 1; }
echo "OK: no warnings; the reference is $work_dir/html/index.html"
