#!/bin/bash
# A host's link goes down mid all-reduce (nothing dies; packets stop): every rank ends within its
# CORAL_TIMEOUT and a little more, on both sides of the cut. The ranks cut off from the store
# (host 1) must not sit in their long-wait report to it past their own timeout.
# usage: link_cut.sh CORAL_RUN ALLREDUCE_LOOP
set -u
. "$(dirname "$0")/lib.sh"
CORAL_RUN=$1 prog=$2
netns_skip_unless_root
netns_up 2 none || { echo "FAIL: could not create hosts"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"; netns_down' EXIT
(export CORAL_TIMEOUT=5; JOB_TIMEOUT=120 run_job 1 "$prog" 60 67108864 >"$log" 2>&1) &
job=$!
wait_ready 2 "$log" || exit 1
sleep 1
ip -n "${NETNS_PREFIX}-h1" link set eth0 down
cut=$(date +%s%N)
wait $job
took_ms=$((($(date +%s%N) - cut) / 1000000))
grep -E '^h[01] \[[01]\] rank [01]: ' "$log"
for h in h0 h1; do
  grep -q "^$h \[.\] rank .: coral" "$log" || { echo "FAIL: no error on $h"; tail -20 "$log"; exit 1; }
done
echo "ok: both sides of the cut failed; all processes gone $took_ms ms after it (CORAL_TIMEOUT=5)"
[ "$took_ms" -lt 15000 ] || { echo "FAIL: took $took_ms ms"; exit 1; }
