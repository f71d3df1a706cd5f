#!/bin/bash
# coral-mpi: picks the right interposer, says clearly when it cannot, and LD_PRELOAD works too.
# Usage: test_launcher.sh BUILD_DIR
set -u
build=$1
src=$(cd "$(dirname "$0")" && pwd)
cm="$build/src/compat/mpi/coral-mpi"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
check() {  # check NAME EXPECTED-REGEX COMMAND...: the output must match
  local name=$1 want=$2
  shift 2
  local out
  out=$(timeout 120 "$@" 2>&1)
  if echo "$out" | grep -q -E -- "$want"; then
    echo "ok: $name"
  else
    echo "FAIL: $name: wanted /$want/, got:"
    echo "$out" | head -15
    fails=$((fails + 1))
  fi
}
[ -x "$cm" ] || { echo "coral-mpi not built: skipped"; exit 77; }
source "$src/abi.sh"
mpi_tools ompi && ompi=("${mpi_run[@]}" 3)
mpi_tools mpich && mpich=("${mpi_run[@]}" 3)
have_ompi=0 have_mpich=0
[ -f "$build/src/compat/mpi/libcoral_mpi_ompi.so" ] && mpicc.openmpi -o "$work/app_ompi" "$src/launcher.c" && have_ompi=1
[ -f "$build/src/compat/mpi/libcoral_mpi_mpich.so" ] && mpicc.mpich -o "$work/app_mpich" "$src/launcher.c" && have_mpich=1
[ $have_ompi = 1 ] && mpicc.openmpi -o "$work/pass_ompi" "$src/passthrough.c"
[ $have_mpich = 1 ] && mpicc.mpich -o "$work/pass_mpich" "$src/passthrough.c"
# What each library exports: the MPI entry points (Fortran's too for Open MPI), nothing else.
for abi in ompi mpich; do
  lib="$build/src/compat/mpi/libcoral_mpi_$abi.so"
  [ -f "$lib" ] || continue
  syms=$(nm -D --defined-only "$lib" | awk '{print $3}')
  want="MPI_Allreduce MPI_Ialltoall MPI_Waitall MPI_Finalize MPI_Error_string"
  [ $abi = ompi ] && want="$want mpi_allreduce_ mpi_allreduce__ mpi_allreduce MPI_ALLREDUCE mpi_waitall_ mpi_finalize_
    mpi_ireduce_scatter_ mpi_igather_ mpi_iscatter_ mpi_iallgatherv_ MPI_IALLTOALLV"
  for s in $want; do
    grep -qx "$s" <<<"$syms" || { echo "FAIL: libcoral_mpi_$abi.so does not export $s"; fails=$((fails + 1)); }
  done
  other=$(grep -v -E '^(MPI_|mpi_)' <<<"$syms" | head -3)
  [ -z "$other" ] || { echo "FAIL: libcoral_mpi_$abi.so exports $other"; fails=$((fails + 1)); }
