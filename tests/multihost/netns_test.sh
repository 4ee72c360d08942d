#!/usr/bin/env bash
# Multi-worker jobs across emulated hosts (network namespaces, netns_hosts.sh): distinct
# host addresses in TF_CONFIG, every server bound to its host's address, and what a real
# network adds: slow links, a partition, a stranger on another host.
#
#   netns_test.sh CASE BIN_DIR
#   collectives2, collectives3  mw_collectives on 2 (3) hosts x 2 replicas: every worker's
#                               results are the same, and (2 hosts) equal a single
#                               process's with as many replicas
#   shaped      the same on 2 hosts whose links are limited to 1 Gbit/s (plus 5 ms of delay
#               where the kernel has netem)
#   partition   3 hosts all-reducing in a loop; host 3's cable is pulled (no process dies):
#               every process fails with a clear error within the deadline and exits, and
#               every listener was bound to its host's address (not 0.0.0.0, not loopback)
#   ps          ParameterServerStrategy across 4 hosts: 2 workers, 2 ps tasks; asynchronous
#               assign_add from every replica sums exactly
#   coordinator the ClusterCoordinator across 5 hosts (chief, 3 workers, a ps task): 100
#               closures, every result fetched once, the ps counter exactly 100
#   stray       2 hosts all-reducing in a loop while a process on a third host, without the
#               job token, tries to join as a worker and writes garbage to the chief's
#               port: it is refused (UNAUTHENTICATED) and the job goes on, every result right
#   shm_required 2 hosts whose workers require shared memory (DIST_SHARED_MEMORY=on): both
#               fail at start-up, naming each worker's host; with the default (auto) the
#               same job runs over TCP (collectives2)
#   bench       (by hand, not in ctest) dist-bench --multi-worker on 2 hosts over links of
#               10 Gbit/s and 1 Gbit/s (and 100 us / 5 ms of delay with netem)
# Exit 77 (SKIPPED) where namespaces cannot be made.
set -euo pipefail
case_name=${1:?usage: netns_test.sh CASE BIN_DIR}
bin=${2:?usage: netns_test.sh CASE BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/multihost/netns_hosts.sh
source "$here/netns_hosts.sh"

work=$(mktemp -d)
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=2222
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do [[ -f $f ]] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
cleanup() { hosts_down; rm -rf "$work"; }

# start_worker N RANK LOG ARGS...: rank RANK of an N-host job, in the background (pid in $!).
start_worker() {
  local n=$1 rank=$2 log=$3
  shift 3
  on_host $((rank + 1)) env TF_CONFIG="$(tf_config "$n" "$rank" "$port")" DIST_RANK="$rank" DIST_WORLD_SIZE="$n" \
    DIST_REPLICAS_PER_WORKER=2 DIST_JOB_TOKEN="$token" "$@" >"$log" 2>&1 &
}

# wait_for LOG PATTERN SECONDS
wait_for() {
  local log=$1 pattern=$2 seconds=$3 i
  for ((i = 0; i < seconds * 10; ++i)); do
    grep -q "$pattern" "$log" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# wait_exit PID SECONDS: 0 when PID exited in time (its status is not checked).
wait_exit() {
  local pid=$1 seconds=$2 i
  for ((i = 0; i < seconds * 10; ++i)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  return 1
}

collectives() {
  local n=$1 rank pids=()
  for ((rank = 0; rank < n; ++rank)); do
    start_worker "$n" "$rank" "$work/worker$rank.log" timeout 120 "$bin/mw_collectives" --out "$work/result"
    pids+=($!)
  done
  for ((rank = 0; rank < n; ++rank)); do
    wait "${pids[rank]}" || fail "worker $rank failed"
  done
  for ((rank = 1; rank < n; ++rank)); do
    cmp -s "$work/result.0" "$work/result.$rank" || fail "worker $rank's results differ from worker 0's"
  done
  # Bit-equal to one process when the worker count is a power of two (README, "What is not
  # done yet"); otherwise the workers agree with each other.
  if (((n & (n - 1)) == 0)); then
    "$bin/mw_collectives" --out "$work/result" --single $((2 * n)) || fail "the single process failed"
    cmp -s "$work/result.single" "$work/result.0" || fail "the workers' results differ from the single process's"
    echo "$n hosts (${IP[*]}): every worker's results equal a single process with $((2 * n)) replicas"
  else
    echo "$n hosts (${IP[*]}): every worker's results are the same"
  fi
}

case $case_name in
  collectives2 | collectives3)
    n=${case_name#collectives}
    hosts_up "$n"
    trap cleanup EXIT
    collectives "$n"
    ;;

  shaped)
    hosts_up 2
    trap cleanup EXIT
    link_shape 1 1gbit 5ms
    link_shape 2 1gbit 5ms
    [[ $HAVE_NETEM == 1 ]] && echo "links: 1 Gbit/s, 5 ms each way" ||
      echo "links: 1 Gbit/s (this kernel has no netem: no delay emulated)"
    collectives 2
    ;;

  shm_required)
    hosts_up 2
    trap cleanup EXIT
    pids=()
    for rank in 0 1; do
      start_worker 2 "$rank" "$work/worker$rank.log" env DIST_SHARED_MEMORY=on timeout 60 "$bin/mw_collectives" --out "$work/result"
      pids+=($!)
    done
    for rank in 0 1; do
      if wait "${pids[rank]}"; then fail "worker $rank ran without shared memory across hosts"; fi
      grep -q "not on one host" "$work/worker$rank.log" || fail "worker $rank does not say why it failed"
      grep -q "worker:1 on" "$work/worker$rank.log" || fail "worker $rank does not name the hosts"
    done
    echo "shared memory required across 2 hosts: both workers refused at start-up:"
    grep -h -m1 "not on one host" "$work/worker0.log"
    ;;

  partition)
    hosts_up 3
    trap cleanup EXIT
    timeout_ms=4000
    pids=()
    for rank in 0 1 2; do
      start_worker 3 "$rank" "$work/worker$rank.log" timeout 120 "$bin/mw_failure_worker" --mode loop \
        --timeout-ms "$timeout_ms"
      pids+=($!)
    done
    for rank in 0 1 2; do
      wait_for "$work/worker$rank.log" '^READY' 60 || fail "worker $rank never got ready"
    done
    # Every socket listening on a host (its worker's) is on the host's own address.
    for rank in 0 1 2; do
      addresses=$(listeners $((rank + 1)))
      [[ -n $addresses ]] || fail "worker $rank listens on nothing"
      while read -r address; do
        # gRPC's sockets are dual-stack: [::ffff:10.77.0.1]:2222 is bound to 10.77.0.1 alone.
        [[ $address == "${IP[rank + 1]}:"* || $address == "[::ffff:${IP[rank + 1]}]:"* ]] ||
          fail "worker $rank listens on $address, not on ${IP[rank + 1]}"
      done <<<"$addresses"
      echo "worker $rank listens on $(tr '\n' ' ' <<<"$addresses")"
    done
    cut_at=$(date +%s%N)
    link_cut 3
    echo "host 3 (worker 2) cut off; its process keeps running"
    bound_s=$((timeout_ms / 1000 + 20))
    for rank in 0 1 2; do
      wait_for "$work/worker$rank.log" '^FAILED' "$bound_s" || fail "worker $rank did not fail within ${bound_s} s"
      line=$(grep '^FAILED' "$work/worker$rank.log")
      status=$(awk '{print $2}' <<<"$line")
      [[ $status == DEADLINE_EXCEEDED || $status == UNAVAILABLE ]] || fail "worker $rank: $line"
      [[ $(wc -w <<<"$line") -gt 3 ]] || fail "worker $rank failed without a message: $line"
      echo "worker $rank: $line"
    done
    for rank in 0 1 2; do
      wait_exit "${pids[rank]}" 30 || fail "worker $rank hangs after its failure"
    done
    echo "every worker failed and exited within $(( ($(date +%s%N) - cut_at) / 1000000 )) ms of the cut"
    for ns in "${NS[@]}"; do
      [[ -z $(ip netns pids "$ns") ]] || fail "processes left in $ns"
    done
    ;;

  stray)
    hosts_up 3
    trap cleanup EXIT
    pids=()
    for rank in 0 1; do
      start_worker 2 "$rank" "$work/worker$rank.log" timeout 120 "$bin/mw_failure_worker" --mode loop --timeout-ms 20000
      pids+=($!)
    done
    for rank in 0 1; do
      wait_for "$work/worker$rank.log" '^READY' 60 || fail "worker $rank never got ready"
    done
    # The stranger on host 3 claims to be worker 1 of a job whose chief is the real chief,
    # with a token of its own.
    stray_config="{\"cluster\": {\"worker\": [\"${IP[1]}:$port\", \"${IP[3]}:$port\"]}, \"task\": {\"type\": \"worker\", \"index\": 1}}"
    for attempt in 1 2 3; do
      on_host 3 env TF_CONFIG="$stray_config" DIST_RANK=1 DIST_REPLICAS_PER_WORKER=2 \
        DIST_JOB_TOKEN=0123456789abcdef0123456789abcdef timeout 60 "$bin/mw_failure_worker" --mode start \
        --timeout-ms 5000 >>"$work/stray.log" 2>&1 || true
      # Garbage at the chief's port, as a port scanner would send.
      on_host 3 bash -c "exec 3<>/dev/tcp/${IP[1]}/$port && head -c 65536 /dev/urandom >&3; exec 3>&-" 2>/dev/null || true
    done
    grep -q '^CREATED UNAUTHENTICATED' "$work/stray.log" || fail "the stranger was not refused as unauthenticated"
    echo "stranger: $(grep -m1 '^CREATED' "$work/stray.log")"
    # The job goes on: both workers keep all-reducing correctly.
    before=$(grep -c '^ALIVE' "$work/worker0.log" || true)
    wait_for "$work/worker0.log" "^ALIVE $(( (before + 2) * 1000 ))\$" 60 || fail "the job stopped making progress"
    for rank in 0 1; do
      ! grep -q '^FAILED' "$work/worker$rank.log" || fail "worker $rank failed: $(grep '^FAILED' "$work/worker$rank.log")"
    done
    echo "the job went on: worker 0 at $(grep '^ALIVE' "$work/worker0.log" | tail -1 | awk '{print $2}') checked all-reduces"
    kill "${pids[@]}" 2>/dev/null || true
    ;;

  ps)
    # 2 workers on hosts 1-2 and 2 ps tasks on hosts 3-4: 100 asynchronous assign_add(1.0)
    # from each worker's 2 replicas (SUM: 2 per step) to a variable on the ps tasks: exactly 400.
    hosts_up 4
    trap cleanup EXIT
    cluster="\"worker\": [\"${IP[1]}:$port\", \"${IP[2]}:$port\"], \"ps\": [\"${IP[3]}:$port\", \"${IP[4]}:$port\"]"
    ps_pids=()
    for index in 0 1; do
      on_host $((index + 3)) env TF_CONFIG="{\"cluster\": {$cluster}, \"task\": {\"type\": \"ps\", \"index\": $index}}" \
        DIST_WORLD_SIZE=2 DIST_JOB_TOKEN="$token" timeout 120 "$bin/ps_worker" "$work" assign_add 100 400 sum \
        >"$work/ps$index.log" 2>&1 &
      ps_pids+=($!)
    done
    pids=()
    for rank in 0 1; do
      on_host $((rank + 1)) env TF_CONFIG="{\"cluster\": {$cluster}, \"task\": {\"type\": \"worker\", \"index\": $rank}}" \
        DIST_RANK="$rank" DIST_WORLD_SIZE=2 DIST_REPLICAS_PER_WORKER=2 DIST_JOB_TOKEN="$token" \
        timeout 120 "$bin/ps_worker" "$work" assign_add 100 400 sum >"$work/worker$rank.log" 2>&1 &
      pids+=($!)
    done
    for rank in 0 1; do
      wait "${pids[rank]}" || fail "worker $rank failed"
      grep -qx "final 400" "$work/worker$rank.log" || fail "worker $rank did not read exactly 400"
    done
    for index in 0 1; do
      kill -0 "${ps_pids[index]}" 2>/dev/null || fail "ps task $index died during the job"
    done
    kill "${ps_pids[@]}" 2>/dev/null || true
    echo "2 workers x 2 replicas on hosts ${IP[1]}, ${IP[2]}, variables on ps tasks at ${IP[3]}, ${IP[4]}: exactly 400"
    ;;

  coordinator)
    # The ClusterCoordinator across 5 hosts: the chief schedules 100 closures on 3 workers,
    # each adding 1 to a variable on the ps task: every result once, the counter exactly 100.
    hosts_up 5
    trap cleanup EXIT
    cluster="\"chief\": [\"${IP[1]}:$port\"], \"worker\": [\"${IP[2]}:$port\", \"${IP[3]}:$port\", \"${IP[4]}:$port\"], \"ps\": [\"${IP[5]}:$port\"]"
    tasks=("chief 0" "worker 0" "worker 1" "worker 2" "ps 0")
    pids=()
    for host in 5 2 3 4 1; do
      set -- ${tasks[host - 1]}
      on_host "$host" env TF_CONFIG="{\"cluster\": {$cluster}, \"task\": {\"type\": \"$1\", \"index\": $2}}" \
        DIST_JOB_TOKEN="$token" timeout 120 "$bin/coordinator_worker" "$work" count 100 >"$work/$1.$2.log" 2>&1 &
      pids[host]=$!
    done
    wait "${pids[1]}" || fail "the chief failed"
    grep '^ok' "$work/chief.0.log" || fail "the chief printed no ok line"
    kill "${pids[@]}" 2>/dev/null || true
    echo "coordinator on ${IP[1]}, workers on ${IP[2]} ${IP[3]} ${IP[4]}, ps on ${IP[5]}: every closure once"
    ;;

  bench)
    hosts_up 2
    trap cleanup EXIT
    for link in "10gbit 100us" "1gbit 5ms"; do
      set -- $link
      tc_state=$( (ip netns exec "${NS[1]}" tc qdisc show dev eth0 | grep -q 'tbf\|netem') && echo shaped || echo plain)
      if [[ $tc_state == shaped ]]; then
        for i in 1 2; do
          ip netns exec "${NS[i]}" tc qdisc del dev eth0 root
          ip netns exec "${NETNS_PREFIX}-sw" tc qdisc del dev "port$i" root
        done
      fi
      link_shape 1 "$1" "$2"
      link_shape 2 "$1" "$2"
      echo "=== links of $1$([[ $HAVE_NETEM == 1 ]] && echo ", $2 each way" || echo " (no netem here: no delay)")"
      pids=()
      for rank in 0 1; do
        on_host $((rank + 1)) env TF_CONFIG="$(tf_config 2 "$rank" "$port")" DIST_RANK="$rank" DIST_WORLD_SIZE=2 \
          DIST_JOB_TOKEN="$token" "$bin/dist-bench" --multi-worker >"$work/bench$rank.log" 2>&1 &
        pids+=($!)
      done
      for pid in "${pids[@]}"; do wait "$pid" || fail "dist-bench failed"; done
      cat "$work/bench0.log"
    done
    ;;

  *)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac
