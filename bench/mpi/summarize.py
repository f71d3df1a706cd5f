#!/usr/bin/env python3
"""bench/mpi/run.sh's raw.csv -> markdown: per P and size the median latency of each
configuration, busbw, and the ratios the MPI issue sets targets for (interposer / MPI busbw,
interposer time / coral-bench time)."""
import csv
import statistics
import sys
from collections import defaultdict

times = defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    times[(row["config"], int(row["P"]), int(row["bytes"]))].append(float(row["avg_us"]))
reps = max((len(v) for v in times.values()), default=0)
med = {k: statistics.median(v) for k, v in times.items()}
configs = [c for c in ("ompi", "ompi+coral", "mpich", "mpich+coral", "coral-bench") if any(k[0] == c for k in med)]


def human(b):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k and b % k == 0:
            return f"{b // k} {unit}"
    return f"{b} B"


def busbw(b, p, us):
    return b / (us * 1e3) * 2 * (p - 1) / p


print(f"Medians of {reps} interleaved runs; time = average latency over ranks (us), busbw GB/s.\n")
head = [f"{c} us" for c in configs]
ratios = []
for abi in ("ompi", "mpich"):
    if abi in configs and f"{abi}+coral" in configs:
        ratios += [f"{abi}+coral / {abi} busbw"]
        if "coral-bench" in configs:
            ratios += [f"{abi}+coral / coral-bench time"]
print("| P | size | " + " | ".join(head + ["coral-mpi busbw (ompi)"] + ratios) + " |")
print("|---" * (2 + len(head) + 1 + len(ratios)) + "|")
for p in sorted({k[1] for k in med}):
    for b in sorted({k[2] for k in med if k[1] == p}):
        get = lambda c: med.get((c, p, b))
        cells = [f"{get(c):.2f}" if get(c) else "-" for c in configs]
        oc = get("ompi+coral")
        cells.append(f"{busbw(b, p, oc):.3f}" if oc else "-")
        for abi in ("ompi", "mpich"):
            mine, theirs, ours = get(f"{abi}+coral"), get(abi), get("coral-bench")
            if f"{abi}+coral" not in configs:
                continue
            cells.append(f"{theirs / mine:.2f}x" if mine and theirs else "-")
            if "coral-bench" in configs:
                cells.append(f"{mine / ours:.2f}" if mine and ours else "-")
        print(f"| {p} | {human(b)} | " + " | ".join(cells) + " |")

# overhead.csv: the interposer against coralAllReduce in one process (bench/mpi/overhead.c).
if len(sys.argv) > 2:
    pairs = defaultdict(list)
    for row in csv.DictReader(open(sys.argv[2])):
        pairs[(row["abi"], int(row["P"]), int(row["bytes"]))].append(float(row["ratio"]))
    abis = [a for a in ("ompi", "mpich") if any(k[0] == a for k in pairs)]
    if abis:
        n = max(len(v) for v in pairs.values())
        print(f"\nThe interposer against Coral's own API in the same process (overhead.c: MPI_Allreduce under "
              f"coral-mpi / coralAllReduce, same buffers, paired rounds); median over {n} runs of each "
              f"run's median ratio.\n")
        print("| P | size | " + " | ".join(f"{a}+coral / direct" for a in abis) + " |")
        print("|---" * (2 + len(abis)) + "|")
        for p in sorted({k[1] for k in pairs}):
            for b in sorted({k[2] for k in pairs if k[1] == p}):
                cells = [f"{statistics.median(pairs[(a, p, b)]):.3f}" if (a, p, b) in pairs else "-" for a in abis]
                print(f"| {p} | {human(b)} | " + " | ".join(cells) + " |")
