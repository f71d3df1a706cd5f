# The "coral" torch backend on the GPU machine's torch (2.x with CUDA): the Backend-API
# registration, CUDA tensors stream-ordered on torch's current stream, CPU tensors in the same
# group, and a few DDP steps equal to one process. Run under coral-run -n 2; exit 77: no CUDA torch.
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch_common import Checks, collectives, ddp_matches_one_process

if not torch.cuda.is_available():
    sys.exit(77)
import coral_torch  # noqa: E402

# Well inside the step's limit: a hang ends in Coral's message, which names what it waited for.
dist.init_process_group("coral", timeout=timedelta(seconds=60))
r, P = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(r % torch.cuda.device_count())
dev = torch.device("cuda")
check = Checks()

for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8):
    n = 1 << 20
    t = (torch.arange(n, device=dev) % 7 + r).to(dtype)
    dist.all_reduce(t)
    want = sum((torch.arange(n) % 7 + k) for k in range(P)).to(dtype)
    check(f"all_reduce cuda {dtype}", t, want, 0.0 if not dtype.is_floating_point else 1e-2 * P * 8)
    c = (torch.arange(16) + r).to(dtype)
    dist.all_reduce(c, op=dist.ReduceOp.MAX)
    check(f"all_reduce cpu {dtype}", c, (torch.arange(16) + P - 1).to(dtype))

# Stream order: a kernel queued right after the collective on the current stream sees its result.
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    x = torch.full((1 << 22,), float(r + 1), device=dev)
    dist.all_reduce(x)
    y = x * 2
torch.cuda.current_stream().wait_stream(s)  # check() reads on the default stream
check("stream order", y, torch.full((1 << 22,), 2.0 * P * (P + 1) / 2))
w = dist.all_reduce(torch.ones(8, device=dev), async_op=True)
fut = w.get_future()
fut.wait()
check("future", fut.value()[0], torch.full((8,), float(P)))

collectives(check, dev, r, P)
# Where each call waits on the host (CORAL_GPU_STREAM_WAIT=host), an unbatched ring of sends
# first hangs, as in NCCL (docs/gpu.md): there it is left out.
host_wait = os.environ.get("CORAL_GPU_STREAM_WAIT") == "host" or os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1"
if P > 1 and not host_wait:
    # A ring exchange of 4 MiB tensors as isend/irecv, sends first (pipeline-parallel stages do
    # this): the receive queued behind a waiting send must join it.
    nxt, prv = (r + 1) % P, (r - 1) % P
    out = torch.full((1 << 20,), float(r), device=dev)
    got = torch.empty(1 << 20, device=dev)
    works = [dist.isend(out, nxt), dist.irecv(got, prv)]
    for w_ in works:
        w_.wait()
    check("isend/irecv ring", got, torch.full((1 << 20,), float(prv)))

# A coalesced block on CUDA (torch 2's _coalescing_manager): its calls run as one Coral group,
# and a transposed output is copied back only once the group has run.
if int(torch.__version__.split(".")[0]) >= 2:
    a = torch.full((3, 4), float(r + 1), device=dev).t()
    b = torch.full((5,), float(r), device=dev)
    with dist._coalescing_manager(device=dev, async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    check("coalesced all_reduce, transposed", a, torch.full((4, 3), float(P * (P + 1) // 2)))
    check("coalesced all_reduce", b, torch.full((5,), float(P * (P - 1) // 2)))

ddp_matches_one_process(check, dev, r, P)

torch.cuda.synchronize()
dist.destroy_process_group()
sys.exit(check.report(r, f"torch {torch.__version__} coral backend"))
