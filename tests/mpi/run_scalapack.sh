#!/bin/bash
# Debian's ScaLAPACK test programs (package scalapack-mpi-test: built once against Open MPI and
# once against MPICH), unmodified, plain and under coral-mpi. Each program checks its own
# results: the BLACS testers (point-to-point, broadcasts, combines over every grid scope), the
# PBLAS testers and the ScaLAPACK drivers (factorizations, eigensolvers, SVD, least squares).
# Under coral-mpi each must pass the very checks it passes without it, and Coral must have
# handled some of its collective calls.
# Usage: run_scalapack.sh BUILD_DIR. SCALAPACK_TESTS: the programs to run (default below: one
# per family; "all" runs every one Debian ships, bar four below); SCALAPACK_ABIS: ompi (default)
# and/or mpich. MPICH's build is left out by default: with 4 ranks on this machine's 2 cores its
# busy-polling makes each program take minutes (the BLACS tester 90-114 s plainly).
set -u
build=$(cd "$1" && pwd)
source "$(dirname "$0")/abi.sh"
wrap=$build/src/compat/mpi/coral-mpi
tests_root=/usr/lib/x86_64-linux-gnu/scalapack
abis=${SCALAPACK_ABIS:-ompi}
# Left out, also of "all":
# - xcheevr and xzheevr. Under Open MPI both fail 132 of their 137 checks ("IL, IU, VL or VU
#   altered by PCHEEVR") with any preloaded MPI_Allreduce that takes a stack frame, even one that
#   only calls PMPI_Allreduce; built as a bare jump to PMPI_Allreduce, the same pass-through
#   passes. So the program reads stack memory it never wrote (its real-type twins pass).
# - xsllt and xdllt, which hang under Open MPI alone in most runs (3 of 4 at 30 s, passing in 1 s
#   otherwise), as often under coral-mpi: the ranks end up in different collectives (in PDPORFS,
#   two in PDPOTRS's argument check, one in PDLACON's sum, one in its broadcast).
list=${SCALAPACK_TESTS:-xCbtest xFbtest dpb1tst dpb2tst dpb3tst zpb3tst xdlu xzlu xddblu xddtlu xdgblu
  xdpbllt xdptllt xdinv xdqr xzqr xdls xdbrd xdhrd xdtrd xdsvd xdsep xzsep xdgsep xdnep xzevc xdsyevr
  xdhseqr}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0 ran=0 uncompared=0

# What a program's own checks say: how many lines passed, and each summary count.
# BLACS's repeatable-sum test is left out: it runs only when a sum without the repeatability
# flag differs from run to run, and Coral's reduction order never depends on arrival, so under
# coral-mpi the tester reports it skipped.
verdict() {
  grep -v 'REPEATABLE SUM' "$1" | grep -oE 'PASSED|^Passed|[0-9]+ tests? (completed and passed|skipped)[a-z ]*|[0-9]+ TESTS; +[0-9]+ PASSED, +[0-9]+ SKIPPED|^ *\| +[A-Z0-9]+( +[0-9]+){4}' |
    tr -s ' ' | sort | uniq -c
}
failures() {
  grep -E 'FAILED|^Failed|[1-9][0-9]* tests? completed and failed|^ *\| +[A-Z0-9]+ +[0-9]+ +[0-9]+ +[1-9]' "$1" |
    grep -vE ' 0 FAILED|SUBROUTINE +TOTAL TESTS +PASSED +FAILED'
}

