#!/bin/sh
# Tests of the distrun launcher with small /bin/sh workers.
# usage: distrun_test.sh PATH/TO/distrun CASE
# Each case prints what it checked and exits 0, or prints why it failed and exits 1.
# Wall-time bounds below are hang detectors (a killed job must end long before the
# 30 s its sleeping workers would take), generous enough for a loaded 2-core machine.
set -u

DISTRUN=$1
CASE=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/distrun_test.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$T"/out "$T"/err; do
    [ -f "$f" ] && { echo "--- $f:" >&2; head -c 4000 "$f" >&2; }
  done
  exit 1
}

# lines of $T/out matching $1; 0 while the file does not exist yet
count_lines() {
  n=$(grep -c "$1" "$T/out" 2>/dev/null)
  echo "${n:-0}"
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# run_distrun ARGS...: runs distrun with stdout/stderr in $T/out, $T/err; sets RC, ELAPSED_MS.
run_distrun() {
  start=$(now_ms)
  "$DISTRUN" "$@" >"$T/out" 2>"$T/err"
  RC=$?
  ELAPSED_MS=$(( $(now_ms) - start ))
}

expect_rc() {
  [ "$RC" -eq "$1" ] || fail "expected exit status $1, got $RC"
}

expect_fast() {  # the job must have ended well before its workers' 30 s sleeps
  [ "$ELAPSED_MS" -lt 5000 ] || fail "took ${ELAPSED_MS} ms, expected < 5000 ms"
}

# A sleep whose command line is unique to this test, so leftovers can be looked for.
SLEEP="$T/distrun_test_sleep"
ln -s "$(command -v sleep)" "$SLEEP"

expect_no_leftovers() {
  i=0
  while ps -eo args= | grep -F "$SLEEP" | grep -v grep >/dev/null; do
    i=$((i + 1))
    [ "$i" -lt 20 ] || fail "worker processes still running after distrun exited"
    sleep 0.1
  done
}

case "$CASE" in
prefixes)
  # 4 ranks, 200 lines each on stdout and stderr, each line written in 3 pieces; plus an
  # unterminated last line. Every forwarded line must be whole and carry its own rank.
  run_distrun -n 4 sh -c '
    i=0
    while [ $i -lt 200 ]; do
      printf "rank %s line %s " "$DIST_RANK" $i
      printf "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
      printf " end-%s\n" "$DIST_RANK"
      echo "err rank $DIST_RANK line $i end-$DIST_RANK" >&2
      i=$((i + 1))
    done
    printf "tail of %s" "$DIST_RANK"'
  expect_rc 0
  awk '
    /^\[[0-9]+\] rank [0-9]+ line [0-9]+ aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa end-[0-9]+$/ {
      r = substr($1, 2, length($1) - 2)
      if ($3 != r || $NF != "end-" r) { print "mixed ranks: " $0; bad = 1 }
      if ($5 != seen[r] + 0) { print "out of order: " $0; bad = 1 }
      seen[r]++; next
    }
    /^\[[0-9]+\] tail of [0-9]+$/ {
      r = substr($1, 2, length($1) - 2)
      if ($NF != r) { print "mixed tail: " $0; bad = 1 }
      tails++; next
    }
    { print "malformed line: " $0; bad = 1 }
    END {
      for (r = 0; r < 4; r++) if (seen[r] != 200) { print "rank " r ": " seen[r] " lines"; bad = 1 }
      if (tails != 4) { print tails " tails"; bad = 1 }
      exit bad
    }' "$T/out" >"$T/check" || fail "stdout: $(head -5 "$T/check")"
  awk '
    /^\[[0-9]+\] err rank [0-9]+ line [0-9]+ end-[0-9]+$/ {
      r = substr($1, 2, length($1) - 2)
      if ($4 != r || $NF != "end-" r) { print "mixed ranks: " $0; bad = 1 }
      seen[r]++; next
    }
    { print "malformed line: " $0; bad = 1 }
    END {
      for (r = 0; r < 4; r++) if (seen[r] != 200) { print "rank " r ": " seen[r] " lines"; bad = 1 }
      exit bad
    }' "$T/err" >"$T/check" || fail "stderr: $(head -5 "$T/check")"
  echo "ok: 4 ranks x 200 lines on stdout and stderr, prefixed and whole; partial lines flushed"
  ;;

