#!/bin/bash
# Every collective, exactly checked (mp_check), across emulated hosts: 2 hosts x 2 ranks and
# 4 hosts x 1 rank, for each network transport built, with the tuner's choice and with forced
# multi-host algorithms; IPv6 once; striped sockets once; trials (CORAL_TUNE_TRIALS) once.
# Each configuration runs a quarter of mp_check's cases, the next configuration the next quarter
# (CHECKS_SLICE): every case crosses the emulated links in several configurations, and the test
# takes minutes, not the quarter hour that every case in all fifteen took.
# usage: collectives.sh CORAL_RUN MP_CHECK TRANSPORT...
set -u
. "$(dirname "$0")/lib.sh"
CORAL_RUN=$1 prog=$2
shift 2
netns_skip_unless_root
export JOB_TIMEOUT=300

shares=${CHECKS_SHARES:-4} config=0
check() {  # description, hosts, ranks per host, then env assignments
  local what=$1 k=$2 l=$3 share=$((config % shares)) out
  shift 3
  config=$((config + 1))
  netns_up "$k" none v6 || { echo "FAIL: could not create $k hosts"; exit 1; }
  out=$(export CHECKS_SLICE=$share/$shares "$@"; run_job "$l" "$prog" 2>&1)
  local rc=$?
  netns_down
  local n
  n=$(echo "$out" | grep -c "collective cases passed")
  if [ $rc != 0 ] || [ "$n" != $((k * l)) ]; then
    echo "FAIL: $what ($k hosts x $l ranks, $*): rc=$rc, $n of $((k * l)) ranks passed"
    echo "$out" | grep -v "refused connection" | tail -20
    exit 1
  fi
  echo "ok: $what ($k hosts x $l ranks, share $share of $shares) $*"
}

for t in "$@"; do
  # Between hosts the named transport; inside a host shared memory. The namespaces share one
  # kernel's IPC, so UCX would pick shared memory between "hosts": keep it on the network.
  [ "$t" = ucx ] && export UCX_TLS=tcp,self
  sel="shm,$t"
  check "$t, tuner's choice" 2 2 CORAL_TRANSPORT=$sel
  check "$t, tuner's choice" 4 1 CORAL_TRANSPORT=$sel
  check "$t only, hierarchical" 2 2 CORAL_TRANSPORT=$t CORAL_ALGO=hier
  check "$t, ring" 2 2 CORAL_TRANSPORT=$sel CORAL_ALGO=ring
  check "$t, recursive halving-doubling" 4 1 CORAL_TRANSPORT=$sel CORAL_ALGO=rhd
  check "$t, trees" 4 1 CORAL_TRANSPORT=$sel CORAL_ALGO=tree
  unset UCX_TLS
done
if [[ " $* " == *" tcp "* ]]; then
  check "tcp over IPv6, 3 sockets per pair" 4 1 CORAL_TRANSPORT=tcp CORAL_SOCKET_NSOCKS=3 CORAL_SOCKET_FAMILY=ipv6 JOB_ROOT="[fd77::1]:29500"
  check "tcp, 2 helper threads over 2 sockets per pair" 2 2 CORAL_TRANSPORT=shm,tcp CORAL_SOCKET_NSOCKS=2 CORAL_SOCKET_NTHREADS=2
  # mp_check's repeated all-reduce runs a whole trial across hosts: candidates from the cost model.
  check "tcp, tuner with trials" 2 2 CORAL_TRANSPORT=shm,tcp CORAL_TUNE_TRIALS=1
fi
