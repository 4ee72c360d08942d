# Emulated hosts on one machine, sourced by the multi-host tests: each "host" is a network
# namespace with one interface (eth0, 10.77.0.<i>/24) on a bridge that lives in a switch
# namespace of its own, so nothing is added to the machine's own network. Needs root (or
# CAP_NET_ADMIN) and iproute2; hosts_up exits 77 (ctest's SKIPPED) where creating a
# namespace is not permitted.
#
#   hosts_up N          N hosts: NS[i] (namespace), IP[i] (address), i = 1 ... N
#   hosts_down          kills every process left in them and deletes them (trap EXIT)
#   on_host i CMD...    runs CMD in host i (foreground)
#   link_cut i          takes host i's cable out of the switch (its processes keep running)
#   link_shape i RATE [DELAY]
#                       limits host i's link to RATE ("1gbit") both ways with tbf, and adds
#                       DELAY ("100us") with netem where the kernel has it (HAVE_NETEM=1)
#   tf_config N INDEX PORT
#                       TF_CONFIG for worker INDEX (0-based) of a job of the first N hosts
#   listeners i         the "addr:port" of every listening TCP socket in host i

NETNS_PREFIX="dh$$"
NS=()
IP=()
HAVE_NETEM=0

hosts_down() {
  local ns
  for ns in "${NS[@]}" "${NETNS_PREFIX}-sw"; do
    [[ -n $ns ]] || continue
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
}

hosts_up() {
  local n=$1 i sw="${NETNS_PREFIX}-sw"
  command -v ip >/dev/null || { echo "SKIPPED: iproute2 (ip) is not installed"; exit 77; }
  if ! ip netns add "$sw" 2>/dev/null; then
    echo "SKIPPED: creating a network namespace is not permitted here"
    exit 77
  fi
  trap hosts_down EXIT
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for ((i = 1; i <= n; ++i)); do
    NS[i]="${NETNS_PREFIX}-h$i"
    IP[i]="10.77.0.$i"
    ip netns add "${NS[i]}"
    ip -n "${NS[i]}" link add eth0 type veth peer name "port$i" netns "$sw"
    ip -n "${NS[i]}" addr add "${IP[i]}/24" dev eth0
    ip -n "${NS[i]}" link set eth0 up
    ip -n "${NS[i]}" link set lo up
    ip -n "$sw" link set "port$i" master br0
    ip -n "$sw" link set "port$i" up
  done
  if ip netns exec "${NS[1]}" tc qdisc add dev lo root netem delay 1us 2>/dev/null; then
    ip netns exec "${NS[1]}" tc qdisc del dev lo root
    HAVE_NETEM=1
  fi
}

on_host() {
  local i=$1
  shift
  ip netns exec "${NS[i]}" "$@"
}

link_cut() {
  ip -n "${NETNS_PREFIX}-sw" link set "port$1" down
}

link_shape() {
  local i=$1 rate=$2 delay=${3:-} dev
  # Egress of the host's eth0 shapes what it sends, egress of its switch port what it gets.
  for dev in "host eth0" "switch port$i"; do
    set -- $dev
    local ns=${NS[i]}
    [[ $1 == switch ]] && ns="${NETNS_PREFIX}-sw"
    if [[ -n $delay && $HAVE_NETEM == 1 ]]; then
      ip netns exec "$ns" tc qdisc add dev "$2" root netem delay "$delay" rate "$rate" limit 100000
    else
      ip netns exec "$ns" tc qdisc add dev "$2" root tbf rate "$rate" burst 256kb latency 50ms
    fi
  done
}

tf_config() {
  local n=$1 index=$2 port=$3 i list=""
  for ((i = 1; i <= n; ++i)); do
    list+="${list:+, }\"${IP[i]}:$port\""
  done
  printf '{"cluster": {"worker": [%s]}, "task": {"type": "worker", "index": %d}}' "$list" "$index"
}

listeners() {
  on_host "$1" ss -ltnH 2>/dev/null | awk '{ print $4 }'
}
