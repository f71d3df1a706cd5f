#!/bin/bash
# A rank of an MPI job under coral-mpi dies or stops: the job must end within Coral's timeout,
# and (where the launcher does not kill the others first) with Coral's message naming the cause.
# Usage: test_failure.sh BUILD_DIR
set -u
build=$1
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
ran=0
source "$src/abi.sh"
for abi in ompi mpich; do
  mpi_tools $abi
  cc=$mpi_cc run=("${mpi_run[@]}" 4)
  [ -f "$build/src/compat/mpi/libcoral_mpi_$abi.so" ] && command -v $cc >/dev/null || continue
  $cc -O1 -o "$work/failure_$abi" "$src/failure.c" || { echo "FAIL: $cc failure.c"; exit 1; }
  # MPI_ERRORS_RETURN: the failing call returns MPI_ERR_OTHER and MPI_Error_string gives Coral's words.
  $cc -O1 -o "$work/errors_$abi" "$src/errors.c" || { echo "FAIL: $cc errors.c"; exit 1; }
  ran=$((ran + 1))
  out=$(timeout 60 "${run[@]:0:${#run[@]}-1}" 2 "$build/src/compat/mpi/coral-mpi" "$work/errors_$abi" 2>/dev/null)
  if [ "$(grep -c 'other=1: MPI_Allreduce on Coral failed: invalid usage: .*different counts' <<<"$out")" != 2 ]; then
    echo "FAIL: $abi MPI_ERRORS_RETURN: wanted MPI_ERR_OTHER and Coral's message on both ranks, got:"
    echo "$out"
    fails=$((fails + 1))
  else
    echo "$abi MPI_ERRORS_RETURN: $(head -1 <<<"$out")"
  fi
  for how in kill stop; do
    ran=$((ran + 1))
    start=$(date +%s%N)
    CORAL_MPI_REPORT=1 CORAL_TIMEOUT=3 timeout 60 "${run[@]}" "$build/src/compat/mpi/coral-mpi" "$work/failure_$abi" $how \
      >"$work/out" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
      echo "FAIL: $abi $how: exit status $rc after ${ms} ms (expected the job to fail, not to pass or hang)"
      fails=$((fails + 1))
      continue
    fi
    if grep -q 'all-reduces done' "$work/out"; then
      echo "FAIL: $abi $how: a rank finished its all-reduces without rank 2"
      fails=$((fails + 1))
    fi
    # A stopped rank is noticed by nobody but Coral: the others must say why they fail.
    # A killed one may be reaped by the launcher first (Hydra kills the job at once).
    msg=$(grep -m1 'coral-mpi: rank [0-9]*: MPI_Allreduce on Coral failed' "$work/out")
    if [ -z "$msg" ] && { [ $how = stop ] || [ $abi = ompi ]; }; then
      echo "FAIL: $abi $how: no rank printed Coral's failure message; output:"
      head -20 "$work/out"
      fails=$((fails + 1))
    elif [ $how = stop ] && ! echo "$msg" | grep -q -i 'timed out\|timeout'; then
      echo "FAIL: $abi $how: the message does not say it timed out: $msg"
      fails=$((fails + 1))
    elif [ $how = kill ] && [ $abi = ompi ] && ! echo "$msg" | grep -q 'rank 2'; then
      echo "FAIL: $abi $how: the message does not name rank 2: $msg"
      fails=$((fails + 1))
    fi
    # The failing rank aborts the job, so its counts come with its message (MPICH's launcher may
    # drop a dying rank's last lines, as it drops the error line after a kill).
    if [ $how = stop ] && [ $abi = ompi ] && ! grep -q 'passed [0-9]* to MPI (rank [0-9]*, at MPI_Abort)' "$work/out"; then
      echo "FAIL: $abi $how: no CORAL_MPI_REPORT line from the rank that aborted"
      fails=$((fails + 1))
    fi
    echo "$abi $how: ended in ${ms} ms (status $rc): ${msg:-(the launcher ended the job first)}"
  done
done
[ $ran -eq 0 ] && { echo "no MPI interposer built: skipped"; exit 77; }
[ $fails -eq 0 ] && echo "failure: all passed" || echo "failure: $fails failed"
exit $((fails > 0))
