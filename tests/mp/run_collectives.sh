#!/bin/bash
# Every collective as processes via coral-run, P in {1,2,3,4,5,8}: mp_check's exact checks
# (tests/common/checks.h), the newer collectives in blocking, non-blocking and grouped forms.
# Every case at P = 1..4; P = 5 and 8, where 2 cores take longest, split the cases between them
# (CHECKS_SLICE). CORAL_TEST_QUICK=1 (the sanitizer pass) gives each P a third of the cases.
set -u
coral_run=$1 prog=$2
quick=${CORAL_TEST_QUICK:-0}
i=0
for p in 1 2 3 4 5 8; do
  slice=
  if [ "$quick" = 1 ]; then slice=$((i % 3))/3
  elif [ $p = 5 ]; then slice=0/2
  elif [ $p = 8 ]; then slice=1/2
  fi
  i=$((i + 1))
  out=$(CHECKS_SLICE=$slice "$coral_run" -n "$p" "$prog" 2>&1) || { echo "P=$p failed:"; echo "$out" | tail -20; exit 1; }
  n=$(echo "$out" | grep -c "collective cases passed")
  [ "$n" -eq "$p" ] || { echo "P=$p: only $n of $p ranks reported success"; echo "$out" | tail; exit 1; }
  echo "P=$p ok: $(echo "$out" | head -1)"
done
# Large messages through the slots only (no cross-memory attach), and through small slots; the
# sanitizer pass runs half of the cases here.
half=
[ "$quick" = 1 ] && half=0/2
out=$(CHECKS_SLICE=$half CORAL_CMA_BYTES=0 CORAL_SHM_SLOT_BYTES=8K CORAL_SHM_NSLOTS=2 "$coral_run" -n 3 "$prog" 2>&1) || {
  echo "P=3 without CMA, 8K slots failed:"; echo "$out" | tail -20; exit 1; }
echo "P=3 without CMA, 2 slots of 8K ok"
# Cross-memory attach forced on: CORAL_CMA=auto leaves it off where it does not pay (this VM).
out=$(CHECKS_SLICE=${half:+1/2} CORAL_CMA=on CORAL_CMA_BYTES=4K "$coral_run" -n 3 "$prog" 2>&1) || {
  echo "P=3 with CMA from 4K failed:"; echo "$out" | tail -20; exit 1; }
echo "P=3 with CMA from 4K ok"
# Trials: the repeated all-reduce runs through a whole trial; every rank logs the same pick.
# At P=3 every size is tried (CORAL_SMALL_BYTES=0), the agreements' own 8-32 byte all-reduces too.
# The other cases only share the calls with the trials here: a quarter of them each.
# CORAL_TEST_QUICK=1 (the sanitizer pass, where 8 ranks on 2 cores take minutes) skips P=8 here:
# the trial code is the same at P=3.
trial_ps="3 8"
[ "$quick" = 1 ] && trial_ps=3
for p in $trial_ps; do
  small=4K share=1/4
  [ $p = 3 ] && small=0 share=0/4
  out=$(CHECKS_SLICE=$share CORAL_SMALL_BYTES=$small CORAL_TUNE_TRIALS=1 CORAL_DEBUG=INFO CORAL_DEBUG_SUBSYS=TUNE "$coral_run" -n $p "$prog" 2>&1) || {
    echo "P=$p with trials failed:"; echo "$out" | tail -20; exit 1; }
  picks=$(echo "$out" | grep "allreduce of 262144 B: trial means" | sed 's/.*: //' | sort | uniq -c)
  [ "$(echo "$picks" | wc -l)" = 1 ] && [ "$(echo "$picks" | awk '{print $1}')" = "$p" ] || {
    echo "P=$p: trial picks differ or are missing:"; echo "$picks"; exit 1; }
  echo "P=$p with trials ok: every rank picked $(echo "$picks" | awk '{print $2}') for 256 KiB"
done
