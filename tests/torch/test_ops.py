"""Every torch.distributed op x dtype of the backend "coral" against references computed here.

Driver (no arguments): runs this file with --worker under coral-run for 1 to 4 ranks; fails if
any run fails. Worker: checks everything, prints each failure with what was expected and got.
Env: CORAL_RUN (the launcher), TORCH_PYTHON (a python with torch), PYTHONPATH (coral_torch).
"""
import datetime
import os
import subprocess
import sys
import time
import warnings

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import expect, expect_raises, fail, inputs, section  # noqa: E402
from ops_p2p import barrier, coalescing, monitored_barrier, point_to_point, time_estimate  # noqa: E402
from refs import (ALL, COMPLEX, PREMUL, R, a2a_block, as_op, gather_into_tensor, name, opname, reduce,  # noqa: E402
                  reduce_ops, reduce_scatter_tensor, split)

RANK = WORLD = 0

@section
def all_reduce():
    # Sizes on both sides of small-message and pipelined algorithms.
    for n in (1, 7, 20001):
        for dtype in ALL:
            for op, factor in reduce_ops(dtype):
                xs = inputs(n, dtype, op, "ar")
                t = xs[RANK].clone()
                dist.all_reduce(t, op=as_op(op, factor))
                expect(f"all_reduce {opname(op)}{'' if factor is None else f'({factor})'} {name(dtype)} n={n}", t,
                       reduce(xs, op, factor))


@section
def all_reduce_coalesced():
    shapes = [(3,), (2, 4), (0,), (5, 1)]
    for dtype, op in ((torch.float32, R.SUM), (torch.int64, R.SUM), (torch.complex64, R.SUM),
                      (torch.int32, R.MAX), (torch.bfloat16, R.AVG)):
        per = [inputs(int(torch.Size(s).numel()), dtype, op, f"arc{i}") for i, s in enumerate(shapes)]
        ts = [p[RANK].clone().view(s) for p, s in zip(per, shapes)]
        dist.all_reduce_coalesced(ts, op=op)
        for i, (p, s) in enumerate(zip(per, shapes)):
            expect(f"all_reduce_coalesced {opname(op)} {name(dtype)} tensor {i}", ts[i], reduce(p, op).view(s))


@section
def broadcast():
    for n in (13, 50001):
        for dtype in ALL if n < 1000 else [torch.float32]:
            for root in range(WORLD):
                xs = inputs(n, dtype, None, f"bc{root}")
                t = xs[RANK].clone()
                dist.broadcast(t, src=root)
                expect(f"broadcast {name(dtype)} n={n} root={root}", t, xs[root], exact=True)


# Beyond SUM on every dtype: each other op once, integer AVG and PREMUL_SUM (their final scaling and
# pre-scaling run in the rooted and scattered algorithms too), and a large size.
LARGE = [(torch.float32, R.SUM, None), (torch.int32, R.AVG, None), (torch.uint8, R.BXOR, None)] + (
    [(torch.float32, R.PREMUL_SUM, 0.5), (torch.bfloat16, R.PREMUL_SUM, 2.0)] if PREMUL else [])
ROOTED = [(d, R.SUM, None) for d in ALL] + [
    (torch.int8, R.MAX, None), (torch.int64, R.MIN, None), (torch.float64, R.PRODUCT, None),
    (torch.float16, R.AVG, None), (torch.int32, R.BOR, None)] + LARGE[1:]


@section
def reduce_to_root():
    for n in (9, 30001):
        for dtype, op, factor in ROOTED if n < 1000 else LARGE:
            for root in range(WORLD):
                xs = inputs(n, dtype, op, f"rd{root}")
                t = xs[RANK].clone()
                dist.reduce(t, dst=root, op=as_op(op, factor))
                if RANK == root:  # other ranks' buffers are scratch, as in NCCL
                    expect(f"reduce {opname(op)} {name(dtype)} n={n} root={root}", t, reduce(xs, op, factor))


