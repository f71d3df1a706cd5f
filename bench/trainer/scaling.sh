#!/bin/bash
# Data-parallel scaling of coral-train: P ranks against 1 rank with the same global batch
# (default model, global batch and placement, one BLAS thread per rank), runs paired and
# interleaved, medians of the samples/s on the final line and of the pairs' ratios.
# Each rep also runs the ceiling without communication: P independent 1-rank runs side by side at
# batch 128/P, each pinned to its own CPU, samples/s summed. It is what P ranks would reach if the
# all-reduce were free, and it already pays for two cores sharing caches and memory.
# Usage: bench/trainer/scaling.sh [--build DIR] [--ranks P] [--reps R] [--dataset D] [--epochs E]
#                                 [--no-ceiling]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build ranks=2 reps=7 dataset=fashion-mnist epochs=1 ceiling=1
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --dataset) dataset=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --no-ceiling) ceiling=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
run=$build/tools/coral-run/coral-run
train=$build/examples/trainer/coral-train
ncpu=$(nproc)
[ "$ceiling" = 0 ] || [ "$ranks" -le "$ncpu" ] || { echo "the ceiling needs $ranks CPUs, there are $ncpu (--no-ceiling)" >&2; exit 2; }
one="" many="" ceil=""
final() { "$run" -n "$1" --no-prefix "$train" --dataset "$dataset" --epochs "$epochs" --log-every 100000 | grep '^final:'; }
sps() { sed -n 's/.* \([0-9]*\) samples\/s.*/\1/p'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$reps"); do
  a=$(final 1)
  b=$(final "$ranks")
  sa=$(sps <<<"$a") sb=$(sps <<<"$b")
  one+="$sa " many+="$sb "
  line="rep $r: 1 rank $sa samples/s, $ranks ranks $sb samples/s ($(sed -n 's/.*\(comm wait .*\)/\1/p' <<<"$b"))"
  if [ "$ceiling" = 1 ]; then
    for i in $(seq 0 $((ranks - 1))); do
      "$run" -n 1 --no-prefix --bind-to none taskset -c "$i" "$train" --dataset "$dataset" --epochs "$epochs" \
        --batch $((128 / ranks)) --log-every 100000 | grep '^final:' | sps >"$tmp/$i" &
    done
    wait
    sc=$(($(cat "$tmp"/* | paste -sd+)))
    ceil+="$sc "
    line+="; no-communication ceiling $sc samples/s"
  fi
  echo "$line"
done
python3 - "$ranks" "$one" "$many" "$ceil" <<'PY'
import statistics as st, sys
p = int(sys.argv[1])
one = [float(x) for x in sys.argv[2].split()]
many = [float(x) for x in sys.argv[3].split()]
ratios = [m / o for m, o in zip(many, one)]
print(f"median: 1 rank {st.median(one):.0f} samples/s, {p} ranks {st.median(many):.0f} samples/s; "
      f"speed-up median of pairs {st.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}), "
      f"target 1.8x at P=2")
if sys.argv[4].split():
    ceil = [float(x) for x in sys.argv[4].split()]
    cr = [c / o for c, o in zip(ceil, one)]
    eff = [m / c for m, c in zip(many, ceil)]
    print(f"no-communication ceiling: median {st.median(ceil):.0f} samples/s, {st.median(cr):.2f}x one rank "
          f"(min {min(cr):.2f}, max {max(cr):.2f}); {p} ranks reach {100 * st.median(eff):.0f}% of it")
PY
