#!/bin/bash
# Every GPU check, in one go, on the GPU machine (the device tool; see README "GPU checks"):
#   1. build with CUDA (carried Debian packages from .gpu-deps/ unpacked under /tmp, never /)
#   2. kernels against the CPU reference, every dtype x op
#   3. reduction kernel bandwidth against cudaMemcpy device-to-device, same run
#   4. 2, 4 and 8 ranks on the one GPU through cuda_ipc, every collective, exact; then 2 ranks
#      posing as two hosts (staged through pinned memory)
#   5. coral-bench on device buffers: 256 MiB all-reduce busbw, 8-byte one-shot latency, a sweep
#   6. the torch backend "coral" on the machine's torch 2.x: CUDA tensors, Backend API, DDP
#   7. torch's own NCCL backend over the drop-in libnccl.so.2: 3 ranks on the GPU, DDP
#   8. NVIDIA's nccl-tests (-c 1) over the drop-in: 1, 2 and 4 ranks on the one GPU
# Writes $OUT/gpu-summary.txt (OUT defaults to ./gpu-out) plus one log per step; exit 0 only if
# every step passed. Budget: about 8 minutes; GPU_QUICK=1 (fewer cases, shorter limits): about 5
# at worst. GPU_SKIP='PATTERN ...' leaves out the steps whose names match (globs; not the build).
# Without a GPU it builds, then reports SKIP.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
summary=$out/gpu-summary.txt
: >"$summary"
start=$(date +%s)
note() { echo "$*" | tee -a "$summary"; }
status=0
# A step still running near its limit is hung: cuda-gdb (it attaches like gdb, which the GPU
# machine lacks) adds every rank's host stacks to the step's log before the timeout kills it.
stacks() {
  command -v cuda-gdb >/dev/null || { echo "(no cuda-gdb: no stacks)"; return; }
  for p in $( (pgrep -x mp_device; pgrep -x coral-bench; pgrep -f '_perf |torch_check.py|torch_nccl_ddp.py') | head -3); do
    echo "== host stacks of pid $p: $(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null)"
    timeout 12 cuda-gdb -q -batch -p "$p" -ex "thread apply all bt 16" 2>&1 | grep -E "^Thread|^#" | head -120
  done
}
step() {  # step NAME LIMIT_S CMD...: runs CMD with a timeout, logs to $out/NAME.txt
  local name=$1 limit=$2; shift 2
  local p
  for p in ${GPU_SKIP:-}; do  # glob patterns of step names to leave out, e.g. GPU_SKIP='bench_* nccl_*'
    [[ $name == $p ]] && [ "$name" != build ] && { note "[SKIP] $name (GPU_SKIP)"; : >"$out/$name.txt"; return 0; }
  done
  local t0=$(date +%s) dog=
  timeout "$limit" "$@" >"$out/$name.txt" 2>&1 &
  local pid=$!
  if [ "$limit" -ge 60 ]; then
    (sleep $((limit - 40)); kill -0 $pid 2>/dev/null && stacks >>"$out/$name.txt" 2>&1) &
    dog=$!
  fi
  wait $pid
  local rc=$? t=$(( $(date +%s) - t0 ))
  [ -n "$dog" ] && kill $dog 2>/dev/null
  local verdict=PASS
  [ $rc -eq 77 ] && verdict=SKIP
  [ $rc -ne 0 ] && [ $rc -ne 77 ] && { verdict="FAIL (exit $rc)"; status=1; }
  note "[$verdict] $name (${t}s)"
  return $rc
}
# GPU_QUICK=1: fewer cases and shorter limits (about 5 minutes at worst), for a tight lease.
quick=${GPU_QUICK:-0}
lim() { [ "$quick" = 1 ] && echo "$2" || echo "$1"; }
[ "$quick" = 1 ] && export MP_DEVICE_QUICK=1