@section
def all_gather():
    for dtype in ALL:
        xs = inputs(6, dtype, None, "ag")
        t = xs[RANK].clone()
        outs = [torch.zeros(6, dtype=dtype) for _ in range(WORLD)]
        dist.all_gather(outs, t)
        for j in range(WORLD):
            expect(f"all_gather {name(dtype)} block {j}", outs[j], xs[j], exact=True)
        expect(f"all_gather {name(dtype)}: input left alone", t, xs[RANK], exact=True)
        for shape in ((WORLD * 6,), (WORLD, 6)):
            out = torch.zeros(shape, dtype=dtype)
            gather_into_tensor(out, t)
            expect(f"all_gather_into_tensor {name(dtype)} out{shape}", out, torch.stack(xs).view(shape), exact=True)
    for dtype in (torch.float32, torch.complex128):
        xs = inputs(40003, dtype, None, "agl")
        outs = [torch.zeros(40003, dtype=dtype) for _ in range(WORLD)]
        dist.all_gather(outs, xs[RANK].clone())
        expect(f"all_gather {name(dtype)} n=40003", torch.stack(outs), torch.stack(xs), exact=True)
        out = torch.zeros(WORLD * 40003, dtype=dtype)
        gather_into_tensor(out, xs[RANK].clone())
        expect(f"all_gather_into_tensor {name(dtype)} n=40003", out, torch.cat(xs), exact=True)


@section
def all_gather_coalesced():
    for dtype in (torch.float64, torch.int32, torch.complex64):
        a, b = inputs(3, dtype, None, "agc_a"), inputs(4, dtype, None, "agc_b")
        mine = [a[RANK].clone(), b[RANK].clone().view(2, 2)]
        outs = [[torch.zeros(3, dtype=dtype), torch.zeros(2, 2, dtype=dtype)] for _ in range(WORLD)]
        dist.all_gather_coalesced(outs, mine)
        for j in range(WORLD):
            expect(f"all_gather_coalesced {name(dtype)} rank {j} tensor 0", outs[j][0], a[j], exact=True)
            expect(f"all_gather_coalesced {name(dtype)} rank {j} tensor 1", outs[j][1], b[j].view(2, 2), exact=True)


@section
def gather_scatter():
    for dtype in ALL:
        for root in range(WORLD):
            xs = inputs(5, dtype, None, f"ga{root}")
            outs = [torch.zeros(5, dtype=dtype) for _ in range(WORLD)] if RANK == root else None
            dist.gather(xs[RANK].clone(), gather_list=outs, dst=root)
            if RANK == root:
                for j in range(WORLD):
                    expect(f"gather {name(dtype)} root={root} block {j}", outs[j], xs[j], exact=True)
            blocks = inputs(5, dtype, None, f"sc{root}")  # root's list: block j for rank j
            out = torch.zeros(5, dtype=dtype)
            dist.scatter(out, scatter_list=[b.clone() for b in blocks] if RANK == root else None, src=root)
            expect(f"scatter {name(dtype)} root={root}", out, blocks[RANK], exact=True)


@section
def reduce_scatter():
    for n in (4, 10007):
        for dtype, op, factor in ROOTED if n < 1000 else LARGE:
            xs = inputs(WORLD * n, dtype, op, "rs")  # rank r's input; block j goes to rank j
            want = reduce(xs, op, factor).view(WORLD, n)[RANK]
            what = f"{opname(op)} {name(dtype)} n={n}"
            out = torch.zeros(n, dtype=dtype)
            dist.reduce_scatter(out, list(xs[RANK].clone().view(WORLD, n)), op=as_op(op, factor))
            expect(f"reduce_scatter {what}", out, want)
            out = torch.zeros(n, dtype=dtype)
            reduce_scatter_tensor(out, xs[RANK].clone(), as_op(op, factor))
            expect(f"reduce_scatter_tensor {what}", out, want)
    # The list form with blocks of different sizes (rank j's is j + 1 elements).
    for dtype in (torch.float32, torch.int64, torch.complex64):
        sizes = [j + 1 for j in range(WORLD)]
        xs = inputs(sum(sizes), dtype, R.SUM, "rsv")
        out = torch.zeros(RANK + 1, dtype=dtype)
        dist.reduce_scatter(out, list(xs[RANK].clone().split(sizes)))
        expect(f"reduce_scatter uneven {name(dtype)}", out, reduce(xs, R.SUM).split(sizes)[RANK])


