#!/bin/bash
# Cross-memory attach against the slots (CORAL_CMA=on / off), and registered buffers beside them,
# paired per repetition: all-reduce float32 sum time in us, out of place and in place, medians.
#   bench/coral-bench/cma.sh [--reps N] [--ranks "2 4"]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build} reps=3 ranks="2 4"
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for ((i = 0; i < reps; i++)); do
  for p in $ranks; do
    for v in on off reg; do
      env=(CORAL_CMA=on) reg=0
      [ $v = off ] && env=(CORAL_CMA=off)
      [ $v = reg ] && env=(CORAL_CMA=off) reg=1
      env "${env[@]}" "$build/tools/coral-run/coral-run" -n "$p" --no-prefix "$build/bench/coral-bench" \
        -b 256K -e 64M -f 4 -n 20 -w 5 -R $reg |
        awk -v p="$p" -v v="$v" '/^ +[0-9]/ {print p, v, $1, $6, $10}' >> "$raw"
    done
  done
done
python3 - "$raw" <<'PY'
import statistics as st, sys, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p, v, b, oop, ip = line.split()
    d[(int(p), int(b), v)].append((float(oop), float(ip)))
print("| P | bytes | CMA on: oop, in place (us) | CMA off | registered, CMA off | off/on oop |")
print("|---|---|---|---|---|---|")
for p, b in sorted({(k[0], k[1]) for k in d}):
    m = {v: (st.median(x[0] for x in d[(p, b, v)]), st.median(x[1] for x in d[(p, b, v)])) for v in ("on", "off", "reg")}
    print(f"| {p} | {b} | {m['on'][0]:.1f}, {m['on'][1]:.1f} | {m['off'][0]:.1f}, {m['off'][1]:.1f} | "
          f"{m['reg'][0]:.1f}, {m['reg'][1]:.1f} | {m['off'][0] / m['on'][0]:.2f} |")
PY
