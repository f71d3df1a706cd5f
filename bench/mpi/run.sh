#!/bin/bash
# MPI_Allreduce with and without the interposer, same binary, same run, interleaved, P=2 and 4:
# Open MPI, Open MPI + coral-mpi, MPICH, MPICH + coral-mpi, and Coral's own API (coral-bench,
# out-of-place time, average over ranks, as osu_allreduce reports). Writes raw.csv (every run)
# and results.md (medians, ratios) under the output folder.
#   bench/mpi/run.sh [--quick] [--reps N] [--out DIR]          (needs a build/)
# --quick: 1 repetition, sizes 8 B .. 64 MiB; default: 3 repetitions, 8 B .. 256 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
reps=3 out=bench/mpi/results max=268435456
while [ $# -gt 0 ]; do
  case $1 in
    --quick) reps=1 max=67108864 ;;
    --reps) reps=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--quick] [--reps N] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
sizes=(8)
for ((s = 16; s <= max; s *= 4)); do sizes+=($s); done
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wrap=$build/src/compat/mpi/coral-mpi
cfgs=()
if command -v mpicc.openmpi >/dev/null && [ -f "$build/src/compat/mpi/libcoral_mpi_ompi.so" ]; then
  mpicc.openmpi -O2 -o "$tmp/osu_ompi" bench/mpi/osu_allreduce.c && cfgs+=(ompi ompi+coral)
fi
if command -v mpicc.mpich >/dev/null && [ -f "$build/src/compat/mpi/libcoral_mpi_mpich.so" ]; then
  mpicc.mpich -O2 -o "$tmp/osu_mpich" bench/mpi/osu_allreduce.c && cfgs+=(mpich mpich+coral)
fi
cfgs+=(coral-bench)
echo "configurations: ${cfgs[*]}; sizes: ${sizes[*]}; repetitions: $reps" >&2
# Every configuration pins its ranks to CPUs round-robin, also when there are more ranks than
# CPUs (P=4 on 2): unpinned, the kernel's placement moved single sizes by up to 2x between
# runs of the same configuration.
ompi=(mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to core:overload-allowed -np)
# One run -> lines "bytes avg_us" on stdout.
run_one() {
  local cfg=$1 p=$2
  case $cfg in
    ompi) "${ompi[@]}" "$p" "$tmp/osu_ompi" "${sizes[@]}" ;;
    ompi+coral) "${ompi[@]}" "$p" "$wrap" "$tmp/osu_ompi" "${sizes[@]}" ;;
    mpich) mpirun.mpich -bind-to core -np "$p" "$tmp/osu_mpich" "${sizes[@]}" ;;
    mpich+coral) mpirun.mpich -bind-to core -np "$p" "$wrap" "$tmp/osu_mpich" "${sizes[@]}" ;;
    coral-bench)
      # Its sizes are a geometric series and its iteration count fixed: 8 B alone, then 16 B x4
      # up to 1 MiB and 4 MiB x4 up to the largest, each with enough calls to time.
      for range in "-b 8 -e 8 -w 100 -n 5000" "-b 16 -e 1M -f 4 -w 20 -n 500" "-b 4M -e $max -f 4 -w 3 -n 10"; do
        # shellcheck disable=SC2086
        "$build/tools/coral-run/coral-run" -n "$p" --bind-to core --no-prefix "$build/bench/coral-bench" -t allreduce \
          -d float -o sum -a 1 --csv $range | awk -F, '$1 ~ /^[0-9]+$/ {print $1, $6}'
      done ;;
  esac | awk '$1 ~ /^[0-9]+$/ {print $1, $2}'
}
echo "config,P,rep,bytes,avg_us" >"$out/raw.csv"
for ((r = 1; r <= reps; r++)); do
  for p in 2 4; do
    for cfg in "${cfgs[@]}"; do
      if ! run_one "$cfg" "$p" >"$tmp/one" 2>"$tmp/err"; then
        echo "warning: $cfg P=$p failed: $(tail -2 "$tmp/err")" >&2
      fi
      awk -v c="$cfg" -v p="$p" -v r="$r" '{print c "," p "," r "," $1 "," $2}' "$tmp/one" >>"$out/raw.csv"
    done
  done
done
{ echo "<!-- bench/mpi/run.sh --reps $reps, $(date -u +%F), $(nproc) cores; $(mpirun.openmpi --version 2>/dev/null | head -1) -->"
  python3 bench/mpi/summarize.py "$out/raw.csv"; } | tee "$out/results.md"
