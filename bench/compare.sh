#!/bin/bash
# Coral against every peer found (Open MPI, MPICH, Gloo ring / ring_chunked / halving_doubling)
# on this host, P in {2,4}: float32 sum all-reduce, runs interleaved (A B C ... A B C) and
# repeated; writes a markdown table of medians (busbw, time) with the ratio Coral / best peer,
# and one PNG per P of busbw against size.
#   bench/compare.sh [--quick] [--reps N] [--out DIR] [sizes...]      (needs a build/)
# --quick: 1 repetition, sizes 8 B .. 16 MiB (about a minute); default: 3 repetitions up to 256 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
reps=3 out=bench/results quick=0 sizes=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 reps=1 ;;
    --reps) reps=$2; shift ;;
    --out) out=$2; shift ;;
    *) sizes+=("$1") ;;
  esac
  shift
done
if [ ${#sizes[@]} -eq 0 ]; then
  sizes=(8 65536 1048576 16777216 67108864 268435456)
  [ $quick = 1 ] && sizes=(8 65536 1048576 16777216)
fi
gloo_sizes=()
for s in "${sizes[@]}"; do [ "$s" -le 67108864 ] && gloo_sizes+=("$s"); done
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run="$build/tools/coral-run/coral-run"
libs=(coral)
if command -v mpicc.openmpi >/dev/null; then mpicc.openmpi -O2 -o "$tmp/ar_ompi" bench/peers/allreduce_mpi.c && libs+=(ompi); fi
if command -v mpicc.mpich >/dev/null; then mpicc.mpich -O2 -o "$tmp/ar_mpich" bench/peers/allreduce_mpi.c && libs+=(mpich); fi
if [ -f /usr/include/gloo/allreduce_ring.h ] && g++ -O2 -std=c++17 -o "$tmp/ar_gloo" bench/peers/allreduce_gloo.cc -lgloo -lpthread; then
  if [ $quick = 1 ]; then libs+=(gloo-ring_chunked); else libs+=(gloo-ring gloo-ring_chunked gloo-halving_doubling); fi
fi
echo "libraries: ${libs[*]}; sizes: ${sizes[*]}; repetitions: $reps" >&2
run_one() {
  local lib=$1 p=$2
  case $lib in
    coral) "$run" -n "$p" --no-prefix "$build/bench/coral-allreduce-bench" "${sizes[@]}" ;;
    ompi) BENCH_LIB=ompi OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
          mpirun.openmpi --oversubscribe --bind-to none -x BENCH_LIB -np "$p" "$tmp/ar_ompi" "${sizes[@]}" ;;
    mpich) BENCH_LIB=mpich mpirun.mpich -np "$p" "$tmp/ar_mpich" "${sizes[@]}" ;;
    gloo-*) "$run" -n "$p" --no-prefix "$tmp/ar_gloo" "${lib#gloo-}" "${gloo_sizes[@]}" ;;
  esac
}
for ((i = 0; i < reps; i++)); do
  for p in 2 4; do
    for lib in "${libs[@]}"; do
      run_one "$lib" "$p" >> "$tmp/results.txt" 2>/dev/null || echo "warning: $lib P=$p failed" >&2
    done
  done
done
cp "$tmp/results.txt" "$out/raw.txt"
python3 bench/summarize.py "$out/raw.txt" "$reps" "$out" | tee "$out/compare.md"
