#!/bin/bash
# The variants of data parallelism side by side: synchronous all-reduce, stale gradients, 16-bit
# gradients, PowerSGD and top-k compression, parameter servers (asynchronous and
# stale-synchronous), and a straggler with and without --balance. Writes a table (accuracy,
# samples/s, bytes a rank sends per step, time to the target accuracy) and a plot of test
# accuracy against training time and against bytes sent, one curve per mode.
# Usage: bench/trainer/variants.sh [--build DIR] [--ranks P] [--dataset D] [--epochs E] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build ranks=4 dataset=fashion-mnist epochs=3 out=bench/trainer/variants
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --dataset) dataset=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$ranks" -ge 2 ] || { echo "--ranks must be at least 2 (a parameter server needs a worker)" >&2; exit 2; }
run=$build/tools/coral-run/coral-run
train=$build/examples/trainer/coral-train
mkdir -p "$out"
modes=(
  "sync|"
  "staleness 1|--staleness 1"
  "bf16 gradients|--grad-comm bf16"
  "fp16 gradients|--grad-comm fp16"
  "powersgd:4|--compress powersgd:4"
  "powersgd:1|--compress powersgd:1"
  "topk:0.01|--compress topk:0.01"
  "ps, 1 server|--mode ps --servers 1"
  "ps, 1 server, k=0|--mode ps --servers 1 --max-staleness 0"
  # Stragglers on 2 ranks, one core each: with more ranks than cores a spinning slow rank would
  # slow its neighbours too.
  "sync, 2 ranks|--ranks 2"
  "straggler 2x|--ranks 2 --slow-rank 1:2"
  "straggler 2x, balance|--ranks 2 --slow-rank 1:2 --balance"
)
: >"$out/finals.txt"
i=0
for m in "${modes[@]}"; do
  i=$((i + 1))
  name=${m%%|*} args=${m#*|} p=$ranks
  [[ $args == --ranks* ]] && { p=$(cut -d' ' -f2 <<<"$args"); args=$(cut -d' ' -f3- <<<"$args"); }
  # shellcheck disable=SC2086
  line=$("$run" -n "$p" --no-prefix "$train" --dataset "$dataset" --epochs "$epochs" --log-every 100000 \
    --csv "$out/mode$i.csv" $args | grep '^final:')
  echo "$name|$out/mode$i.csv|$line" >>"$out/finals.txt"
  echo "$name: $line"
done
python3 - "$out" "$dataset" "$ranks" "$epochs" <<'PY'
import csv, re, sys
out, dataset, ranks, epochs = sys.argv[1:]
rows = []
for line in open(f"{out}/finals.txt"):
    name, path, final = line.rstrip("\n").split("|", 2)
    acc = float(re.search(r"test accuracy ([0-9.]+)%", final).group(1))
    sps = float(re.search(r"([0-9.]+) samples/s", final).group(1))
    kib = float(re.search(r"([0-9.]+) KiB sent/step", final).group(1))
    st = re.search(r"staleness of .*: mean ([0-9.]+), max ([0-9]+)", final)
    curve = [(float(r["train_seconds"]), float(r["sent_bytes"]), float(r["test_accuracy"]))
             for r in csv.DictReader(open(path)) if r["kind"] == "epoch"]
    rows.append((name, path, acc, sps, kib, st, curve))
target = rows[0][2] - 1  # the synchronous run's final accuracy, less one point
print(f"\n{dataset}, {epochs} epochs, {ranks} ranks (the last three: 2); target accuracy {target:.2f}% (synchronous, less 1 point)\n")
print("| mode | test accuracy | samples/s | KiB sent/step | training s | s to target | note |")
print("|---|---|---|---|---|---|---|")
for name, path, acc, sps, kib, st, curve in rows:
    reach = next((f"{t:.1f}" for t, b, a in curve if a >= target), "not reached")
    note = f"staleness mean {st.group(1)}, max {st.group(2)}" if st else ""
    print(f"| {name} | {acc:.2f}% | {sps:.0f} | {kib:.1f} | {curve[-1][0]:.1f} | {reach} | {note} |")
by = {r[0]: r[3] for r in rows}
if "straggler 2x" in by and "straggler 2x, balance" in by:
    lost = by["sync, 2 ranks"] - by["straggler 2x"]
    back = by["straggler 2x, balance"] - by["straggler 2x"]
    # With 2 ranks and one at half speed, a perfect split runs at 1.5 / 2 of the even speed,
    # so it can win back at most half of what the straggler cost (less with more ranks).
    if lost > 0:
        print(f"\n--balance recovers {100 * back / lost:.0f}% of the throughput the straggler cost "
              f"({by['straggler 2x']:.0f} -> {by['straggler 2x, balance']:.0f} samples/s; no straggler "
              f"{by['sync, 2 ranks']:.0f}; a perfect split would recover 50%)")
with open(f"{out}/curves.gp", "w") as g:
    g.write("set terminal pngcairo size 1200,500 noenhanced; set output '%s/curves.png';\n" % out)
    g.write("set datafile separator ','; set grid; set key bottom right font ',9'; set multiplot layout 1,2;\n")
    # Bytes on a log axis: compression spans two orders of magnitude.
    for x, col, scale, axis in (("training time (s)", 10, 1, "unset logscale x"),
                                ("MiB sent by a rank (log scale)", 11, 1048576, "set logscale x")):
        g.write(f"{axis}; set xlabel '{x}'; set ylabel 'test accuracy (%)';\n")
        g.write("plot " + ", ".join(
            f"'{p}' using (strcol(1) eq 'epoch' ? ${col}/{scale} : NaN):9 with linespoints title '{n}'"
            for n, p, *_ in rows) + "\n")
    g.write("unset multiplot\n")
PY
if command -v gnuplot >/dev/null; then gnuplot "$out/curves.gp" && echo "plot: $out/curves.png"; fi
