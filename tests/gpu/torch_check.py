# The "coral" torch backend on the GPU machine's torch (2.x with CUDA): the Backend-API
# registration, CUDA tensors stream-ordered on torch's current stream, CPU tensors in the same
# group, and a few DDP steps equal to one process. Run under coral-run -n 2; exit 77: no CUDA torch.
import sys

import torch
import torch.distributed as dist

if not torch.cuda.is_available():
    sys.exit(77)
import coral_torch  # noqa: E402

dist.init_process_group("coral")
r, P = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(r % torch.cuda.device_count())
dev = torch.device("cuda")
bad = []


def check(name, got, want, tol=0.0):
    got, want = got.double().cpu(), want.double().cpu()
    if got.shape != want.shape or (got - want).abs().max().item() > tol:
        bad.append(f"{name}: got {got.flatten()[:6].tolist()} want {want.flatten()[:6].tolist()}")


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
check("stream order", y, torch.full((1 << 22,), 2.0 * P * (P + 1) / 2))
w = dist.all_reduce(torch.ones(8, device=dev), async_op=True)
fut = w.get_future()
fut.wait()
check("future", fut.value()[0], torch.full((8,), float(P)))

b = torch.full((1000,), float(r), device=dev)
dist.broadcast(b, src=P - 1)
check("broadcast", b, torch.full((1000,), float(P - 1)))
ag = torch.empty(P * 100, device=dev)
dist.all_gather_into_tensor(ag, torch.full((100,), float(r), device=dev))
check("all_gather_into_tensor", ag, torch.arange(P).repeat_interleave(100).float())
rs = torch.empty(100, device=dev)
dist.reduce_scatter_tensor(rs, torch.arange(P * 100, device=dev).float())
check("reduce_scatter_tensor", rs, P * (torch.arange(100) + 100 * r).float())
a2a = torch.empty(P * 4, device=dev)
dist.all_to_all_single(a2a, torch.arange(P * 4, device=dev).float() + 1000 * r)
check("all_to_all_single", a2a, torch.cat([torch.arange(4) + 4 * r + 1000 * k for k in range(P)]).float())
if P > 1:
    if r == 0:
        dist.send(torch.full((64,), 7.0, device=dev), 1)
    elif r == 1:
        got = torch.zeros(64, device=dev)
        dist.recv(got, 0)
        check("send/recv", got, torch.full((64,), 7.0))
    # A ring exchange of 4 MiB tensors, sends first (pipeline-parallel stages do this), both
    # as isend/irecv and as batch_isend_irecv, which torch 2 runs as a coalesced block (one
    # Coral group): the receives queued behind a waiting send must join it.
    nxt, prv = (r + 1) % P, (r - 1) % P
    out = torch.full((1 << 20,), float(r), device=dev)
    got = torch.empty(1 << 20, device=dev)
    works = [dist.isend(out, nxt), dist.irecv(got, prv)]
    for w_ in works:
        w_.wait()
    check("isend/irecv ring", got, torch.full((1 << 20,), float(prv)))
    out2, got2 = out * 2, torch.empty(1 << 20, device=dev)
    ops = [dist.P2POp(dist.isend, out2, nxt), dist.P2POp(dist.irecv, got2, prv)]
    for w_ in dist.batch_isend_irecv(ops):
        w_.wait()
    check("batch_isend_irecv ring", got2, torch.full((1 << 20,), 2.0 * prv))

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

# DDP on CUDA: two steps equal one process with the whole batch.
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4)).double()
ref = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4)).double()
ref.load_state_dict(model.state_dict())
ddp = torch.nn.parallel.DistributedDataParallel(model.to(dev), device_ids=[dev.index or 0])
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
for _ in range(5):
    X, Y = torch.randn(8 * P, 32, generator=g).double(), torch.randn(8 * P, 4, generator=g).double()
    opt.zero_grad()
    torch.nn.functional.mse_loss(ddp(X[8 * r:8 * (r + 1)].to(dev)), Y[8 * r:8 * (r + 1)].to(dev)).backward()
    opt.step()
    ropt.zero_grad()
    torch.nn.functional.mse_loss(ref(X), Y).backward()
    ropt.step()
for (name, p), q in zip(model.named_parameters(), ref.parameters()):
    check(f"ddp {name}", p, q, 1e-10)

torch.cuda.synchronize()
dist.destroy_process_group()
print(f"rank {r}: torch {torch.__version__} {len(bad)} failure(s)")
for b_ in bad:
    print(f"rank {r}: FAIL {b_}")
sys.exit(1 if bad else 0)
