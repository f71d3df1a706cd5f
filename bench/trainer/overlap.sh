#!/bin/bash
# How much of the gradient all-reduce does bucketed overlap hide? Synthetic model (--params,
# default 25M), P ranks (default 2), runs with and without overlap interleaved, --reps times.
# hidden = 1 - wait(overlap) / wait(no overlap), from the medians of the seconds spent waiting.
# Usage: bench/trainer/overlap.sh [--build DIR] [--ranks P] [--params N] [--batch B] [--steps S] [--reps R]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build ranks=2 params=25M steps=20 reps=3 batch=128
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --params) params=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
run=$build/tools/coral-run/coral-run
train=$build/examples/trainer/coral-train
declare -A wait_s step_s
for r in $(seq "$reps"); do
  for mode in off on; do
    flag=""
    [ $mode = off ] && flag=--no-overlap
    line=$("$run" -n "$ranks" --no-prefix "$train" --dataset synthetic --params "$params" --optimizer sgd \
             --batch "$batch" --steps "$steps" --log-every 1000 --no-replica-check $flag | grep '^final:')
    # "...; 3.1 s training, 250 samples/s, comm wait 9.5%"
    secs=$(echo "$line" | sed -n 's/.*; \([0-9.]*\) s training.*/\1/p')
    pct=$(echo "$line" | sed -n 's/.*comm wait \([0-9.]*\)%.*/\1/p')
    wait_s[$mode]+="$(python3 -c "print($secs * $pct / 100 / $steps)") "
    step_s[$mode]+="$(python3 -c "print($secs / $steps)") "
    echo "rep $r overlap $mode: $line"
  done
done
python3 - "${wait_s[off]}" "${wait_s[on]}" "${step_s[off]}" "${step_s[on]}" <<'PY'
import statistics as st, sys
w_off, w_on, s_off, s_on = (st.median(map(float, a.split())) for a in sys.argv[1:5])
print(f"median per step: no overlap: wait {w_off*1e3:.1f} ms of {s_off*1e3:.1f} ms; "
      f"overlap: wait {w_on*1e3:.1f} ms of {s_on*1e3:.1f} ms")
print(f"overlap hides {100 * (1 - w_on / w_off):.0f}% of the exposed all-reduce time; "
      f"step time ratio overlap/no-overlap {s_on / s_off:.3f}")
PY
