#!/usr/bin/env python3
"""Timeouts and teardown of "coral" groups, at P=2 under coral-run:
  late    a group made with timeout=1.9 s: a rank that joins its all_reduce 1.3 s late is in time
          (Coral counts whole seconds; the timeout must round up to 2, not down to 1).
  pending rank 0 posts an irecv that no rank matches, then both tear the group down: that takes
          moments, as with gloo, not the group's timeout (60 s here, 30 minutes by default). Rank 1
          stays alive until rank 0 is done, so the receive is not ended by its exit.
Run as: $TORCH_PYTHON test_teardown.py (PYTHONPATH holding coral_torch, CORAL_RUN the launcher).
"""
import datetime
import os
import subprocess
import sys
import tempfile
import time

GROUP_TIMEOUT_S = 60
LATE_TIMEOUT_S, LATE_BY_S = 1.9, 1.3
TEARDOWN_LIMIT_S = 10


def worker():
    import torch
    import torch.distributed as dist

    import coral_torch  # noqa: F401  (registers the backend)

    dist.init_process_group("coral", timeout=datetime.timedelta(seconds=GROUP_TIMEOUT_S))
    rank = dist.get_rank()
    bad = []
    short = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=LATE_TIMEOUT_S))
    t = torch.ones(4)
    dist.all_reduce(t, group=short)  # both are up: the lateness below is the only delay
    if rank == 1:
        time.sleep(LATE_BY_S)
    try:
        dist.all_reduce(t, group=short)
        if t[0].item() != 4:
            bad.append(f"late: sum {t[0].item()}")
    except RuntimeError as e:
        bad.append(f"late: a rank {LATE_BY_S} s late failed a group whose timeout is {LATE_TIMEOUT_S} s: {e}")
    dist.barrier()
    if rank == 0:
        dist.irecv(torch.zeros(4), src=1)  # never matched
    t0 = time.monotonic()
    dist.destroy_process_group()
    took = time.monotonic() - t0
    if took > TEARDOWN_LIMIT_S:
        bad.append(f"pending: teardown took {took:.1f} s (group timeout {GROUP_TIMEOUT_S} s)")
    done = os.path.join(os.environ["TEARDOWN_DIR"], "rank0-done")
    if rank == 0:
        open(done, "w").close()
    else:
        deadline = time.monotonic() + GROUP_TIMEOUT_S + 30
        while not os.path.exists(done) and time.monotonic() < deadline:
            time.sleep(0.05)
    for b in bad:
        print(f"FAIL rank {rank}: {b}", flush=True)
    print(f"rank {rank}: teardown {took:.2f} s, {len(bad)} failure(s)", flush=True)
    return 1 if bad else 0


def driver():
    run = os.environ.get("CORAL_RUN")
    if not run:
        print("CORAL_RUN is not set (the coral-run launcher)", file=sys.stderr)
        return 1
    py = os.environ.get("TORCH_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory() as d:
        rc = subprocess.call([run, "-n", "2", "--timeout", "300", py, os.path.abspath(__file__), "--worker"],
                             env=dict(os.environ, TEARDOWN_DIR=d))
    print("all passed" if rc == 0 else f"FAILED: exit {rc}", flush=True)
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(worker() if sys.argv[1:] == ["--worker"] else driver())
