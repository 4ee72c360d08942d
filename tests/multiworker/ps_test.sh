#!/bin/sh
# Multi-process tests of ParameterServerStrategy on loopback: ps_worker (ps_worker.c) runs
# as every task of a `distrun -n N --ps P` job, with distrun's job token.
# usage: ps_test.sh PATH/TO/distrun PATH/TO/ps_worker CASE [RUNS]
# Each case prints what it checked and exits 0, or prints why it failed and exits 1. The
# expectations are written here, from the rules of parameter_server.h, not read from the
# library. Every job is bounded twice: distrun --timeout, and `timeout` around distrun.
set -u

DISTRUN=$1
PSW=$2
CASE=$3
RUNS=${4:-1}
T=$(mktemp -d "${TMPDIR:-/tmp}/ps_test.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$T"/out "$T"/err; do
    [ -f "$f" ] && { echo "--- $f:" >&2; head -c 8000 "$f" >&2; }
  done
  exit 1
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# run_job DISTRUN_OPTIONS... -- PROGRAM ARGS...: the job's output in $T/out and $T/err, RC.
run_job() {
  timeout -s KILL 180 "$DISTRUN" --timeout 150 "$@" >"$T/out" 2>"$T/err"
  RC=$?
}

expect_rc() {
  [ "$RC" -eq "$1" ] || fail "expected exit status $1, got $RC"
}

# expect_line RANK TEXT: worker RANK printed exactly TEXT.
expect_line() {
  grep -qxF "[$1] $2" "$T/out" || fail "worker $1 did not print '$2'"
}

# wait_for_files SECONDS PID FILE...: until every FILE exists; fails when the job (PID)
# ends first or after SECONDS.
wait_for_files() {
  limit=$(( $(now_ms) + $1 * 1000 ))
  job=$2
  shift 2
  for f in "$@"; do
    while [ ! -e "$f" ]; do
      kill -0 "$job" 2>/dev/null || fail "the job ended before $f appeared"
      [ "$(now_ms)" -lt "$limit" ] || { kill -KILL "$job"; fail "$f did not appear"; }
      sleep 0.05
    done
  done
}

case "$CASE" in
placement)
  # 3 workers, 3 ps tasks; a 16 B, b 400 B, c 24 B, d 200 B, e 40 B, f 12 B (float32).
  # round_robin: tasks 0 1 2 0 1 2 in creation order. greedy: the least-loaded task, the
  # lowest on a tie: a->0 [16,0,0], b->1 [16,400,0], c->2 [16,400,24], d->0 [216,400,24],
  # e->2 [216,400,64], f->2 [216,400,76]. fixed_shards_2: two shards per variable, each
  # shard placed round-robin in turn.
  for policy in round_robin greedy fixed_shards_2; do
    case $policy in
      round_robin) expected="a 0|b 1|c 2|d 0|e 1|f 2" ;;
      greedy) expected="a 0|b 1|c 2|d 0|e 2|f 2" ;;
      fixed_shards_2) expected="a 0,1|b 2,0|c 1,2|d 0,1|e 2,0|f 1,2" ;;
    esac
    run_job -n 3 --ps 3 -- "$PSW" "$T" placement "$policy"
    expect_rc 0
    for rank in 0 1 2; do
      got=$(sed -n "s/^\[$rank\] placement //p" "$T/out" | paste -sd'|' -)
      [ "$got" = "$expected" ] || fail "$policy: worker $rank placed '$got', expected '$expected'"
    done
    echo "ok: $policy placement identical on 3 workers: $expected"
  done
  ;;

assign_add_3x100)
  run_job -n 3 --ps 2 -- "$PSW" "$T" assign_add 100 300 sum
  expect_rc 0
  for rank in 0 1 2; do expect_line $rank "final 300"; done
  echo "ok: 3 workers x 100 asynchronous assign_add(1.0): exactly 300 on every worker"
  ;;

only_first_replica_2x50)
  # 2 replicas per worker each call assign_add(1): ONLY_FIRST_REPLICA applies one per step.
  run_job -n 2 --ps 1 --replicas-per-worker 2 -- "$PSW" "$T" assign_add 50 100 only_first_replica
  expect_rc 0
  for rank in 0 1; do expect_line $rank "final 100"; done
  echo "ok: ONLY_FIRST_REPLICA, 2 workers x 2 replicas x 50 steps: exactly 100"
  ;;

