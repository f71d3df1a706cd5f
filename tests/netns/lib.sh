# Emulated hosts for multi-host tests and benchmarks (source this file; needs root).
#
# netns_up K [RATE] [v6]  creates K "hosts": network namespaces NS-h0..h{K-1}, each with one
#                         interface eth0 (10.77.0.<i+1>/24, and fd77::<i+1>/64 with v6) plugged
#                         into a bridge that lives in its own namespace NS-sw. With RATE (e.g.
#                         1gbit) every host's link is shaped by tc tbf in both directions.
#                         Nothing outside these namespaces is touched, and an EXIT trap removes
#                         them (and whatever runs inside) however the script ends.
# on_host I CMD...        runs CMD inside host I.
# host_addr I             prints host I's IPv4 address.
# run_job L PROG ARGS...  starts L ranks on every host with coral-run --nnodes (node 0 serves the
#                         store at host 0), waits for all, returns the first failing exit code.
#                         JOB_TIMEOUT=S adds --timeout S, JOB_KEEP_GOING=1 adds --keep-going.
#                         Each line of output is prefixed with the host: "h1 [3] ...".
# kill_host I             SIGKILLs every process of host I (the host "goes down").
# wait_ready N LOG        waits up to 30 s for N "ready" lines in LOG; fails (printing it) if not.
set -u

NETNS_PREFIX=${NETNS_PREFIX:-coral$$}
NETNS_HOSTS=0
CORAL_RUN=${CORAL_RUN:-coral-run}
STORE_PORT=${STORE_PORT:-29500}

netns_skip_unless_root() {
  if [ "$(id -u)" != 0 ]; then echo "SKIP: emulated hosts need root (network namespaces, tc)"; exit 77; fi
  if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then echo "SKIP: needs iproute2 (ip, tc)"; exit 77; fi
  if ! ip netns add "${NETNS_PREFIX}-probe" 2>/dev/null; then echo "SKIP: cannot create network namespaces here"; exit 77; fi
  ip netns del "${NETNS_PREFIX}-probe"
}

netns_down() {
  local i ns
  for ((i = 0; i < NETNS_HOSTS; i++)); do
    ns=${NETNS_PREFIX}-h$i
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  done
  for ((i = 0; i < NETNS_HOSTS; i++)); do ip netns del "${NETNS_PREFIX}-h$i" 2>/dev/null; done
  ip netns del "${NETNS_PREFIX}-sw" 2>/dev/null
  NETNS_HOSTS=0
}

netns_up() {
  local k=$1 rate=${2:-none} v6=${3:-} i ns sw=${NETNS_PREFIX}-sw
  trap netns_down EXIT
  trap 'exit 130' INT TERM
  ip netns add "$sw" || return 1
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for ((i = 0; i < k; i++)); do
    ns=${NETNS_PREFIX}-h$i
    ip netns add "$ns" || return 1
    NETNS_HOSTS=$((i + 1))
    ip link add name eth0 netns "$ns" type veth peer name "vh$i" netns "$sw" || return 1
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
    [ -n "$v6" ] && ip -n "$ns" addr add "fd77::$((i + 1))/64" dev eth0 nodad
    ip -n "$ns" link set eth0 up
    ip -n "$sw" link set "vh$i" master br0 up
    if [ "$rate" != none ]; then
      # burst: a few 64 KiB TSO segments; latency bounds the queue (no netem here, so no delay).
      tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 20ms || return 1
      tc -n "$sw" qdisc add dev "vh$i" root tbf rate "$rate" burst 256kb latency 20ms || return 1
    fi
  done
}

on_host() {
  local i=$1
  shift
  ip netns exec "${NETNS_PREFIX}-h$i" "$@"
}

host_addr() { echo "10.77.0.$(($1 + 1))"; }

run_job() {
  local l=$1 i rc=0 s pids=() root
  shift
  root=${JOB_ROOT:-$(host_addr 0):$STORE_PORT}
  export CORAL_SECRET=${CORAL_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
  for ((i = 0; i < NETNS_HOSTS; i++)); do
    (
      set -o pipefail
      on_host "$i" "$CORAL_RUN" -n "$l" --nnodes "$NETNS_HOSTS" --node-rank "$i" --root "$root" \
        ${JOB_TIMEOUT:+--timeout "$JOB_TIMEOUT"} ${JOB_KEEP_GOING:+--keep-going} -- "$@" 2>&1 | sed -u "s/^/h$i /"
    ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p"
    s=$?
    [ "$rc" = 0 ] && rc=$s
  done
  return "$rc"
}

kill_host() { ip netns pids "${NETNS_PREFIX}-h$1" | xargs -r kill -9; }

wait_ready() {
  local n=$1 log=$2
  for _ in $(seq 300); do
    [ "$(grep -c ': ready' "$log")" = "$n" ] && return 0
    sleep 0.1
  done
  echo "FAIL: job did not start"
  cat "$log"
  return 1
}
