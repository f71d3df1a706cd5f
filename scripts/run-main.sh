#!/bin/bash
# The main job: install dependencies, build, train the reference MLP data-parallel on 4 local
# ranks (Fashion-MNIST, or the bundled digits when that package is absent), then a short
# all-reduce benchmark on 4 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
build=${BUILD_DIR:-build}
run="$build/tools/coral-run/coral-run"
train="$build/examples/trainer/coral-train"
mkdir -p "$build/main-job"
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  data=(--dataset fashion-mnist --epochs 5)
else
  echo "== Fashion-MNIST not installed (Debian package dataset-fashion-mnist): using the bundled digits"
  data=(--dataset digits)
fi
echo "== training: coral-train ${data[*]} on 4 local ranks"
"$run" -n 4 --no-prefix "$train" "${data[@]}" --log-every 100 \
  --csv "$build/main-job/train.csv" --plot "$build/main-job/train.png"
echo "== benchmark: float32 sum all-reduce, 4 ranks"
"$run" -n 4 --no-prefix "$build/bench/coral-bench" -b 8 -e 16M -f 8 -n 10 -w 2