export PATH=/usr/local/cuda/bin:$PATH
if [ -d .gpu-deps ] && ls .gpu-deps/*.deb >/dev/null 2>&1; then
  deps=/tmp/coral-deps
  mkdir -p "$deps"
  for f in .gpu-deps/*.deb; do dpkg-deb -x "$f" "$deps" 2>/dev/null || (cd "$deps" && ar p "$root/$f" data.tar.xz | tar xJ); done
  export PATH=$deps/usr/bin:$PATH
  export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_LIBDIR=$deps/usr/lib/x86_64-linux-gnu/pkgconfig:$deps/usr/share/pkgconfig
  export PKG_CONFIG_SYSROOT_DIR=$deps
fi
note "GPU checks, $(date -u +%FT%TZ)"
note "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi: not available')"
note "$(nvcc --version 2>/dev/null | tail -1)"

export build=${GPU_BUILD_DIR:-build-gpu}
# nccl.h for the drop-in libnccl.so.2: the toolkit's, else the one torch's NCCL wheel carries.
nccl_include() {
  # nvidia.nccl may be a namespace package (no __init__.py, so no __file__): its __path__ serves.
  for d in /usr/local/cuda/include "$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0] + "/include")' 2>/dev/null)"; do
    [ -n "$d" ] && [ -f "$d/nccl.h" ] && { echo "$d"; return; }
  done
}
export inc=$(nccl_include)  # configure (run by bash -c) and the nccl-tests build read it
note "nccl.h: ${inc:-none found} $( [ -n "$inc" ] && grep -hoE 'define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+' "$inc/nccl.h" | awk '{print $3}' | paste -sd.)"
configure() {
  [ -f "$build/build.ninja" ] || meson setup "$build" -Dcuda=enabled -Dgpu_arch="${GPU_ARCH:-90}" -Dtests=false \
    -Dbench=true -Dtrainer=disabled -Dhwloc=disabled -Ducx=disabled -Dibverbs=disabled -Dmpi=disabled \
    -Dtorch=auto -Dpython="$(command -v python3)" -Dnccl_include="$inc" || return 1
  # The core targets alone: a torch extension that does not build for this torch must not stop
  # the other checks (it is built, and reported, in its own step below).
  ninja -C "$build" tests/gpu/gpu_kernels_check bench/coral-kernel-bw tools/coral-run/coral-run tests/gpu/mp_device \
    bench/coral-bench
}
export -f configure
step build 300 bash -c configure || { note "build failed: see $out/build.txt"; exit 1; }

step kernels $(lim 120 60) "$build/tests/gpu/gpu_kernels_check"
[ $? -eq 77 ] && { note "no usable GPU here: the remaining checks need one"; exit 0; }
grep -h "kernel cases" "$out/kernels.txt" | tee -a "$summary"

step kernel_bw $(lim 90 30) "$build/bench/coral-kernel-bw" $((1 << 30)) 20
grep -E "GB/s" "$out/kernel_bw.txt" | tee -a "$summary"

step collectives $(lim 300 120) tests/gpu/run_mp_device.sh "$build/tools/coral-run/coral-run" "$build/tests/gpu/mp_device"
coll=$?
grep -h "device collective cases\|^==\|FAIL" "$out/collectives.txt" | sort | uniq -c | tee -a "$summary"

bench=$build/bench/coral-bench
crun=$build/tools/coral-run/coral-run
if [ $coll -eq 124 ]; then
  note "collectives hung (stacks in collectives.txt): the device benchmarks would too, skipped"
else
  step bench_256m $(lim 120 40) "$crun" -n 2 "$bench" --device -b 256M -e 256M -n 10 -w 3
  grep -E "^ +[0-9]+ " "$out/bench_256m.txt" | tee -a "$summary"
  step bench_8b_oneshot $(lim 60 30) env CORAL_ALGO=oneshot "$crun" -n 2 "$bench" --device -b 8 -e 8 -n 500 -w 50
  grep -E "^ +[0-9]+ " "$out/bench_8b_oneshot.txt" | tee -a "$summary"
  step bench_sweep $(lim 120 40) "$crun" -n 2 "$bench" --device -b 8 -e 64M -f 8 -n 10 -w 2
  grep -E "^ +[0-9]+ " "$out/bench_sweep.txt" | tee -a "$summary"
fi

# The torch backend against the machine's torch 2.x with CUDA (built when the build found it).
if grep -q "coral_torch/_C" "$build/build.ninja" 2>/dev/null; then
  step torch_build 300 ninja -C "$build"
fi
if ls "$build"/src/compat/torch/coral_torch/_C*.so >/dev/null 2>&1; then
  step torch_cuda $(lim 180 90) env PYTHONPATH="$build/src/compat/torch" "$crun" -n 2 python3 tests/gpu/torch_check.py
  grep -h "failure\|FAIL" "$out/torch_cuda.txt" | tee -a "$summary"
else
  note "[SKIP] torch_cuda: the build found no torch for $(command -v python3)"
fi

# PyTorch's own NCCL backend over the drop-in, preloaded: several ranks on the one GPU (real NCCL
# refuses that), its collectives and DDP steps equal to one process.
bdir=$(cd "$build" && pwd)  # GPU_BUILD_DIR may be relative or absolute
shim=$bdir/src/compat/nccl/libnccl.so.2
if meson compile -C "$build" src/compat/nccl/nccl:shared_library >"$out/nccl_shim_build.txt" 2>&1; then
  # What torch's CUDA library takes from libnccl that the drop-in lacks (then `import torch`
  # fails under it): newer NCCL functions than the header it was built against.
  tlib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))' 2>/dev/null)
  if [ -f "$tlib" ] && command -v nm >/dev/null; then
    miss=$(comm -23 <(nm -D --undefined-only "$tlib" | awk '{print $NF}' | sed 's/@.*//' | grep -E '^p?nccl' | sort -u) \
      <(nm -D --defined-only "$shim" | awk '{print $3}' | sort -u) | tr '\n' ' ')
    note "libtorch_cuda.so needs from libnccl what the drop-in lacks: ${miss:-nothing}"
  fi
  # CORAL_TIMEOUT: the shim's default is NCCL's (none); a hang must end in Coral's message, which
  # names the cycle of waits, well before the step's limit.
  step torch_nccl $(lim 150 75) "$crun" -n 3 env LD_PRELOAD="$shim" CORAL_TIMEOUT=40 python3 tests/gpu/torch_nccl_ddp.py
  grep -h "failure\|FAIL\|undefined symbol\|Error" "$out/torch_nccl.txt" | head -20 | tee -a "$summary"
