#!/usr/bin/env python3
"""PyTorch's own distributed training algorithms, unmodified, over the "coral" backend.

Each is a real client of the backend that we did not write: ZeroRedundancyOptimizer (sharded
Adam; its updated shards come back by broadcast, its state by consolidate_state_dict), DDP's
PowerSGD and fp16 compression comm hooks (futures, chained then()), the Join context manager
(ranks with uneven inputs shadow the others' all-reduces) and post-local SGD with
PeriodicModelAverager (size-1 subgroups, then averaging over the world). And, in torch 2,
FSDP2 (fully_shard: sharded parameters, through all_gather_into_tensor and
reduce_scatter_tensor; then saved and loaded with torch.distributed.checkpoint), tensor parallelism (DTensor's functional collectives) and a GPipe
pipeline (batched isend/irecv between stages).

The driver launches 2, 3 and 4 ranks with coral-run for coral and for gloo; each rank saves its
final parameters. Where the algorithm's arithmetic is simple enough, the driver computes the
expected parameters in one process and both backends must match them; the others (PowerSGD,
the pipeline) must match gloo's. Where gloo and coral fail alike, torch cannot run it here. Run as: $TORCH_PYTHON test_algorithms.py (CORAL_RUN and PYTHONPATH set as
meson sets them).
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

from test_ddp import GLOBAL_BATCH, HIDDEN, IN, LR, OUT, STEPS, make_data, make_model, params_of, reference, rel_diff

WORLD_SIZES = (2, 3, 4)
BACKENDS = ("coral", "gloo")
ADAM_LR = 0.01
JOIN_LAG = 3          # rank r runs STEPS - JOIN_LAG * r steps under Join
LOCAL_START = 10      # post-local SGD: global all-reduce before this step, local after
AVG_PERIOD = 4        # ... and the models averaged every AVG_PERIOD steps from LOCAL_START on
LOCAL_STEPS = LOCAL_START + 9 * AVG_PERIOD + 1  # ending on an average, so the replicas agree
LAUNCH_TIMEOUT_S = 240
SHARED_DIR = ""  # the driver's folder, shared by the ranks (the checkpoint goes there)


def fully_shard_api():
    """FSDP2's fully_shard and init_device_mesh, where this torch has them (2.6 on); None else.
    (FSDP1 wants an accelerator; FSDP2 shards on the CPU.)"""
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        return fully_shard, init_device_mesh
    except Exception:
        return None


def shard_of(rank, world):
    n = GLOBAL_BATCH // world
    return rank * n, (rank + 1) * n


def sgd_steps(model, x, y, lo, hi, steps):
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for s in steps:
        opt.zero_grad(set_to_none=True)
        ((model(x[s, lo:hi]) - y[s, lo:hi]) ** 2).mean().backward()
        opt.step()


# ---- the workloads, as every rank runs them ----

def run_zero(rank, world, x, y):
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer

    ddp = nn.parallel.DistributedDataParallel(make_model(torch.float64, seed=100 + rank))
    opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=ADAM_LR)
    lo, hi = shard_of(rank, world)
    for s in range(STEPS):
        opt.zero_grad(set_to_none=True)
        ((ddp(x[s, lo:hi]) - y[s, lo:hi]) ** 2).mean().backward()
        opt.step()
    opt.consolidate_state_dict(to=0)  # every rank's shard of the Adam state, to rank 0 (objects)
    extra = {}
    if rank == 0:
        state = opt.state_dict()["state"]
        extra["adam_states"] = len(state)
        extra["adam_steps"] = sorted({int(v["step"]) for v in state.values()})
    dist.barrier()
    return params_of(ddp), extra


def run_hook(rank, world, x, y, kind):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

    import torch.distributed as dist

    if kind == "fp16" and dist.get_backend() == "gloo" and os.environ.get("GLOO_FP16") == "0":
        # Tried in DDP, a failed gloo call leaves the ranks out of step (a later barrier died).
        return None, {"skip": "this torch's gloo has no float16 sum on the CPU"}
    dtype = x.dtype
    ddp = nn.parallel.DistributedDataParallel(make_model(dtype, seed=100 + rank))
    if kind == "powersgd":
        state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=1,
                                       start_powerSGD_iter=3, min_compression_rate=1, random_seed=7)
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
    else:
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    sgd_steps(ddp, x, y, *shard_of(rank, world), range(STEPS))
    return params_of(ddp), {}


def run_join(rank, world, x, y):
    from torch.distributed.algorithms.join import Join

    ddp = nn.parallel.DistributedDataParallel(make_model(torch.float64, seed=100 + rank))
    with Join([ddp]):  # the ranks that run out early shadow the others' all-reduces with zeros
        sgd_steps(ddp, x, y, *shard_of(rank, world), range(STEPS - JOIN_LAG * rank))
    return params_of(ddp), {}


def run_local_sgd(rank, world, x, y):
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook as post
    from torch.distributed.algorithms.model_averaging import averagers
    from torch.distributed.optim import PostLocalSGDOptimizer

    # Subgroups of one rank: after LOCAL_START each rank steps on its own gradients alone.
    # (torch 1.13's new_subgroups wants CUDA; every rank makes every group, as new_group asks.)
    subgroup = [dist.new_group([r]) for r in range(world)][rank]
    ddp = nn.parallel.DistributedDataParallel(make_model(torch.float64, seed=100 + rank))
    ddp.register_comm_hook(post.PostLocalSGDState(process_group=None, subgroup=subgroup,
                                                  start_localSGD_iter=LOCAL_START), post.post_localSGD_hook)
    opt = PostLocalSGDOptimizer(optim=torch.optim.SGD(ddp.parameters(), lr=LR),
                                averager=averagers.PeriodicModelAverager(period=AVG_PERIOD, warmup_steps=LOCAL_START))
    lo, hi = shard_of(rank, world)
    for s in range(LOCAL_STEPS):
        opt.zero_grad(set_to_none=True)
        ((ddp(x[s, lo:hi]) - y[s, lo:hi]) ** 2).mean().backward()
        opt.step()
    return params_of(ddp), {}


def run_fsdp(rank, world, x, y):
    import torch.distributed as dist

    fully_shard, init_device_mesh = fully_shard_api()
    mesh = init_device_mesh("cpu", (world,))
    model = make_model(torch.float64, seed=100)  # (FSDP2 does not broadcast: one seed everywhere)
    # Each layer its own unit, then the root: the 32-row weight splits unevenly at P=3, so
    # the padded all_gather_into_tensor and reduce_scatter_tensor run too.
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    sgd_steps(model, x, y, *shard_of(rank, world), range(STEPS))
    full = {k: v.full_tensor().detach().clone() for k, v in model.state_dict().items()}
    # torch.distributed.checkpoint: each rank writes its shards, rank 0 the plan it gathered
    # (object collectives); loaded into a model sharded afresh, the weights must come back.
    import torch.distributed.checkpoint as dcp

    path = os.path.join(SHARED_DIR, f"dcp-{dist.get_backend()}-{world}")
    dcp.save(model.state_dict(), checkpoint_id=path)
    fresh = make_model(torch.float64, seed=200)
    fully_shard(fresh, mesh=mesh)
    state = fresh.state_dict()
    dcp.load(state, checkpoint_id=path)
    fresh.load_state_dict(state)
    back = all(torch.equal(v.full_tensor(), full[k]) for k, v in fresh.state_dict().items())
    dist.barrier()
    return full, {"checkpoint": back}


def run_tensor_parallel(rank, world, x, y):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    if HIDDEN % world:
        return None, {"skip": f"torch's sharding rules do not split the hidden width {HIDDEN} over {world}"}
    _, init_device_mesh = fully_shard_api()
    model = make_model(torch.float64, seed=100)
    # Megatron's split: the first layer's outputs across the ranks, the second's inputs, so the
    # forward ends in an all-reduce and the backward's input gradient too.
    parallelize_module(model, init_device_mesh("cpu", (world,)), {"0": ColwiseParallel(), "2": RowwiseParallel()})
    sgd_steps(model, x, y, 0, GLOBAL_BATCH, range(STEPS))  # every rank the whole batch
    return {k: v.full_tensor().detach().clone() for k, v in model.state_dict().items()}, {}


def pipeline_blocks(world):
    torch.manual_seed(5)
    return [nn.Sequential(nn.Linear(IN, IN if i < world - 1 else OUT), nn.Tanh()).double() for i in range(world)]


def run_pipeline(rank, world, x, y):
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    block = pipeline_blocks(world)[rank]  # one stage per rank, activations sent on by isend/irecv
    stage = PipelineStage(block, rank, world, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=lambda out, want: ((out - want) ** 2).mean())
    opt = torch.optim.SGD(block.parameters(), lr=LR)
    for s in range(STEPS):
        opt.zero_grad(set_to_none=True)
        if rank == 0:
            schedule.step(x[s])
        elif rank == world - 1:
            schedule.step(target=y[s])
        else:
            schedule.step()
        opt.step()
    return {f"stage {rank} {k}": v for k, v in params_of(block).items()}, {"sharded": True}


def workloads():
    w = {
        "zero adam": lambda r, p, d: run_zero(r, p, *d[torch.float64]),
        "powersgd": lambda r, p, d: run_hook(r, p, *d[torch.float64], "powersgd"),
        "fp16 hook": lambda r, p, d: run_hook(r, p, *d[torch.float32], "fp16"),
        "join": lambda r, p, d: run_join(r, p, *d[torch.float64]),
        "local sgd": lambda r, p, d: run_local_sgd(r, p, *d[torch.float64]),
    }
    if fully_shard_api():
        w["fsdp"] = lambda r, p, d: run_fsdp(r, p, *d[torch.float64])
        w["tensor par"] = lambda r, p, d: run_tensor_parallel(r, p, *d[torch.float64])
        w["pipeline"] = lambda r, p, d: run_pipeline(r, p, *d[torch.float64])
    only = os.environ.get("ALGORITHMS")  # a comma-separated subset, for a closer look
    return {k: v for k, v in w.items() if not only or k in only.split(",")}


def worker(args):
    import torch.distributed as dist

    import coral_torch  # noqa: F401  (registers "coral")

    global SHARED_DIR
    SHARED_DIR = args.out
    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    data = {d: make_data(d) for d in (torch.float64, torch.float32)}
    result = {}
    for name, fn in workloads().items():
        try:
            params, extra = fn(rank, world, data)
            result[name] = {"params": params, **extra}
        except Exception as e:  # noqa: BLE001 - reported by the driver, the next workload runs
            import traceback
            traceback.print_exc()
            result[name] = {"error": f"{type(e).__name__}: {e}"}
            dist.barrier()
    torch.save(result, os.path.join(args.out, f"{args.backend}-P{world}-r{rank}.pt"))
    dist.barrier()
    dist.destroy_process_group()


# ---- what one process computes for the same runs ----

def expect_adam(x, y):
    model = make_model(torch.float64, seed=100)
    opt = torch.optim.Adam(model.parameters(), lr=ADAM_LR)
    for s in range(STEPS):
        opt.zero_grad(set_to_none=True)
        ((model(x[s]) - y[s]) ** 2).mean().backward()
        opt.step()
    return params_of(model)


def expect_join(x, y, world):
    # DDP under Join divides by the initial world size: a step's gradient is the sum over the
    # ranks still in of their shard means, over world.
    model = make_model(torch.float64, seed=100)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for s in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = 0
        for r in range(world):
            if s < STEPS - JOIN_LAG * r:
                lo, hi = shard_of(r, world)
                loss = loss + ((model(x[s, lo:hi]) - y[s, lo:hi]) ** 2).mean() / world
        loss.backward()
        opt.step()
    return params_of(model)


def expect_local_sgd(x, y, world):
    models = [make_model(torch.float64, seed=100) for _ in range(world)]
    opts = [torch.optim.SGD(m.parameters(), lr=LR) for m in models]
    for s in range(LOCAL_STEPS):
        grads = []
        for r, m in enumerate(models):
            m.zero_grad(set_to_none=True)
            lo, hi = shard_of(r, world)
            ((m(x[s, lo:hi]) - y[s, lo:hi]) ** 2).mean().backward()
            grads.append([p.grad for p in m.parameters()])
        if s < LOCAL_START:  # DDP's global average
            for r, m in enumerate(models):
                for i, p in enumerate(m.parameters()):
                    p.grad = sum(g[i] for g in grads) / world
        for o in opts:
            o.step()
        if s >= LOCAL_START and (s - LOCAL_START) % AVG_PERIOD == 0:
            with torch.no_grad():
                for ps in zip(*(m.parameters() for m in models)):
                    mean = sum(p for p in ps) / world
                    for p in ps:
                        p.copy_(mean)
    return params_of(models[0])


def initial(name, world):
    """Each rank's parameters before training, for the workloads compared with gloo alone."""
    if name == "pipeline":
        return [{f"stage {r} {k}": v for k, v in params_of(b).items()} for r, b in enumerate(pipeline_blocks(world))]
    return [params_of(make_model(torch.float64, seed=100))] * world


