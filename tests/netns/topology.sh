#!/bin/bash
# Topology across emulated hosts: 2 hosts x 4 ranks whose hosts load different topology files
# (CORAL_TOPO_FILE, the ranks posing as the file's devices through CORAL_TOPO_DEVICES). The
# communicator's ring must visit each host in the order coral-topo plans for that host's file,
# and every collective, forced onto the hierarchical algorithm built from those groups, must be
# exact (half of mp_check's cases, CHECKS_SLICE: the hierarchical schedule is the same for the
# other half, which the collectives test runs across hosts).
# usage: topology.sh CORAL_RUN MP_CHECK CORAL_TOPO FIXTURES_DIR
set -u
. "$(dirname "$0")/lib.sh"
CORAL_RUN=$1 prog=$2 topo=$3 fix=$4
netns_skip_unless_root
export JOB_TIMEOUT=300
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; netns_down' EXIT

files=("$fix/hwloc-2.14.0_96em64t-4n4d3ca2co-pci.xml" "$fix/aws-ofi-nccl_p4d-24xl-topo.xml")
want=()
for h in 0 1; do
  # coral-topo's plan for 2 hosts of this file: host h's part of its ring, and the devices.
  plan=$("$topo" -l "${files[$h]}" -f summary -r 4 --hosts 2) || { echo "FAIL: coral-topo on ${files[$h]}"; exit 1; }
  ring=($(echo "$plan" | grep '^ring:' | grep -oE '[0-9]+ -' | tr -d ' -'))
  want+=("${ring[@]:$((4 * h)):4}")
  devices=$(echo "$plan" | sed -nE "s/^ +rank +[0-9]+ on host0\/(\S+) .*/\1/p" | paste -sd,)
  echo "export CORAL_TOPO_FILE='${files[$h]}' CORAL_TOPO_DEVICES='$devices'" >"$tmp/env$h"
done
# coral-run numbers the hosts (GROUP_RANK); each rank takes its host's file.
cat >"$tmp/as_host" <<SH
#!/bin/sh
. "$tmp/env\$GROUP_RANK"
exec "\$@"
SH
chmod +x "$tmp/as_host"

netns_up 2 none || { echo "FAIL: could not create 2 hosts"; exit 1; }
out=$(export CHECKS_SLICE=0/2 CORAL_TRANSPORT=shm,tcp CORAL_ALGO=hier CORAL_DEBUG=INFO CORAL_DEBUG_SUBSYS=TOPO
      run_job 4 "$tmp/as_host" "$prog" 2>&1)
rc=$?
n=$(echo "$out" | grep -c "collective cases passed")
if [ $rc != 0 ] || [ "$n" != 8 ]; then
  echo "FAIL: hier over two topology files: rc=$rc, $n of 8 ranks passed"
  echo "$out" | tail -30
  exit 1
fi
echo "ok: every collective exact with hier over two hosts' topology files"
got=$(echo "$out" | grep -m1 -oE '\[TOPO\] ring [0-9 ]+' | sed 's/\[TOPO\] ring //; s/ *$//')
if [ "$got" != "${want[*]}" ]; then
  echo "FAIL: ring '$got', coral-topo plans '${want[*]}' for these two files"
  echo "$out" | grep TOPO
  exit 1
fi
echo "ok: ring $got follows each host's file"
# Host 0's file names eth0, which the emulated host has: its rank 0 takes it.
echo "$out" | grep -q "^h0 \[0\].*tcp: interface eth0, the topology's NIC" && echo "ok: rank 0 uses its file's NIC eth0" ||
  { echo "FAIL: rank 0 did not take eth0 from its topology"; echo "$out" | grep TOPO; exit 1; }
