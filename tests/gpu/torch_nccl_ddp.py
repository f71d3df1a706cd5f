# PyTorch's own NCCL backend (ProcessGroupNCCL) over Coral's drop-in libnccl.so.2, on the GPU
# machine: several ranks on the one GPU (real NCCL refuses that: "Duplicate GPU detected"), the
# collectives DDP and FSDP-style code call, then DDP steps whose parameters equal one process's.
# Run as: coral-run -n P env LD_PRELOAD=<build>/src/compat/nccl/libnccl.so.2 python3 this.py
# Exit 77: no CUDA torch. TORCH_NCCL_DDP_BACKEND=coral runs the same checks on CPU tensors through
# the coral backend, which tries the script itself where there is no GPU.
import importlib
import os
import sys

import torch
import torch.distributed as dist
from torch_common import Checks, collectives, ddp_matches_one_process

backend = os.environ.get("TORCH_NCCL_DDP_BACKEND", "nccl")
if backend == "nccl" and not torch.cuda.is_available():
    sys.exit(77)
if backend != "nccl":
    importlib.import_module("coral_torch")

if backend == "nccl":
    torch.cuda.set_device(0)
    # A bound device makes torch create the communicator at once, and build new_group's with
    # ncclCommSplit instead of a new unique id: the shim's split runs too.
    try:
        dist.init_process_group(backend, device_id=torch.device("cuda", 0))
    except TypeError:  # torch before 2.3
        dist.init_process_group(backend)
else:
    dist.init_process_group(backend)
r, P = dist.get_rank(), dist.get_world_size()
dev = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
check = Checks()

# The library torch talks to must be Coral's: it reports the header's version and runs P ranks
# on one device; LD_PRELOAD missing would show as NCCL's duplicate-GPU error instead.
if backend == "nccl":
    preload = os.environ.get("LD_PRELOAD", "")
    if "libnccl.so.2" not in preload or preload.split(":")[0] not in open("/proc/self/maps").read():
        check.bad.append(f"the drop-in is not loaded (LD_PRELOAD={preload!r})")
    if r == 0:
        # A second libnccl here (torch's wheel dlopening its own by path) would mean torch
        # might not be talking to the drop-in: print them all.
        libs = sorted({ln.split()[-1] for ln in open("/proc/self/maps") if "libnccl" in ln})
        print(f"torch {torch.__version__}, NCCL version torch sees: {torch.cuda.nccl.version()}, loaded: {libs}")

for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8):
    t = (torch.arange(1 << 16, device=dev) % 5 + r).to(dtype)
    dist.all_reduce(t)
    want = sum((torch.arange(1 << 16) % 5 + k) for k in range(P)).to(dtype)
    check(f"all_reduce {dtype}", t, want)
m = torch.full((100,), float(r), device=dev)
dist.all_reduce(m, op=dist.ReduceOp.MAX)
check("all_reduce MAX", m, torch.full((100,), float(P - 1)))
a = torch.full((100,), float(r + 1), device=dev)
dist.all_reduce(a, op=dist.ReduceOp.AVG)
check("all_reduce AVG", a, torch.full((100,), (P + 1) / 2.0), 1e-6)
if hasattr(dist, "_make_nccl_premul_sum"):
    pm = torch.full((100,), float(r + 1), device=dev)
    dist.all_reduce(pm, op=dist._make_nccl_premul_sum(0.5))
    check("all_reduce PREMUL_SUM", pm, torch.full((100,), 0.25 * P * (P + 1)), 1e-6)
red = torch.full((10,), float(r), device=dev)
dist.reduce(red, dst=0)
if r == 0:
    check("reduce", red, torch.full((10,), float(P * (P - 1) // 2)))
lst = [torch.empty(7, device=dev) for _ in range(P)]
dist.all_gather(lst, torch.full((7,), float(r), device=dev))
check("all_gather", torch.stack(lst), torch.arange(P).float().repeat_interleave(7).view(P, 7))
collectives(check, dev, r, P)
# Uneven splits: rank k sends k+1 elements to every peer.
out = torch.empty(sum(k + 1 for k in range(P)), device=dev)
dist.all_to_all_single(out, torch.full((P * (r + 1),), float(r), device=dev),
                       output_split_sizes=[k + 1 for k in range(P)], input_split_sizes=[r + 1] * P)
check("all_to_all_single uneven", out, torch.cat([torch.full((k + 1,), float(k)) for k in range(P)]))
w = dist.all_reduce(torch.ones(8, device=dev), async_op=True)
w.wait()
dist.barrier()
# Sub-groups of two ranks (torch builds them with ncclCommSplit when the device is bound), and
# one of the last rank alone.
pair = dist.new_group([0, 1]) if P > 1 else None
last = dist.new_group([P - 1])
if P > 1 and r < 2:
    e = torch.full((5,), float(r + 1), device=dev)
    dist.all_reduce(e, group=pair)
    check("new_group all_reduce", e, torch.full((5,), 3.0))
    g = torch.empty(2 * 3, device=dev)
    dist.all_gather_into_tensor(g, torch.full((3,), float(r), device=dev), group=pair)
    check("new_group all_gather_into_tensor", g, torch.tensor([0.0] * 3 + [1.0] * 3))
if r == P - 1:
    e = torch.full((5,), 7.0, device=dev)
    dist.all_reduce(e, group=last)
    check("one-rank group all_reduce", e, torch.full((5,), 7.0))

ddp_matches_one_process(check, dev, r, P)

if dev.type == "cuda":
    torch.cuda.synchronize()
dist.destroy_process_group()
sys.exit(check.report(r, f"torch {torch.__version__} {backend} backend over coral, {P} ranks"))