kill_ps)
  # SIGKILL ps task 1 while 2 workers update a variable on it (timeout 2000 ms): each
  # worker's next access fails with UNAVAILABLE naming the task within 2000 + 1000 ms.
  run=1
  while [ "$run" -le "$RUNS" ]; do
    rm -rf "$T/run"
    mkdir "$T/run"
    timeout -s KILL 180 "$DISTRUN" --timeout 150 -n 2 --ps 2 -- "$PSW" "$T/run" kill_ps \
      >"$T/out" 2>"$T/err" &
    job=$!
    wait_for_files 60 $job "$T/run/ready.0" "$T/run/ready.1" "$T/run/ps.1.pid"
    kill -KILL "$(cat "$T/run/ps.1.pid")" || fail "run $run: cannot kill ps task 1"
    killed_ms=$(now_ms)
    wait $job
    RC=$?
    expect_rc 0
    for rank in 0 1; do
      line=$(grep "^\[$rank\] failed " "$T/out") || fail "run $run: worker $rank reported no failure"
      set -- $line
      [ "$3" = UNAVAILABLE ] || fail "run $run: worker $rank got $3, expected UNAVAILABLE: $line"
      late=$(( $4 - killed_ms ))
      [ "$late" -le 3000 ] || fail "run $run: worker $rank failed $late ms after the kill (> 3000)"
      echo "$line" | grep -q 'ps:1\|/job:ps/replica:0/task:1' ||
        fail "run $run: worker $rank's message does not name ps task 1: $line"
    done
    echo "ok: run $run: both workers got UNAVAILABLE naming ps task 1 within 3 s of its SIGKILL (worker 1: $late ms; $(echo "$line" | cut -d' ' -f5- | cut -c1-160))"
    run=$((run + 1))
  done
  ;;

restart_worker)
  # Worker 2 runs under a wrapper that restarts it, as a cluster manager would; the test
  # SIGKILLs it once it has made 20 updates. Workers 0 and 1 finish their 100 each; the
  # restarted worker reads the current value (1000 + what has landed, never its own
  # initial 0) and makes 80 more: 1000 + 100 + 100 + 20 + 80 = 1300.
  timeout -s KILL 180 "$DISTRUN" --timeout 150 -n 3 --ps 1 -- sh -c '
    if [ "${DIST_RANK-}" = 2 ]; then
      "$0" "$1" restart &
      echo $! >"$1/victim.pid.tmp" && mv "$1/victim.pid.tmp" "$1/victim.pid"
      wait $!
      echo "first life ended with status $?"
      exec "$0" "$1" restart --restarted
    fi
    exec "$0" "$1" restart' "$PSW" "$T" >"$T/out" 2>"$T/err" &
  job=$!
  wait_for_files 60 $job "$T/victim_paused" "$T/victim.pid"
  kill -KILL "$(cat "$T/victim.pid")" || fail "cannot kill worker 2"
  : >"$T/victim_killed"
  wait $job
  RC=$?
  expect_rc 0
  expect_line 2 "first life ended with status 137"
  read_back=$(sed -n 's/^\[2\] restarted: read //p' "$T/out")
  [ -n "$read_back" ] && [ "$read_back" -ge 1020 ] && [ "$read_back" -le 1220 ] ||
    fail "the restarted worker read '$read_back', expected the current value (1020 to 1220)"
  for rank in 0 1; do expect_line $rank "finished my 100 steps"; done
  for rank in 0 1 2; do expect_line $rank "final 1300"; done
  echo "ok: worker 2 killed after 20 updates; the others finished; restarted, it read $read_back and reached 1300"
  ;;

mismatched_shapes)
  run_job -n 2 --ps 1 -- "$PSW" "$T" mismatch
  expect_rc 0
  line=$(grep '^\[1\] mismatch ' "$T/out") || fail "worker 1 reported nothing"
  echo "$line" | grep -q '^\[1\] mismatch INVALID_ARGUMENT .*\[[45]\].*\[[45]\]' ||
    fail "expected INVALID_ARGUMENT naming [4] and [5]: $line"
  echo "ok: 'w' as [5] after [4] on another worker: $line"
  ;;

batch_2x2x30)
  # 2 workers x 2 replicas, 2 ps tasks, w [6] and b [2] each in 2 shards (one per task):
  # every replica reads both in one batch and sends g = 1 through sgd(-1) in one batch;
  # SUM over a worker's 2 replicas adds 2 per step: 2 workers x 30 steps x 2 = 120 in
  # every element, on both tasks.
  run_job -n 2 --ps 2 --replicas-per-worker 2 -- "$PSW" "$T" batch 30 120
  expect_rc 0
  for rank in 0 1; do expect_line $rank "final 120 120 120 120"; done
  echo "ok: batched reads and sgd from 2 workers x 2 replicas, 2 shards on 2 ps tasks: exactly 120 everywhere"
  ;;

checkpoint_sharded)
  run_job -n 2 --ps 2 -- "$PSW" "$T" checkpoint
  expect_rc 0
  grep -q '^\[0\] checkpoint ok' "$T/out" || fail "the chief's round trip failed"
  echo "ok: sharded w [5, 3] and b [3] saved under their own names and restored"
  ;;

job_token_no_false_warning)
  # distrun gives every task a job token (DIST_JOB_TOKEN): no worker may claim that the job
  # runs without one (a worker that believes so would also refuse to run on a
  # non-loopback cluster that does have a token).
  run_job -n 3 --ps 1 -- "$PSW" "$T" assign_add 1 3 sum
  expect_rc 0
  ! grep -q 'runs without a job token' "$T/err" ||
    fail "a worker warned that the job has no token, though distrun set DIST_JOB_TOKEN"
  echo "ok: no worker of a job with a token warns that it has none"
  ;;

*)
  echo "unknown case '$CASE'" >&2
  exit 2
  ;;
esac
