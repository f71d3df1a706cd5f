#!/bin/bash
# The "coral" backend starts under every way torch users launch jobs: torchrun, coral-run,
# mpirun (MASTER_ADDR/MASTER_PORT given, ranks from Open MPI's variables), and the tcp:// and
# file:// init methods with explicit rank and world size. Each launch runs the same check script,
# whose every rank must print a verified result; any failure makes this script exit non-zero.
# Environment as meson sets it: TORCH_PYTHON, CORAL_RUN, PYTHONPATH (holding coral_torch).
set -u
PY=${TORCH_PYTHON:-/usr/bin/python3}
: "${CORAL_RUN:?CORAL_RUN (the coral-run launcher) is not set}"
NP=2
LIMIT=90  # seconds per launch; two torch imports on a loaded 2-core machine take ~10
TORCHRUN=${TORCHRUN:-$(dirname "$PY")/torchrun}
MPIRUN=${MPIRUN:-mpirun}
export EXPECT_WORLD=$NP

work=$(mktemp -d /tmp/coral-launch.XXXXXX)
trap 'rm -rf "$work"' EXIT

cat >"$work/check.py" <<'EOF'
import datetime, os, sys
import torch
import torch.distributed as dist
import coral_torch  # noqa: F401  (registers "coral")

# mpirun exports neither RANK nor WORLD_SIZE: a user maps Open MPI's own, as done here.
if "RANK" not in os.environ and "OMPI_COMM_WORLD_RANK" in os.environ:
    os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
    os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
timeout = datetime.timedelta(seconds=60)
if len(sys.argv) > 1:  # init_method rank world_size
    dist.init_process_group("coral", init_method=sys.argv[1], rank=int(sys.argv[2]),
                            world_size=int(sys.argv[3]), timeout=timeout)
else:
    dist.init_process_group("coral", timeout=timeout)
assert dist.get_backend() == "coral", dist.get_backend()
rank, world = dist.get_rank(), dist.get_world_size()
expect_world = int(os.environ.get("EXPECT_WORLD", "0"))
assert world == expect_world, f"world size {world}, launched {expect_world}"

t = torch.tensor([rank + 1.0, 10.0 * (rank + 1)], dtype=torch.float64)
dist.all_reduce(t)
s = world * (world + 1) / 2
assert t.tolist() == [s, 10 * s], (t.tolist(), s)
# The ranks torch assigned must be the ranks Coral uses: rank r's value lands in slot r.
out = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
dist.all_gather(out, torch.tensor([100 + rank]))
assert [o.item() for o in out] == [100 + r for r in range(world)], out

# A sub-group whose member has another rank there than in the world (global 1 is its rank 0),
# and one of all ranks, each meeting through torch's per-group store.
whole = dist.new_group(list(range(world)))
m = torch.tensor([rank], dtype=torch.int32)
dist.all_reduce(m, op=dist.ReduceOp.MAX, group=whole)
assert m.item() == world - 1, m
last = dist.new_group([world - 1])
if rank == world - 1:
    assert dist.get_rank(last) == 0 and dist.get_world_size(last) == 1
    u = torch.tensor([7.0])
    dist.all_reduce(u, group=last)
    assert u.item() == 7.0, u
dist.barrier(group=whole)
dist.destroy_process_group()
print(f"launch-check OK rank {rank}/{world} sum={t.tolist()}", flush=True)
EOF

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

failed=()
# check NAME CMD...: runs CMD bounded by LIMIT (a shell function bounds its own processes) and
# needs NP "launch-check OK" lines and exit 0.
check() {
  local name=$1; shift
  local log="$work/$name.log" t0=$SECONDS rc
  if declare -F "$1" >/dev/null; then
    "$@" >"$log" 2>&1
  else
    timeout -k 5 "$LIMIT" "$@" >"$log" 2>&1
  fi
  rc=$?
  local ok
  # Counted as matches, not lines: mpirun's output forwarding can join two ranks' lines.
  ok=$(grep -o "launch-check OK rank [0-9]*/$NP " "$log" | sort -u | wc -l)
  if [ "$rc" -eq 0 ] && [ "$ok" -eq "$NP" ]; then
    echo "ok   $name ($((SECONDS - t0)) s): $(grep -m1 'launch-check OK' "$log" | sed 's/.*launch-check OK //')"
  else
    echo "FAIL $name: exit $rc, $ok of $NP ranks checked ($((SECONDS - t0)) s); output:"
    sed 's/^/    /' "$log" | tail -40
    failed+=("$name")
  fi
}

# manual INIT_METHOD: the ranks started here, rank and world size passed explicitly.
manual() {
  local init=$1 pids=() rc=0 r
  for ((r = 0; r < NP; r++)); do
    timeout -k 5 "$LIMIT" "$PY" "$work/check.py" "$init" "$r" "$NP" &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=$?; done
  return $rc
}

source "$(dirname "$0")/torchrun_args.sh"
# torchrun must first be able to start a job at all: Debian's torch 2 packages lack libuv, and their
# torchrun's rendezvous store asks for it whatever USE_LIBUV says, so it starts no job, with no
# backend involved. Then the launcher is reported as skipped, not as coral's failure.
echo 'pass' >"$work/nothing.py"
if ! out=$(timeout -k 5 "$LIMIT" "$TORCHRUN" --standalone --nproc_per_node=1 "${tr_args[@]}" "$work/nothing.py" 2>&1) &&
  grep -q "without libuv" <<<"$out"; then
  echo "skip torchrun: this torch's torchrun starts no job at all (torch built without libuv)"
else
  check torchrun "$TORCHRUN" --standalone --nproc_per_node=$NP "${tr_args[@]}" "$work/check.py"
fi
check coral-run "$CORAL_RUN" -n $NP --timeout $((LIMIT - 10)) "$PY" "$work/check.py"
if command -v "$MPIRUN" >/dev/null; then
  # Open MPI refuses root without --allow-run-as-root, and more ranks than cores without
  # --oversubscribe; -x forwards the variables torch's env:// rendezvous reads.
  check mpirun env MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" \
    "$MPIRUN" --allow-run-as-root --oversubscribe -np $NP -x MASTER_ADDR -x MASTER_PORT -x PYTHONPATH \
    -x EXPECT_WORLD "$PY" "$work/check.py"
else
  echo "FAIL mpirun: $MPIRUN not found"
  failed+=(mpirun)
fi
check tcp manual "tcp://127.0.0.1:$(free_port)"
check file manual "file://$work/rendezvous"

if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "OK: the coral backend starts and checks out under every launcher tried"
