#!/bin/bash
# Every collective as processes via coral-run, P in {1,2,3,4,5,8}.
set -u
coral_run=$1 prog=$2
for p in 1 2 3 4 5 8; do
  out=$("$coral_run" -n "$p" "$prog" 2>&1) || { echo "P=$p failed:"; echo "$out" | tail -20; exit 1; }
  n=$(echo "$out" | grep -c "collective cases passed")
  [ "$n" -eq "$p" ] || { echo "P=$p: only $n of $p ranks reported success"; echo "$out" | tail; exit 1; }
  echo "P=$p ok: $(echo "$out" | head -1)"
done
# Large messages through the slots only (no cross-memory attach), and through small slots.
out=$(CORAL_CMA_BYTES=0 CORAL_SHM_SLOT_BYTES=8K CORAL_SHM_NSLOTS=2 "$coral_run" -n 3 "$prog" 2>&1) || {
  echo "P=3 without CMA, 8K slots failed:"; echo "$out" | tail -20; exit 1; }
echo "P=3 without CMA, 2 slots of 8K ok"