@section
def all_to_all():
    for dtype in (torch.float32, torch.int64, torch.complex128, torch.uint8, torch.bool, torch.bfloat16, torch.int8):
        # Equal blocks, no splits.
        t = torch.cat([a2a_block(RANK, j, 2, dtype) for j in range(WORLD)])
        out = torch.zeros_like(t)
        dist.all_to_all_single(out, t)
        want = torch.cat([a2a_block(j, RANK, 2, dtype) for j in range(WORLD)])
        expect(f"all_to_all_single {name(dtype)} even", out, want, exact=True)
        # Uneven splits with zero-row blocks.
        ins, outs = [split(RANK, j) for j in range(WORLD)], [split(j, RANK) for j in range(WORLD)]
        t = torch.cat([a2a_block(RANK, j, ins[j], dtype) for j in range(WORLD)])
        out = torch.zeros(sum(outs), 2, dtype=dtype)
        dist.all_to_all_single(out, t, output_split_sizes=outs, input_split_sizes=ins)
        want = torch.cat([a2a_block(j, RANK, outs[j], dtype) for j in range(WORLD)])
        expect(f"all_to_all_single {name(dtype)} splits in={ins} out={outs}", out, want, exact=True)
        # List form, the same uneven blocks.
        out_list = [torch.zeros(outs[j], 2, dtype=dtype) for j in range(WORLD)]
        dist.all_to_all(out_list, [a2a_block(RANK, j, ins[j], dtype) for j in range(WORLD)])
        for j in range(WORLD):
            expect(f"all_to_all {name(dtype)} from {j}", out_list[j], a2a_block(j, RANK, outs[j], dtype), exact=True)


@section
def non_contiguous():
    for dtype in (torch.float32, torch.int64, torch.complex64, torch.bool, torch.float16):
        xs = inputs(12, dtype, R.SUM, "nc")
        base = xs[RANK].clone().view(3, 4)
        t = base.t()  # a transposed view: what the backend reduces is what t reads
        dist.all_reduce(t)
        expect(f"all_reduce {name(dtype)} transposed", t, reduce([x.view(3, 4).t() for x in xs], R.SUM))
        expect(f"all_reduce {name(dtype)} transposed: base updated", base, reduce(xs, R.SUM).view(3, 4))
        for root in range(WORLD):
            ys = inputs(24, dtype, None, f"ncb{root}")
            big = ys[RANK].clone().view(4, 6)
            view = big[:, ::2]  # every other column
            dist.broadcast(view, src=root)
            want = ys[RANK].view(4, 6).clone()
            want[:, ::2] = ys[root].view(4, 6)[:, ::2]
            expect(f"broadcast {name(dtype)} strided root={root} (untouched columns too)", big, want, exact=True)
        if dtype.is_floating_point or dtype.is_complex:
            # Into a leaf that requires grad (a transposed nn.Parameter), as gloo allows: the copy
            # back runs outside autograd, on the completion thread too (async, through a future).
            for asynchronous in (False, True):
                p = torch.nn.Parameter(xs[RANK].clone().view(3, 4).t())
                if asynchronous:
                    dist.broadcast(p, src=0, async_op=True).get_future().wait()
                else:
                    dist.broadcast(p, src=0)
                expect(f"broadcast {name(dtype)} into a transposed Parameter (async {asynchronous})",
                       p.detach(), xs[0].view(3, 4).t(), exact=True)
        zs = inputs(5, dtype, None, "nca")
        grid = torch.zeros(5, WORLD + 1, dtype=dtype)
        dist.all_gather([grid[:, j] for j in range(WORLD)], zs[RANK].clone())  # columns of grid
        want = torch.zeros(5, WORLD + 1, dtype=dtype)
        want[:, :WORLD] = torch.stack(zs, 1)
        expect(f"all_gather {name(dtype)} into columns", grid, want, exact=True)
        big = torch.zeros(2 * WORLD * 5, dtype=dtype)
        gather_into_tensor(big[::2], zs[RANK].clone())
        want = torch.zeros(2 * WORLD * 5, dtype=dtype)
        want[::2] = torch.cat(zs)
        expect(f"all_gather_into_tensor {name(dtype)} strided output", big, want, exact=True)
        if WORLD >= 2:
            ws = inputs(12, dtype, None, "ncr")
            if RANK == 1:
                dist.send(ws[1].clone(), dst=0)
            elif RANK == 0:
                m = torch.zeros(4, 3, dtype=dtype)
                dist.recv(m.t(), src=1)
                expect(f"recv {name(dtype)} into transposed view", m.t(), ws[1].view(3, 4), exact=True)


