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
echo "== benchmark: float32 sum all-reduce, 4 ranks"
"$run" -n 4 --no-prefix "$build/bench/coral-bench" -b 8 -e 16M -f 8 -n 10 -w 2