else
  note "[FAIL] the drop-in libnccl.so.2 did not build (see nccl_shim_build.txt)"
  status=1
fi

# NVIDIA's nccl-tests against the drop-in libnccl.so.2, results checked (-c 1), built with MPI=1
# over MPI-lite (tests/gpu/mpi_lite: the machine has no MPI) and launched by coral-run: one rank,
# then several on the one GPU (NCCL_TESTS_DEVICE=0). The source travels in the git-ignored
# .nccl-tests/ (fetched from NVIDIA/nccl-tests).
if [ ! -d .nccl-tests/src ]; then
  note "[SKIP] nccl-tests: no .nccl-tests/ source (fetch NVIDIA/nccl-tests into it)"
elif [ ! -f "$shim" ] || ! meson compile -C "$build" tests/gpu/mpi:shared_library >>"$out/nccl_shim_build.txt" 2>&1; then
  note "[FAIL] nccl-tests: the drop-in or MPI-lite did not build (see nccl_shim_build.txt)"
  status=1
else
  home=$(mktemp -d)
  mkdir -p "$home/include" "$home/lib"
  # nccl-tests includes nccl_device.h too (NCCL >= 2.28): the one beside the nccl.h used.
  cp "$inc/nccl.h" tests/gpu/mpi_lite/mpi.h "$home/include/"
  [ -f "$inc/nccl_device.h" ] && cp -r "$inc/nccl_device.h" "$inc/nccl_device" "$home/include/"
  for l in libnccl.so libnccl.so.2; do ln -s "$shim" "$home/lib/$l"; done
  ln -s "$bdir/tests/gpu/libmpi.so" "$home/lib/libmpi.so"
  # Its own folder: make does not rebuild objects of an earlier build without MPI_SUPPORT.
  nt=$bdir/nccl-tests-mpi
  # LD_LIBRARY_PATH: the linker finds libcoral.so.0, which the shim and MPI-lite need, there.
  step nccl_tests_build 240 env LD_LIBRARY_PATH="$bdir:${LD_LIBRARY_PATH:-}" make -C .nccl-tests/src -j16 \
    MPI=1 MPI_HOME="$home" BUILDDIR="$nt" NCCL_HOME="$home" CUDA_HOME="$(dirname "$(dirname "$(command -v nvcc)")")" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90"
  nccl_test() {  # nccl_test RANKS NAME: one nccl-tests binary on RANKS ranks of GPU 0
    local n=$1 t=$2 log=$out/nccl_$2_$1r.txt
    [ -x "$nt/${t}_perf" ] || { note "[FAIL] nccl_${t}_${n}r: not built"; status=1; return; }
    step "nccl_${t}_${n}r" $(lim 60 30) env NCCL_TESTS_DEVICE=0 CORAL_TIMEOUT=$(lim 40 20) LD_LIBRARY_PATH="$home/lib:$bdir:${LD_LIBRARY_PATH:-}" \
      "$crun" -n "$n" "$nt/${t}_perf" -b 8 -e $(lim 64M 8M) -f 8 -c 1 -g 1
    [ -s "$log" ] || return  # left out (GPU_SKIP)
    grep -h "Out of bounds values\|# Avg bus\|failure" "$log" | sed "s/^/nccl_${t}_${n}r: /" | tee -a "$summary"
    # One job of n ranks, not n jobs of one: rank 0 lists every rank's device.
    local ranks
    ranks=$(grep -oE "Rank +[0-9]+ Group" "$log" | sort -u | wc -l)
    [ "$ranks" -ge "$n" ] || { note "[FAIL] nccl_${t}_${n}r: $ranks ranks listed, not one job of $n ranks"; status=1; }
  }
  for n in 1 2; do
    for t in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do nccl_test $n $t; done
  done
  [ "$quick" = 1 ] || nccl_test 4 all_reduce
fi

note "total $(( $(date +%s) - start ))s, $([ $status -eq 0 ] && echo 'all passed' || echo 'FAILURES above')"
exit $status
