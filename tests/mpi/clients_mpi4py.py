"""mpi4py, unmodified, over the interposer: the buffer (upper-case) collectives on array.array
data and on byte buffers (bytearray, memoryview), and the pickle (lower-case) ones, each result checked against what every rank can compute
from the inputs. Rank 0 prints `mpi4py: P=<n> failures=<F>`; any failure exits 1 on every rank.
The failure count travels by send/recv, so the tally never rests on the collectives under test."""
import sys
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failures = []


def check(what, got, want):
    if list(got) != list(want):
        failures.append(f"{what}: got {list(got)[:8]} want {list(want)[:8]}")


def value(r, i):
    return (r * 7 + i * 3) % 101 - 50


for n in (1, 7, 1000, 70001):
    send = array("d", (value(rank, i) for i in range(n)))
    recv = array("d", [0.0] * n)
    comm.Allreduce(send, recv, op=MPI.SUM)
    check(f"Allreduce d SUM n={n}", recv, (sum(value(r, i) for r in range(size)) for i in range(n)))

    ints = array("i", (value(rank, i) for i in range(n)))
    comm.Allreduce(MPI.IN_PLACE, ints, op=MPI.MAX)
    check(f"Allreduce i MAX in place n={n}", ints, (max(value(r, i) for r in range(size)) for i in range(n)))

    longs = array("q", (value(rank, i) | (1 << 40) for i in range(n)))
    comm.Allreduce(MPI.IN_PLACE, longs, op=MPI.BXOR)
    want = []
    for i in range(n):
        x = 0
        for r in range(size):
            x ^= value(r, i) | (1 << 40)
        want.append(x)
    check(f"Allreduce q BXOR n={n}", longs, want)

n = 513
buf = array("f", (float(i) if rank == size - 1 else -1.0 for i in range(n)))
comm.Bcast(buf, root=size - 1)
check("Bcast f", buf, (float(i) for i in range(n)))

red = array("l", [0] * 5)
comm.Reduce(array("l", (rank + i for i in range(5))), red, op=MPI.PROD, root=0)
if rank == 0:
    want = []
    for i in range(5):
        p = 1
        for r in range(size):
            p *= r + i
        want.append(p)
    check("Reduce l PROD", red, want)

gathered = array("i", [0] * (3 * size))
comm.Allgather(array("i", [rank, rank * 10, -rank]), gathered)
check("Allgather i", gathered, [x for r in range(size) for x in (r, r * 10, -r)])

a2a = array("d", [0.0] * (2 * size))
comm.Alltoall(array("d", (rank * 100.0 + j for j in range(2 * size))), a2a)
check("Alltoall d", a2a, [r * 100.0 + 2 * rank + k for r in range(size) for k in range(2)])

rsb = array("i", [0] * 4)
comm.Reduce_scatter_block(array("i", (rank + j for j in range(4 * size))), rsb, op=MPI.SUM)
check("Reduce_scatter_block i", rsb, (sum(r + 4 * rank + k for r in range(size)) for k in range(4)))

# Byte buffers, as code moving raw bytes passes them: mpi4py maps them to MPI_BYTE.
raw = bytearray(((rank * 31 + i) % 256 for i in range(300)))
got = bytearray(300)
comm.Allreduce([raw, MPI.BYTE], [got, MPI.BYTE], op=MPI.BXOR)
want = bytearray(300)
for r in range(size):
    for i in range(300):
        want[i] ^= (r * 31 + i) % 256
check("Allreduce bytes BXOR", got, want)
blob = bytearray(b"coral-bytes" * 37 if rank == 0 else bytes(len(b"coral-bytes") * 37))
comm.Bcast(blob, root=0)
check("Bcast bytearray", blob, b"coral-bytes" * 37)
rows = bytearray(5 * size)
comm.Allgather(memoryview(bytes((rank + 1) * k % 256 for k in range(5))), rows)
check("Allgather memoryview", rows, bytes((r + 1) * k % 256 for r in range(size) for k in range(5)))
swapped = bytearray(3 * size)
comm.Alltoall(bytearray((rank * 16 + j) % 256 for j in range(3 * size)), swapped)
check("Alltoall bytearray", swapped, bytes((r * 16 + 3 * rank + k) % 256 for r in range(size) for k in range(3)))

# The send buffer must outlive the request: mpi4py 3.1 does not keep a temporary alive.
isend, recv = array("d", [rank + 0.5] * 9), array("d", [0.0] * 9)
req = comm.Iallreduce(isend, recv, op=MPI.MIN)
req.Wait()
check("Iallreduce d MIN", recv, [0.5] * 9)

half = comm.Split(rank % 2, rank)
hs = array("i", [0])
half.Allreduce(array("i", [rank]), hs, op=MPI.SUM)
check("Split+Allreduce", hs, [sum(r for r in range(size) if r % 2 == rank % 2)])
half.Free()

# The pickle-based forms, as most mpi4py code calls them.
check("allreduce obj", [comm.allreduce(rank + 1)], [size * (size + 1) // 2])
check("bcast obj", [comm.bcast({"k": [1, 2]} if rank == 0 else None, root=0)], [{"k": [1, 2]}])
check("allgather obj", comm.allgather(("r", rank)), [("r", r) for r in range(size)])
comm.Barrier()

for f in failures:
    print(f"mpi4py: rank {rank}: FAILED {f}", flush=True)
if rank == 0:
    total = len(failures)
    for r in range(1, size):
        total += comm.recv(source=r, tag=99)
    for r in range(1, size):
        comm.send(total, dest=r, tag=98)
    print(f"mpi4py: P={size} failures={total}", flush=True)
else:
    comm.send(len(failures), dest=0, tag=99)
    total = comm.recv(source=0, tag=98)
sys.exit(1 if total else 0)
