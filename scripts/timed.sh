#!/usr/bin/env bash
# Runs a command and prints its wall time at its end, whatever its outcome:
#   scripts/timed.sh "default tests" ctest --preset default
# prints "== default tests: 512 s (exit 0)" and exits with the command's status.
set -u
name="$1"
shift
start=$(date +%s)
"$@"
status=$?
echo "== ${name}: $(( $(date +%s) - start )) s (exit ${status})"
exit "${status}"
