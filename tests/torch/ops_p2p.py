"""test_ops.py's sections for point-to-point calls, barriers and coalesced blocks."""
import datetime
import time

import torch
import torch.distributed as dist

import harness as h
from harness import expect, expect_raises, fail, inputs, section
from refs import ALL, R, name, reduce


@section
def point_to_point():
    if h.WORLD < 2:
        return
    for dtype in ALL:
        for peer in range(1, h.WORLD):  # 0 <-> peer, each way, blocking
            xs = inputs(8, dtype, None, f"p2p{peer}")
            if h.RANK == 0:
                dist.send(xs[0].clone(), dst=peer)
                got = torch.zeros(8, dtype=dtype)
                dist.recv(got, src=peer)
                expect(f"recv {name(dtype)} from {peer}", got, xs[peer], exact=True)
            elif h.RANK == peer:
                got = torch.zeros(8, dtype=dtype)
                dist.recv(got, src=0)
                expect(f"recv {name(dtype)} from 0", got, xs[0], exact=True)
                dist.send(xs[peer].clone(), dst=0)
    nxt, prv = (h.RANK + 1) % h.WORLD, (h.RANK - 1) % h.WORLD
    for dtype in (torch.float32, torch.int8, torch.complex64, torch.bool):
        xs = inputs(10, dtype, None, "ring")
        # Every rank posts its send before its receive: only non-blocking calls allow that.
        got = torch.zeros(10, dtype=dtype)
        works = [dist.isend(xs[h.RANK].clone(), nxt), dist.irecv(got, prv)]
        for w in works:
            w.wait()
        expect(f"isend/irecv ring {name(dtype)}", got, xs[prv], exact=True)
        # A receive's work names its source, as gloo's does (torch 2 renamed the method).
        source = getattr(works[1], "source_rank", None) or getattr(works[1], "_source_rank")
        expect(f"irecv {name(dtype)} work's source rank", torch.tensor(source()), torch.tensor(prv), exact=True)
        got = torch.zeros(10, dtype=dtype)
        ops = [dist.P2POp(dist.isend, xs[h.RANK].clone(), nxt), dist.P2POp(dist.irecv, got, prv)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        expect(f"batch_isend_irecv ring {name(dtype)}", got, xs[prv], exact=True)


@section
def barrier():
    dist.barrier()
    # Rank 0 arrives late: the others must wait for it.
    if h.RANK == 0:
        time.sleep(0.5)
    t0 = time.monotonic()
    dist.barrier()
    waited = time.monotonic() - t0
    if h.RANK != 0 and waited < 0.3:
        fail("barrier", f"returned after {waited:.3f} s while rank 0 slept 0.5 s before entering")


@section
def monitored_barrier():
    # torch up to 2.6 or so serves dist.monitored_barrier for gloo only, before asking the backend;
    # the process group's own method reaches the backend on every torch.
    pg = dist.distributed_c10d._get_default_group()
    t = datetime.timedelta(seconds=30)
    try:
        dist.monitored_barrier(timeout=t)
    except (ValueError, RuntimeError) as e:  # 2.6: ValueError, 1.13: RuntimeError
        if "only implemented for GLOO" not in str(e):
            raise
        pg.monitored_barrier(t)

    def mb(timeout, wait_all_ranks=False):
        pg.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)

    mb(t, wait_all_ranks=True)
    if h.WORLD < 3:
        return
    # The last rank stays away: rank 0 names it, the others hear from rank 0 at once.
    short = datetime.timedelta(seconds=1)
    last = h.WORLD - 1
    if h.RANK == 0:
        expect_raises("monitored_barrier, a rank away", lambda: mb(short),
                      f"Rank {last} failed to pass monitoredBarrier")
    elif h.RANK != last:
        t0 = time.monotonic()
        expect_raises("monitored_barrier, a rank away (not rank 0)", lambda: mb(t),
                      f"Rank {h.RANK} successfully reached monitoredBarrier")
        if time.monotonic() - t0 > 15:
            fail("monitored_barrier, a rank away (not rank 0)", "learnt of rank 0's verdict only at its own timeout")
    # Ranks 2.. stay away; asked for all, rank 0 names every one.
    if h.WORLD >= 3 and h.RANK < 2:
        missing = ", ".join(str(r) for r in range(2, h.WORLD))
        if h.RANK == 0:
            expect_raises("monitored_barrier, wait_all_ranks",
                          lambda: mb(short, wait_all_ranks=True),
                          f"Ranks {missing} failed to pass monitoredBarrier")
        else:
            expect_raises("monitored_barrier, wait_all_ranks (rank 1)", lambda: mb(t),
                          f"Ranks {missing} failed")
    # The communicator itself is untouched.
    xs = inputs(4, torch.float32, R.SUM, "after_monitored")
    x = xs[h.RANK].clone()
    dist.all_reduce(x)
    expect("all_reduce after failed monitored barriers", x, reduce(xs, R.SUM))


