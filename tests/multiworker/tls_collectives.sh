#!/usr/bin/env bash
# tls_collectives.sh DISTRUN PROGRAM MAKE_TLS_CERTS
# A job of 2 workers x 2 replicas over mutual TLS, turned on only through DIST_TLS_CERT,
# DIST_TLS_KEY and DIST_TLS_CA in distrun's environment (which every rank inherits), must
# give the single process's results (compare_with_single.sh). Then the same variables
# naming a file that is no certificate must stop every rank at start with an error naming
# the variable: the ranks did read them.
set -euo pipefail
distrun=$1 program=$2 make_certs=$3
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$make_certs" "$dir/certs"

export DIST_TLS_CERT=$dir/certs/node.pem DIST_TLS_KEY=$dir/certs/node.key DIST_TLS_CA=$dir/certs/ca.pem
"$here/compare_with_single.sh" "$distrun" "$program" 2 2

if DIST_TLS_CERT=$dir/certs/garbage.pem "$distrun" -n 2 --timeout 100 -- "$program" --out "$dir/bad" \
    >"$dir/bad.log" 2>&1; then
  echo "a job whose DIST_TLS_CERT holds no certificate ran" >&2
  exit 1
fi
if ! grep -q "DIST_TLS_CERT '$dir/certs/garbage.pem' holds no PEM certificate" "$dir/bad.log"; then
  echo "a job whose DIST_TLS_CERT holds no certificate failed without naming it:" >&2
  cat "$dir/bad.log" >&2
  exit 1
fi
echo "2 workers over TLS equal the single process; a bad DIST_TLS_CERT stops the job, named"
