#!/bin/bash
# Soak and load: long runs of mixed-size all-reduces, every result checked, resident memory
# sampled, while foreign traffic (random bytes, HTTP requests, idle half-open connections and
# RATE connects a second) hits every TCP port the job listens on.
#   1. shared memory: P ranks (default 8) on this host, SHM_OPS calls (default 1,000,000);
#   2. tcp: 2 emulated hosts (network namespaces, needs root), 2 ranks each, TCP_OPS calls
#      (default 100,000).
# Usage: bench/soak.sh [--build DIR] [--ranks P] [--shm-ops N] [--tcp-ops N] [--max-bytes B]
#                      [--rate R] [--no-traffic] [--skip-tcp]
# Prints per phase: ops/s (slowest rank), wrong results, RSS growth per rank from the sample
# after warm-up to the end (target under 1 MiB), the foreign traffic sent, and the exit status.
set -uo pipefail
cd "$(dirname "$0")/.."
build=build ranks=8 shm_ops=1000000 tcp_ops=100000 max_bytes=1048576 rate=1000 traffic=1 tcp=1
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --shm-ops) shm_ops=$2; shift 2 ;;
    --tcp-ops) tcp_ops=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --no-traffic) traffic=0; shift ;;
    --skip-tcp) tcp=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
run=$(realpath "$build/tools/coral-run/coral-run")
soak=$(realpath "$build/bench/coral-soak")
here=$(pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

summary() {  # summary NAME LOG RC
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys
name, log, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [dict(zip(m[0::2], m[1::2])) for m in
        (l[l.index("soak: rank"):].split()[1:] for l in open(log) if "soak: rank" in l)]
rows = [{k: float(v) for k, v in r.items()} for r in rows]
traffic = [l.strip() for l in open(log) if "foreign traffic:" in l]
if not rows:
    print(f"{name}: no result lines (exit status {rc})"); sys.exit(0)
growth = max(r["rss_end_kib"] - r["rss_start_kib"] for r in rows)
print(f"{name}: {len(rows)} ranks, {int(rows[0]['ops'])} calls each, {min(r['ops/s'] for r in rows):.0f} ops/s "
      f"(slowest rank), wrong {int(sum(r['wrong'] for r in rows))}, RSS growth max {growth:.0f} KiB "
      f"(peak RSS {max(r['rss_max_kib'] for r in rows) / 1024:.1f} MiB), exit status {rc}")
for t in traffic:
    print(f"{name}: {t[t.index('foreign traffic:'):]}")
PY
}

finish_phase() {  # finish_phase NAME: waits for $job and its traffic, then reports
  local rc
  wait $job
  rc=$?
  wait
  cat "$out/$1.traffic" >>"$out/$1.log" 2>/dev/null
  grep -v "soak: rank" "$out/$1.log" | head -5
  summary "$1" "$out/$1.log" $rc
}

echo "== soak 1: $ranks ranks over shared memory, $shm_ops calls up to $max_bytes bytes"
"$run" -n "$ranks" --no-prefix "$soak" "$shm_ops" "$max_bytes" >"$out/shm.log" 2>&1 &
job=$!
[ "$traffic" = 1 ] && python3 bench/soak/foreign.py "$job" "$rate" >>"$out/shm.traffic" 2>&1 &
finish_phase shm

if [ "$tcp" = 1 ]; then
  . tests/netns/lib.sh
  CORAL_RUN=$run
  if [ "$(id -u)" != 0 ] || ! ip netns add "${NETNS_PREFIX}-probe" 2>/dev/null; then
    echo "== soak 2 skipped: emulated hosts need root and network namespaces"
    exit 0
  fi
  ip netns del "${NETNS_PREFIX}-probe"
  netns_up 2
  echo "== soak 2: 2 emulated hosts x 2 ranks over tcp, $tcp_ops calls up to $max_bytes bytes"
  run_job 2 "$soak" "$tcp_ops" "$max_bytes" >"$out/tcp.log" 2>&1 &
  job=$!
  if [ "$traffic" = 1 ]; then
    # The traffic comes from inside each host, at the ports its coral-run and ranks listen on.
    for i in 0 1; do
      (
        sleep 1
        pid=""
        for q in $(ip netns pids "${NETNS_PREFIX}-h$i"); do
          [ "$(cat /proc/$q/comm 2>/dev/null)" = coral-run ] && pid=$q && break
        done
        [ -n "$pid" ] && on_host $i python3 "$here/bench/soak/foreign.py" "$pid" $((rate / 2)) | sed "s/^/h$i /"
      ) >>"$out/tcp.traffic" 2>&1 &
    done
  fi
  finish_phase tcp
fi
