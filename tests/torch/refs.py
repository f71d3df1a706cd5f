"""Inputs and expected results for test_ops.py.

Every rank can rebuild any rank's input from (rank, salt), so each computes the expected result
of a collective itself. References are computed from the inputs as cast to the tested dtype, in
float64/int64/complex128, and cast back once: ranges are chosen so that sums and products are
exact in every dtype (bf16 has 8 significant bits) and nothing overflows for up to 4 ranks.
"""
import functools
import zlib

import torch
import torch.distributed as dist

R = dist.ReduceOp
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
COMPLEX = [torch.complex64, torch.complex128]
ALL = FLOATS + INTS + [torch.bool] + COMPLEX
# The full range of each integer type, so bitwise ops and min/max see sign bits and high bytes.
FULL = {torch.int8: (-128, 127), torch.uint8: (0, 255), torch.int32: (-2**31, 2**31 - 1),
        torch.int64: (-2**62, 2**62)}
# |x| small enough that the sum over 4 ranks fits the type.
SMALL = {torch.int8: (-30, 30), torch.uint8: (0, 60), torch.int32: (-10**8, 10**8),
         torch.int64: (-10**15, 10**15)}
PREMUL = hasattr(dist, "_make_nccl_premul_sum")
TOL = {torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float32: 1e-6, torch.float64: 1e-12,
       torch.complex64: 1e-6, torch.complex128: 1e-12}


def name(dtype):
    return str(dtype).replace("torch.", "")


OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"]


def opname(op):
    # torch 1.13's ReduceOp.X are ReduceOp objects (no readable str(), == None raises) but
    # PREMUL_SUM a RedOpType; both compare equal to a RedOpType.
    return "None" if op is None else next((n for n in OPS if op == getattr(R.RedOpType, n)), str(op))


def _is(op, *names):
    return op is not None and opname(op) in names


def _ints(lo, hi, n, rank, salt):
    # crc32, not hash(): Python randomizes str hashes per process, and every rank must agree.
    seed = zlib.crc32(f"{salt}/{rank}".encode())
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi + 1, (n,), generator=g, dtype=torch.int64)


def _pick(choices, n, rank, salt):
    return torch.tensor(choices, dtype=torch.float64)[_ints(0, len(choices) - 1, n, rank, salt)]


def make(rank, n, dtype, op=None, salt=""):
    """Rank's input of n elements for op (None: data movement, any bit pattern of the type)."""
    salt = f"{salt}/{name(dtype)}/{opname(op)}"
    if dtype.is_complex:
        re, im = make(rank, n, torch.float64, op, salt + "re"), make(rank, n, torch.float64, op, salt + "im")
        return torch.complex(re, im).to(dtype)
    if dtype == torch.bool:
        # Mostly false for or-like ops, mostly true for and-like ones, so results vary by index.
        k = _ints(0, 3, n, rank, salt)
        return (k > 0) if _is(op, "PRODUCT", "MIN", "BAND") else (k == 0) if op is not None else (k % 2 == 1)
    if dtype.is_floating_point:
        if _is(op, "PRODUCT"):
            return _pick([-2, -1, -0.5, 0.5, 1, 2], n, rank, salt).to(dtype)
        if op is None or _is(op, "MIN", "MAX"):
            return (_ints(-4000, 4000, n, rank, salt) / 8).to(dtype)
        return (_ints(-40, 40, n, rank, salt) / 4).to(dtype)  # sum of 4: at most 160 quarters
    if _is(op, "PRODUCT"):
        return _pick([1, 2, 3] if dtype == torch.uint8 else [-2, -1, 1, 2], n, rank, salt).to(dtype)
    lo, hi = SMALL[dtype] if _is(op, "SUM", "AVG") else FULL[dtype]
    return _ints(lo, hi, n, rank, salt).to(dtype)


def wide(t):
    if t.is_complex():
        return t.to(torch.complex128)
    if t.is_floating_point():
        return t.to(torch.float64)
    return t if t.dtype == torch.bool else t.to(torch.int64)


