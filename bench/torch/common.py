"""Shared setup of the torch benchmarks: the torch env:// variables from coral-run's CORAL_*
(a coral-run that exports RANK itself leaves them alone), both process groups, and reductions
of per-rank timings to rank 0."""
import os
import sys

os.environ.setdefault("RANK", os.environ.get("CORAL_RANK", "0"))
os.environ.setdefault("WORLD_SIZE", os.environ.get("CORAL_SIZE", "1"))
os.environ.setdefault("LOCAL_RANK", os.environ.get("CORAL_LOCAL_RANK", "0"))
os.environ.setdefault("LOCAL_WORLD_SIZE", os.environ.get("CORAL_LOCAL_SIZE", "1"))
if "MASTER_PORT" not in os.environ:
    sys.exit("bench/torch: MASTER_ADDR/MASTER_PORT unset: run under bench/torch/run.sh, torchrun, "
             "or a coral-run that exports them")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import coral_torch  # noqa: E402,F401  (registers the backend "coral")


def init(default="gloo"):
    """The default group of `default`, a second group of the other backend over the same ranks;
    returns {"coral": pg, "gloo": pg}."""
    other = "coral" if default == "gloo" else "gloo"
    dist.init_process_group(default)
    groups = {default: dist.group.WORLD, other: dist.new_group(backend=other)}
    return groups


def threads(arg):
    """torch's intra-op threads: arg, or the host's CPUs shared among the local ranks."""
    if arg <= 0:
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        arg = max(1, (os.cpu_count() or 1) // local)
    torch.set_num_threads(arg)
    return arg


def gather_max(values, group):
    """Element-wise max over ranks of a list of floats (rank 0 uses it)."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return t.tolist()
