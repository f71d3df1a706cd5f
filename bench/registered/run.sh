#!/bin/bash
# Registered buffers (coral-bench -R 1) against Coral unregistered, Open MPI and MPICH, with the
# memory-bandwidth ceiling measured in the same run: float32 sum all-reduce, P in {2, 4}, 64 and
# 256 MiB, runs interleaved (R0 R1 ompi mpich membw, repeated); prints a markdown table of
# medians. Needs a build/ with coral-bench.
#   bench/registered/run.sh [--reps N]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
reps=5
[ "${1:-}" = --reps ] && reps=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run="$build/tools/coral-run/coral-run"
gcc -O2 -o "$tmp/membw" bench/registered/membw.c
peers=()
if command -v mpicc.openmpi >/dev/null; then mpicc.openmpi -O2 -o "$tmp/ar_ompi" bench/peers/allreduce_mpi.c && peers+=(ompi); fi
if command -v mpicc.mpich >/dev/null; then mpicc.mpich -O2 -o "$tmp/ar_mpich" bench/peers/allreduce_mpi.c && peers+=(mpich); fi
raw="$tmp/raw.txt"
coral() {  # P BYTES R: "coral-R<R> P=.. bytes=.. oop=<busbw> ip=<busbw>"
  "$run" -n "$1" --no-prefix "$build/bench/coral-bench" -b "$2" -e "$2" -n 8 -w 3 -R "$3" |
    awk -v p="$1" -v r="$3" '/^ +[0-9]/ {print "coral-R" r, "P=" p, "bytes=" $1, "oop=" $8, "ip=" $12}'
}
for ((i = 0; i < reps; i++)); do
  for p in 2 4; do
    for bytes in 67108864 268435456; do
      coral $p $bytes 0 >> "$raw"
      coral $p $bytes 1 >> "$raw"
      for lib in "${peers[@]}"; do
        case $lib in
          ompi) BENCH_LIB=ompi OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
                mpirun.openmpi --oversubscribe --bind-to none -x BENCH_LIB -np $p "$tmp/ar_ompi" $bytes ;;
          mpich) BENCH_LIB=mpich mpirun.mpich -np $p "$tmp/ar_mpich" $bytes ;;
        esac | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^busbw=/) b = substr($i, 7); print $1, $2, $3, "oop=" b}' >> "$raw"
      done
      "$tmp/membw" $p $bytes >> "$raw"
    done
  done
done
python3 - "$raw" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    key = (int(f["P"]), int(f["bytes"]))
    lib = line.split()[0]
    val = float(f.get("oop", f.get("copy_GBps", 0)))
    rows.setdefault(key, {}).setdefault(lib, []).append(val)
    if "ip" in f:
        rows[key].setdefault(lib + " in-place", []).append(float(f["ip"]))
med = lambda v: statistics.median(v) if v else float("nan")
print("| P | size | Coral busbw | Coral -R 1 busbw | -R 1 / Coral | in place: Coral, -R 1 | Open MPI | MPICH | -R 1 / best MPI | memcpy GB/s (P at once) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (p, b), libs in sorted(rows.items()):
    c0, c1 = med(libs.get("coral-R0", [])), med(libs.get("coral-R1", []))
    i0, i1 = med(libs.get("coral-R0 in-place", [])), med(libs.get("coral-R1 in-place", []))
    om, mp = med(libs.get("ompi", [])), med(libs.get("mpich", []))
    best = max(x for x in (om, mp) if x == x) if any(x == x for x in (om, mp)) else float("nan")
    mb = med(libs.get("membw", []))
    print(f"| {p} | {b >> 20} MiB | {c0:.2f} | {c1:.2f} | {c1 / c0:.2f}x | {i0:.2f}, {i1:.2f} | {om:.2f} | {mp:.2f} | {c1 / best:.2f}x | {mb:.2f} |")
PY
