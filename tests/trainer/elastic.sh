#!/bin/bash
# coral-train --elastic under coral-run --keep-going: a rank that dies mid-epoch (the
# --fail-at-step hook, or kill -9 from outside) costs nothing but time. The survivors shrink,
# split the rest of the epoch among themselves and go on; since P ranks equal one large batch,
# the float64 result must equal an uninterrupted run's. Fashion-MNIST (when installed) must land
# within 1 point of an uninterrupted run, digits at 95% or more.
# Usage: elastic.sh CORAL_RUN CORAL_TRAIN
set -uo pipefail
. "$(dirname "$0")/lib.sh"
acc() { sed -n 's/^.*final: test accuracy \([0-9.]*\)%.*/\1/p' "$1" | tail -1; }

# Digits, batch 60: 24 steps an epoch; step 30 is in epoch 2.
common=(--batch 60 --log-every 1000 --dtype f64 --optimizer sgd --epochs 3)
"$run" -n 1 --timeout 120 "$train" "${common[@]}" --dump-params "$tmp/straight" >"$tmp/straight.log" 2>&1 \
  || bad "uninterrupted run"
elastic() {  # elastic NAME WANT_LOST_LINES [args...]
  local name=$1 want=$2
  shift 2
  "$run" -n 4 --keep-going --timeout 120 "$train" "${common[@]}" --elastic --dump-params "$tmp/$name" "$@" \
    >"$tmp/$name.log" 2>&1 || { bad "$name: coral-run exited $?"; tail -20 "$tmp/$name.log"; return; }
  local lines
  lines=$(grep -c "elastic: lost rank [0-9]* at step 30; continuing on $((4 - want)) ranks (recovered in [0-9.]* s)" \
    "$tmp/$name.log")
  [ "$lines" = "$want" ] && ok "$name: $(grep -m1 'elastic:' "$tmp/$name.log" | sed 's/^\[[0-9]*\] //')" \
    || { bad "$name: $lines loss lines, expected $want"; grep -E "elastic|coral-run|Error|error" "$tmp/$name.log" | head; }
  $cmp "$tmp/straight" "$tmp/$name" 1e-12 && ok "$name: equals the uninterrupted run" || bad "$name: parameters differ"
}
elastic last-rank 1 --fail-at-step 30
grep -q "coral-run: rank 3 (pid [0-9]*) was killed by signal 9.*--keep-going" "$tmp/last-rank.log" \
  && ok "coral-run reports the death and keeps going" || bad "coral-run did not report rank 3's death"
elastic rank-0 1 --fail-at-step 30 --fail-rank 0 --csv "$tmp/rank0.csv"
# Rank 0 wrote the CSV until it died in epoch 2 (killed, it flushes nothing then).
[ "$(grep -c '^epoch,1,' "$tmp/rank0.csv" 2>/dev/null)" = 1 ] && ok "a lost rank 0 leaves its CSV lines" \
  || bad "rank 0's CSV after its death: $(wc -l <"$tmp/rank0.csv" 2>&1)"
elastic two-ranks 2 --fail-at-step 30 --fail-rank 1 --fail-rank 2

# Without --elastic the same death fails the job, naming the lost rank.
"$run" -n 4 --keep-going --timeout 120 "$train" "${common[@]}" --fail-at-step 30 >"$tmp/plain.log" 2>&1 \
  && bad "a death without --elastic went unnoticed" \
  || { grep -q "rank 3" "$tmp/plain.log" && ok "without --elastic the job fails naming rank 3" || bad "plain failure message"; }
"$run" -n 2 "$train" --elastic --staleness 1 >"$tmp/stale.log" 2>&1 && bad "--elastic --staleness accepted" \
  || { grep -q "cannot be combined with --staleness" "$tmp/stale.log" && ok "--elastic refuses --staleness" || bad "staleness message"; }

# kill -9 from outside, while the job trains: once a line of epoch 2 shows, the last rank goes.
outside() {  # outside NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  : >"$tmp/$name.log"
  "$run" -n 4 --keep-going --timeout 300 "$train" --elastic "$@" >"$tmp/$name.log" 2>&1 &
  local job=$!
  timeout 120 tail -n +1 -f "$tmp/$name.log" | grep -q -m1 "$pattern"
  local pid
  pid=$(pgrep -P "$job" | tail -1)
  [ -n "$pid" ] && kill -9 "$pid"
  wait "$job" || bad "$name: coral-run exited $?"
  grep -q "elastic: lost rank" "$tmp/$name.log" && ok "$name: $(grep -m1 'elastic:' "$tmp/$name.log" | sed 's/^\[[0-9]*\] //')" \
    || bad "$name: no loss was reported"
}
# A wider model and a line a step: the run lasts long enough (about a second) to be cut into.
outside digits "epoch 2/" --epochs 40 --hidden 2048 --log-every 1
a=$(acc "$tmp/digits.log")
python3 -c "import sys; sys.exit(not float(sys.argv[1]) >= 95)" "${a:-0}" \
  && ok "digits after a kill -9 from outside: $a% (at least 95%)" || { bad "digits after a loss: '${a:-none}'"; tail -5 "$tmp/digits.log"; }
# The default digits model, as the README trains it, after losing a rank in epoch 3.
"$run" -n 4 --keep-going --timeout 120 "$train" --elastic --fail-at-step 30 >"$tmp/digits-default.log" 2>&1 \
  || bad "default digits run: coral-run exited $?"
a=$(acc "$tmp/digits-default.log")
python3 -c "import sys; sys.exit(not float(sys.argv[1]) >= 95)" "${a:-0}" \
  && ok "default digits model after a loss: $a% (at least 95%)" || bad "default digits after a loss: '${a:-none}'"

fashion=/usr/share/datasets/fashion-mnist
if [ -d "$fashion" ]; then
  "$run" -n 4 --timeout 300 "$train" --dataset fashion-mnist --epochs 3 --log-every 1000 >"$tmp/fm.log" 2>&1 \
    || bad "fashion-mnist uninterrupted"
  base=$(acc "$tmp/fm.log")
  outside fm-outside "epoch 1 done" --dataset fashion-mnist --epochs 3 --log-every 1000
  # Epoch 2 of 3, by the hook: 469 steps an epoch at batch 128.
  for case in "last:--fail-at-step 700" "rank0:--fail-at-step 700 --fail-rank 0" \
    "two:--fail-at-step 700 --fail-rank 1 --fail-rank 3"; do
    name=fm-${case%%:*}
    "$run" -n 4 --keep-going --timeout 300 "$train" --dataset fashion-mnist --epochs 3 --log-every 1000 --elastic \
      ${case#*:} >"$tmp/$name.log" 2>&1 || bad "fashion-mnist ${case#*:}: coral-run exited $?"
    grep -q "elastic: lost rank .* at step 700" "$tmp/$name.log" || bad "fashion-mnist ${case#*:}: no loss line"
  done
  for log in "$tmp"/fm-*.log; do
    a=$(acc "$log")
    python3 -c "import sys; b, a = map(float, sys.argv[1:]); sys.exit(not abs(a - b) <= 1)" "${base:-0}" "${a:-0}" \
      && ok "fashion-mnist $(basename "$log" .log): $a% vs $base% uninterrupted" \
      || { bad "fashion-mnist $(basename "$log" .log): '${a:-none}' vs '${base:-none}'"; tail -5 "$log"; }
  done
else
  echo "SKIP: fashion-mnist (dataset-fashion-mnist is not installed)"
fi

echo "elastic: $fails failure(s)"
[ $fails -eq 0 ]