def gloo_sums_fp16():
    """Whether this torch's gloo sums float16 CPU tensors (torch 2.14's Debian build does not)."""
    cmd = [os.environ["CORAL_RUN"], "-n", "2", "--timeout", "60", sys.executable, os.path.abspath(__file__),
           "--probe-fp16"]
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=90).returncode == 0


def probe_fp16():
    import torch.distributed as dist

    dist.init_process_group("gloo")
    t = torch.ones(4, dtype=torch.float16)
    dist.all_reduce(t)
    ok = torch.equal(t, torch.full((4,), 2.0, dtype=torch.float16))
    dist.destroy_process_group()  # (torch 2.6's gloo aborts at exit without it)
    sys.exit(0 if ok else 1)


def launch(backend, world, out):
    cmd = [os.environ["CORAL_RUN"], "-n", str(world), "--timeout", str(LAUNCH_TIMEOUT_S), sys.executable,
           os.path.abspath(__file__), "--worker", "--backend", backend, "--out", out]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=LAUNCH_TIMEOUT_S + 30)
    print(f"{backend} P={world}: exit {p.returncode} in {time.monotonic() - t0:.1f} s")
    if p.returncode != 0:
        print(p.stdout[-6000:])
    ranks = []
    for r in range(world):
        path = os.path.join(out, f"{backend}-P{world}-r{r}.pt")
        ranks.append(torch.load(path) if os.path.exists(path) else None)
    return ranks