for abi in $abis; do
  mpi_tools "$abi" || { echo "SCALAPACK_ABIS: '$abi' is not ompi or mpich" >&2; exit 2; }
  launch=${mpi_run[*]} dir=$tests_root/openmpi-tests
  [ $abi = mpich ] && dir=$tests_root/mpich-tests
  [ -d "$dir" ] && [ -f "$build/src/compat/mpi/libcoral_mpi_$abi.so" ] && command -v ${launch%% *} >/dev/null || {
    echo "scalapack $abi: no $dir or no coral-mpi for it: not run"
    continue
  }
  progs=$list
  [ "$list" = all ] && progs=$(cd "$dir" && ls x* PBLAS/*tst 2>/dev/null | xargs -n1 basename | grep -vxE 'xcheevr|xzheevr|xsllt|xdllt')
  run_dir=$work/$abi
  mkdir -p "$run_dir"
  cp /usr/share/scalapack/*.dat /usr/share/scalapack/BLACS/*.dat /usr/share/scalapack/PBLAS/*.dat "$run_dir"/
  for prog in $progs; do
    exe=$(ls "$dir/$prog" "$dir/BLACS/$prog" "$dir/PBLAS/$prog" 2>/dev/null | head -1)
    [ -n "$exe" ] || { echo "FAIL: scalapack $abi: no program $prog in $dir"; fails=$((fails + 1)); continue; }
    ran=$((ran + 1))
    line="scalapack $abi $prog:"
    for mode in plain coral; do
      pre=()
      [ $mode = coral ] && pre=("$wrap")
      start=$(date +%s)
      (cd "$run_dir" && CORAL_MPI_REPORT=1 timeout 120 $launch 4 "${pre[@]}" "$exe" >"$run_dir/$prog.$mode" 2>&1)
      rc=$?
      # The BLACS testers end by testing BLACS_ABORT: MPI_Abort is their normal end.
      [[ $prog == x?btest ]] && grep -q 'final auxiliary test is for BLACS_ABORT' "$run_dir/$prog.$mode" && [ $rc -ne 124 ] && rc=0
      line+=" $mode $(( $(date +%s) - start )) s (exit $rc)"
      verdict "$run_dir/$prog.$mode" >"$run_dir/$prog.$mode.checks"
      bad=1
      [ $rc -eq 0 ] && [ -z "$(failures "$run_dir/$prog.$mode")" ] && [ -s "$run_dir/$prog.$mode.checks" ] && bad=0
      if [ $bad = 1 ] && [ $mode = plain ]; then  # nothing to compare with, and not Coral's doing
        echo "$line: fails without coral-mpi: not compared"
        uncompared=$((uncompared + 1))
        continue 2
      fi
      if [ $bad = 1 ]; then
        echo "FAIL: scalapack $abi $prog $mode: exit status $rc, its checks:"
        { failures "$run_dir/$prog.$mode"; grep -v '^\s*$' "$run_dir/$prog.$mode" | tail -8; } | head -20
        fails=$((fails + 1))
        continue 2
      fi
    done
    handled=$(grep -m1 -o 'coral-mpi: handled [0-9]*' "$run_dir/$prog.coral" | grep -o '[0-9]*$')
    line+=", $(awk '{n += $1} END {print n}' "$run_dir/$prog.plain.checks") checks; coral-mpi handled ${handled:-no} calls"
    echo "$line"
    if ! diff "$run_dir/$prog.plain.checks" "$run_dir/$prog.coral.checks" >"$run_dir/diff"; then
      echo "FAIL: scalapack $abi $prog: its checks differ under coral-mpi (< plain, > coral):"
      head -10 "$run_dir/diff"
      fails=$((fails + 1))
    elif [ -z "$handled" ] && [ $abi = mpich ] && [[ $prog == x?btest ]]; then
      # MPICH's launcher can drop what the aborting rank wrote last (seen one run in two).
      echo "scalapack $abi $prog: the report printed at MPI_Abort was lost by the launcher: not checked"
    elif [ "${handled:-0}" -eq 0 ]; then
      echo "FAIL: scalapack $abi $prog: Coral handled none of its collective calls"
      fails=$((fails + 1))
    fi
  done
done
[ $ran -gt 0 ] || { echo "ScaLAPACK's tests are not installed (scalapack-mpi-test): skipped"; exit 77; }
# A program that fails plainly is not compared; most failing so would leave nothing tested.
if [ $((uncompared * 2)) -gt $ran ]; then
  echo "FAIL: $uncompared of $ran ScaLAPACK programs failed without coral-mpi"
  fails=$((fails + 1))
fi
[ $fails -eq 0 ] && echo "ScaLAPACK tests: $((ran - uncompared)) programs pass alike plain and under coral-mpi ($uncompared failing plainly, not compared)" ||
  echo "ScaLAPACK tests: $fails failures in $ran programs"
exit $((fails > 0))