@section
def zero_elements():
    for dtype in (torch.float32, torch.int32, torch.complex128, torch.bool):
        e = torch.zeros(0, dtype=dtype)
        dist.all_reduce(e)
        dist.all_reduce(torch.zeros(0, 3, dtype=dtype), op=R.MAX if dtype not in COMPLEX else R.SUM)
        for root in range(WORLD):
            dist.broadcast(torch.zeros(0, dtype=dtype), src=root)
            dist.reduce(torch.zeros(0, dtype=dtype), dst=root)
        outs = [torch.zeros(0, dtype=dtype) for _ in range(WORLD)]
        dist.all_gather(outs, e)
        gather_into_tensor(torch.zeros(0, dtype=dtype), e)
        reduce_scatter_tensor(torch.zeros(0, dtype=dtype), torch.zeros(0, dtype=dtype), R.SUM)
        dist.reduce_scatter(torch.zeros(0, dtype=dtype), [torch.zeros(0, dtype=dtype) for _ in range(WORLD)])
        dist.all_to_all_single(torch.zeros(0, 2, dtype=dtype), torch.zeros(0, 2, dtype=dtype),
                               [0] * WORLD, [0] * WORLD)
        dist.all_to_all([torch.zeros(0, dtype=dtype) for _ in range(WORLD)],
                        [torch.zeros(0, dtype=dtype) for _ in range(WORLD)])
        dist.gather(e, gather_list=[torch.zeros(0, dtype=dtype) for _ in range(WORLD)] if RANK == 0 else None)
        dist.scatter(e, scatter_list=[torch.zeros(0, dtype=dtype) for _ in range(WORLD)] if RANK == 0 else None)
        if WORLD >= 2 and RANK < 2:
            (dist.send if RANK == 0 else dist.recv)(torch.zeros(0, dtype=dtype), 1 - RANK)
        # The collective after the empty ones still pairs up right.
        xs = inputs(3, dtype, R.SUM, "z")
        t = xs[RANK].clone()
        dist.all_reduce(t)
        expect(f"all_reduce {name(dtype)} after zero-element ops", t, reduce(xs, R.SUM))


