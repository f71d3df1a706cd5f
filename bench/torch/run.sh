#!/bin/bash
# torch.distributed through the "coral" backend against gloo, same job, same ranks, runs
# interleaved inside each job: all_reduce (float32 sum, CPU, 8 B .. 256 MiB) and a DDP step of a
# 25M-parameter MLP (global batch 64), at P = 2 and 4 under coral-run. Writes into --out (default
# bench/torch/results, --quick: bench/torch/results/quick): allreduce.csv, ddp.csv, the raw logs,
# busbw.png (gnuplot) and results.md (the tables, the targets checked, the command and date).
# Needs a build/ with coral-run and coral_torch; Debian's /usr/bin/python3 with python3-torch.
#   bench/torch/run.sh [--reps N] [--quick] [--ranks "2 4"] [--build DIR] [--out DIR]
set -euo pipefail
cmdline="bench/torch/run.sh${*:+ $*}"
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
py=${TORCH_PYTHON:-/usr/bin/python3}
reps=10 quick=0 ranks="2 4" out=""
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift ;;
    --quick) quick=1 ;;
    --ranks) ranks=$2; shift ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then
  out=${out:-bench/torch/results/quick}
  ar_args=(--sizes 8,64K,1M,16M --reps "$([ "$reps" -lt 3 ] && echo "$reps" || echo 3)" --warmup 1)
  ddp_args=(--steps 4 --warmup 1)
  limit=600
else
  out=${out:-bench/torch/results}
  ar_args=(--min 8 --max 256M --factor 2 --reps "$reps" --warmup 3)
  ddp_args=(--steps $((2 * reps)) --warmup 3)
  limit=3600
fi
run="$build/tools/coral-run/coral-run"
export PYTHONPATH="$build/src/compat/torch${PYTHONPATH:+:$PYTHONPATH}"
[ -x "$run" ] || { echo "no $run: build first" >&2; exit 1; }
"$py" -c 'import coral_torch' || { echo "$py cannot import coral_torch from $build" >&2; exit 1; }
command -v gnuplot >/dev/null || echo "no gnuplot: busbw.png is skipped" >&2
mkdir -p "$out"
rm -f "$out"/allreduce-P*.csv "$out"/ddp-P*.csv

free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Ranks are pinned, round-robin over the CPUs, also when there are more ranks than CPUs (P=4 on
# 2): unpinned, the kernel's placement drifts between the two backends' phases, and the 8-byte
# times of both move by 2-3x with it (coral 46-130 us at P=4 in the same session).
job() {  # P SCRIPT ARGS...: one coral-run job, its own torch rendezvous port
  local p=$1 script=$2
  shift 2
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) \
    "$run" -n "$p" --bind-to core --timeout "$limit" --no-prefix "$py" "bench/torch/$script" "$@"
}

start=$(date -u '+%Y-%m-%d %H:%M UTC')
for p in $ranks; do
  echo "== all_reduce, P=$p"
  job "$p" allreduce.py "${ar_args[@]}" --csv "$out/allreduce-P$p.csv" | tee "$out/allreduce-P$p.log"
  echo "== DDP step, P=$p"
  job "$p" ddp_step.py "${ddp_args[@]}" --csv "$out/ddp-P$p.csv" | tee "$out/ddp-P$p.log"
done
# One CSV of each kind, every P.
for kind in allreduce ddp; do
  first=1
  for p in $ranks; do
    f="$out/$kind-P$p.csv"
    if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
  done > "$out/$kind.csv"
done

if command -v gnuplot >/dev/null; then
  plots=()
  for p in $ranks; do
    f="$out/allreduce-P$p.csv"
    plots+=("'$f' every ::1 using 2:5 with linespoints lw 2 pt 7 title 'coral P=$p'")
    plots+=("'$f' every ::1 using 2:8 with linespoints lw 2 pt 5 dt 2 title 'gloo P=$p'")
  done
  gnuplot <<EOF
