#!/bin/bash
# mp_device on 2, 4 and 8 ranks of one host (MP_DEVICE_RANKS; all on GPU 0 when there is one GPU:
# cuda_ipc between processes sharing it), 2 with callers waiting on the host, 3 and 4 with forced
# algorithms and small slots, then 2 ranks posing as two hosts, which stages through pinned
# memory. Usage: run_mp_device.sh CORAL_RUN MP_DEVICE
# CORAL_TEST_QUICK=1 (the sanitizer pass): the first rank count only, and the tree alone of the
# forced algorithms; every path that waits or stages still runs.
set -uo pipefail
run=$1 prog=$2
"$prog" --probe; [ $? -eq 77 ] && exit 77
ranks=${MP_DEVICE_RANKS:-2 4 8} forced="3:rhd 4:tree"
if [ "${CORAL_TEST_QUICK:-0}" = 1 ]; then ranks=${ranks%% *} forced=4:tree; fi
for n in $ranks; do
  echo "== $n ranks, cuda_ipc"
  MP_DEVICE_QUICK=${MP_DEVICE_QUICK:-$([ $n -gt 2 ] && echo 1)} timeout 600 "$run" -n $n "$prog" || exit 1
done
# One hardware queue for every stream: a parked caller's stream would block Coral's own work,
# so the call waits on the host instead (CORAL_GPU_STREAM_WAIT=auto picks that).
echo "== 2 ranks, cuda_ipc, CUDA_DEVICE_MAX_CONNECTIONS=1 (the caller waits on the host)"
CUDA_DEVICE_MAX_CONNECTIONS=1 MP_DEVICE_QUICK=1 timeout 600 "$run" -n 2 "$prog" || exit 1
# Forced algorithms whose scratch outgrows a chunk (rhd reduce-scatter folds the whole input, the
# reduce tree a subtree's sum on an inner rank), with 4 KiB slots: the caller reserves it before
# parking its stream.
for run_algo in $forced; do
  n=${run_algo%%:*} algo=${run_algo#*:}
  echo "== $n ranks, cuda_ipc, CORAL_ALGO=$algo, 4 KiB slots"
  CORAL_ALGO=$algo CORAL_CUDA_IPC_SLOT_BYTES=4096 MP_DEVICE_QUICK=1 timeout 600 "$run" -n $n "$prog" || exit 1
done
echo "== 2 ranks as two hosts, staged through pinned memory over tcp"
MP_DEVICE_QUICK=1 CORAL_GPU_STAGE_BYTES=1M timeout 600 "$run" -n 2 \
  bash -c 'CORAL_HOSTID=host$CORAL_RANK exec "$0"' "$prog" || exit 1
echo "all device collective runs passed"
