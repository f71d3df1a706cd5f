#!/bin/bash
# coral-schedule: prints a verified schedule, predicts with the simulator, rejects bad input.
# Usage: coral_schedule.sh CORAL_SCHEDULE
set -uo pipefail
cs=$1
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
out=$("$cs" -c allreduce -a rhd -n 6 -r 1 --count 12 --chunk 4)
echo "$out" | grep -q "^# rhd rank 1/6: 18 steps" && ok "rhd dump header" || bad "rhd dump: $out"
echo "$out" | grep -q "verify allreduce rhd P=6 count=12: postcondition holds" && ok "verified" || bad "verify line"
# Rank 2's one-shot fold: rank 0's message into scratch, rank 1's onto it, its own vector, rank 3's.
out=$("$cs" -c allreduce -a oneshot -n 4 -r 2 --count 3)
echo "$out" | grep -q "fold of 4 steps, 4 inputs" && ok "one-shot fold shown" || bad "one-shot fold: $out"
out=$("$cs" -q -c reducescatter -a all -n 37 --count 5)
[ "$(echo "$out" | grep -c 'postcondition holds')" = 2 ] && ok "reduce-scatter ring and rhd at P=37" || bad "$out"
out=$("$cs" --predict -n 64 --per-host 8 -b 8 -e 64M -f 64)
echo "$out" | grep -q "^# allreduce on 64 ranks, 8 per host" && ok "predict header" || bad "predict: $out"
[ "$(echo "$out" | grep -c '^ *[0-9]')" = 4 ] && ok "predict rows" || bad "predict rows: $out"
last=$(echo "$out" | tail -1)
echo "$last" | grep -Eq "(ring|rhd|twoshot|hier)$" && ok "large messages: a bandwidth algorithm wins ($last)" || bad "large: $last"
first=$(echo "$out" | grep '^ *8 ')
echo "$first" | grep -Eq "(oneshot|rd|twoshot)$" && ok "8 bytes: a latency algorithm wins" || bad "small: $first"
expect_fail() {  # expect_fail PATTERN ARGS...
  local pat=$1 out
  shift
  out=$("$cs" "$@" 2>&1)
  [ $? -eq 2 ] && echo "$out" | grep -q -- "$pat" && ok "$* -> $pat" || bad "$*: $out"
}
expect_fail "allgather has no algorithm 'tree'" -c allgather -a tree
expect_fail "unknown collective" -c alltoallv
out=$("$cs" -q -c alltoall -n 5 --count 3)
[ "$(echo "$out" | grep -c 'postcondition holds')" = 2 ] && ok "alltoall pairwise and bruck at P=5" || bad "$out"
out=$("$cs" -q -c scatter -a tree -n 9 --count 2)
echo "$out" | grep -q "verify scatter tree P=9 count=2: postcondition holds" && ok "scatter tree" || bad "$out"
expect_fail "rank 9 is not in 0..3" -n 4 -r 9
echo "coral-schedule: $fails failure(s)"
[ $fails -eq 0 ]
