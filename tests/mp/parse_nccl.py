#!/usr/bin/env python3
"""Parses nccl-tests-style output the way scripts written for all_reduce_perf do, and checks it.
usage: parse_nccl.py NRANKS COLLECTIVE < output      exit 0 when well formed."""
import re
import sys

nranks, coll = int(sys.argv[1]), sys.argv[2]
factor = {"allreduce": 2 * (nranks - 1) / nranks, "reducescatter": (nranks - 1) / nranks,
          "allgather": (nranks - 1) / nranks, "broadcast": 1.0, "reduce": 1.0}[coll]
text = sys.stdin.read()
lines = text.splitlines()


def fail(msg):
    print("parse_nccl: " + msg)
    print(text)
    sys.exit(1)


if not lines or not lines[0].startswith("# nThread 1 nGpus 1 minBytes "):
    fail("first line is not nccl-tests' '# nThread ...' line")
hdr = [l for l in lines if l.startswith("#       size         count      type   redop    root")]
if len(hdr) != 1:
    fail("column header missing")
cols = hdr[0][1:].split()
if cols[:13] != ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                 "time", "algbw", "busbw", "#wrong"]:
    fail(f"columns are {cols}")
rows = [l.split() for l in lines if l and not l.startswith("#")]
if not rows:
    fail("no data rows")
for r in rows:
    if len(r) < 13:
        fail(f"short row {r}")
    size, count = int(r[0]), int(r[1])
    for base in (5, 9):
        t, algbw, busbw, wrong = float(r[base]), float(r[base + 1]), float(r[base + 2]), r[base + 3]
        if t <= 0:
            fail(f"non-positive time in {r}")
        want = size / (t * 1e-6) / 1e9
        # Both are printed rounded: time to 2 decimals (which matters below 1 us), algbw too.
        lo = size / ((t + 0.005) * 1e-6) / 1e9
        hi = size / (max(t - 0.005, 1e-9) * 1e-6) / 1e9
        if not (lo - 0.011 - 0.01 * want <= algbw <= hi + 0.011 + 0.01 * want):
            fail(f"algbw {algbw} != size/time {want:.3f} in {r}")
        if abs(busbw - algbw * factor) > 0.011 + 0.01 * busbw:
            fail(f"busbw {busbw} != algbw * {factor:.3f} in {r}")
        if not re.fullmatch(r"\d+", wrong):
            fail(f"#wrong column is {wrong}")
oob = [l for l in lines if l.startswith("# Out of bounds values : ")]
avg = [l for l in lines if re.match(r"# Avg bus bandwidth\s+: [\d.e+-]+", l)]
if len(oob) != 1 or not re.fullmatch(r"# Out of bounds values : \d+ (OK|FAILED)", oob[0]):
    fail("footer 'Out of bounds values' missing or malformed")
if len(avg) != 1:
    fail("footer 'Avg bus bandwidth' missing")
mean = sum(float(r[7]) + float(r[11]) for r in rows) / (2 * len(rows))
got = float(avg[0].split(":")[1])
if abs(got - mean) > 0.011 + 0.02 * mean:
    fail(f"avg bus bandwidth {got} != mean of busbw columns {mean:.3f}")
print(f"parse_nccl: {len(rows)} rows ok, {oob[0][2:]}")
