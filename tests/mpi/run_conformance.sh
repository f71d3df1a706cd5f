#!/bin/bash
# conformance.c under one MPI, P = 1, 2, 3, 4, 8 (MPICH's quick tier: 1-4), plain and under
# coral-mpi: every intercepted call must give MPI's own result bit for bit, and the report line
# must show Coral handled calls while the derived type with a user op went to MPI. The program
# checks MPI_X (the interposer) against PMPI_X (MPI itself), so the plain run only checks the
# checker: it runs at P=2.
# 2^20+3 elements of every type: at P=2, one op of each family; `full` runs it at every P with
# every op (MPICH's busy-polling reference needs ~4 min at P=4 on two cores).
# Usage: run_conformance.sh BUILD_DIR ompi|mpich [full]
set -u
build=$1 abi=$2 full=${3:-}
src=$(cd "$(dirname "$0")" && pwd)
source "$src/abi.sh"
mpi_tools "$abi" || { echo "usage: $0 BUILD_DIR ompi|mpich"; exit 2; }
cc=$mpi_cc run=("${mpi_run[@]}")
command -v $cc >/dev/null && [ -f "$build/src/compat/mpi/libcoral_mpi_$abi.so" ] || { echo "no $abi: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$cc -std=c11 -O2 -Wall -Wextra -Werror -o "$work/conformance" "$src/conformance.c" "$src/conformance_more.c" \
  "$src/conformance_types.c" ||
  { echo "FAIL: $cc conformance.c"; exit 1; }
fails=0
small=0,1,7,1000
# full: every op at every count too, with time for it.
ops="" limit=600
[ "$full" = full ] && ops=all-ops limit=3600
ps="1 2 3 4 8"
# Eight busy-polling MPICH ranks on two cores took 134 s over the 0-7 element cases alone: the
# quick tier leaves P=8 to Open MPI (the rank arithmetic is Coral's, the same under both ABIs),
# and `full` runs it.
[ $abi = mpich ] && [ "$full" != full ] && ps="1 2 3 4"
for p in $ps; do
  counts=$small
  [ $p = 2 ] || [ "$full" = full ] && counts=$small,1048579
  modes=coral
  [ $p = 2 ] && modes="plain coral"
  for mode in $modes; do
    pre=()
    [ $mode = coral ] && pre=("$build/src/compat/mpi/coral-mpi")
    start=$(date +%s)
    out=$(CORAL_MPI_REPORT=1 timeout $limit "${run[@]}" $p "${pre[@]}" "$work/conformance" $counts $ops 2>&1)
    rc=$?
    # Anywhere in a line: mpirun forwards the ranks' streams in pieces, so one line can follow
    # another rank's output with no newline between (tests/mpi/run_clients.sh saw it).
    line=$(grep -m1 -o 'conformance:.*' <<<"$out")
    report=$(grep -m1 -o 'coral-mpi: handled [0-9]* collective calls, passed [0-9]* to MPI' <<<"$out")
    echo "$abi P=$p $mode ($(( $(date +%s) - start )) s): ${line:-no summary} ${report:+| $report}"
    if [ $rc -ne 0 ] || ! grep -q 'failures=0' <<<"$line"; then
      echo "FAIL: $abi P=$p $mode: exit status $rc"
      grep -m 10 'FAIL' <<<"$out"
      fails=$((fails + 1))
    fi
    if [ $mode = coral ]; then
      h=$(sed -n 's/.*handled \([0-9]*\) collective calls, passed \([0-9]*\).*/\1 \2/p' <<<"$report")
      read -r handled passed <<<"$h"
      if [ -z "$h" ] || [ "$handled" -eq 0 ] || [ "$passed" -eq 0 ]; then
        echo "FAIL: $abi P=$p: wanted calls handled by Coral and some passed to MPI, got '$report'"
        fails=$((fails + 1))
      fi
    elif [ -n "$report" ]; then
      echo "FAIL: $abi P=$p plain: a report line without the interposer: $report"
      fails=$((fails + 1))
    fi
  done
done
# MPI_Test alone must drive MPI's progress (progress.c): over Open MPI's tcp transport, where a
# large send needs it, an MPI_Test that only looked at Coral left the job hung.
if [ $abi = ompi ]; then
  $cc -std=c11 -O2 -Wall -Werror -o "$work/progress" "$src/progress.c" || { echo "FAIL: $cc progress.c"; exit 1; }
  out=$(timeout 120 "${run[@]}" 2 --mca btl tcp,self "$build/src/compat/mpi/coral-mpi" "$work/progress" 2>&1)
  if grep -q 'progress: ok' <<<"$out"; then echo "$abi progress through MPI_Test: ok"
  else echo "FAIL: $abi progress through MPI_Test: $(tail -3 <<<"$out")"; fails=$((fails + 1)); fi
fi
[ $fails -eq 0 ] && echo "conformance $abi: all passed" || echo "conformance $abi: $fails failed"
exit $((fails > 0))
