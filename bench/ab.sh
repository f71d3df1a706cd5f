#!/bin/bash
# Two builds of Coral side by side: their coral-allreduce-bench runs interleaved (A B A B ...),
# P in {2,4}, float32 sum all-reduce; prints per size the medians and B's time over A's. For a
# change that must leave performance alone (a refactor): run the old build as A, the new as B.
#   bench/ab.sh BUILD_A BUILD_B [--reps N] [sizes...]      (default 5 reps, 8 B .. 64 MiB)
set -euo pipefail
a=$1 b=$2
shift 2
reps=5 sizes=()
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift ;;
    *) sizes+=("$1") ;;
  esac
  shift
done
[ ${#sizes[@]} -gt 0 ] || sizes=(8 65536 1048576 16777216 67108864)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for ((i = 0; i < reps; i++)); do
  for p in 2 4; do
    for side in A B; do
      build=$a; [ $side = B ] && build=$b
      "$build/tools/coral-run/coral-run" -n "$p" --no-prefix "$build/bench/coral-allreduce-bench" "${sizes[@]}" |
        sed "s/^coral /$side /" >> "$tmp"
    done
  done
done
python3 - "$tmp" "$reps" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"([AB]) P=(\d+) bytes=(\d+) time_us=([\d.]+) algbw=([\d.]+) busbw=([\d.]+)", line)
    if m:
        side, p, b, t, _, bw = m.groups()
        rows.setdefault((int(p), int(b)), {}).setdefault(side, []).append(float(t))
print(f"Medians of {sys.argv[2]} interleaved runs (time in us); B/A < 1: B is faster.\n")
print("| P | bytes | A time | B time | B/A |\n|---|---|---|---|---|")
for (p, b), v in sorted(rows.items()):
    ta, tb = statistics.median(v["A"]), statistics.median(v["B"])
    print(f"| {p} | {b} | {ta:.2f} | {tb:.2f} | {tb / ta:.3f} |")
PY
