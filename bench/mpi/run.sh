#!/bin/bash
# MPI_Allreduce with and without the interposer, same binary, same run, interleaved, P=2 and 4:
# Open MPI, Open MPI + coral-mpi, MPICH, MPICH + coral-mpi, and Coral's own API (coral-bench,
# out-of-place time, average over ranks, as osu_allreduce reports). Then, per MPI, overhead.c:
# the interposer against coralAllReduce in one process, paired rounds (separate runs drift more
# than the interposer costs). Writes raw.csv and overhead.csv (every run) and results.md
# (medians, ratios) under the output folder.
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
cfgs=() abis=()
if command -v mpicc.openmpi >/dev/null && [ -f "$build/src/compat/mpi/libcoral_mpi_ompi.so" ]; then
  mpicc.openmpi -O2 -o "$tmp/osu_ompi" bench/mpi/osu_allreduce.c && cfgs+=(ompi ompi+coral)
  mpicc.openmpi -O2 -Iinclude -o "$tmp/overhead_ompi" bench/mpi/overhead.c -L"$build" -lcoral \
    -Wl,-rpath,"$PWD/$build" && abis+=(ompi)
fi
if command -v mpicc.mpich >/dev/null && [ -f "$build/src/compat/mpi/libcoral_mpi_mpich.so" ]; then
  mpicc.mpich -O2 -o "$tmp/osu_mpich" bench/mpi/osu_allreduce.c && cfgs+=(mpich mpich+coral)
  mpicc.mpich -O2 -Iinclude -o "$tmp/overhead_mpich" bench/mpi/overhead.c -L"$build" -lcoral \
    -Wl,-rpath,"$PWD/$build" && abis+=(mpich)
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
      # up to 1 MiB, 4 and 16 MiB, and 64 MiB x4 up to the largest, each with enough calls to time.
      for range in "-b 8 -e 8 -w 100 -n 5000" "-b 16 -e 1M -f 4 -w 20 -n 500" "-b 4M -e 16M -f 4 -w 5 -n 50" \
        "-b 64M -e $max -f 4 -w 2 -n 10"; do
        # shellcheck disable=SC2086
        "$build/tools/coral-run/coral-run" -n "$p" --bind-to core --no-prefix "$build/bench/coral-bench" -t allreduce \
          -d float -o sum -a 1 --csv $range | awk -F, '$1 ~ /^[0-9]+$/ {print $1, $6}'
      done ;;
  esac | awk '$1 ~ /^[0-9]+$/ {print $1, $2}'
}
# One overhead.c run -> lines "abi,P,rep,bytes,interposer_us,direct_us,ratio".
run_overhead() {
  local abi=$1 p=$2 r=$3 launch
  case $abi in
    ompi) launch=("${ompi[@]}" "$p") ;;
    mpich) launch=(mpirun.mpich -bind-to core -np "$p") ;;
  esac
  "${launch[@]}" "$wrap" "$tmp/overhead_$abi" "${sizes[@]}" |
    awk -v a="$abi" -v p="$p" -v r="$r" '$1 ~ /^[0-9]+$/ {print a "," p "," r "," $1 "," $2 "," $3 "," $4}'
}
echo "config,P,rep,bytes,avg_us" >"$out/raw.csv"
echo "abi,P,rep,bytes,interposer_us,direct_us,ratio" >"$out/overhead.csv"
for ((r = 1; r <= reps; r++)); do
  for p in 2 4; do
    for cfg in "${cfgs[@]}"; do
      if ! run_one "$cfg" "$p" >"$tmp/one" 2>"$tmp/err"; then
        echo "warning: $cfg P=$p failed: $(tail -2 "$tmp/err")" >&2
      fi
      awk -v c="$cfg" -v p="$p" -v r="$r" '{print c "," p "," r "," $1 "," $2}' "$tmp/one" >>"$out/raw.csv"
    done
    for abi in "${abis[@]}"; do
      run_overhead "$abi" "$p" "$r" >>"$out/overhead.csv" 2>"$tmp/err" ||
        echo "warning: overhead $abi P=$p failed: $(tail -2 "$tmp/err")" >&2
    done
  done
done
{ echo "<!-- bench/mpi/run.sh --reps $reps, $(date -u +%F), $(nproc) cores; $(mpirun.openmpi --version 2>/dev/null | head -1) -->"
  python3 bench/mpi/summarize.py "$out/raw.csv" "$out/overhead.csv"; } | tee "$out/results.md"