def reduce(inputs, op, factor=None):
    """The expected result of reducing inputs (one tensor per rank, all one dtype) with op.
    As torch's NCCL backend: bool SUM/MAX/BOR is any, PRODUCT/MIN/BAND all; integer AVG
    truncates the exact sum (NCCL's ncclAvg)."""
    dtype, P, op = inputs[0].dtype, len(inputs), opname(op)
    xs = torch.stack([wide(t) for t in inputs])
    if dtype == torch.bool:
        if op in ("SUM", "MAX", "BOR"):
            return xs.any(0)
        if op in ("PRODUCT", "MIN", "BAND"):
            return xs.all(0)
        if op == "BXOR":
            return xs.sum(0, dtype=torch.int64) % 2 == 1
        raise ValueError(op)
    if op == "SUM":
        out = xs.sum(0)
    elif op == "AVG":
        s = xs.sum(0)
        out = s / P if (dtype.is_floating_point or dtype.is_complex) else torch.div(s, P, rounding_mode="trunc")
    elif op == "PRODUCT":
        out = xs.prod(0)
    elif op == "MIN":
        out = xs.amin(0)
    elif op == "MAX":
        out = xs.amax(0)
    elif op in ("BAND", "BOR", "BXOR"):
        f = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}[op]
        out = functools.reduce(f, list(xs))
    elif op == "PREMUL_SUM":
        out = (xs * factor).sum(0)
    else:
        raise ValueError(op)
    return out.to(dtype)


def reduce_ops(dtype):
    """(op, factor) pairs all_reduce must support on dtype (test_ops.errors() has those it must refuse)."""
    if dtype == torch.bool:
        return [(op, None) for op in (R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR)]
    if dtype in COMPLEX:
        return [(R.SUM, None), (R.AVG, None)]
    ops = [(op, None) for op in (R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX)]
    if dtype in INTS:
        ops += [(op, None) for op in (R.BAND, R.BOR, R.BXOR)]
    elif PREMUL:
        ops += [(R.PREMUL_SUM, 0.5), (R.PREMUL_SUM, 2.0)]
    return ops


def as_op(op, factor):
    """The ReduceOp to pass torch. PREMUL_SUM's factor goes as a double when 0.5 and as a tensor
    otherwise, so both forms torch accepts (and the backend reads differently) are covered."""
    if opname(op) != "PREMUL_SUM":
        return op
    if factor == 0.5:
        return dist._make_nccl_premul_sum(factor)
    try:  # torch 2 takes one tensor, 1.13 a list of them
        return dist._make_nccl_premul_sum(torch.tensor(factor))
    except TypeError:
        return dist._make_nccl_premul_sum([torch.tensor(factor)])


def gather_into_tensor(out, t):
    f = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
    f(out, t)


def reduce_scatter_tensor(out, t, op):
    f = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    f(out, t, op=op)


def split(src, dst):
    # Rows src sends dst: uneven, and zero for some pairs once there are two ranks.
    return (src + 2 * dst) % 3


def cell(src, dst, k, c):
    # What src puts in row k, column c of its block for dst: unique per (src, dst, k, c), < 128.
    return src * 32 + dst * 8 + k * 2 + c


def a2a_block(src, dst, rows, dtype):
    t = torch.tensor([[cell(src, dst, k, c) for c in range(2)] for k in range(rows)], dtype=torch.int64)
    t = t.view(rows, 2)
    return (t % 2 == 1) if dtype == torch.bool else t.to(dtype)


def diff(got, want, exact=False):
    """None if got matches want, else a short description of the first mismatch."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"dtype/shape {got.dtype}{tuple(got.shape)}, want {want.dtype}{tuple(want.shape)}"
    if got.numel() == 0:
        return None
    g, w = wide(got).reshape(-1), wide(want).reshape(-1)
    if exact or want.dtype not in TOL:
        bad = g != w
    else:
        tol = TOL[want.dtype]
        bad = (g - w).abs() > tol * (1 + w.abs())
    if not bool(bad.any()):
        return None
    i = int(bad.nonzero()[0])
    return (f"{int(bad.sum())}/{g.numel()} elements differ; first at flat index {i}: got {g[i].item()}, "
            f"want {w[i].item()} (got[:6]={g[:6].tolist()}, want[:6]={w[:6].tolist()})")