tf_config)
  # A TF_CONFIG inherited from the caller must be replaced.
  TF_CONFIG=stale run_distrun -n 3 sh -c 'echo "$TF_CONFIG"'
  expect_rc 0
  [ "$(wc -l <"$T/out")" -eq 3 ] || fail "expected 3 lines"
  for r in 0 1 2; do
    line=$(grep "^\[$r\] " "$T/out") || fail "no line from rank $r"
    echo "$line" | grep -q '^\['$r'\] {"cluster": {"worker": \["127\.0\.0\.1:[0-9]*", "127\.0\.0\.1:[0-9]*", "127\.0\.0\.1:[0-9]*"\]}, "task": {"type": "worker", "index": '$r'}}$' ||
      fail "rank $r: bad TF_CONFIG: $line"
    echo "$line" | grep -o '127\.0\.0\.1:[0-9]*' >"$T/ports.$r"
    [ "$(wc -l <"$T/ports.$r")" -eq 3 ] || fail "rank $r: expected 3 ports"
    cmp -s "$T/ports.0" "$T/ports.$r" || fail "rank $r sees another worker list than rank 0"
  done
  [ "$(sort -u "$T/ports.0" | wc -l)" -eq 3 ] || fail "ports not distinct: $(cat "$T/ports.0")"
  for p in $(cut -d: -f2 "$T/ports.0"); do
    [ "$p" -ge 1 ] && [ "$p" -le 65535 ] || fail "bad port $p"
  done
  echo "ok: TF_CONFIG per rank: index, 3 distinct loopback ports, same list everywhere"
  ;;

env_vars)
  DIST_RANK=9 run_distrun -n 2 --replicas-per-worker 3 sh -c \
    'echo "$DIST_RANK $DIST_WORLD_SIZE $DIST_REPLICAS_PER_WORKER"'
  expect_rc 0
  [ "$(sort "$T/out")" = "$(printf '[0] 0 2 3\n[1] 1 2 3')" ] || fail "unexpected environment"
  run_distrun -n 1 -- sh -c 'echo "$DIST_RANK $DIST_WORLD_SIZE $DIST_REPLICAS_PER_WORKER"'
  expect_rc 0
  [ "$(cat "$T/out")" = "[0] 0 1 1" ] || fail "unexpected defaults"
  echo "ok: DIST_RANK, DIST_WORLD_SIZE, DIST_REPLICAS_PER_WORKER (default 1)"
  # One fresh 64-hex-digit token per job, the same for every rank; a user's own is kept.
  run_distrun -n 2 -- sh -c 'echo "$DIST_JOB_TOKEN"'
  expect_rc 0
  [ "$(cut -d' ' -f2 "$T/out" | sort -u | wc -l)" -eq 1 ] || fail "ranks got different job tokens"
  first=$(head -n1 "$T/out" | cut -d' ' -f2)
  echo "$first" | grep -Eqx '[0-9a-f]{64}' || fail "job token '$first' is not 64 hex digits"
  run_distrun -n 1 -- sh -c 'echo "$DIST_JOB_TOKEN"'
  [ "$(cut -d' ' -f2 "$T/out")" != "$first" ] || fail "two jobs got the same token"
  DIST_JOB_TOKEN=my-own-secret-0123456789 run_distrun -n 2 -- sh -c 'echo "$DIST_JOB_TOKEN"'
  [ "$(cut -d' ' -f2 "$T/out" | sort -u)" = "my-own-secret-0123456789" ] || fail "the user's token was not kept"
  echo "ok: DIST_JOB_TOKEN, one per job (or the user's own)"
  ;;

