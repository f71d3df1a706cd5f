#!/bin/bash
# coralCommInitEnv under each launcher's environment: coral-run, Open MPI, MPICH, Slurm-style and
# torchrun-style variables. A launcher that is not installed is skipped with a message.
set -u
run=$1 hello=$2
fail() { echo "FAIL: $*"; exit 1; }
count_ok() { grep -c "all-reduce of .* correct" <<<"$1"; }

out=$("$run" -n 2 "$hello" 2>&1) || fail "coral-run: $out"
[ "$(count_ok "$out")" -eq 2 ] || fail "coral-run: $out"

if command -v mpirun.openmpi >/dev/null; then
  out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun.openmpi \
        --oversubscribe -np 3 "$hello" 2>&1) || fail "Open MPI: $out"
  [ "$(count_ok "$out")" -eq 3 ] || fail "Open MPI: $out"
  echo "Open MPI ok"
else
  echo "SKIP Open MPI: mpirun.openmpi not installed"
fi

if command -v mpirun.mpich >/dev/null; then
  out=$(timeout 120 mpirun.mpich -np 3 "$hello" 2>&1) || fail "MPICH: $out"
  [ "$(count_ok "$out")" -eq 3 ] || fail "MPICH: $out"
  echo "MPICH ok"
else
  echo "SKIP MPICH: mpirun.mpich not installed"
fi

# Slurm-style: what srun exports on one node (ranks share their parent, as under slurmstepd).
# (No `timeout` wrapper: it would become each rank's parent; CORAL_TIMEOUT bounds the wait.)
out=$( (for r in 0 1 2; do SLURM_PROCID=$r SLURM_NTASKS=3 SLURM_LOCALID=$r SLURM_JOB_ID=77 \
        CORAL_TIMEOUT=30 "$hello" & done; wait) 2>&1)
[ "$(count_ok "$out")" -eq 3 ] || fail "Slurm variables: $out"
echo "Slurm variables ok"

# torchrun-style: RANK/WORLD_SIZE with MASTER_ADDR/MASTER_PORT (rank 0 hosts the store).
port=$((20000 + RANDOM % 20000))
out=$( (for r in 0 1; do RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        CORAL_TIMEOUT=30 "$hello" & done; wait) 2>&1)
[ "$(count_ok "$out")" -eq 2 ] || fail "torchrun variables: $out"
echo "torchrun variables ok"

# No launcher at all: a clear error, not a hang.
out=$(env -u CORAL_RANK -u RANK timeout 20 "$hello" 2>&1) && fail "no launcher accepted"
grep -q "no launcher found" <<<"$out" || fail "no-launcher message: $out"
echo "launchers ok"
