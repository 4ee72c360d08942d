#!/bin/sh
# Multi-process tests of the coordinator (coordinator.h) on loopback: the chief, 3 workers
# and 1 ps task, each a coordinator_worker process started here with its own TF_CONFIG and
# a job token, so that workers and ps tasks can be killed and restarted.
# usage: coordinator_test.sh PATH/TO/coordinator_worker CASE [ARG] [RUNS]
# The expectations are coordinator.h's; coordinator_worker checks them and prints "ok"
# lines. Every process is bounded by `timeout`.
set -u

CW=$1
CASE=$2
ARG=${3:-}
RUNS=${4:-1}
T=$(mktemp -d "${TMPDIR:-/tmp}/coordinator_test.XXXXXX") || exit 1
PIDS=""
# A stopped task (the stop case) is killed by its own pid: `timeout`, whose pid PIDS holds,
# cannot end a stopped child.
kill_stopped() {
  [ -f "$T/stopped" ] && kill -KILL "$(cat "$T/worker.1.pid")" 2>/dev/null
  return 0
}
cleanup() {
  kill_stopped
  for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.3
  for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT

fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f:" >&2; tail -c 4000 "$f" >&2; }; done
  exit 1
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

wait_for_file() {  # SECONDS FILE
  limit=$(( $(now_ms) + $1 * 1000 ))
  while [ ! -e "$2" ]; do
    [ "$(now_ms)" -lt "$limit" ] || fail "$2 did not appear"
    sleep 0.05
  done
}

free_ports() {
  python3 -c 'import socket
socks = [socket.socket() for _ in range(5)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))'
}

# start JOB INDEX: one task in the background, its pid in PID.
start() {
  tf=$(printf '{"cluster":{"chief":["localhost:%s"],"worker":["localhost:%s","localhost:%s","localhost:%s"],"ps":["localhost:%s"]},"task":{"type":"%s","index":%s}}' \
    $PORTS "$1" "$2")
  TF_CONFIG=$tf timeout -s KILL 170 "$CW" "$T" "$CASE" $ARG >>"$T/$1.$2.log" 2>&1 &
  PID=$!
  PIDS="$PIDS $PID"
}

run_once() {
  rm -f "$T"/*.pid "$T"/*.log "$T"/scheduled "$T"/restarted "$T"/killed "$T"/stopped
  PIDS=""
  PORTS=$(free_ports)
  DIST_JOB_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  export DIST_JOB_TOKEN
  start ps 0; start worker 0; start worker 1; start worker 2
  start chief 0
  CHIEF=$PID
  case "$CASE" in
    kill)
      wait_for_file 60 "$T/scheduled"
      sleep 0.2
      kill -KILL "$(cat "$T/worker.1.pid")"
      sleep 0.5
      start worker 1
      touch "$T/restarted"
      ;;
    stop)
      wait_for_file 60 "$T/scheduled"
      sleep 0.2
      kill -STOP "$(cat "$T/worker.1.pid")"
      touch "$T/stopped"
      ;;
    kill_ps)
      wait_for_file 60 "$T/scheduled"
      sleep 0.3
      # The time is written before the kill: the chief reads it as soon as its join fails,
      # which can come before this script gets to run again after the kill.
      now_ms >"$T/killed.tmp" && mv "$T/killed.tmp" "$T/killed"
      kill -KILL "$(cat "$T/ps.0.pid")"
      ;;
  esac
  wait "$CHIEF"
  rc=$?
  [ "$rc" -eq 0 ] || fail "the chief exited with $rc"
  grep '^ok' "$T/chief.0.log"
  kill_stopped
  for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
}

case "$CASE" in
  data)
    if [ "$ARG" = file ]; then
      for i in 0 1 2 3 4 5; do seq $((i * 10)) $((i * 10 + 9)) >"$T/shard.$i"; done
    fi
    ;;
esac
i=0
while [ "$i" -lt "$RUNS" ]; do
  run_once
  i=$((i + 1))
done
echo "ok: $CASE $ARG: $RUNS run(s)"
