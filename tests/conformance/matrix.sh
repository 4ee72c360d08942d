#!/bin/sh
# The conformance matrix (issue 42): the same scripted program (conformance.c) under every
# strategy and configuration of one group, each compared with the independent model
# (model.c). Within a group each configuration restores the checkpoint the one before it
# saved, so that a checkpoint written under one configuration is read under another.
# usage: matrix.sh DISTRUN CONFORMANCE GROUP   (GROUP: local | shm | tcp | ps)
# Prints one line per configuration; a failing cell prints the configuration, the cell and
# both values. Every job is bounded by distrun --timeout and by `timeout` around it.
set -u
DISTRUN=$1
PROGRAM=$2
GROUP=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/conformance.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
FAILED=0
PREVIOUS=""
ROW=0

# row LABEL [distrun options --] conformance options: runs one configuration.
row() {
  label=$1
  shift
  ROW=$((ROW + 1))
  checkpoint="$T/ckpt.$ROW.safetensors"
  restore=""
  [ -n "$PREVIOUS" ] && restore="--restore $PREVIOUS"
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$@" --label "$label" --save "$checkpoint" $restore >"$T/out" 2>"$T/err"
  rc=$?
  seconds=$(( $(date +%s) - start ))
  # The order-sensitive all-reduces' bits: one digest per row (every worker's), the same
  # as every earlier row's with as many replicas.
  digests=$(sed -n 's/^\(\[[0-9]*\] \)\{0,1\}digest \(G=[0-9,W=]*\) \([0-9a-f]*\)$/\2 \3/p' "$T/out" | sort -u)
  if [ "$rc" -eq 0 ] && [ "$(echo "$digests" | wc -l)" -ne 1 ]; then
    echo "FAIL [$label] workers' order-sensitive all-reduce bits differ: $digests" >>"$T/err"
    rc=1
  fi
  if [ "$rc" -eq 0 ]; then
    g=${digests% *}
    if [ -f "$T/digest.$g" ] && [ "$(cat "$T/digest.$g")" != "$digests" ]; then
      echo "FAIL [$label] order-sensitive all-reduce bits differ from $(cat "$T/digest.$g.label") ($g)" >>"$T/err"
      rc=1
    else
      echo "$digests" >"$T/digest.$g"
      echo "$label" >"$T/digest.$g.label"
    fi
  fi
  if [ "$rc" -eq 0 ]; then
    cells=$(sed -n 's/^\(\[[0-9]*\] \)\{0,1\}\[.*\] \([0-9]*\) cells, 0 failed$/\2/p' "$T/out" | head -1)
    printf '%-44s ok   %5s cells per process  %3ss\n' "$label" "$cells" "$seconds"
    PREVIOUS=$checkpoint
  else
    printf '%-44s FAILED (exit %s)\n' "$label" "$rc"
    grep -h "FAIL\|failed\|error" "$T/err" "$T/out" | head -40
    FAILED=1
  fi
}

mw() {  # mw WORKERS REPLICAS
  row "MultiWorkerMirrored $1x$2 ($GROUP)" timeout -s KILL 150 "$DISTRUN" -n "$1" --replicas-per-worker "$2" \
    --timeout 120 -- "$PROGRAM" --strategy multi_worker
}

case "$GROUP" in
  local)
    row "OneDevice" "$PROGRAM" --strategy one_device
    for r in 1 2 4; do row "Mirrored $r" "$PROGRAM" --strategy mirrored --replicas "$r"; done
    row "CentralStorage 2" "$PROGRAM" --strategy central_storage --replicas 2
    row "OneDevice (after CentralStorage)" "$PROGRAM" --strategy one_device
    ;;
  shm|tcp)
    if [ "$GROUP" = tcp ]; then export DIST_SHARED_MEMORY=off; else export DIST_SHARED_MEMORY=on; fi
    mw 2 2
    row "Mirrored 4 (after 2x2)" "$PROGRAM" --strategy mirrored --replicas 4
    row "OneDevice (after Mirrored 4)" "$PROGRAM" --strategy one_device
    for config in "1 1" "2 1" "3 1" "4 1" "2 3" "3 2"; do
      # shellcheck disable=SC2086
      mw $config
    done
    # In-process rows with as many replicas as the jobs above: the same bits.
    for r in 2 3 6; do row "Mirrored $r (bits of the jobs)" "$PROGRAM" --strategy mirrored --replicas "$r"; done
    ;;
  ps)
    for r in 1 2; do row "ParameterServer local, $r replicas" "$PROGRAM" --strategy parameter_server --replicas "$r"; done
    for r in 1 2; do
      row "ParameterServer 2x$r, 2 ps tasks" timeout -s KILL 150 "$DISTRUN" -n 2 --ps 2 --replicas-per-worker "$r" \
        --timeout 120 -- "$PROGRAM" --strategy parameter_server
    done
    ;;
  *)
    echo "matrix.sh: unknown group $GROUP" >&2
    exit 2
    ;;
esac
exit $FAILED