done
export CORAL_MPI_REPORT=1
if [ $have_ompi = 1 ]; then
  check "ompi: coral-mpi handles all four" 'handled 4 collective calls, passed 0 to MPI' \
    "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: results" 'launcher: P=3 wrong=0' "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: LD_PRELOAD by hand" 'handled 4 collective calls' \
    "${ompi[@]}" -x LD_PRELOAD="$build/src/compat/mpi/libcoral_mpi_ompi.so" "$work/app_ompi"
  check "ompi: CORAL_MPI=0 passes all" 'handled 0 collective calls, passed 4 to MPI' \
    env CORAL_MPI=0 "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: CORAL_MPI_OPS=bcast,barrier" 'handled 2 collective calls, passed 2 to MPI' \
    env CORAL_MPI_OPS=bcast,barrier "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: CORAL_MPI_OPS in any case" 'handled 2 collective calls, passed 2 to MPI' \
    env CORAL_MPI_OPS=Bcast,BARRIER "${ompi[@]}" "$cm" "$work/app_ompi"
  # Coral refuses communicators while a knob is invalid: the interposer says so and uses MPI.
  check "ompi: a bad CORAL_MPI_OPS word is named" "CORAL_MPI_OPS='bcast,bcats': 'bcats' is not one of" \
    env CORAL_MPI_OPS=bcast,bcats "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: a bad CORAL_MPI_OPS sends all to MPI" 'handled 0 collective calls, passed 4 to MPI' \
    env CORAL_MPI_OPS=bcast,bcats "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: a bad CORAL_MPI is named" "CORAL_MPI='2' is not 0 or 1; every call goes to MPI" \
    env CORAL_MPI=2 "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: a bad Coral knob is named" "no Coral communicator .*CORAL_ALGO" \
    env -u CORAL_MPI_REPORT CORAL_ALGO=fastest "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: reasons at INFO" 'passed 2 to MPI: not in CORAL_MPI_OPS' \
    env CORAL_MPI_OPS=bcast,barrier CORAL_DEBUG=INFO "${ompi[@]}" "$cm" "$work/app_ompi"
  check "ompi: silent without the report" '^launcher: P=3 wrong=0$' \
    env -u CORAL_MPI_REPORT "${ompi[@]}" "$cm" "$work/app_ompi"
  out=$(env -u CORAL_MPI_REPORT timeout 120 "${ompi[@]}" "$cm" "$work/app_ompi" 2>&1)
  if [ "$out" != "launcher: P=3 wrong=0" ]; then
    echo "FAIL: ompi: coral-mpi printed something of its own: $out"
    fails=$((fails + 1))
  fi
fi
if [ $have_mpich = 1 ]; then
  check "mpich: coral-mpi handles all four" 'handled 4 collective calls, passed 0 to MPI' \
    "${mpich[@]}" "$cm" "$work/app_mpich"
  check "mpich: results" 'launcher: P=3 wrong=0' "${mpich[@]}" "$cm" "$work/app_mpich"
fi
# A derived type and a user op each reach MPI, counted by reason; the plain call is Coral's.
for abi in ompi mpich; do
  [ -x "$work/pass_$abi" ] || continue
  if [ $abi = ompi ]; then launch=("${ompi[@]}"); else launch=("${mpich[@]}"); fi
  check "$abi: derived type and user op pass to MPI" 'handled 1 collective calls, passed 2 to MPI' \
    "${launch[@]}" "$cm" "$work/pass_$abi"
  check "$abi: pass-through results" 'passthrough: P=3 wrong=0' "${launch[@]}" "$cm" "$work/pass_$abi"
  out=$(CORAL_DEBUG=INFO timeout 120 "${launch[@]}" "$cm" "$work/pass_$abi" 2>&1)
  for why in 'passed 1 to MPI: datatype' 'passed 1 to MPI: op'; do
    grep -q "$why" <<<"$out" || { echo "FAIL: $abi: no '$why' at INFO"; fails=$((fails + 1)); }
  done
done
if [ $have_ompi = 1 ] && [ $have_mpich = 1 ]; then
  check "an Open MPI program under MPICH's mpirun" "links ompi's MPI but runs under mpich's launcher" \
    "${mpich[@]}" "$cm" "$work/app_ompi"
fi
check "no MPI in sight" 'cannot tell which MPI runs' env -u OMPI_COMM_WORLD_SIZE "$cm" /bin/true
printf 'const char* s = "PMPI_Allreduce";\nint main(void) { return s[0] == 0; }\n' > "$work/static.c"
cc -o "$work/static_app" "$work/static.c"
check "a statically linked MPI" 'MPI linked in statically' "$cm" "$work/static_app"
check "a bad CORAL_MPI_ABI" "CORAL_MPI_ABI='mvapich' is not one of auto, ompi, mpich" \
  env CORAL_MPI_ABI=mvapich "$cm" /bin/true
check "a missing program" 'no-such-program: no such program' "$cm" no-such-program
[ $fails -eq 0 ] && echo "launcher: all passed" || echo "launcher: $fails failed"
exit $((fails > 0))
