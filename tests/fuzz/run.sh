#!/bin/bash
# Fuzzes Coral's parsers with libFuzzer (clang, ASan, UBSan) for a while.
# Usage: tests/fuzz/run.sh [TARGET|all] [SECONDS]   (default: all, 120 s each)
#   TARGET: topology, store_wire, tcp_frame, ibverbs_record, cuda_ipc_record, unique_id, algo_string
# Builds build-fuzz (FUZZ_BUILD) with clang and -Dfuzz=true. New interesting inputs go to a
# scratch corpus under it; copy the few worth keeping into tests/fuzz/corpus/TARGET/. The last
# line of each run (executions, coverage) goes to build-fuzz/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${1:-all} secs=${2:-120}
out=${FUZZ_BUILD:-build-fuzz}
all="topology store_wire tcp_frame ibverbs_record cuda_ipc_record unique_id algo_string"
[ "$target" = all ] && targets=$all || targets=$target
for t in $targets; do
  [[ " $all " == *" $t "* ]] || { echo "run.sh: unknown target '$t' (one of: $all)" >&2; exit 2; }
done
if [ ! -f "$out/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$out" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized -Dcuda=disabled -Dnccl=disabled -Dtorch=disabled -Dmpi=disabled \
    -Dtrainer=disabled -Dbench=false >/dev/null
fi
ninja -C "$out" $(for t in $targets; do echo "tests/fuzz_$t"; done)
for t in $targets; do
  mkdir -p "$out/corpus/$t"
  cp -n tests/fuzz/corpus/$t/* "$out/corpus/$t/" 2>/dev/null || true
  seeds=()
  [ "$t" = topology ] && seeds=(tests/fixtures/topology)
  echo "== fuzz_$t for $secs s"
  UCX_HANDLE_ERRORS=none UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$out/tests/fuzz_$t" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$out/crash-$t-" "$out/corpus/$t" "${seeds[@]}" 2>&1 | tee "$out/$t.full.log" | tail -3
  grep -E "^#[0-9]+.*(DONE|pulse|NEW|REDUCE)" "$out/$t.full.log" | tail -1 > "$out/$t.log" || true
done
