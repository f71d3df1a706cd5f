#!/bin/bash
# Hangs across emulated hosts: a rank stopped (SIGSTOP) or idle outside Coral on host 1 is named
# by the ranks on host 0, which cannot see its shared page: its local peer publishes what it
# sees in the store.
# usage: hang.sh CORAL_RUN STUCK_RANK_PROG
set -u
. "$(dirname "$0")/lib.sh"
CORAL_RUN=$1 prog=$2
netns_skip_unless_root
netns_up 2 none || { echo "FAIL: could not create hosts"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"; netns_down' EXIT
check() {  # check WHAT PATTERN
  local fails
  fails=$(grep -E '^h0 \[[01]\] rank [01]: ' "$log")
  [ "$(echo "$fails" | grep -c "allreduce #[0-9]")" -ge 1 ] || { echo "FAIL: $1: no error on host 0"; cat "$log"; exit 1; }
  bad=$(echo "$fails" | grep -v "$2")
  [ -z "$bad" ] || { echo "FAIL: $1: errors that do not say '$2':"; echo "$bad"; cat "$log"; exit 1; }
  echo "ok: $1: $(echo "$fails" | head -1)"
}
# 2 hosts x 2 ranks: host 1 holds ranks 2 and 3.
(export CORAL_TIMEOUT=3 STUCK_RANK=3 STUCK_HOW=stop; JOB_TIMEOUT=60 run_job 2 "$prog" >"$log" 2>&1)
check "rank 3 stopped" "rank 3 is stopped"
(export CORAL_TIMEOUT=3 STUCK_RANK=2 STUCK_AFTER=5 STUCK_HOW=sleep; JOB_TIMEOUT=60 run_job 2 "$prog" >"$log" 2>&1)
check "rank 2 behind" "rank 2, which last completed allreduce #5 .*rank 2 is behind"
