#!/bin/bash
# Paired comparison of fixed all-reduce algorithms at P ranks on this host (pinned), for
# placing a tuner crossover: each rep runs every algorithm back to back over LO..HI (x2 steps),
# and each size prints every algorithm's time over the rep's best, median over reps (the
# machine drifts by up to 2x over minutes; within a rep it drifts little).
# Usage: [BUILD=dir] bench/tuner/paired.sh P LO HI ITERS REPS ALGO...
#   e.g. bench/tuner/paired.sh 8 64K 8M 40 3 twoshot rhd ring hier
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 6 ] || { sed -n 2,7p "$0" >&2; exit 2; }
build=${BUILD:-build}
p=$1 lo=$2 hi=$3 n=$4 reps=$5
shift 5
for r in $(seq "$reps"); do
  for a in "$@"; do
    "$build/tools/coral-run/coral-run" -n "$p" --bind-to core --no-prefix "$build/bench/coral-bench" \
      -b "$lo" -e "$hi" -f 2 -n "$n" -w 5 --algo "$a" | awk -v a="$a" -v r="$r" '/^ +[0-9]/ {print r, a, $1, $6}'
  done
done | python3 -c '
import collections, statistics, sys
t = collections.defaultdict(dict)  # (algo, size) -> {rep: us}
for line in sys.stdin:
    r, a, s, us = line.split()
    t[(a, int(s))][r] = float(us)
algos = list(dict.fromkeys(a for a, _ in t))
print("    size " + " ".join(f"{a:>9}" for a in algos) + "   (time / the rep best, median over reps)")
for s in sorted({s for _, s in t}):
    row = []
    for a in algos:
        row.append(statistics.median(t[(a, s)][r] / min(t[(b, s)][r] for b in algos) for r in t[(a, s)]))
    print(f"{s:>8} " + " ".join(f"{x:>9.3f}" for x in row))
'
