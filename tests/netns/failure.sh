#!/bin/bash
# A whole emulated host goes down mid all-reduce (every process in it SIGKILLed): the ranks on
# the other hosts must fail fast with coralRemoteError naming exactly the lost ranks.
# usage: failure.sh CORAL_RUN ALLREDUCE_LOOP TRANSPORT
set -u
. "$(dirname "$0")/lib.sh"
CORAL_RUN=$1 prog=$2 transport=$3
netns_skip_unless_root
[ "$transport" = ucx ] && export UCX_TLS=tcp,self  # namespaces share IPC: keep UCX on the network
netns_up 3 none || { echo "FAIL: could not create hosts"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"; netns_down' EXIT
# 3 hosts x 2 ranks: host 1 holds ranks 2 and 3.
(export CORAL_TRANSPORT=shm,$transport CORAL_TIMEOUT=60; JOB_TIMEOUT=90 run_job 2 "$prog" 60 262144 >"$log" 2>&1) &
job=$!
wait_ready 6 "$log" || exit 1
sleep 0.5
kill_host 1
killed=$(date +%s%N)
wait $job
took_ms=$((($(date +%s%N) - killed) / 1000000))
fails=$(grep -E '^h[02] \[[0-9]+\] rank [0-9]+: [a-zA-Z ]+ \(' "$log")
echo "$fails"
# coral-run stops a host's other rank once one fails, so each surviving host reports at least once.
for h in h0 h2; do
  echo "$fails" | grep -q "^$h .*coralRemoteError" || { echo "FAIL: no coralRemoteError on $h"; tail -30 "$log"; exit 1; }
done
other=$(echo "$fails" | grep -v coralRemoteError)
[ -z "$other" ] || { echo "FAIL: errors other than coralRemoteError:"; echo "$other"; exit 1; }
# Every error names both lost ranks (a rank that exited on its own error moments later may be
# named too: it is gone as well).
bad=$(echo "$fails" | grep -v -E 'lost ranks ([0-9]+, )*2, 3(, [0-9]+)*[ )]')
[ -z "$bad" ] || { echo "FAIL: errors that do not name ranks 2 and 3:"; echo "$bad"; exit 1; }
echo "ok: the surviving ranks failed with coralRemoteError naming ranks 2, 3; all processes gone $took_ms ms after the kill"
[ "$took_ms" -lt 30000 ] || { echo "FAIL: took $took_ms ms"; exit 1; }
