#!/bin/bash
# Fuzzes the topology loaders with libFuzzer (clang, ASan, UBSan) for a while.
# Usage: tests/fuzz/run.sh [SECONDS]   (default 120); new interesting inputs go to a scratch
# corpus; copy the few worth keeping into tests/fuzz/corpus/topology/.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-120}
out=${FUZZ_BUILD:-build-fuzz}
mkdir -p "$out/corpus"
cp -n tests/fuzz/corpus/topology/* "$out/corpus/" 2>/dev/null || true
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Isrc $(pkg-config --cflags pugixml nlohmann_json fmt) \
  tests/fuzz/fuzz_topology.cc src/topology/{model,json,nccl_xml,render}.cc \
  $(pkg-config --libs pugixml fmt) -o "$out/fuzz_topology"
"$out/fuzz_topology" -max_total_time="$secs" -max_len=4096 "$out/corpus" tests/fixtures/topology
