#!/bin/bash
# Data-parallel scaling of coral-train: P ranks against 1 rank with the same global batch
# (default model, global batch and placement, one BLAS thread per rank), runs paired and
# interleaved, medians of the samples/s on the final line and of the pairs' ratios.
# Usage: bench/trainer/scaling.sh [--build DIR] [--ranks P] [--reps R] [--dataset D] [--epochs E]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build ranks=2 reps=7 dataset=fashion-mnist epochs=1
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --dataset) dataset=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
run=$build/tools/coral-run/coral-run
train=$build/examples/trainer/coral-train
one="" many="" waits=""
final() { "$run" -n "$1" --no-prefix "$train" --dataset "$dataset" --epochs "$epochs" --log-every 100000 | grep '^final:'; }
for r in $(seq "$reps"); do
  a=$(final 1)
  b=$(final "$ranks")
  sa=$(sed -n 's/.* \([0-9]*\) samples\/s.*/\1/p' <<<"$a")
  sb=$(sed -n 's/.* \([0-9]*\) samples\/s.*/\1/p' <<<"$b")
  one+="$sa " many+="$sb "
  waits+="$(sed -n 's/.*\(comm wait .*\)/\1/p' <<<"$b" | tr ' ' '_') "
  echo "rep $r: 1 rank $sa samples/s, $ranks ranks $sb samples/s ($(sed -n 's/.*\(comm wait .*\)/\1/p' <<<"$b"))"
done
python3 - "$ranks" "$one" "$many" <<'PY'
import statistics as st, sys
p = int(sys.argv[1])
one = [float(x) for x in sys.argv[2].split()]
many = [float(x) for x in sys.argv[3].split()]
ratios = [m / o for m, o in zip(many, one)]
print(f"median: 1 rank {st.median(one):.0f} samples/s, {p} ranks {st.median(many):.0f} samples/s; "
      f"speed-up median of pairs {st.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}), "
      f"target 1.8x at P=2")
PY
