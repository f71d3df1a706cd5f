#!/usr/bin/env python3
"""DDP over the "coral" backend trains exactly as one process on the whole batch.

The driver computes the single-process reference itself, then launches 1..4 ranks with coral-run
for the backends coral and gloo; each rank trains the same model under DistributedDataParallel on
its shard of every global batch and saves its final parameters, which the driver compares with
the reference and across backends. Run as: $TORCH_PYTHON test_ddp.py (CORAL_RUN and PYTHONPATH
set as meson sets them).
"""
import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn

GLOBAL_BATCH = 24  # divisible by 1, 2, 3 and 4, so every rank gets an equal shard
STEPS = 50
LR = 0.05
WORLD_SIZES = (1, 2, 3, 4)
BACKENDS = ("coral", "gloo")
# Relative to the largest magnitude in each parameter tensor (elementwise ratios blow up near 0).
TOL = {torch.float64: 1e-12, torch.float32: 1e-5}
DTYPES = (torch.float64, torch.float32)
# DDP's built-in allreduce, and a comm hook with gradients as bucket views: the hook's path goes
# through the backend's Work futures (get_future().then), the built-in one through wait().
VARIANTS = ("builtin", "hook")
IN, HIDDEN, OUT = 8, 32, 4
LAUNCH_TIMEOUT_S = 240


def make_model(dtype, seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT)).to(dtype)


def make_data(dtype):
    # Drawn in float64 and rounded, so both dtypes see the same inputs; one fresh batch per step.
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(STEPS, GLOBAL_BATCH, IN, generator=g, dtype=torch.float64)
    w = torch.randn(IN, OUT, generator=g, dtype=torch.float64)
    y = torch.sin(x @ w) + 0.1 * torch.randn(STEPS, GLOBAL_BATCH, OUT, generator=g, dtype=torch.float64)
    return x.to(dtype), y.to(dtype)


def train(model, x, y, lo, hi, lr=LR):
    # The loss is a mean over the local shard: DDP's average of equal-sized shards' means is then
    # the global mean, which is what the single-process reference minimises.
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for s in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = ((model(x[s, lo:hi]) - y[s, lo:hi]) ** 2).mean()
        loss.backward()
        opt.step()
    return model


def params_of(model):
    m = model.module if hasattr(model, "module") else model
    return {k: v.detach().clone() for k, v in m.named_parameters()}


def reference(dtype, lr=LR):
    x, y = make_data(dtype)
    return params_of(train(make_model(dtype, seed=100), x, y, 0, GLOBAL_BATCH, lr))


def rel_diff(a, b):
    worst = 0.0
    assert a.keys() == b.keys(), (sorted(a), sorted(b))
    for k in a:
        scale = b[k].abs().max().item()
        worst = max(worst, (a[k] - b[k]).abs().max().item() / (scale if scale > 0 else 1.0))
    return worst


def worker(args):
    import torch.distributed as dist

    import coral_torch  # noqa: F401  (registers "coral")

    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == args.world, (world, args.world)
    # One bucket per parameter (after DDP's rebuild at step 1): several allreduces per backward
    # are in flight at once, so the backend's completion order and overlap with autograd are
    # exercised, not one allreduce per step.
    dist._DEFAULT_FIRST_BUCKET_BYTES = 1
    shard = GLOBAL_BATCH // world
    result = {}
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    for variant, dtype in [(v, d) for v in VARIANTS for d in DTYPES]:
        # Each rank starts from different weights: only DDP's broadcast from rank 0 makes them the
        # reference's (seed 100).
        model = make_model(dtype, seed=100 + rank)
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1 / 2**20,
                                                  gradient_as_bucket_view=variant == "hook")
        if variant == "hook":
            ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        x, y = make_data(dtype)
        train(ddp, x, y, rank * shard, (rank + 1) * shard)
        buckets = None
        try:
            buckets = ddp._get_ddp_logging_data().get("rebuilt_bucket_sizes")
        except Exception:  # a private API; the count is only informative
            pass
        result[f"{variant} {str(dtype)[6:]}"] = {"params": params_of(ddp), "buckets": buckets}
    torch.save(result, os.path.join(args.out, f"{args.backend}-P{world}-r{rank}.pt"))
    dist.barrier()
    dist.destroy_process_group()


