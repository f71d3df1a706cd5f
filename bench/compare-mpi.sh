#!/bin/bash
# Coral vs Open MPI vs MPICH all-reduce (float32 sum, out of place) on this host, for P in {2,4}:
# runs interleaved (A B C A B C ...) and repeated, then prints a markdown table of medians and
# the ratio Coral / best MPI. Usage: bench/compare-mpi.sh [reps] [sizes...]   (needs a build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
reps=${1:-3}
shift || true
sizes=("$@")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
libs=(coral)
if command -v mpicc.openmpi >/dev/null; then
  mpicc.openmpi -O2 -o "$out/ar_ompi" bench/peers/allreduce_mpi.c && libs+=(ompi)
fi
if command -v mpicc.mpich >/dev/null; then
  mpicc.mpich -O2 -o "$out/ar_mpich" bench/peers/allreduce_mpi.c && libs+=(mpich)
fi
run_one() {
  local lib=$1 p=$2
  case $lib in
    coral) "$build/tools/coral-run/coral-run" -n "$p" --no-prefix "$build/bench/coral-allreduce-bench" "${sizes[@]}" ;;
    ompi) BENCH_LIB=ompi OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
          mpirun.openmpi --oversubscribe --bind-to none -x BENCH_LIB -np "$p" "$out/ar_ompi" "${sizes[@]}" ;;
    mpich) BENCH_LIB=mpich mpirun.mpich -np "$p" "$out/ar_mpich" "${sizes[@]}" ;;
  esac
}
for ((i = 0; i < reps; i++)); do
  for p in 2 4; do
    for lib in "${libs[@]}"; do
      run_one "$lib" "$p" >> "$out/results.txt" 2>/dev/null || echo "warning: $lib P=$p failed" >&2
    done
  done
done
python3 - "$out/results.txt" "$reps" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) P=(\d+) bytes=(\d+) time_us=([\d.]+) algbw=([\d.]+) busbw=([\d.]+)", line)
    if m:
        lib, p, b, t, _, bw = m.groups()
        rows.setdefault((int(p), int(b)), {}).setdefault(lib, []).append((float(t), float(bw)))
def human(b):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k: return f"{b // k} {unit}"
    return f"{b} B"
libs = sorted({l for v in rows.values() for l in v}, key=lambda l: (l != "coral", l))
print(f"medians of {sys.argv[2]} interleaved runs; busbw in GB/s = algbw * 2(P-1)/P; time in us\n")
print("| P | size | " + " | ".join(f"{l} busbw | {l} time" for l in libs) + " | coral/best MPI busbw | coral/best MPI time |")
print("|---" * (2 + 2 * len(libs) + 2) + "|")
for (p, b) in sorted(rows):
    med = {l: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for l, v in rows[(p, b)].items()}
    cells = [f"{med[l][1]:.3f} | {med[l][0]:.2f}" if l in med else "- | -" for l in libs]
    peers = [med[l] for l in med if l != "coral"]
    ratio_bw = ratio_t = "-"
    if "coral" in med and peers:
        best_bw = max(x[1] for x in peers); best_t = min(x[0] for x in peers)
        ratio_bw = f"{med['coral'][1] / best_bw:.2f}x" if best_bw > 0 else "-"
        ratio_t = f"{med['coral'][0] / best_t:.2f}x"
    print(f"| {p} | {human(b)} | " + " | ".join(cells) + f" | {ratio_bw} | {ratio_t} |")
PY
