"""torch.distributed.all_reduce through the "coral" backend against gloo, in one job: both process
groups over the same ranks, float32 sum on CPU tensors, the two backends' repetitions interleaved
at each size (coral, gloo, coral, gloo, ...) so that drift hits both alike.

One repetition: a barrier on the group measured, then `inner` back-to-back all_reduce calls (more
at small sizes, so the timer's resolution does not matter); its time per call is the slowest
rank's. Reported per size: the median over the repetitions, after the warmup ones, and from it
algbw = bytes / time and busbw = algbw * 2(P-1)/P (nccl-tests' definitions, GB/s = 1e9 B/s).

  coral-run -n P python3 bench/torch/allreduce.py [--min 8] [--max 256M] [--factor 2]
            [--sizes 8,64K,...] [--reps 10] [--warmup 3] [--csv FILE] [--default gloo|coral]
            [--backends coral,gloo]
"""
import argparse
import statistics
import sys
import time

import common  # sets up the env:// variables before torch.distributed is used

import torch
import torch.distributed as dist


def size_arg(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def human(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def sizes(lo, hi, factor):
    out, n = [], max(4, lo)
    while n <= hi:
        out.append(n)
        n *= factor
    if out and out[-1] != hi and hi >= lo:
        out.append(hi)
    return out


def one_rep(x, group, inner):
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(inner):
        dist.all_reduce(x, group=group)
    return (time.perf_counter() - t0) / inner


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min", type=size_arg, default=8, help="smallest size in bytes (K/M/G suffixes)")
    ap.add_argument("--max", type=size_arg, default=256 << 20, help="largest size in bytes")
    ap.add_argument("--factor", type=int, default=2, help="step between sizes (2 or 4)")
    ap.add_argument("--sizes", help="a list instead of --min/--max/--factor, e.g. 8,64K,1M")
    ap.add_argument("--reps", type=int, default=10, help="timed repetitions per backend and size")
    ap.add_argument("--warmup", type=int, default=3, help="untimed repetitions per backend and size")
    ap.add_argument("--inner-bytes", type=size_arg, default=4 << 20,
                    help="a repetition makes about this many bytes of calls (at least 1, at most --max-inner)")
    ap.add_argument("--max-inner", type=int, default=100)
    ap.add_argument("--csv", help="rank 0 writes the table here")
    ap.add_argument("--default", choices=("gloo", "coral"), default="gloo",
                    help="which backend is the default group (the other comes from new_group)")
    ap.add_argument("--backends", default="coral,gloo",
                    help="which to measure, in this order per repetition (one alone: is the other's presence a cost?)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads per rank (0: CPUs / local ranks)")
    args = ap.parse_args()

    groups = common.init(args.default)
    common.threads(args.threads)
    rank, world = dist.get_rank(), dist.get_world_size()
    backends = tuple(args.backends.split(","))
    bus = 2 * (world - 1) / world
    rows = []
    if rank == 0:
        print(f"# all_reduce float32 sum, P={world}, torch {torch.__version__}, reps={args.reps} "
              f"warmup={args.warmup}, default group {args.default}; time: median us per call (slowest rank)",
              flush=True)
        print(f"{'bytes':>11} {'size':>9} | {'coral us':>10} {'algbw':>7} {'busbw':>7} | "
              f"{'gloo us':>10} {'algbw':>7} {'busbw':>7} | {'busbw c/g':>9}", flush=True)
    todo = [size_arg(s) for s in args.sizes.split(",")] if args.sizes else sizes(args.min, args.max, args.factor)
    for nbytes in todo:
        count = max(1, nbytes // 4)
        nbytes = count * 4
        inner = max(1, min(args.max_inner, args.inner_bytes // nbytes))
        tensors = {}
        for b in backends:
            x = torch.ones(count, dtype=torch.float32)
            dist.all_reduce(x, group=groups[b])
            if x[0].item() != world or x[-1].item() != world:
                sys.exit(f"rank {rank}: {b} all_reduce of {nbytes} B gave {x[0].item()}, {x[-1].item()}, not {world}")
            x.zero_()  # sums of zeros stay zeros: no overflow, no denormals
            tensors[b] = x
        for _ in range(args.warmup):
            for b in backends:
                one_rep(tensors[b], groups[b], inner)
        times = {b: [] for b in backends}
        for _ in range(args.reps):
            for b in backends:
                times[b].append(one_rep(tensors[b], groups[b], inner))
        slowest = {b: common.gather_max(times[b], groups["gloo"]) for b in backends}
        del tensors
        row = {"P": world, "bytes": nbytes}
        for b in ("coral", "gloo"):
            t = statistics.median(slowest[b]) if b in backends else float("nan")
            row[f"{b}_us"] = t * 1e6
            row[f"{b}_algbw"] = nbytes / t / 1e9
            row[f"{b}_busbw"] = nbytes / t / 1e9 * bus
        row["busbw_ratio"] = row["coral_busbw"] / row["gloo_busbw"]
        row["time_ratio"] = row["coral_us"] / row["gloo_us"]
        rows.append(row)
        if rank == 0:
            print(f"{nbytes:>11} {human(nbytes):>9} | {row['coral_us']:>10.1f} {row['coral_algbw']:>7.3f} "
                  f"{row['coral_busbw']:>7.3f} | {row['gloo_us']:>10.1f} {row['gloo_algbw']:>7.3f} "
                  f"{row['gloo_busbw']:>7.3f} | {row['busbw_ratio']:>8.2f}x", flush=True)
    if rank == 0 and rows:
        first = rows[0]
        print(f"# latency at {first['bytes']} B: coral {first['coral_us']:.1f} us, gloo {first['gloo_us']:.1f} us, "
              f"coral/gloo = {first['time_ratio']:.3f}", flush=True)
        if args.csv:
            keys = list(rows[0])
            with open(args.csv, "w") as f:
                f.write(",".join(keys) + "\n")
                for r in rows:
                    f.write(",".join(f"{r[k]:.6g}" if isinstance(r[k], float) else str(r[k]) for k in keys) + "\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
