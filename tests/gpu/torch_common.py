# Checks both GPU torch scripts make, whatever the backend (coral's, or torch's NCCL over the
# drop-in): collectives against values computed here, and DDP equal to one process.
import copy
import sys

import torch
import torch.distributed as dist


class Checks:
    """Collects failures; report() prints them and gives the exit code."""

    def __init__(self):
        self.bad = []

    def __call__(self, name, got, want, tol=0.0):
        got, want = got.double().cpu(), want.double().cpu()
        if got.shape != want.shape or (got - want).abs().max().item() > tol:
            self.bad.append(f"{name}: got {got.flatten()[:6].tolist()} want {want.flatten()[:6].tolist()}")

    def report(self, r, what):
        print(f"rank {r}: {what}: {len(self.bad)} failure(s)")
        for b in self.bad:
            print(f"rank {r}: FAIL {b}")
        sys.stdout.flush()
        return 1 if self.bad else 0


def collectives(check, dev, r, P):
    """broadcast, the *_tensor collectives, all_to_all_single, send/recv and a batched ring."""
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
    if P < 2:
        return
    if r == 0:
        dist.send(torch.full((64,), 7.0, device=dev), 1)
    elif r == 1:
        got = torch.zeros(64, device=dev)
        dist.recv(got, 0)
        check("send/recv", got, torch.full((64,), 7.0))
    # Every rank sends right and receives left, in one batch (torch 2 runs it as a coalesced
    # block): the receives queued behind a waiting send must join it.
    nxt, prv = (r + 1) % P, (r - 1) % P
    got = torch.empty(1 << 20, device=dev)
    ops = [dist.P2POp(dist.isend, torch.full((1 << 20,), 2.0 * r, device=dev), nxt),
           dist.P2POp(dist.irecv, got, prv)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check("batch_isend_irecv ring", got, torch.full((1 << 20,), 2.0 * prv))


def ddp_matches_one_process(check, dev, r, P, steps=10):
    """DDP in float64 with small buckets (several all-reduces per step, overlapping backward),
    SGD with momentum: each rank's shard of the global batch gives the parameters one process
    gets from the whole batch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4)).double().to(dev)
    ref = copy.deepcopy(model)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index or 0] if dev.type == "cuda" else None,
                                                    bucket_cap_mb=0.01)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    B = 8
    for _ in range(steps):
        X = torch.randn(B * P, 32, generator=g).double().to(dev)
        Y = torch.randn(B * P, 4, generator=g).double().to(dev)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(X[B * r:B * (r + 1)]), Y[B * r:B * (r + 1)]).backward()
        opt.step()
        ropt.zero_grad()
        torch.nn.functional.mse_loss(ref(X), Y).backward()
        ropt.step()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        check(f"ddp {name}", p, q, 1e-10)