first_failure)
  # Rank 2 fails with 3 while the others sleep 30 s: they must be stopped at once.
  run_distrun -n 4 sh -c '
    if [ "$DIST_RANK" = 2 ]; then sleep 0.2; echo failing; exit 3; fi
    "$0" 30' "$SLEEP"
  expect_rc 3
  expect_fast
  grep -qx 'distrun: rank 2 exited with status 3' "$T/err" || fail "no failure message for rank 2"
  [ "$(grep -c 'exited with status\|killed by signal' "$T/err")" -eq 1 ] ||
    fail "expected only the first failing rank to be reported"
  grep -qx '\[2\] failing' "$T/out" || fail "rank 2 output lost"
  expect_no_leftovers
  echo "ok: exit status 3 of rank 2, others stopped in ${ELAPSED_MS} ms"
  ;;

sigkill_status)
  run_distrun -n 2 sh -c '
    if [ "$DIST_RANK" = 1 ]; then kill -KILL $$; fi
    "$0" 30' "$SLEEP"
  expect_rc 137
  expect_fast
  grep -qx 'distrun: rank 1 killed by signal SIGKILL' "$T/err" || fail "no SIGKILL message"
  expect_no_leftovers
  echo "ok: rank killed by SIGKILL -> 137 in ${ELAPSED_MS} ms"
  ;;

grace_escalation)
  # Rank 0 ignores SIGTERM (so does its sleep); after --grace 0.5 it gets SIGKILL.
  run_distrun -n 2 --grace 0.5 --timeout 20 sh -c '
    if [ "$DIST_RANK" = 0 ]; then trap "" TERM; : >"$1/ready"; "$0" 30; exit 0; fi
    while [ ! -e "$1/ready" ]; do sleep 0.05; done
    exit 5' "$SLEEP" "$T"
  expect_rc 5
  expect_fast
  grep -qx 'distrun: rank 1 exited with status 5' "$T/err" || fail "no failure message"
  grep -q 'grace period, sending SIGKILL' "$T/err" || fail "no SIGKILL escalation message"
  expect_no_leftovers
  echo "ok: SIGTERM-ignoring rank killed after the grace period, ${ELAPSED_MS} ms"
  ;;

forward_sigterm)
  # distrun in the background; SIGTERM to it must reach every rank's trap.
  start=$(now_ms)
  "$DISTRUN" -n 2 --timeout 20 sh -c '
    trap "echo got TERM; exit 0" TERM
    echo ready
    while :; do "$0" 0.1; done' "$SLEEP" >"$T/out" 2>"$T/err" &
  pid=$!
  i=0
  while [ "$(count_lines ready)" -lt 2 ]; do
    i=$((i + 1))
    [ "$i" -lt 200 ] || { kill -KILL $pid; fail "workers never became ready"; }
    sleep 0.05
  done
  kill -TERM $pid
  wait $pid
  RC=$?
  ELAPSED_MS=$(( $(now_ms) - start ))
  expect_rc 143
  expect_fast
  grep -qx '\[0\] got TERM' "$T/out" || fail "rank 0 did not get SIGTERM"
  grep -qx '\[1\] got TERM' "$T/out" || fail "rank 1 did not get SIGTERM"
  grep -q 'received SIGTERM' "$T/err" || fail "no forwarding message"
  expect_no_leftovers
  echo "ok: SIGTERM forwarded to both ranks, distrun exited 143"
  ;;

