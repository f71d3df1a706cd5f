#!/bin/bash
# coral-train --elastic across emulated hosts: 2 hosts x 2 ranks over TCP lose rank 3 (on host
# 1) at step 30. Rank 0 and 1 on host 0 learn of the death only through the network
# (coralCommGetFailedRanks reads the closed connections), all survivors shrink past it, and the
# float64 result equals one rank's uninterrupted run.
# usage: elastic.sh CORAL_RUN CORAL_TRAIN
set -u
. "$(dirname "$0")/lib.sh"
CORAL_RUN=$1 train=$2
netns_skip_unless_root
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; netns_down' EXIT
args=(--batch 60 --log-every 1000 --dtype f64 --optimizer sgd --epochs 3)
"$CORAL_RUN" -n 1 "$train" "${args[@]}" --dump-params "$tmp/straight" >"$tmp/straight.log" 2>&1 \
  || { echo "FAIL: uninterrupted run"; cat "$tmp/straight.log"; exit 1; }
netns_up 2 none || { echo "FAIL: could not create 2 hosts"; exit 1; }
out=$(export CORAL_TRANSPORT=shm,tcp JOB_TIMEOUT=120 JOB_KEEP_GOING=1
      run_job 2 "$train" "${args[@]}" --elastic --fail-at-step 30 --dump-params "$tmp/elastic" 2>&1)
rc=$?
echo "$out" | grep -E "elastic:|final:|coral-run"
[ $rc = 0 ] || { echo "FAIL: the job exited $rc"; echo "$out" | tail -20; exit 1; }
echo "$out" | grep -q "elastic: lost rank 3 at step 30; continuing on 3 ranks" \
  || { echo "FAIL: no loss line"; echo "$out" | tail -20; exit 1; }
python3 "$(dirname "$0")/../trainer/compare_params.py" "$tmp/straight" "$tmp/elastic" 1e-12 \
  || { echo "FAIL: the survivors' parameters differ from the uninterrupted run"; exit 1; }
echo "ok: survivors on both hosts shrank past rank 3 and ended where an uninterrupted run ends"