def main():
    x64, y64 = make_data(torch.float64)
    sgd64, sgd32 = reference(torch.float64), reference(torch.float32)
    adam = expect_adam(x64, y64)
    names = list(workloads())
    print(f"workloads: {', '.join(names)}" + ("" if "fsdp" in names else " (this torch has no FSDP2, tensor or pipeline parallelism)"))
    failures = []
    # Per P and workload: (expected parameters or None, tolerance against them, against gloo's).
    expected = {world: {"zero adam": (adam, 1e-10, 1e-10),
                        "powersgd": (None, None, 1e-9),
                        # fp16 gradients: each backend rounds its partial sums in its own order
                        "fp16 hook": (sgd32, 2e-3, 1e-5 if world == 2 else 2e-3),
                        "join": (expect_join(x64, y64, world), 1e-12, 1e-12),
                        "local sgd": (expect_local_sgd(x64, y64, world), 1e-12, 1e-12),
                        "fsdp": (sgd64, 1e-12, 1e-12),
                        "tensor par": (sgd64, 1e-12, 1e-12),
                        "pipeline": (None, None, 1e-12)} for world in WORLD_SIZES}

    # The comparisons must be able to fail: each expected result differs from plain
    # synchronous SGD's (or Adam's from SGD's) by far more than its tolerance.
    for name in ("join", "local sgd", "zero adam"):
        want, tol, _ = expected[2][name]
        d = rel_diff(want, sgd64)
        print(f"self-check {name}: {d:.3g} from synchronous SGD (tolerance {tol:g})")
        if d < 1e3 * tol:
            failures.append(f"self-check {name}: cannot tell it from synchronous SGD")

    if not os.environ.get("CORAL_RUN"):
        sys.exit("test_algorithms: CORAL_RUN (the coral-run launcher) is not set")
    if "fp16 hook" in names:
        os.environ["GLOO_FP16"] = "1" if gloo_sums_fp16() else "0"
    with tempfile.TemporaryDirectory(prefix="coral-alg-") as out:
        got = {(b, p): launch(b, p, out) for p in WORLD_SIZES for b in BACKENDS}
        print(f"\n{'workload':10} {'P':>2} {'backend':8} {'vs expected':>12} {'vs gloo':>10} {'rank spread':>12}")
        for world in WORLD_SIZES:
            for name in names:
                want, tol, gtol = expected[world][name]
                for backend in BACKENDS:
                    ranks = got[backend, world]
                    tag = f"{name} P={world} {backend}"
                    if any(r is None for r in ranks):
                        failures.append(f"{tag}: a rank wrote no result")
                        continue
                    errs = [r[name]["error"].splitlines()[0] for r in ranks if "error" in r[name]]
                    gloo_errs = [r[name]["error"].splitlines()[0] for r in got["gloo", world]
                                 if r is not None and "error" in r[name]]
                    if errs and backend == "gloo":  # (torch 2.14's gloo has no float16 sum on the CPU)
                        print(f"{name:10} {world:2} gloo     cannot run it: {errs[0][:90]}")
                        continue
                    if errs and gloo_errs and errs[0] == gloo_errs[0]:  # (torch 2.6's FSDP2 on the CPU)
                        print(f"{name:10} {world:2} {backend:8} fails as gloo does, in torch: {errs[0][:70]}")
                        continue
                    if errs:
                        failures.append(f"{tag}: {errs[0]}")
                        continue
                    if "skip" in ranks[0][name]:
                        print(f"{name:10} {world:2} {backend:8} skipped: {ranks[0][name]['skip']}")
                        continue
                    mine = [r[name]["params"] for r in ranks]
                    # The replicas must agree with each other (a pipeline's ranks hold different stages).
                    spread = 0.0 if ranks[0][name].get("sharded") else max(rel_diff(p, mine[0]) for p in mine)
                    if not spread <= (tol or gtol):
                        failures.append(f"{tag}: ranks differ by {spread:.3g}")
                    vs_want = None if want is None else max(rel_diff(p, want) for p in mine)
                    if vs_want is not None and not vs_want <= tol:
                        failures.append(f"{tag}: {vs_want:.3g} from the expected > {tol:g}")
                    vs_gloo = None
                    if backend != "gloo" and all(r is not None and r[name].get("params") for r in got["gloo", world]):
                        vs_gloo = max(rel_diff(p, g[name]["params"]) for p, g in zip(mine, got["gloo", world]))
                        if not vs_gloo <= gtol:
                            failures.append(f"{tag}: {vs_gloo:.3g} from gloo > {gtol:g}")
                    elif backend != "gloo" and want is None:
                        failures.append(f"{tag}: nothing to compare with (gloo failed)")
                    if want is None:  # matching gloo must mean something: training moved the weights
                        moved = min(rel_diff(p, i) for p, i in zip(mine, initial(name, world)))
                        if not moved > 1e3 * gtol:
                            failures.append(f"{tag}: the weights moved by only {moved:.3g}")
                    if name == "fsdp" and not all(r[name].get("checkpoint") for r in ranks):
                        failures.append(f"{tag}: weights saved with torch.distributed.checkpoint did not load back")
                    if name == "zero adam":  # rank 0's consolidated state: every parameter's, all steps
                        n = len(list(mine[0]))
                        if ranks[0][name].get("adam_states") != n or ranks[0][name].get("adam_steps") != [STEPS]:
                            failures.append(f"{tag}: consolidated Adam state {ranks[0][name].get('adam_states')} "
                                            f"entries, steps {ranks[0][name].get('adam_steps')}; want {n}, [{STEPS}]")
                    fmt = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
                    print(f"{name:10} {world:2} {backend:8} {fmt(vs_want):>12} {fmt(vs_gloo):>10} {spread:12.3g}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"\nOK: {', '.join(names)} over coral match the expected results and gloo's at P = 2, 3, 4")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--backend", default="coral")
    ap.add_argument("--out")
    ap.add_argument("--probe-fp16", action="store_true")
    a = ap.parse_args()
    if a.probe_fp16:
        probe_fp16()
    elif a.worker:
        worker(a)
    else:
        sys.exit(main())