double_sigint)
  # Ranks ignore SIGINT; the first SIGINT is forwarded, the second kills them.
  "$DISTRUN" -n 2 --grace 30 --timeout 20 sh -c '
    trap "" INT
    echo ready
    "$0" 30' "$SLEEP" >"$T/out" 2>"$T/err" &
  pid=$!
  i=0
  while [ "$(count_lines ready)" -lt 2 ]; do
    i=$((i + 1))
    [ "$i" -lt 200 ] || { kill -KILL $pid; fail "workers never became ready"; }
    sleep 0.05
  done
  start=$(now_ms)
  kill -INT $pid
  i=0
  while ! grep -q 'received SIGINT' "$T/err" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -lt 200 ] || { kill -KILL $pid; fail "first SIGINT not seen"; }
    sleep 0.05
  done
  kill -INT $pid
  wait $pid
  RC=$?
  ELAPSED_MS=$(( $(now_ms) - start ))
  expect_rc 137
  expect_fast
  grep -q 'second SIGINT' "$T/err" || fail "no second-SIGINT message"
  expect_no_leftovers
  echo "ok: second SIGINT killed the ranks"
  ;;

ps_tasks)
  # --ps 2: the TF_CONFIG of every task names both jobs; ps tasks have type "ps", their
  # own index, no DIST_RANK and the prefix "[ps:i] ".
  # A ps task that exits while the workers run stops the job (and could take the other ps
  # task's line with it): the ps tasks serve after printing, and the workers end only once
  # both have printed.
  DIST_RANK=9 run_distrun -n 2 --ps 2 --timeout 20 sh -c '
    echo "$TF_CONFIG rank=${DIST_RANK-none} size=$DIST_WORLD_SIZE"
    case "$TF_CONFIG" in
      *"\"type\": \"ps\", \"index\": 0"*) : >"$1/ps0_printed"; exec "$0" 30 ;;
      *"\"type\": \"ps\", \"index\": 1"*) : >"$1/ps1_printed"; exec "$0" 30 ;;
      *) while [ ! -e "$1/ps0_printed" ] || [ ! -e "$1/ps1_printed" ]; do sleep 0.05; done ;;
    esac' "$SLEEP" "$T"
  expect_rc 0
  [ "$(wc -l <"$T/out")" -eq 4 ] || fail "expected 4 lines"
  jobs='{"cluster": {"worker": \["127\.0\.0\.1:[0-9]*", "127\.0\.0\.1:[0-9]*"\], "ps": \["127\.0\.0\.1:[0-9]*", "127\.0\.0\.1:[0-9]*"\]}'
  for task in "0 worker 0 rank=0" "1 worker 1 rank=1" "ps:0 ps 0 rank=none" "ps:1 ps 1 rank=none"; do
    set -- $task
    line=$(grep -F "[$1] " "$T/out") || fail "no line from [$1]"
    echo "$line" | grep -q "^\[$1\] $jobs, \"task\": {\"type\": \"$2\", \"index\": $3}} $4 size=2\$" ||
      fail "[$1]: bad TF_CONFIG or environment: $line"
    echo "$line" | grep -o '127\.0\.0\.1:[0-9]*' >"$T/ports.$2$3"
    cmp -s "$T/ports.worker0" "$T/ports.$2$3" || fail "[$1] sees another cluster than rank 0"
  done
  [ "$(sort -u "$T/ports.worker0" | wc -l)" -eq 4 ] || fail "ports not distinct: $(cat "$T/ports.worker0")"
  echo "ok: --ps 2: TF_CONFIG with jobs worker and ps, task types and indices, [ps:i] prefixes"
  # ps tasks serve forever: they are stopped once every worker has exited, and a ps task
  # that ignores SIGTERM gets SIGKILL after the grace period; neither status counts.
  # The workers end only once ps:1 ignores SIGTERM (else it could die of it first).
  run_distrun -n 2 --ps 2 --grace 0.5 --timeout 20 sh -c '
    case "$TF_CONFIG" in
      *"\"type\": \"ps\", \"index\": 1"*) trap "" TERM; : >"$1/ps1_ignores_term"; "$0" 30 ;;
      *"\"type\": \"ps\""*) "$0" 30 ;;
      *) while [ ! -e "$1/ps1_ignores_term" ]; do sleep 0.05; done; echo "worker done" ;;
    esac' "$SLEEP" "$T"
  expect_rc 0
  expect_fast
  [ "$(count_lines 'worker done')" -eq 2 ] || fail "expected 2 workers to finish"
  grep -q 'grace period, sending SIGKILL' "$T/err" || fail "the SIGTERM-ignoring ps task was not killed"
  ! grep -q 'ps:[01] .*while the workers run' "$T/err" || fail "a stopped ps task was reported as failed"
  expect_no_leftovers
  echo "ok: ps tasks stopped (SIGTERM, then SIGKILL) after the workers exited 0, in ${ELAPSED_MS} ms"
  ;;

