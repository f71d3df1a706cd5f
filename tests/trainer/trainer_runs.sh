#!/bin/bash
# coral-train end to end under coral-run: P ranks equal one rank with the same global batch,
# checkpoint/resume equals not stopping (with another rank count too), replicas stay identical
# (and a divergence is caught), the 16-bit and stale modes learn, and bad input fails cleanly.
# Usage: trainer_runs.sh CORAL_RUN CORAL_TRAIN
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# Digits: 1438 samples; batch 60 gives 24 steps an epoch, the last one short (58), and shards
# of uneven size for P=4 (15) and P=3/P=7 (20, or 8-9).
common=(--batch 60 --log-every 1000 --no-replica-check)
trainp() {  # trainp P OUT [args...]
  local p=$1 out=$2
  shift 2
  "$run" -n "$p" --timeout 120 "$train" "${common[@]}" --dump-params "$out" "$@" >"$out.log" 2>&1
}

echo "== equivalence: P ranks vs 1 rank, same global batch"
for opt in sgd adam; do
  trainp 1 "$tmp/f64-$opt-1" --dtype f64 --optimizer $opt --epochs 2 --steps 30 || bad "f64 $opt P=1 run"
  for p in 2 3 4; do
    trainp $p "$tmp/f64-$opt-$p" --dtype f64 --optimizer $opt --epochs 2 --steps 30 || bad "f64 $opt P=$p run"
    $cmp "$tmp/f64-$opt-1" "$tmp/f64-$opt-$p" 1e-12 && ok "f64 $opt P=$p" || bad "f64 $opt P=$p differs"
  done
done
trainp 1 "$tmp/f32-1" --epochs 2 --steps 30 || bad "f32 P=1 run"
for p in 2 3 4; do
  trainp $p "$tmp/f32-$p" --epochs 2 --steps 30 || bad "f32 P=$p run"
  $cmp "$tmp/f32-1" "$tmp/f32-$p" 1e-5 && ok "f32 P=$p" || bad "f32 P=$p differs"
done
# The comparison itself can fail: a different seed is far away.
trainp 2 "$tmp/f64-seed" --dtype f64 --optimizer sgd --epochs 2 --steps 30 --seed 2
$cmp "$tmp/f64-sgd-1" "$tmp/f64-seed" 1e-12 >/dev/null && bad "seed change went unnoticed" || ok "comparison detects a difference"

echo "== sharded optimizer (the default on several ranks): the same updates as every rank doing all"
trainp 3 "$tmp/f64-adam-3-whole" --dtype f64 --optimizer adam --epochs 2 --steps 30 --shard-optimizer off \
  || bad "f64 adam P=3 unsharded run"
grep -q "optimizer sharded over 3 ranks" "$tmp/f64-adam-3.log" && ! grep -q "optimizer sharded" "$tmp/f64-adam-3-whole.log" \
  && ok "the header says when the optimizer is sharded" || bad "header: $(head -1 "$tmp/f64-adam-3.log")"
$cmp "$tmp/f64-adam-3" "$tmp/f64-adam-3-whole" 1e-12 && ok "sharded = unsharded at P=3 (f64)" || bad "sharding changed P=3"
# Two ranks add the same two numbers whichever way: bitwise equal.
trainp 2 "$tmp/f32-2-whole" --epochs 2 --steps 30 --shard-optimizer off || bad "f32 P=2 unsharded run"
$cmp "$tmp/f32-2" "$tmp/f32-2-whole" 0 && ok "sharded = unsharded at P=2, bitwise (f32)" || bad "sharding changed P=2"
trainp 3 "$tmp/sgd-3-on" --dtype f64 --optimizer sgd --epochs 2 --steps 30 --bucket-mb 0.01 --shard-optimizer on \
  || bad "sgd P=3 sharded over small buckets"
$cmp "$tmp/f64-sgd-1" "$tmp/sgd-3-on" 1e-12 && ok "--shard-optimizer on with SGD and buckets" || bad "sharded SGD differs"