def launch(backend, world, out):
    coral_run = os.environ.get("CORAL_RUN")
    if not coral_run:
        sys.exit("test_ddp: CORAL_RUN (the coral-run launcher) is not set")
    cmd = [coral_run, "-n", str(world), "--timeout", str(LAUNCH_TIMEOUT_S), sys.executable,
           os.path.abspath(__file__), "--worker", "--backend", backend, "--world", str(world), "--out", out]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=LAUNCH_TIMEOUT_S + 30)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        print(p.stdout)
        print(f"FAIL: {backend} P={world}: coral-run exited {p.returncode} after {dt:.1f} s")
        return None
    ranks = []
    for r in range(world):
        path = os.path.join(out, f"{backend}-P{world}-r{r}.pt")
        if not os.path.exists(path):
            print(p.stdout)
            print(f"FAIL: {backend} P={world}: rank {r} wrote no result")
            return None
        ranks.append(torch.load(path))
    return ranks, dt


def main():
    refs = {dtype: reference(dtype) for dtype in DTYPES}
    failures = []
    # The comparison must be able to tell a wrong reduction: summing instead of averaging the
    # gradients over 2 ranks is training with twice the rate, and must miss by far.
    for dtype in DTYPES:
        init = params_of(make_model(dtype, seed=100))
        moved, wrong = rel_diff(init, refs[dtype]), rel_diff(reference(dtype, 2 * LR), refs[dtype])
        print(f"self-check {dtype}: training moved the weights by {moved:.3g}, a summed gradient "
              f"would differ by {wrong:.3g} (tolerance {TOL[dtype]:g})")
        if min(moved, wrong) < 1e3 * TOL[dtype]:
            failures.append(f"self-check {dtype}: the test cannot tell a wrong result")

    with tempfile.TemporaryDirectory(prefix="coral-ddp-") as out:
        got = {}
        for backend in BACKENDS:
            for world in WORLD_SIZES:
                r = launch(backend, world, out)
                if r is None:
                    failures.append(f"{backend} P={world}: launch failed")
                    continue
                got[backend, world], dt = r
                print(f"{backend} P={world}: ran in {dt:.1f} s; buckets: {got[backend, world][0]['builtin float64']['buckets']}")

        print(f"\nmax relative parameter difference ({STEPS} SGD steps, global batch {GLOBAL_BATCH})")
        print(f"{'backend':8} {'P':>2} {'variant':16} {'vs reference':>14} {'vs gloo':>12} {'rank spread':>12}")
        for (backend, world), ranks in sorted(got.items()):
            for variant, dtype in [(v, d) for v in VARIANTS for d in DTYPES]:
                key, tol = f"{variant} {str(dtype)[6:]}", TOL[dtype]
                mine = [rk[key]["params"] for rk in ranks]
                vs_ref = max(rel_diff(p, refs[dtype]) for p in mine)
                spread = max(rel_diff(p, mine[0]) for p in mine)
                vs_gloo = None
                if backend != "gloo" and ("gloo", world) in got:
                    gloo = [rk[key]["params"] for rk in got["gloo", world]]
                    vs_gloo = max(rel_diff(p, g) for p, g in zip(mine, gloo))
                    if not vs_gloo <= tol:
                        failures.append(f"{backend} P={world} {key}: {vs_gloo:.3g} from gloo > {tol:g}")
                gl = "-" if vs_gloo is None else f"{vs_gloo:.3g}"
                print(f"{backend:8} {world:2} {key:16} {vs_ref:14.3g} {gl:>12} {spread:12.3g}")
                if not vs_ref <= tol:
                    failures.append(f"{backend} P={world} {key}: {vs_ref:.3g} from the reference > {tol:g}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print("\nOK: DDP over coral matches one process and gloo on 1-4 ranks")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--backend", default="coral")
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.worker:
        worker(a)
    else:
        sys.exit(main())