ps_failures)
  # A ps task that dies early is reported, and fails the job only if a worker then fails.
  run_distrun -n 2 --ps 1 --timeout 20 sh -c '
    if [ -z "${DIST_RANK-}" ]; then : >"$1/ps_gone"; exit 7; fi
    while [ ! -e "$1/ps_gone" ]; do sleep 0.05; done
    sleep 0.2
    echo "worker done"' "$T"
  expect_rc 0
  grep -qx 'distrun: ps:0 exited with status 7 while the workers run' "$T/err" ||
    fail "no report of the ps task's early exit"
  [ "$(count_lines 'worker done')" -eq 2 ] || fail "expected both workers to finish"
  rm -f "$T/ps_gone"
  run_distrun -n 2 --ps 1 --timeout 20 sh -c '
    if [ -z "${DIST_RANK-}" ]; then : >"$1/ps_gone"; exit 7; fi
    while [ ! -e "$1/ps_gone" ]; do sleep 0.05; done
    if [ "$DIST_RANK" = 1 ]; then sleep 0.2; exit 3; fi
    "$0" 30' "$SLEEP" "$T"
  expect_rc 3
  expect_fast
  grep -qx 'distrun: rank 1 exited with status 3' "$T/err" || fail "no failure message for rank 1"
  expect_no_leftovers
  # A failing worker stops the ps tasks with the others.
  run_distrun -n 2 --ps 2 --timeout 20 sh -c '
    if [ "${DIST_RANK-}" = 0 ]; then sleep 0.2; exit 4; fi
    "$0" 30' "$SLEEP"
  expect_rc 4
  expect_fast
  expect_no_leftovers
  echo "ok: an early ps exit does not count; a worker failure fails the job and stops the ps tasks"
  ;;

coordinator)
  # Rank 0 coordinates; a serving worker's death is reported and the job goes on; rank 0's
  # exit ends the job with its status and stops the serving workers and ps tasks.
  run_distrun -n 3 --ps 1 --coordinator --timeout 20 sh -c '
    case "${DIST_RANK-ps}" in
      0) while [ ! -e "$1/killed" ]; do sleep 0.05; done; sleep 0.3; echo "chief done"; exit 0 ;;
      1) : >"$1/killed"; kill -KILL $$ ;;
      *) exec "$0" 30 ;;
    esac' "$SLEEP" "$T"
  expect_rc 0
  expect_fast
  grep -qx "distrun: rank 1 killed by signal SIGKILL; it serves rank 0's coordinator, which goes on" "$T/err" ||
    fail "no report of the serving worker's death"
  [ "$(count_lines 'chief done')" -eq 1 ] || fail "the chief did not finish"
  expect_no_leftovers
  # --max-restarts 2: a failing serving worker is started again twice, then left down;
  # the chief's status is the job's.
  rm -f "$T"/started.*
  run_distrun -n 2 --coordinator --max-restarts 2 --timeout 20 sh -c '
    if [ "$DIST_RANK" = 0 ]; then
      while [ ! -e "$1/started.3" ]; do sleep 0.05; done
      sleep 0.5; exit 7
    fi
    n=1; while [ -e "$1/started.$n" ]; do n=$((n + 1)); done
    echo "start $n"; : >"$1/started.$n"; exit 5' "$SLEEP" "$T"
  expect_rc 7
  expect_fast
  for n in 1 2; do
    grep -qx "distrun: rank 1 exited with status 5; it serves rank 0's coordinator, which goes on; starting it again (restart $n of 2)" "$T/err" ||
      fail "no report of restart $n"
  done
  grep -qx "distrun: rank 1 exited with status 5; it serves rank 0's coordinator, which goes on (no restart left)" "$T/err" ||
    fail "no report of the last exit"
  [ "$(count_lines '^\[1\] start [123]$')" -eq 3 ] || fail "expected 3 starts of rank 1"
  grep -qx 'distrun: rank 0 exited with status 7' "$T/err" || fail "no report of the chief's status"
  expect_no_leftovers
  # Without --coordinator a worker's death still ends the job.
  run_distrun -n 2 --timeout 20 sh -c '
    if [ "$DIST_RANK" = 1 ]; then kill -KILL $$; fi
    exec "$0" 30' "$SLEEP"
  expect_rc 137
  expect_fast
  echo "ok: --coordinator: a serving worker's death is reported and the job goes on; --max-restarts restarts it"
  ;;