echo "== checkpoint and resume"
ck=$tmp/ck
trainp 2 "$tmp/straight" --dtype f64 --epochs 3 || bad "straight run"
trainp 2 "$tmp/part1" --dtype f64 --epochs 3 --steps 31 --checkpoint "$ck" || bad "first half"
[ -s "$ck" ] && ! ls "$ck".tmp.* >/dev/null 2>&1 && ok "checkpoint written atomically" || bad "no checkpoint / temp left"
cp "$ck" "$ck.2"
trainp 2 "$tmp/resumed2" --dtype f64 --epochs 3 --resume "$ck" || bad "resume P=2"
$cmp "$tmp/straight" "$tmp/resumed2" 0 && ok "resume on 2 ranks is bitwise identical" || bad "resume P=2 differs"
trainp 3 "$tmp/resumed3" --dtype f64 --epochs 3 --resume "$ck.2" || bad "resume P=3"
$cmp "$tmp/straight" "$tmp/resumed3" 1e-12 && ok "resume on 3 ranks matches" || bad "resume P=3 differs"
grep -q "resumed from .* at step 31" "$tmp/resumed3.log" && ok "resume reports its step" || bad "no resume line"

echo "== replicas"
"$run" -n 3 --timeout 60 "$train" --epochs 2 >"$tmp/rep.log" 2>&1 && ok "replica-checked run" || bad "replica-checked run"
"$run" -n 3 --timeout 60 "$train" --epochs 1 --inject-divergence 1 >"$tmp/div.log" 2>&1 \
  && bad "divergence not detected" || { grep -q "replicas differ" "$tmp/div.log" && ok "divergence detected" || bad "divergence message"; }

echo "== comm wait: the network's share and the wait for slower ranks"
# final: ... comm wait X% (network Y%, slower ranks Z%): Y + Z = X. A busy loop on rank 1's CPU
# (ranks are pinned by default) makes rank 0 wait mostly for rank 1. The run must outlast the
# scheduler's time slices: at 5 epochs (a few ms) rank 1 often ran its whole job in one slice.
wait_parts() { sed -n 's/.*comm wait \([0-9.]*\)% (network \([0-9.]*\)%, slower ranks \([0-9.]*\)%).*/\1 \2 \3/p' "$1"; }
read -r cw nw sw <<<"$(wait_parts "$tmp/rep.log")"
[ -n "${sw:-}" ] && python3 -c "import sys; c,n,s=map(float,sys.argv[1:]); sys.exit(not (abs(n+s-c) <= 0.15 and n <= c))" "$cw" "$nw" "$sw" \
  && ok "comm wait $cw% = network $nw% + slower ranks $sw%" || bad "comm wait split: '$(grep final "$tmp/rep.log")'"
if [ "$(nproc)" -ge 2 ]; then
  cpu1=$("$run" -n 2 --no-prefix bash -c '[ "$CORAL_RANK" = 1 ] && awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status; true')
  taskset -c "$cpu1" bash -c 'while :; do :; done' &
  busy=$!
  "$run" -n 2 --timeout 120 "$train" --epochs 100 --log-every 1000 >"$tmp/slow.log" 2>&1 || bad "run beside a busy loop"
  kill $busy
  read -r cw nw sw <<<"$(wait_parts "$tmp/slow.log")"
  [ -n "${sw:-}" ] && python3 -c "import sys; n,s=map(float,sys.argv[1:]); sys.exit(not s > n)" "$nw" "$sw" \
    && ok "a rank sharing its core is seen as slower ($sw% vs network $nw%)" || bad "slow rank: '$(grep final "$tmp/slow.log")'"
fi

echo "== modes that must still learn (digits, 20 epochs)"
i=0
for mode in "" "--grad-comm bf16" "--grad-comm fp16" "--staleness 1" "--staleness 2 --no-overlap" "--optimizer sgd --clip 1 --warmup 10" "--bucket-mb 0.01"; do
  i=$((i + 1))
  out=$("$run" -n 4 --timeout 120 "$train" --log-every 1000 --dump-params "$tmp/mode$i" $mode 2>&1)
  acc=$(echo "$out" | sed -n 's/.*final: test accuracy \([0-9.]*\)%.*/\1/p')
  if [ -n "$acc" ] && python3 -c "import sys; sys.exit(0 if $acc >= 90 else 1)"; then ok "$mode: $acc%"
  else bad "$mode: accuracy '${acc}'"; echo "$out" | tail -5; fi
done

# 16-bit gradients and stale updates really change the trajectory, a little; bucketing does not.
for i in 2 3 4; do
  $cmp "$tmp/mode1" "$tmp/mode$i" 0 >/dev/null && bad "mode $i left the parameters bitwise unchanged"
  $cmp "$tmp/mode1" "$tmp/mode$i" 0.2 >/dev/null || bad "mode $i strayed far from fp32 synchronous"
