#!/bin/bash
# Recovery time of coral-train --elastic: 4 ranks on Fashion-MNIST lose ranks at a chosen step
# (--fail-at-step, in epoch 2 of 3), and the survivors report how long the shrink, the replica
# agreement and the check took. Also the wall time of the whole run against an uninterrupted one.
# Usage: bench/trainer/elastic.sh [--build DIR] [--reps R] [--ranks P] [--dataset D]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build reps=3 ranks=4 dataset=fashion-mnist
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --dataset) dataset=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
run=$build/tools/coral-run/coral-run
train=$build/examples/trainer/coral-train
args=(--dataset "$dataset" --epochs 3 --log-every 100000)
# The first step of epoch 2, plus a few.
spe=$("$run" -n 1 --no-prefix "$train" "${args[@]}" --steps 1 | sed -n 's/^epoch 1\/3 step [0-9]*\/\([0-9]*\).*/\1/p')
at=$(( ${spe:-469} + 10 ))
printf '%-36s %10s %12s %10s\n' case "wall s" "recovery s" "accuracy"
for r in $(seq "$reps"); do
  for case in "none" "--fail-rank $((ranks - 1))" "--fail-rank 0" "--fail-rank 1 --fail-rank 2"; do
    extra=()
    [ "$case" != none ] && extra=(--elastic --fail-at-step "$at" $case)
    t0=$(date +%s.%N)
    out=$("$run" -n "$ranks" --keep-going --no-prefix "$train" "${args[@]}" "${extra[@]}" 2>&1)
    t1=$(date +%s.%N)
    rec=$(sed -n 's/.*recovered in \([0-9.]*\) s.*/\1/p' <<<"$out" | head -1)
    acc=$(sed -n 's/^final: test accuracy \([0-9.]*\)%.*/\1/p' <<<"$out")
    printf '%-36s %10.2f %12s %10s\n' "rep $r: $case" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "${rec:--}" "${acc:-?}%"
  done
done