@section
def coalescing():
    # torch 2's _coalescing_manager(group, device): the backend brackets the block and one work
    # covers it (torch >= 2.7 also sends batch_isend_irecv through it once the backend says it
    # coalesces). torch 1.13's manager takes a list of requests and leaves the backend out.
    if int(torch.__version__.split(".")[0]) < 2 or h.WORLD < 2:
        return
    nxt, prv = (h.RANK + 1) % h.WORLD, (h.RANK - 1) % h.WORLD
    cpu = torch.device("cpu")
    for async_ops in (True, False):
        xs = inputs(9, torch.int64, None, f"co_p2p{async_ops}")
        got = torch.zeros(9, dtype=torch.int64)
        ys = inputs(6, torch.float64, R.SUM, f"co_bc{async_ops}")
        b = ys[h.RANK].clone()
        with dist._coalescing_manager(device=cpu, async_ops=async_ops) as cm:
            # The receive first on every rank: the block must not run its members one by one.
            dist.irecv(got, prv)
            dist.isend(xs[h.RANK].clone(), nxt)
            dist.broadcast(b, src=h.WORLD - 1)
        if async_ops:
            if len(cm.works) != 1:
                fail("coalescing", f"{len(cm.works)} works for the block, want 1")
            cm.wait()
            if not all(w.is_completed() for w in cm.works):
                fail("coalescing", "a work is not completed after cm.wait()")
        expect(f"coalesced isend/irecv ring async_ops={async_ops}", got, xs[prv], exact=True)
        expect(f"coalesced broadcast async_ops={async_ops}", b, ys[h.WORLD - 1], exact=True)
    # all_reduce inside the block takes torch's fast path (one all_reduce_coalesced), still inside
    # the backend's bracket; the block's future carries every output.
    zs = [inputs(n, torch.float32, R.SUM, f"co_ar{n}") for n in (5, 0, 17)]
    ts = [z[h.RANK].clone() for z in zs]
    with dist._coalescing_manager(device=cpu, async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    fut = cm.works[0].get_future()
    fut.wait()
    for i, (t, z) in enumerate(zip(ts, zs)):
        expect(f"coalesced all_reduce tensor {i}", t, reduce(z, R.SUM))
    # torch calls no endCoalescing when the block's body raises: the backend's block stays open
    # until the thread's next block, which must work (and end torch's own leftover state).
    try:
        with dist._coalescing_manager(device=cpu, async_ops=True):
            raise KeyError("raised inside the block")
    except KeyError:
        pass
    xs = inputs(7, torch.int32, None, "co_after_raise")
    got = torch.zeros(7, dtype=torch.int32)
    with dist._coalescing_manager(device=cpu, async_ops=True) as cm:
        dist.irecv(got, prv)
        dist.isend(xs[h.RANK].clone(), nxt)
    cm.wait()
    expect("coalesced isend/irecv after a block that raised", got, xs[prv], exact=True)
    ys = inputs(3, torch.float32, R.SUM, "co_after_raise_ar")
    y = ys[h.RANK].clone()
    dist.all_reduce(y)
    expect("all_reduce after a block that raised", y, reduce(ys, R.SUM))
    # What torch >= 2.7 decides from: the backend says it coalesces where torch can ask.
    backend = dist.distributed_c10d._get_default_group()._get_backend(cpu)
    if hasattr(type(backend), "supports_coalescing") and not backend.supports_coalescing:
        fail("coalescing", "supports_coalescing is False")


@section
def time_estimate():
    # torch's _time_estimator (torch 2.14; ProcessGroupNCCL's ncclGroupSimulateEnd elsewhere):
    # the calls inside are priced by Coral's cost model and not run.
    cpu = torch.device("cpu")
    if not hasattr(dist, "_time_estimator") or not dist.group.WORLD._get_backend(cpu).supports_time_estimate:
        return
    xs = inputs(1 << 16, torch.float32, R.SUM, "estimate")
    small, large = xs[h.RANK][:1024].clone(), xs[h.RANK].clone()
    with dist._time_estimator(device=cpu) as one:
        dist.all_reduce(small)
    with dist._time_estimator(device=cpu) as two:
        dist.all_reduce(small)
        work = dist.all_reduce(large, async_op=True)
        dist.broadcast(large, src=0)
    if not work.is_completed():
        fail("time_estimate", "a priced all_reduce's work is not completed")
    expect("tensors inside a time estimate are untouched", large, xs[h.RANK], exact=True)
    expect("small tensor inside a time estimate is untouched", small, xs[h.RANK][:1024], exact=True)
    # One rank moves nothing: the model prices messages only.
    if h.WORLD == 1 and not (one.estimated_time == 0 and two.estimated_time == 0):
        fail("time_estimate", f"one rank's estimates are {one.estimated_time} and {two.estimated_time} us, want 0")
    if h.WORLD > 1 and not (0 < one.estimated_time < two.estimated_time < 1e6):
        fail("time_estimate", f"{one.estimated_time} us for one small all_reduce, {two.estimated_time} us with "
             "a large all_reduce and a broadcast after it")
    # Nothing of the estimate is left open: the next calls run.
    dist.all_reduce(large)
    expect("all_reduce after a time estimate", large, reduce(xs, R.SUM))
