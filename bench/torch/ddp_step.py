"""DistributedDataParallel step time through the "coral" backend against gloo, in one job: an MLP
of about 25M float32 parameters (1024 -> 4096 -> 4096 -> 1024 by default), global batch 64 split
over the P ranks, SGD; one DDP model on each backend's group, same initial weights and data, their
steps interleaved (coral, gloo, coral, gloo, ...). A step is forward + backward (which waits for
DDP's bucketed gradient all-reduce) + optimizer step, after a barrier; its time is the slowest
rank's. Reported: the median over --steps after --warmup, per backend, the ratio coral/gloo, and
the same step with no DDP (the compute floor), and DDP whose communication hook sends nothing
(`nocomm`: all of DDP's own work, bucket copies included, with free communication: the best any
backend could reach). At the end
the two models must still agree (the same training, only the all-reduce differs).

  coral-run -n P python3 bench/torch/ddp_step.py [--steps 20] [--warmup 3] [--batch 64]
            [--layers 1024,4096,4096,1024] [--csv FILE] [--no-local]
"""
import argparse
import statistics
import sys
import time

import common  # sets up the env:// variables before torch.distributed is used

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def mlp(widths):
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def no_comm(state, bucket):
    """A DDP communication hook that sends nothing: the bucket comes back as it is."""
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", default="1024,4096,4096,1024", help="widths of the MLP")
    ap.add_argument("--batch", type=int, default=64, help="global batch (split over the ranks)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per model")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps per model")
    ap.add_argument("--bucket-mb", type=float, default=25, help="DDP's bucket_cap_mb")
    ap.add_argument("--no-local", action="store_true", help="skip the no-DDP and no-communication floors")
    ap.add_argument("--csv", help="rank 0 writes one line per backend here")
    ap.add_argument("--default", choices=("gloo", "coral"), default="gloo",
                    help="which backend is the default group (the other comes from new_group)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads per rank (0: CPUs / local ranks)")
    args = ap.parse_args()

    groups = common.init(args.default)
    threads = common.threads(args.threads)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        sys.exit(f"--batch {args.batch} does not split over {world} ranks")
    widths = [int(w) for w in args.layers.split(",")]
    local_batch = args.batch // world

    torch.manual_seed(0)
    base = mlp(widths)
    params = sum(p.numel() for p in base.parameters())
    models = {}
    for b in ("coral", "gloo"):
        m = mlp(widths)
        m.load_state_dict(base.state_dict())
        models[b] = DDP(m, process_group=groups[b], bucket_cap_mb=args.bucket_mb)
    if not args.no_local:
        m = mlp(widths)
        m.load_state_dict(base.state_dict())
        models["local"] = m
        m = mlp(widths)
        m.load_state_dict(base.state_dict())
        models["nocomm"] = DDP(m, process_group=groups["gloo"], bucket_cap_mb=args.bucket_mb)
        models["nocomm"].register_comm_hook(None, no_comm)
    opts = {b: torch.optim.SGD(m.parameters(), lr=1e-3) for b, m in models.items()}
    gen = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(local_batch, widths[0], generator=gen)
    y = torch.randn(local_batch, widths[-1], generator=gen)
    loss_fn = torch.nn.MSELoss()

    def step(b):
        dist.barrier(group=groups.get(b, groups["gloo"]))
        t0 = time.perf_counter()
        opts[b].zero_grad(set_to_none=True)
        loss = loss_fn(models[b](x), y)
        loss.backward()
        opts[b].step()
        return time.perf_counter() - t0, loss.item()

    order = list(models)
    if rank == 0:
        print(f"# DDP step, P={world}, MLP {args.layers} ({params / 1e6:.2f}M params, {params * 4 / 2**20:.0f} MiB "
              f"of gradients), global batch {args.batch} ({local_batch} per rank), {threads} torch thread(s) per "
              f"rank, bucket {args.bucket_mb} MB, {args.steps} steps after {args.warmup}; torch {torch.__version__}",
              flush=True)
    for _ in range(args.warmup):
        for b in order:
            step(b)
    times = {b: [] for b in order}
    losses = {b: 0.0 for b in order}
    for _ in range(args.steps):
        for b in order:
            t, losses[b] = step(b)
            times[b].append(t)
    slowest = {b: common.gather_max(times[b], groups["gloo"]) for b in order}
    med = {b: statistics.median(v) for b, v in slowest.items()}

    # The two DDP replicas saw the same data and start: only the all-reduce differs.
    diff = max((pc - pg).abs().max().item()
               for pc, pg in zip(models["coral"].module.parameters(), models["gloo"].module.parameters()))
    diff = common.gather_max([diff], groups["gloo"])[0]
    if rank == 0:
        for b in order:
            v = sorted(slowest[b])
            print(f"{b:>6}: median {med[b] * 1e3:8.1f} ms/step  (min {v[0] * 1e3:.1f}, max {v[-1] * 1e3:.1f}; "
                  f"{args.batch / med[b]:.0f} samples/s; last loss {losses[b]:.5f})", flush=True)
        ratio = med["coral"] / med["gloo"]
        print(f"# coral/gloo step time = {ratio:.3f}", end="")
        if "local" in med:
            comm = {b: med[b] - med["local"] for b in ("coral", "gloo")}
            print(f"; over the no-DDP floor: coral +{comm['coral'] * 1e3:.1f} ms, gloo +{comm['gloo'] * 1e3:.1f} ms"
                  f"; DDP with no communication / gloo = {med['nocomm'] / med['gloo']:.3f}", end="")
        print(f"; max |coral - gloo| parameter difference {diff:.2e}", flush=True)
        if args.csv:
            with open(args.csv, "w") as f:
                f.write("P,backend,params,batch,steps,median_ms,min_ms,max_ms,ratio_to_gloo\n")
                for b in order:
                    v = sorted(slowest[b])
                    f.write(f"{world},{b},{params},{args.batch},{args.steps},{med[b] * 1e3:.3f},{v[0] * 1e3:.3f},"
                            f"{v[-1] * 1e3:.3f},{med[b] / med['gloo']:.4f}\n")
    ok = diff < 1e-3
    dist.barrier()
    dist.destroy_process_group()
    if not ok:
        sys.exit(f"the coral and gloo replicas differ by {diff:.2e} after training")


if __name__ == "__main__":
    main()