@section
def aliasing_and_scalars():
    # FSDP's in-place forms: the input is this rank's block of the output (and the reverse).
    for dtype in (torch.float32, torch.int64, torch.complex64):
        xs, n = inputs(5, dtype, None, "inpl"), 5
        out = torch.zeros(WORLD * n, dtype=dtype)
        out[RANK * n:(RANK + 1) * n] = xs[RANK]
        gather_into_tensor(out, out[RANK * n:(RANK + 1) * n])
        expect(f"all_gather_into_tensor {name(dtype)} in place", out, torch.cat(xs), exact=True)
        ys = inputs(WORLD * n, dtype, R.SUM, "inplrs")
        t = ys[RANK].clone()
        reduce_scatter_tensor(t[RANK * n:(RANK + 1) * n], t, R.SUM)
        expect(f"reduce_scatter_tensor {name(dtype)} in place", t[RANK * n:(RANK + 1) * n],
               reduce(ys, R.SUM)[RANK * n:(RANK + 1) * n])
        # A contiguous slice at an offset: only the slice changes.
        t = ys[RANK].clone()
        dist.all_reduce(t[2:2 + n])
        want = ys[RANK].clone()
        want[2:2 + n] = reduce([y[2:2 + n] for y in ys], R.SUM)
        expect(f"all_reduce {name(dtype)} offset slice", t, want)
    # 0-dim tensors, as a loss is.
    for dtype in (torch.float32, torch.int32, torch.bool):
        xs = [x.view(()) for x in inputs(1, dtype, R.SUM, "scalar")]
        t = xs[RANK].clone()
        dist.all_reduce(t)
        expect(f"all_reduce 0-dim {name(dtype)}", t, reduce(xs, R.SUM))
        outs = [torch.zeros((), dtype=dtype) for _ in range(WORLD)]
        dist.all_gather(outs, xs[RANK].clone())
        expect(f"all_gather 0-dim {name(dtype)}", torch.stack(outs), torch.stack(xs), exact=True)
        t = xs[RANK].clone()
        dist.broadcast(t, src=WORLD - 1)
        expect(f"broadcast 0-dim {name(dtype)}", t, xs[WORLD - 1], exact=True)


@section
def groups():
    specs = [list(range(WORLD))]
    if WORLD >= 3:
        specs += [[0, 2], [1, 2, 3] if WORLD >= 4 else [1, 2]]
    made = [(ranks, dist.new_group(ranks)) for ranks in specs]  # every rank creates every group
    for ranks, g in made:
        if RANK not in ranks:
            continue
        for dtype in (torch.float32, torch.int64, torch.bool):
            xs = inputs(6, dtype, R.SUM, f"g{ranks}", ranks)
            mine = xs[ranks.index(RANK)]
            t = mine.clone()
            dist.all_reduce(t, group=g)
            expect(f"group {ranks} all_reduce {name(dtype)}", t, reduce(xs, R.SUM))
            outs = [torch.zeros(6, dtype=dtype) for _ in ranks]
            dist.all_gather(outs, mine.clone(), group=g)
            for j, r in enumerate(ranks):
                expect(f"group {ranks} all_gather {name(dtype)} from {r}", outs[j], xs[j], exact=True)
            t = mine.clone()
            dist.broadcast(t, src=ranks[-1], group=g)  # src is a global rank
            expect(f"group {ranks} broadcast {name(dtype)} from {ranks[-1]}", t, xs[-1], exact=True)


