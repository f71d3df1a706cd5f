#!/bin/bash
# The main job: install dependencies, build, a short all-reduce benchmark, then train the
# reference MLP data-parallel on as many local ranks as this machine has CPUs for (at least 2;
# -n N overrides), on Fashion-MNIST or the bundled digits when that package is absent, after a
# short 1-rank run of the same global batch. The last lines: samples/s, the speed-up over that
# one rank, and where the accuracy curve is.
# Usage: scripts/run-main.sh [-n RANKS]
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=$(nproc)
[ "$ranks" -ge 2 ] || ranks=2
while [ $# -gt 0 ]; do
  case $1 in
    -n) ranks=$2; shift 2 ;;
    *) echo "usage: scripts/run-main.sh [-n RANKS]" >&2; exit 2 ;;
  esac
done
[[ "$ranks" =~ ^[0-9]+$ ]] && [ "$ranks" -ge 1 ] || { echo "run-main: -n wants a positive rank count, not '$ranks'" >&2; exit 2; }
scripts/deps.sh
scripts/build.sh
build=${BUILD_DIR:-build}
run="$build/tools/coral-run/coral-run"
train="$build/examples/trainer/coral-train"
out="$build/main-job"
mkdir -p "$out"
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  data=(--dataset fashion-mnist --epochs 5)
  ref=(--dataset fashion-mnist --epochs 1)
else
  echo "== Fashion-MNIST not installed (Debian package dataset-fashion-mnist): using the bundled digits"
  data=(--dataset digits)
  ref=(--dataset digits --epochs 5)
fi
echo "== benchmark: float32 sum all-reduce, $ranks ranks"
"$run" -n "$ranks" --no-prefix "$build/bench/coral-bench" -b 8 -e 16M -f 8 -n 10 -w 2
samples_per_s() { sed -n 's/^final: .* \([0-9]*\) samples\/s.*/\1/p' "$1"; }
echo "== reference: coral-train ${ref[*]} on 1 rank (for the speed-up)"
"$run" -n 1 --no-prefix "$train" "${ref[@]}" --log-every 100000 | tee "$out/reference.log" | grep '^final:'
echo "== training: coral-train ${data[*]} on $ranks local ranks"
"$run" -n "$ranks" --no-prefix "$train" "${data[@]}" --log-every 100 \
  --csv "$out/train.csv" --plot "$out/train.png" | tee "$out/train.log"
one=$(samples_per_s "$out/reference.log")
many=$(samples_per_s "$out/train.log")
python3 - "$ranks" "$many" "$one" <<'PY'
import sys
p, many, one = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"speed-up over one rank: {many / one:.2f}x ({p} ranks {many:.0f} samples/s, 1 rank {one:.0f} samples/s, "
      f"same global batch)")
PY
if [ -f "$out/train.png" ]; then echo "accuracy curve: $out/train.png"; fi
