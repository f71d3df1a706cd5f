#!/bin/bash
# Multi-host targets on emulated hosts (root): K namespaces behind a bridge, links shaped to
# RATE with tc tbf. Measured side by side in one run, interleaved, REPS times:
#   - iperf3 goodput host 1 -> host 0 (the point-to-point TCP ceiling);
#   - ring and auto all-reduce busbw at 1 MiB and 16 MiB, 4 hosts x 1 rank (coral-allreduce-bench);
#   - 8-byte all-reduce latency, 4 hosts x 1 rank, Coral against Open MPI (mpi_yield_when_idle=1,
#     its TCP BTL) and against bare TCP sockets and bare UDP datagrams doing the same exchange
#     (floor_rd.c), and Open MPI's busbw for reference;
#   - 2 hosts x 2 ranks: hierarchical against flat ring at 16 MiB.
# usage: bench/net/hosts.sh [--rate 1gbit] [--reps 3]      (needs a build/ and coral-run)
set -u
cd "$(dirname "$0")/../.."
rate=1gbit reps=3
while [ $# -gt 0 ]; do
  case $1 in --rate) rate=$2; shift ;; --reps) reps=$2; shift ;; *) echo "unknown $1"; exit 2 ;; esac
  shift
done
build=${BUILD_DIR:-build}
. tests/netns/lib.sh
export NETNS_PREFIX
CORAL_RUN=$PWD/$build/tools/coral-run/coral-run
bench=$PWD/$build/bench/coral-allreduce-bench
netns_skip_unless_root
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; netns_down' EXIT
have_ompi=0
if command -v mpicc.openmpi >/dev/null && mpicc.openmpi -O2 -o "$tmp/ar_ompi" bench/peers/allreduce_mpi.c; then have_ompi=1; fi
cc -O2 -o "$tmp/floor_rd" bench/net/floor_rd.c || exit 1
floor() {  # the same 8-byte exchange over bare sockets, no library: the kernel's floor here
  local i pids=() udp=${1:-0}
  for i in 0 1 2 3; do
    FLOOR_UDP=$udp on_host "$i" "$tmp/floor_rd" "$i" 4 "$(host_addr 0)" "$(host_addr 1)" "$(host_addr 2)" "$(host_addr 3)" $((31000 + 100 * udp)) &
    pids+=($!)
  done
  wait "${pids[@]}"
}

ompi() {  # hosts, args...
  local k=$1 i
  shift
  : >"$tmp/hosts"
  for ((i = 0; i < k; i++)); do echo "h$i slots=1" >>"$tmp/hosts"; done
  # Open MPI's launch across namespaces occasionally stalls: bound it.
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 on_host 0 timeout 120 mpirun.openmpi --hostfile "$tmp/hosts" -np "$k" \
    --mca plm_rsh_agent "$PWD/bench/net/netns-rsh" --mca plm_rsh_no_tree_spawn 1 --mca btl tcp,self \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 --mca mpi_yield_when_idle 1 \
    --bind-to none -x BENCH_LIB=ompi "$tmp/ar_ompi" "$@" 2>/dev/null | grep 'P='
}

netns_up 4 "$rate" || exit 1
echo "# 4 hosts x 1 rank, links $rate"
for ((r = 0; r < reps; r++)); do
  on_host 0 iperf3 -s -1 -D >/dev/null 2>&1
  sleep 0.3
  on_host 1 iperf3 -c "$(host_addr 0)" -t 3 -f m 2>/dev/null | awk '/receiver/ {print "iperf3 goodput_mbit=" $(NF-2)}'
  for algo in ring auto; do
    CORAL_ALGO=$algo run_job 1 "$bench" 1048576 16777216 2>/dev/null | sed -n "s/^h0 \[0\] coral/coral-$algo/p"
  done
  run_job 1 "$bench" 8 2>/dev/null | sed -n 's/^h0 \[0\] coral/coral-auto/p'
  floor 0
  floor 1
  [ $have_ompi = 1 ] && ompi 4 8 1048576 16777216
done
netns_down
netns_up 2 "$rate" || exit 1
echo "# 2 hosts x 2 ranks, links $rate"
for ((r = 0; r < reps; r++)); do
  for algo in ring hier; do
    CORAL_ALGO=$algo run_job 2 "$bench" 16777216 2>/dev/null | sed -n "s/^h0 \[0\] coral/coral-$algo/p"
  done
done
