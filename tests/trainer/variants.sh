#!/bin/bash
# The variants of data parallelism in coral-train, each on digits (the default dataset) with an
# accuracy floor: parameter servers (and their staleness bound), PowerSGD and top-k compression
# (which must send less), and --balance, which must split a straggler's batch unevenly yet give
# the float64 result of the even split.
# Usage: variants.sh CORAL_RUN CORAL_TRAIN
set -uo pipefail
. "$(dirname "$0")/lib.sh"
final() { sed -n 's/^.*final: \(.*\)/\1/p' "$1" | tail -1; }
acc() { sed -n 's/^.*final: test accuracy \([0-9.]*\)%.*/\1/p' "$1" | tail -1; }
kib() { sed -n 's/^.*final: .* \([0-9.]*\) KiB sent\/step.*/\1/p' "$1" | tail -1; }
at_least() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$1" "$2" 2>/dev/null; }

learns() {  # learns NAME FLOOR [args...]: 4 ranks, 20 epochs
  local name=$1 floor=$2
  shift 2
  "$run" -n 4 --timeout 120 "$train" --log-every 1000 "$@" >"$tmp/$name.log" 2>&1 || bad "$name: exit $?"
  local a
  a=$(acc "$tmp/$name.log")
  [ -n "$a" ] && at_least "$a" "$floor" && ok "$name: $a% (floor $floor%)" \
    || { bad "$name: accuracy '$a' below $floor%"; tail -5 "$tmp/$name.log"; }
}

echo "== synchronous baseline"
learns sync 90

echo "== parameter servers"
learns ps 90 --mode ps --servers 1
learns ps2 90 --mode ps --servers 2
grep -q "staleness of 720 applied gradients: mean [0-9.]*, max [0-9]*" "$tmp/ps.log" \
  && ok "every gradient is counted: $(grep -o 'staleness of .*' "$tmp/ps.log")" || bad "ps staleness line: $(final "$tmp/ps.log")"
# Stale-synchronous: with k = 0 and 3 workers no gradient can be more than (3 - 1) * 1 updates old.
learns ssp 90 --mode ps --servers 1 --max-staleness 0
max=$(sed -n 's/.*staleness of .*max \([0-9]*\).*/\1/p' "$tmp/ssp.log")
[ -n "$max" ] && [ "$max" -le 2 ] && ok "--max-staleness 0 keeps staleness at most 2 (max $max)" \
  || bad "--max-staleness 0: max staleness '$max'"

# A straggling worker (20x slower) falls behind the other: its gradients arrive stale by about
# as many of the other's updates as an epoch holds (12 a worker), not the 1-5 of an even run.
"$run" -n 3 --timeout 60 "$train" --mode ps --servers 1 --slow-rank 2:20 --log-every 1000 >"$tmp/pslow.log" 2>&1 \
  || bad "ps with a slow worker: exit $?"
max=$(sed -n 's/.*staleness of .*max \([0-9]*\).*/\1/p' "$tmp/pslow.log")
[ -n "$max" ] && [ "$max" -ge 8 ] && ok "ps --slow-rank: max staleness $max" || bad "ps --slow-rank: max staleness '$max'"

# Global batch 2 over 3 workers: one worker's part is always empty. Its pushes are no updates.
"$run" -n 4 --timeout 60 "$train" --mode ps --servers 1 --batch 2 --epochs 1 --steps 20 --log-every 1000 \
  >"$tmp/empty.log" 2>&1 && grep -q "staleness of 40 applied gradients" "$tmp/empty.log" \
  && ok "empty parts: 40 of 60 pushes were updates" || bad "empty parts: $(final "$tmp/empty.log")"

echo "== compression with error feedback"
learns powersgd 90 --compress powersgd:4
learns topk 85 --compress topk:0.01
dense=$(kib "$tmp/sync.log")
for m in powersgd topk; do
  k=$(kib "$tmp/$m.log")
  [ -n "$k" ] && python3 -c "import sys; sys.exit(0 if float('$k') * 4 < float('$dense') else 1)" \
    && ok "$m sends $k KiB/step against $dense dense" || bad "$m sends '$k' KiB/step against '$dense' dense"
done

echo "== stragglers: --balance equals the even split in float64"
common=(--batch 60 --log-every 1000 --dtype f64 --epochs 2 --steps 30 --slow-rank 1:3 --no-replica-check)
"$run" -n 2 --timeout 120 "$train" "${common[@]}" --dump-params "$tmp/even" >"$tmp/even.log" 2>&1 || bad "even run"
"$run" -n 2 --timeout 120 "$train" "${common[@]}" --balance --balance-every 5 --dump-params "$tmp/bal" \
  >"$tmp/bal.log" 2>&1 || bad "balanced run"
parts=$(sed -n 's/.*balance: step [0-9]*: batch parts \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' "$tmp/bal.log" | head -1)
read -r p0 p1 <<<"$parts"
[ -n "${p1:-}" ] && [ "$p0" -gt "$p1" ] && ok "the slow rank gets the smaller part ($p0/$p1)" \
  || bad "balance parts '$parts'"
$cmp "$tmp/even" "$tmp/bal" 1e-12 && ok "balanced equals even" || bad "balanced run differs from the even split"

echo "== bad input fails with a clear message"
expect_fail "the method must be powersgd:R, topk:F or none" --compress zip:3
expect_fail "F must be a fraction" --compress topk:2
expect_fail "at least one worker" --mode ps --servers 2
expect_fail "cannot be combined" --compress powersgd:2 --staleness 1
expect_fail "cannot be combined" --mode ps --balance
expect_fail "there are only 2 ranks" --slow-rank 5:2
expect_fail "RANK:FACTOR" --slow-rank 1:0.5
expect_fail "a slow-down from 1 to 1000" --slow-rank 1:inf
expect_fail "the workers are ranks 1 to 1" --mode ps --slow-rank 0:2
expect_fail "cannot be combined" --mode ps --grad-comm bf16
expect_fail "cannot be combined" --mode ps --fail-at-step 3
expect_fail "max-staleness applies to --mode ps only" --max-staleness 3
expect_fail "servers applies to --mode ps only" --servers 1

echo "trainer variants: $fails failure(s)"
[ $fails -eq 0 ]
