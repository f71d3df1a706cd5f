#!/bin/bash
# The sanitizer pass of CI: builds build-asan (ASan + UBSan) and runs the unit, thread-rank and
# multi-process tests there; then, with --tsan (or CORAL_CI_TSAN=1), build-tsan (ThreadSanitizer)
# for the thread-rank tests that drive the progress engine; with --compat, build-asan-compat for
# the NCCL and MPI drop-in layers (not in CI: about 15 minutes more). Prints
# "sanitizers: N passed, N failed, N skipped" and fails when any test does.
# Usage: scripts/run-sanitizers.sh [--tsan] [--compat]
set -uo pipefail
cd "$(dirname "$0")/.."
tsan=${CORAL_CI_TSAN:-0} compat=0
for a in "$@"; do
  case $a in
    --tsan) tsan=1 ;;
    --compat) compat=1 ;;
    *) echo "run-sanitizers.sh: unknown option '$a' (--tsan, --compat)" >&2; exit 2 ;;
  esac
done
# What the sanitizers add to: the library, its transports and launcher. The trainer, benchmarks
# and drop-in layers have their own suites in the main build.
# -O1 with line tables only: ASan's stacks keep file:line, and the build takes about half the
# time of -O2 -g on two cores.
lean=(-Dbuildtype=plain -Doptimization=1 -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1 -Db_lundef=false
      -Dtrainer=disabled -Dbench=false -Dtorch=disabled -Dnccl=disabled -Dmpi=disabled -Dcuda=disabled)
unit=(kernels schedules schedules_v schedules_order tuner tuner_coll config store api_args api_args_more gpu_host topology
      topology_loaders topology_comm
      fuzz_corpus fuzz_corpus_store_wire fuzz_corpus_tcp_frame fuzz_corpus_ibverbs_record
      fuzz_corpus_cuda_ipc_record fuzz_corpus_unique_id fuzz_corpus_algo_string)
threads=(threads groups split revoke cancel_waits failure shrink registered misuse)
procs=(transport_conformance transport_tcp transport_shm coral_run_collectives coral_run_behaviour flight_recorder
       gpu_emulated)
# Leaks fail the run; UBSan stops at its first report so that it cannot scroll past unseen.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# The thread-rank and multi-process tests run a share of their cases (tests/mp/run_collectives.sh,
# test_threads, test_schedules, run_mp_device.sh): CI has 90 minutes, and the main build still
# runs every case.
export CORAL_TEST_QUICK=1
# These builds keep line tables (-g1): without this ccache would key their objects by the
# clone's folder, and CI's fresh clone would find none of the ones this machine built before.
export CCACHE_NOHASHDIR=1
passed=0 failed=0 skipped=0
run_in() {  # [PREFIX=cmd] run_in BUILD_DIR TEST...
  local dir=$1
  shift
  ${PREFIX:-} meson test -C "$dir" --print-errorlogs --num-processes 1 "$@"
  read -r p f s < <(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
n = {"p": 0, "f": 0, "s": 0}
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    n["p" if r in ("OK", "EXPECTEDFAIL") else "s" if r == "SKIP" else "f"] += 1
print(n["p"], n["f"], n["s"])
PY
)
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined "${lean[@]}" >/dev/null || exit 1
ninja -C build-asan || exit 1
run_in build-asan "${unit[@]}" "${threads[@]}" "${procs[@]}"
if [ "$tsan" = 1 ]; then
  [ -f build-tsan/build.ninja ] || meson setup build-tsan -Db_sanitize=thread "${lean[@]}" >/dev/null || exit 1
  ninja -C build-tsan || exit 1
  # TSan needs the address layout it was built for: no ASLR.
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 PREFIX="setarch $(uname -m) -R" \
    run_in build-tsan store groups split revoke cancel_waits failure shrink registered gpu_emulated
fi
if [ "$compat" = 1 ]; then
  lean_compat=("${lean[@]/#-Dnccl=disabled/-Dnccl=auto}")
  lean_compat=("${lean_compat[@]/#-Dmpi=disabled/-Dmpi=auto}")
  [ -f build-asan-compat/build.ninja ] ||
    meson setup build-asan-compat -Db_sanitize=address,undefined "${lean_compat[@]}" >/dev/null || exit 1
  ninja -C build-asan-compat || exit 1
  # The NCCL shim's suite is a program built here, instrumented like the library.
  [ -f build-asan-compat/src/compat/nccl/libnccl.so.2 ] && run_in build-asan-compat nccl_suite nccl_exports
  # coral-mpi runs inside MPI programs built without the sanitizers, so their runtimes are
  # preloaded ahead of it. Leaks stay off: MPI's own allocations outlive MPI_Finalize. LAMMPS is
  # left out: under the preloaded ASan runtime its exit hangs in libp11-kit's destructor, on a
  # glibc locale lock already bad when MPI_Init is entered (only constructors have run).
  if [ -f build-asan-compat/src/compat/mpi/libcoral_mpi_ompi.so ]; then
    runtimes="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
    for t in "run_conformance.sh ompi" "run_conformance.sh mpich" test_failure.sh run_clients.sh; do
      read -r script abi <<<"$t"
      if CLIENTS="fortran mpi4py hpcc" LD_PRELOAD="$runtimes" \
        ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=1:detect_stack_use_after_return=0 \
        bash "tests/mpi/$script" "$PWD/build-asan-compat" $abi; then
        passed=$((passed + 1))
      else
        echo "sanitizers: tests/mpi/$script $abi failed"
        failed=$((failed + 1))
      fi
    done
  fi
fi
echo "sanitizers: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