done
$cmp "$tmp/mode1" "$tmp/mode7" 0 && ok "bucket size does not change the result" || bad "bucket size changed the result"

echo "== CSV and plot"
"$run" -n 2 --timeout 60 "$train" --epochs 3 --log-every 4 --csv "$tmp/log.csv" --plot "$tmp/curves.png" >"$tmp/plot.log" 2>&1 || bad "plot run"
[ "$(grep -c '^epoch,' "$tmp/log.csv")" = 3 ] && [ "$(grep -c '^step,' "$tmp/log.csv")" -ge 6 ] && ok "CSV rows" || bad "CSV rows"
if command -v gnuplot >/dev/null; then
  head -c 4 "$tmp/curves.png" | grep -q PNG && ok "PNG plot" || bad "PNG plot"
fi

echo "== without a launcher: one rank"
out=$(env -u CORAL_RANK -u RANK -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u SLURM_PROCID timeout 60 "$train" --steps 3 \
  --log-every 1000 2>&1) && grep -q ", 1 rank, " <<<"$out" && grep -q "^final:" <<<"$out" \
  && ok "coral-train run by hand trains on one rank" || bad "coral-train without a launcher: $out"

echo "== bad input fails on every rank with a clear message, no hang"
expect_fail "/nonexistent/d.csv.gz: cannot open" --data /nonexistent/d.csv.gz
expect_fail "/nonexistent/train-images-idx3-ubyte.gz" --dataset fashion-mnist --data /nonexistent
expect_fail "batch must be at least 1" --batch 0
expect_fail "cannot be combined" --staleness 1 --checkpoint "$tmp/x"
expect_fail "dataset" --dataset imagenet
printf 'garbage' >"$tmp/garbage"
expect_fail "cannot resume from .*not a coral-train checkpoint" --resume "$tmp/garbage"
out=$("$run" -n 3 "$train" --resume "$tmp/garbage" 2>&1)
# coral-run stops the others after the first exit: whichever rank printed, it names the reason.
if echo "$out" | grep -q 'coral-train: cannot resume from .*not a coral-train checkpoint' &&
   ! echo "$out" | grep 'coral-train: .*resume' | grep -vq 'not a coral-train checkpoint'; then ok "every rank names the reason"
else bad "a rank did not name the reason"; echo "$out"; fi
expect_fail "another model" --resume "$ck" --hidden 64 --dtype f64 --batch 60
expect_fail "global batch 60, not 128" --resume "$ck" --dtype f64
expect_fail "8-byte parameters" --resume "$ck"
expect_fail "grad-comm" --grad-comm fp8
expect_fail "grad-comm fp64 with --dtype f32" --grad-comm fp64
expect_fail "params must be a count from 1 to 1e12" --dataset synthetic --params 1e20
expect_fail "bucket-mb must be above 0 and at most" --bucket-mb 1e30
expect_fail "steps must be 0 (no limit) or more" --steps -1
expect_fail "fail-rank 7: the ranks are 0 to 1" --fail-at-step 3 --fail-rank 7
expect_fail "fail-rank needs --fail-at-step" --fail-rank 1
expect_fail "staleness must be 0 to 1000" --staleness 100000
expect_fail "staleness 300 is not below the run's 240 steps" --staleness 300
expect_fail "checkpoint '/nonexistent/ck': cannot write in '/nonexistent'" --checkpoint /nonexistent/ck
expect_fail "shard-optimizer on cannot be combined with --clip" --shard-optimizer on --clip 1
expect_fail "shard-optimizer on cannot be combined with --staleness" --shard-optimizer on --staleness 1

echo "== Fashion-MNIST, 4 ranks, default model: at least 85% test accuracy in 5 epochs"
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  out=$("$run" -n 4 --timeout 600 "$train" --dataset fashion-mnist --epochs 5 --log-every 1000 2>&1)
  acc=$(echo "$out" | sed -n 's/.*final: test accuracy \([0-9.]*\)%.*/\1/p')
  if [ -n "$acc" ] && python3 -c "import sys; sys.exit(0 if $acc >= 85 else 1)"; then ok "fashion-mnist: $acc%"
  else bad "fashion-mnist accuracy '${acc}'"; echo "$out" | tail -5; fi
else
  echo "skip: Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)"
fi

echo "trainer runs: $fails failure(s)"
[ $fails -eq 0 ]
