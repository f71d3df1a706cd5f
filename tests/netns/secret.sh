#!/bin/bash
# The job secret: a process on another emulated host that knows the store's address but not the
# secret cannot join (it is refused with a clear error) and the job runs on undisturbed.
# usage: secret.sh CORAL_RUN ALLREDUCE_LOOP
set -u
. "$(dirname "$0")/lib.sh"
CORAL_RUN=$1 prog=$2
netns_skip_unless_root
netns_up 3 none || { echo "FAIL: could not create hosts"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"; netns_down' EXIT
# A two-host job on hosts 0 and 1 (run_job uses every host, so start it by hand).
export CORAL_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
root=$(host_addr 0):$STORE_PORT
for i in 0 1; do
  on_host $i "$CORAL_RUN" -n 1 --nnodes 3 --node-rank $i --root "$root" --timeout 60 -- "$prog" 3 >>"$log" 2>&1 &
done
sleep 0.5
# The intruder on host 2 claims the missing rank 2 with its own secret.
intruder=$(CORAL_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') CORAL_TIMEOUT=10 \
  on_host 2 "$CORAL_RUN" -n 1 --nnodes 3 --node-rank 2 --root "$root" -- "$prog" 1 2>&1)
rc=$?
echo "intruder: rc=$rc"
echo "$intruder" | tail -3
[ $rc != 0 ] || { echo "FAIL: the intruder joined"; exit 1; }
echo "$intruder" | grep -q "wrong job secret" || { echo "FAIL: the intruder was not told why"; exit 1; }
# Now the real third rank joins with the real secret: the job completes.
on_host 2 "$CORAL_RUN" -n 1 --nnodes 3 --node-rank 2 --root "$root" --timeout 60 -- "$prog" 3 >>"$log" 2>&1
wait
n=$(grep -c "all-reduces ok" "$log")
[ "$n" = 3 ] || { echo "FAIL: $n of 3 ranks finished"; cat "$log"; exit 1; }
echo "ok: intruder refused; the job's 3 ranks finished"