@section
def async_ops():
    n = 100003
    cases = [(torch.float32, R.SUM), (torch.int64, R.MAX), (torch.float64, R.AVG), (torch.bfloat16, R.SUM),
             (torch.int32, R.BXOR), (torch.complex64, R.SUM)] + [(torch.float32, R.PREMUL_SUM)] * PREMUL
    xss = [inputs(n, d, op, f"async{i}") for i, (d, op) in enumerate(cases)]
    ts = [xs[RANK].clone() for xs in xss]
    # The PREMUL_SUM op object is gone before the call completes: the backend must not need it.
    works = [dist.all_reduce(t, op=as_op(op, 0.5), async_op=True) for t, (_, op) in zip(ts, cases)]
    # CPU work while they run; its result is checked so it cannot be optimized into nothing.
    a = torch.arange(40000, dtype=torch.float64).view(200, 200) / 40000
    for _ in range(20):
        a = a @ a.t() / 200
    if not bool(torch.isfinite(a).all()):
        fail("async_ops", "CPU work gave non-finite values")
    for i, (w, t, xs, (d, op)) in enumerate(zip(works, ts, xss, cases)):
        w.wait()
        what = f"async all_reduce #{i} {opname(op)} {name(d)}"
        if not w.is_completed():
            fail(what, "is_completed() is False after wait()")
        if hasattr(w, "is_success") and not w.is_success():
            fail(what, "is_success() is False after wait()")
        expect(what, t, reduce(xs, op, 0.5))
    # The future's value is the output list, already holding the result (a strided view too).
    xs = inputs(12, torch.float32, R.SUM, "fut")
    base = xs[RANK].clone().view(3, 4)
    t = base.t()
    fut = dist.all_reduce(t, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    v = fut.wait()
    want = reduce([x.view(3, 4).t() for x in xs], R.SUM)
    if not isinstance(v, list) or len(v) != 1 or not isinstance(v[0], torch.Tensor):
        fail("all_reduce future", f"value is {type(v).__name__} {v!r}, want a list of one tensor")
    else:
        expect("all_reduce future value", v[0], want)
        expect("all_reduce future value is the caller's tensor", t, want)
    expect("all_reduce future then()", doubled.wait(), want * 2)


@section
def errors():
    def recv_any():
        dist.recv(torch.zeros(2), src=None)
    expect_raises("recv(src=None)", recv_any, "any source", "src")
    expect_raises("all_reduce int16", lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int16)), "torch.int16")
    expect_raises("broadcast int16", lambda: dist.broadcast(torch.zeros(3, dtype=torch.int16), src=0),
                  "torch.int16")
    for op in (R.BAND, R.BOR, R.BXOR):
        expect_raises(f"all_reduce {opname(op)} float32", lambda: dist.all_reduce(torch.ones(3), op=op), opname(op))
    expect_raises("all_reduce AVG bool", lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool), op=R.AVG), "AVG")
    # torch 2 refuses these itself (ValueError) before the backend sees them; 1.13 leaves it to us.
    for op in (R.PRODUCT, R.MIN, R.MAX):
        expect_raises(f"all_reduce {opname(op)} complex64",
                      lambda: dist.all_reduce(torch.ones(3, dtype=torch.complex64), op=op), opname(op), "complex",
                      types=(RuntimeError, ValueError))
    # The communicator is still usable after the refused calls.
    xs = inputs(4, torch.float32, R.SUM, "after_errors")
    t = xs[RANK].clone()
    dist.all_reduce(t)
    expect("all_reduce after refused calls", t, reduce(xs, R.SUM))


SECTIONS = [all_reduce, all_reduce_coalesced, broadcast, reduce_to_root, all_gather, all_gather_coalesced,
            gather_scatter, reduce_scatter, all_to_all, point_to_point, barrier, monitored_barrier, non_contiguous,
            zero_elements, aliasing_and_scalars, groups, async_ops, coalescing, time_estimate, errors]


def worker():
    global RANK, WORLD
    import coral_torch  # noqa: F401  (registers the backend)
    warnings.filterwarnings("ignore", message=".*will be deprecated")  # the *_coalesced calls, on purpose
    # A hang (a rank that skipped a collective) fails within the minute, not at the launcher's timeout.
    dist.init_process_group("coral", timeout=datetime.timedelta(seconds=60))
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    harness.set_rank(RANK, WORLD)
    assert dist.get_backend() == "coral", dist.get_backend()
    for s in SECTIONS:
        t0 = time.monotonic()
        s()
        if RANK == 0:
            print(f"{s.__name__}: {time.monotonic() - t0:.2f} s", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {RANK}/{WORLD}: {len(harness.failures)} failure(s) in {harness.checks} checks", flush=True)
    return 1 if harness.failures else 0


def driver():
    run = os.environ.get("CORAL_RUN")
    py = os.environ.get("TORCH_PYTHON", sys.executable)
    if not run:
        print("CORAL_RUN is not set (the coral-run launcher)", file=sys.stderr)
        return 1
    bad = []
    for P in (1, 2, 3, 4):
        t0 = time.monotonic()
        rc = subprocess.call([run, "-n", str(P), "--timeout", "300", py, os.path.abspath(__file__), "--worker"])
        print(f"== P={P}: exit {rc} in {time.monotonic() - t0:.1f} s", flush=True)
        if rc != 0:
            bad.append(P)
    print("FAILED for P in " + str(bad) if bad else "all passed", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(worker() if sys.argv[1:] == ["--worker"] else driver())