set terminal pngcairo size 1000,640 enhanced font ',11'
set output '$out/busbw.png'
set datafile separator ','
set title 'torch.distributed all\\_reduce, float32 sum, CPU: coral vs gloo ($(nproc) CPUs, $start)'
set logscale x 2
set logscale y 10
set format y '%g'
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set ylabel 'busbw (GB/s)'
set grid
set key top left
plot $(IFS=,; echo "${plots[*]}")
EOF
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo "?")
[ -n "$(git status --porcelain 2>/dev/null)" ] && commit+=" (with uncommitted changes)"
"$py" - "$out" "$cmdline" "$start" "$commit" "$(nproc)" "$ranks" "$quick" <<'PY' > "$out/results.md"
import csv, math, sys
out, cmdline, start, commit, cpus, ranks, quick = sys.argv[1:8]
import torch
ar = list(csv.DictReader(open(f"{out}/allreduce.csv")))
ddp = list(csv.DictReader(open(f"{out}/ddp.csv")))

def size(n):
    n = int(n)
    for u, s in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << s and n % (1 << s) == 0:
            return f"{n >> s} {u}"
    return f"{n} B"

ok = lambda c: "met" if c else "**not met**"
print(f"# torch.distributed: the coral backend against gloo{' (quick smoke: too few sizes and reps to judge)' if quick == '1' else ''}\n")
print(f"{start}, {cpus}-CPU host, torch {torch.__version__}, commit {commit}:\n")
print(f"    {cmdline}\n")
print("Both process groups live in one job over the same ranks (coral-run, one process per rank), and")
print("their repetitions alternate at each size, so drift hits both alike. all_reduce: float32 sum, CPU,")
print("in place; time = median over repetitions of the slowest rank's time per call; algbw = bytes / time,")
print("busbw = algbw * 2(P-1)/P, in GB/s (1e9 B/s). DDP: MLP 1024-4096-4096-1024 (25.2M parameters),")
print("global batch 64, SGD; a step = forward + backward (with DDP's bucketed gradient all-reduce) +")
print("optimizer step; median over the steps of the slowest rank; `local` is the same step without DDP;")
print("`nocomm` is DDP with a communication hook that sends nothing: the floor for any backend.\n")
print("Targets: coral busbw >= 2x gloo's at every size from 64 KiB; 8 B latency coral <= 1/10 of gloo's;")
print("DDP step coral <= 0.7x gloo's at P=2.\n")

print("## all_reduce\n")
print("| P | size | coral us | gloo us | coral/gloo time | coral busbw | gloo busbw | coral/gloo busbw |")
print("|---|---|---|---|---|---|---|---|")
for r in ar:
    print(f"| {r['P']} | {size(r['bytes'])} | {float(r['coral_us']):.1f} | {float(r['gloo_us']):.1f} | "
          f"{float(r['time_ratio']):.3f} | {float(r['coral_busbw']):.3f} | {float(r['gloo_busbw']):.3f} | "
          f"{float(r['busbw_ratio']):.2f}x |")
print("\n![busbw](busbw.png)\n")
print("## DDP step\n")
print("| P | model | median ms/step | min | max | / gloo |")
print("|---|---|---|---|---|---|")
for r in ddp:
    print(f"| {r['P']} | {r['backend']} | {float(r['median_ms']):.1f} | {float(r['min_ms']):.1f} | "
          f"{float(r['max_ms']):.1f} | {float(r['ratio_to_gloo']):.3f} |")

print("\n## Targets\n")
for p in ranks.split():
    rows = [r for r in ar if r["P"] == p]
    big = [r for r in rows if int(r["bytes"]) >= 64 << 10]
    if big:
        worst = min(big, key=lambda r: float(r["busbw_ratio"]))
        w = float(worst["busbw_ratio"])
        print(f"- P={p}: busbw coral/gloo from 64 KiB: lowest {w:.2f}x at {size(worst['bytes'])} (target >= 2x): {ok(w >= 2)}")
    small = [r for r in rows if int(r["bytes"]) == 8]
    if small:
        t = float(small[0]["time_ratio"])
        print(f"- P={p}: 8 B latency coral/gloo {t:.3f} (target <= 0.1): {ok(t <= 0.1)}")
    d = [r for r in ddp if r["P"] == p and r["backend"] == "coral"]
    if d:
        t = float(d[0]["ratio_to_gloo"])
        goal = f" (target <= 0.7): {ok(t <= 0.7)}" if p == "2" else " (no target)"
        floor = [r for r in ddp if r["P"] == p and r["backend"] == "nocomm"]
        if floor:
            goal += f"; DDP with no communication at all: {float(floor[0]['ratio_to_gloo']):.3f} of gloo"
        print(f"- P={p}: DDP step coral/gloo {t:.3f}{goal}")
PY
echo "== $out/results.md"
cat "$out/results.md"
