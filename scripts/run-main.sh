#!/bin/bash
# The main job: install dependencies, build, run an all-reduce demo on 4 local ranks, then a short
# all-reduce benchmark (P=2 and P=4).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
build=${BUILD_DIR:-build}
run="$build/tools/coral-run/coral-run"
echo "== demo: all-reduce on 4 local ranks"
"$run" -n 4 "$build/examples/hello"
echo "== benchmark: float32 sum all-reduce"
for p in 2 4; do "$run" -n "$p" --no-prefix "$build/bench/coral-allreduce-bench" 8 65536 1048576 16777216; done