timeout)
  run_distrun -n 2 --timeout 0.5 "$SLEEP" 30
  expect_rc 124
  expect_fast
  grep -q 'timeout of 0.5 s reached' "$T/err" || fail "no timeout message"
  expect_no_leftovers
  echo "ok: --timeout 0.5 -> 124 in ${ELAPSED_MS} ms"
  ;;

usage)
  for args in "" "true" "-n" "-n 0 true" "-n -1 true" "-n x true" "-n 2" "-n 2 --" \
              "-n 2 --bogus true" "-x -n 2 true" "-n 2 --replicas-per-worker 0 true" \
              "-n 2 --timeout 0 true" "-n 2 --timeout abc true" "-n 2 --grace -1 true" \
              "-n 2 --ps -1 true" "-n 2 --ps x true" "-n 2 --ps 4097 true" "--ps 2 true" \
              "-n 2 --max-restarts 1 true" "-n 2 --coordinator=1 true" \
              "-n 2 --coordinator --max-restarts -1 true" "-n 2 --coordinator --max-restarts 1001 true"; do
    # shellcheck disable=SC2086
    run_distrun $args
    [ "$RC" -eq 2 ] || fail "'distrun $args': expected 2, got $RC"
    grep -q '^usage: distrun' "$T/err" || fail "'distrun $args': no usage message"
    [ ! -s "$T/out" ] || fail "'distrun $args': wrote to stdout"
  done
  run_distrun --help
  expect_rc 0
  grep -q '^usage: distrun' "$T/out" || fail "--help: no usage on stdout"
  # Options after the program belong to the program.
  run_distrun -n 1 --replicas-per-worker=2 sh -c 'printf "%s\n" "$*"' sh -n 5 --bogus
  expect_rc 0
  [ "$(cat "$T/out")" = "[0] -n 5 --bogus" ] || fail "program arguments not passed through"
  echo "ok: usage errors exit 2 with a usage message; --help exits 0"
  ;;

not_executable)
  run_distrun -n 3 "$T/does-not-exist" arg
  expect_rc 127
  grep -q "cannot execute '$T/does-not-exist'" "$T/err" || fail "error does not name the program"
  printf 'echo hi\n' >"$T/not-exec"
  chmod 644 "$T/not-exec"
  run_distrun -n 2 "$T/not-exec"
  expect_rc 127
  grep -q "cannot execute '$T/not-exec'" "$T/err" || fail "error does not name the program"
  run_distrun -n 2 distrun-no-such-command-on-path
  expect_rc 127
  echo "ok: programs that cannot be executed -> 127 with their name"
  ;;

*)
  echo "unknown case '$CASE'" >&2
  exit 2
  ;;
esac
