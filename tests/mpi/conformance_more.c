/* The conformance test's buffers, the data-movement calls (through a strided type too),
 * sub-communicators, requests mixed with MPI's own, and calls that must pass through to MPI
 * (see conformance.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

Pair pair_new(size_t bytes) {
  Pair p = {malloc(bytes + 64), malloc(bytes + 64), bytes + 64};
  return p;
}

void pair_free(Pair* p) {
  free(p->a);
  free(p->b);
}

static void put(unsigned char* at, const Type* t, long v) {
  switch (t->kind) {
    case kFloat:
      if (t->size == 4) {
        float f = (float)v;
        memcpy(at, &f, 4);
      } else {
        double d = (double)v;
        memcpy(at, &d, 8);
      }
      return;
    case kBool:
      *at = v != 0;
      return;
    case kComplex: /* equal real and imaginary parts, small integers: exact in any order */
      if (t->size == 8) {
        float f[2] = {(float)v, (float)v};
        memcpy(at, f, 8);
      } else {
        double d[2] = {(double)v, (double)v};
        memcpy(at, d, 16);
      }
      return;
    default: {
      int64_t x = v; /* little-endian: the low bytes are the value in any width */
      memcpy(at, &x, (size_t)t->size);
    }
  }
}

void pair_fill(Pair* p, const Type* t, int n, int rank, int salt, bool product) {
  memset(p->a, 0xa5, p->bytes); /* what no call may leave different */
  for (int i = 0; i < n; ++i) {
    long v;
    if (product)
      v = (rank < 3 && (i + rank + salt) % 3 == 0) ? 2 : 1;
    else if (t->kind == kBool)
      v = (i * 5 + rank * 3 + salt) % 3 != 0;
    else
      v = (i * 5 + rank * 3 + salt) % 11 - ((t->kind == kSigned || t->kind == kFloat || t->kind == kComplex) ? 5 : 0);
    put(p->a + (size_t)i * t->size, t, v);
  }
  memcpy(p->b, p->a, p->bytes);
}

void pair_check(const Pair* p, size_t bytes, const char* what) {
  ++g_checks;
  if (memcmp(p->a, p->b, bytes) == 0) return;
  size_t i = 0;
  while (p->a[i] == p->b[i]) ++i;
  if (++g_failures <= 10)
    printf("FAIL rank %d: %s: byte %zu is 0x%02x, MPI gives 0x%02x\n", g_rank, what, i, p->a[i], p->b[i]);
}

/* Every data-movement call on n elements of t per block, in and out of place. */
void movement(MPI_Comm comm, int n, const Type* t) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t block = (size_t)n * t->size, all = block * size;
  Pair send = pair_new(all), recv = pair_new(all);
  char what[160];
  const int root = size - 1;
  int* counts = malloc(sizeof(int) * size * 4);
  int *displs = counts + size, *scounts = counts + 2 * size, *sdispls = counts + 3 * size;
  int at = 0;
  for (int j = 0; j < size; ++j) { /* uneven blocks, in reverse order, with gaps */
    counts[j] = n > 0 ? n - (j % 2) : 0;
    displs[size - 1 - j] = at;
    at += n;
  }
  for (int j = 0; j < size; ++j) scounts[j] = n > 0 ? n - ((rank + j) % 2) : 0, sdispls[j] = j * n;
  for (int j = 0; j < size; ++j) counts[j] = n > 0 ? n - ((j + rank * 0) % 2) : 0;
  MPI_Request q;
#define BOTH(label, call_a, call_b, check_bytes)                  \
  do {                                                            \
    snprintf(what, sizeof what, "%s %s n=%d", label, t->name, n); \
    call_a;                                                       \
    call_b;                                                       \
    pair_check(&recv, check_bytes, what);                         \
  } while (0)
#define FILL(salt)                                 \
  pair_fill(&send, t, n* size, rank, salt, false); \
  pair_fill(&recv, t, n* size, rank, salt + 50, false)

  FILL(1);
  memcpy(recv.a, send.a, all), memcpy(recv.b, send.b, all);
  BOTH("Bcast", MPI_Bcast(recv.a, n, t->type, root, comm), PMPI_Bcast(recv.b, n, t->type, root, comm), block);
  FILL(2);
  BOTH("Gather", MPI_Gather(send.a, n, t->type, recv.a, n, t->type, root, comm),
       PMPI_Gather(send.b, n, t->type, recv.b, n, t->type, root, comm), rank == root ? all : 0);
  FILL(3);
  BOTH("Gather(in place)", MPI_Gather(rank == root ? MPI_IN_PLACE : send.a, n, t->type, recv.a, n, t->type, root, comm),
       PMPI_Gather(rank == root ? MPI_IN_PLACE : send.b, n, t->type, recv.b, n, t->type, root, comm),
       rank == root ? all : 0);
  FILL(4);
  BOTH("Scatter", MPI_Scatter(send.a, n, t->type, recv.a, n, t->type, root, comm),
       PMPI_Scatter(send.b, n, t->type, recv.b, n, t->type, root, comm), block);
  FILL(5);
  BOTH("Scatter(in place)",
       MPI_Scatter(send.a, n, t->type, rank == root ? MPI_IN_PLACE : recv.a, n, t->type, root, comm),
       PMPI_Scatter(send.b, n, t->type, rank == root ? MPI_IN_PLACE : recv.b, n, t->type, root, comm), block);
  FILL(6);
  BOTH("Allgather", MPI_Allgather(send.a, n, t->type, recv.a, n, t->type, comm),
       PMPI_Allgather(send.b, n, t->type, recv.b, n, t->type, comm), all);
  FILL(7);
  BOTH("Allgather(in place)", MPI_Allgather(MPI_IN_PLACE, 0, t->type, recv.a, n, t->type, comm),
       PMPI_Allgather(MPI_IN_PLACE, 0, t->type, recv.b, n, t->type, comm), all);
  FILL(8);
  BOTH("Allgatherv", MPI_Allgatherv(send.a, counts[rank], t->type, recv.a, counts, displs, t->type, comm),
       PMPI_Allgatherv(send.b, counts[rank], t->type, recv.b, counts, displs, t->type, comm), all);
  FILL(9);
  BOTH("Allgatherv(in place)", MPI_Allgatherv(MPI_IN_PLACE, 0, t->type, recv.a, counts, displs, t->type, comm),
       PMPI_Allgatherv(MPI_IN_PLACE, 0, t->type, recv.b, counts, displs, t->type, comm), all);
  FILL(10);
  BOTH("Alltoall", MPI_Alltoall(send.a, n, t->type, recv.a, n, t->type, comm),
       PMPI_Alltoall(send.b, n, t->type, recv.b, n, t->type, comm), all);
  FILL(11);
  BOTH("Alltoall(in place)", MPI_Alltoall(MPI_IN_PLACE, 0, t->type, recv.a, n, t->type, comm),
       PMPI_Alltoall(MPI_IN_PLACE, 0, t->type, recv.b, n, t->type, comm), all);
  /* all-to-all-v: what r sends q is what q expects from r (scounts of r at q = rcounts of q at r) */
  int* rcounts = malloc(sizeof(int) * size * 2);
  int* rdispls = rcounts + size;
  for (int j = 0; j < size; ++j) rcounts[j] = n > 0 ? n - ((j + rank) % 2) : 0, rdispls[j] = (size - 1 - j) * n;
  FILL(12);
  BOTH("Alltoallv", MPI_Alltoallv(send.a, scounts, sdispls, t->type, recv.a, rcounts, rdispls, t->type, comm),
       PMPI_Alltoallv(send.b, scounts, sdispls, t->type, recv.b, rcounts, rdispls, t->type, comm), all);
  FILL(13);
  BOTH("Ibcast", (MPI_Ibcast(recv.a, n, t->type, 0, comm, &q), MPI_Wait(&q, MPI_STATUS_IGNORE)),
       PMPI_Bcast(recv.b, n, t->type, 0, comm), block);
  FILL(14);
  BOTH("Iallgather",
       (MPI_Iallgather(send.a, n, t->type, recv.a, n, t->type, comm, &q), MPI_Wait(&q, MPI_STATUS_IGNORE)),
       PMPI_Allgather(send.b, n, t->type, recv.b, n, t->type, comm), all);
  FILL(15);
  BOTH("Ialltoall", (MPI_Ialltoall(send.a, n, t->type, recv.a, n, t->type, comm, &q), MPI_Wait(&q, MPI_STATUS_IGNORE)),
       PMPI_Alltoall(send.b, n, t->type, recv.b, n, t->type, comm), all);
  /* in place: block j goes to rank j and is replaced by j's; the counts must be symmetric */
  FILL(16);
  memcpy(recv.a, send.a, all), memcpy(recv.b, send.b, all);
  BOTH("Alltoallv(in place)",
       MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, recv.a, rcounts, rdispls, t->type, comm),
       PMPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, recv.b, rcounts, rdispls, t->type, comm), all);
  FILL(17);
  BOTH("Igather",
       (MPI_Igather(send.a, n, t->type, recv.a, n, t->type, root, comm, &q), MPI_Wait(&q, MPI_STATUS_IGNORE)),
       PMPI_Gather(send.b, n, t->type, recv.b, n, t->type, root, comm), rank == root ? all : 0);
  FILL(18);
  BOTH("Iscatter",
       (MPI_Iscatter(send.a, n, t->type, recv.a, n, t->type, root, comm, &q), MPI_Wait(&q, MPI_STATUS_IGNORE)),
       PMPI_Scatter(send.b, n, t->type, recv.b, n, t->type, root, comm), block);
  FILL(19);
  BOTH("Iallgatherv",
       (MPI_Iallgatherv(send.a, counts[rank], t->type, recv.a, counts, displs, t->type, comm, &q),
        MPI_Wait(&q, MPI_STATUS_IGNORE)),
       PMPI_Allgatherv(send.b, counts[rank], t->type, recv.b, counts, displs, t->type, comm), all);
  FILL(20);
  BOTH("Ialltoallv",
       (MPI_Ialltoallv(send.a, scounts, sdispls, t->type, recv.a, rcounts, rdispls, t->type, comm, &q),
        MPI_Wait(&q, MPI_STATUS_IGNORE)),
       PMPI_Alltoallv(send.b, scounts, sdispls, t->type, recv.b, rcounts, rdispls, t->type, comm), all);
  MPI_Barrier(comm);
  MPI_Ibarrier(comm, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  free(rcounts);
  free(counts);
  pair_free(&send);
  pair_free(&recv);
}

/* The same calls on communicators from MPI_Comm_split and MPI_Comm_dup. */
void communicators(const Type* ints, const Type* doubles) {
  MPI_Comm split, dup;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, -g_rank, &split);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  for (int round = 0; round < 3; ++round) {
    movement(split, 100, ints);
    movement(dup, 33, doubles);
    Pair s = pair_new(8000), r = pair_new(8000);
    pair_fill(&s, doubles, 1000, g_rank, round, false);
    pair_fill(&r, doubles, 1000, g_rank, round, false);
    MPI_Allreduce(s.a, r.a, 1000, MPI_DOUBLE, MPI_SUM, split);
    PMPI_Allreduce(s.b, r.b, 1000, MPI_DOUBLE, MPI_SUM, split);
    pair_check(&r, 8000, "Allreduce on a split communicator");
    pair_free(&s);
    pair_free(&r);
  }
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
}

/* Data movement through a strided type (every other int), which Coral moves packed, blocking
 * and not. The type each call receives with is a duplicate freed right after the call, before
 * its wait: MPI allows that, and the unpack at completion must not use the freed handle. */
void strided(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int n = 5, root = size - 1;
  MPI_Datatype vec, every_other;
  MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, 2 * sizeof(int), &every_other);
  MPI_Type_free(&vec);
  MPI_Type_commit(&every_other);
  const Type ints = {MPI_INT, "MPI_INT", 4, kSigned};
  const int elems = 2 * n * size;
  Pair send = pair_new(elems * sizeof(int)), recv = pair_new(elems * sizeof(int));
  int* counts = malloc(sizeof(int) * 2 * size);
  int* displs = counts + size;
  for (int j = 0; j < size; ++j) counts[j] = n - j % 2, displs[j] = (size - 1 - j) * n;
  static const char* const names[] = {"Bcast", "Gather", "Scatter", "Allgather", "Alltoall", "Allgatherv"};
  for (int nb = 0; nb < 2; ++nb)
    for (int call = 0; call < 6; ++call) {
      pair_fill(&send, &ints, elems, rank, 80 + call, false);
      pair_fill(&recv, &ints, elems, rank, 90 + call, false);
      MPI_Datatype t, e = every_other;
      MPI_Type_dup(every_other, &t);
      MPI_Request q = MPI_REQUEST_NULL, *r = nb ? &q : NULL;
#define PICK(blocking, nonblocking) (r ? (nonblocking) : (blocking))
      switch (call) {
        case 0:
          PICK(MPI_Bcast(recv.a, n, t, root, comm), MPI_Ibcast(recv.a, n, t, root, comm, r));
          PMPI_Bcast(recv.b, n, e, root, comm);
          break;
        case 1:
          PICK(MPI_Gather(send.a, n, MPI_INT, recv.a, n, t, root, comm),
               MPI_Igather(send.a, n, MPI_INT, recv.a, n, t, root, comm, r));
          PMPI_Gather(send.b, n, MPI_INT, recv.b, n, e, root, comm);
          break;
        case 2:
          PICK(MPI_Scatter(send.a, n, e, recv.a, n, t, root, comm),
               MPI_Iscatter(send.a, n, e, recv.a, n, t, root, comm, r));
          PMPI_Scatter(send.b, n, e, recv.b, n, e, root, comm);
          break;
        case 3:
          PICK(MPI_Allgather(send.a, n, e, recv.a, n, t, comm), MPI_Iallgather(send.a, n, e, recv.a, n, t, comm, r));
          PMPI_Allgather(send.b, n, e, recv.b, n, e, comm);
          break;
        case 4:
          PICK(MPI_Alltoall(send.a, n, e, recv.a, n, t, comm), MPI_Ialltoall(send.a, n, e, recv.a, n, t, comm, r));
          PMPI_Alltoall(send.b, n, e, recv.b, n, e, comm);
          break;
        default:
          PICK(MPI_Allgatherv(send.a, counts[rank], e, recv.a, counts, displs, t, comm),
               MPI_Iallgatherv(send.a, counts[rank], e, recv.a, counts, displs, t, comm, r));
          PMPI_Allgatherv(send.b, counts[rank], e, recv.b, counts, displs, e, comm);
      }
#undef PICK
      MPI_Type_free(&t);
      if (r) MPI_Wait(r, MPI_STATUS_IGNORE);
      char what[80];
      snprintf(what, sizeof what, "%s%s through a strided type", nb ? "I" : "", names[call]);
      pair_check(&recv, elems * sizeof(int), what);
    }
  free(counts);
  pair_free(&send);
  pair_free(&recv);
  MPI_Type_free(&every_other);
}

/* Coral's requests among MPI's own, through each completion call. */
void requests(void) {
  const int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  for (int how = 0; how < 5; ++how) {
    long x[64], y[64], ref[64], token = g_rank * 10 + how, got = -1;
    for (int i = 0; i < 64; ++i) x[i] = g_rank + i * how;
    PMPI_Allreduce(x, ref, 64, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Request q[4];
    MPI_Irecv(&got, 1, MPI_LONG, prev, 7, MPI_COMM_WORLD, &q[0]);
    MPI_Iallreduce(x, y, 64, MPI_LONG, MPI_MAX, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(&token, 1, MPI_LONG, next, 7, MPI_COMM_WORLD, &q[2]);
    MPI_Ibarrier(MPI_COMM_WORLD, &q[3]);
    MPI_Status st[4];
    int done = 0, flag = 0, idx, out, indices[4];
    switch (how) {
      case 0:
        MPI_Waitall(4, q, st);
        break;
      case 1:
        while (!flag) MPI_Testall(4, q, &flag, st);
        break;
      case 2:
        for (done = 0; done < 4; ++done) MPI_Waitany(4, q, &idx, MPI_STATUS_IGNORE);
        break;
      case 3:
        while (done < 4) {
          MPI_Waitsome(4, q, &out, indices, st);
          done += out;
        }
        break;
      default:
        for (int i = 0; i < 4; ++i) {
          for (flag = 0; !flag;) MPI_Test(&q[i], &flag, MPI_STATUS_IGNORE);
        }
    }
    ++g_checks;
    int bad = got != prev * 10 + how || memcmp(y, ref, sizeof y) != 0;
    for (int i = 0; i < 4; ++i) bad |= q[i] != MPI_REQUEST_NULL;
    if (bad && ++g_failures <= 10)
      printf("FAIL rank %d: requests (completion %d): token %ld, all-reduce %s\n", g_rank, how, got,
             memcmp(y, ref, sizeof y) ? "wrong" : "right");
  }
  /* A null request's status is MPI's empty status, MPI_ERROR = MPI_SUCCESS included. Open MPI
   * 4.1 leaves that field as it was, and MPICH's pt2pt/rqstatus then read our frames' leftovers
   * under coral-mpi; the interposer fills it in. */
  MPI_Status empty;
  memset(&empty, 0x5a, sizeof empty);
  int flag = 0;
  MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &empty);
  ++g_checks;
  if (g_interposed &&
      (!flag || empty.MPI_SOURCE != MPI_ANY_SOURCE || empty.MPI_TAG != MPI_ANY_TAG || empty.MPI_ERROR != MPI_SUCCESS) &&
      ++g_failures <= 10)
    printf("FAIL rank %d: MPI_Request_get_status(MPI_REQUEST_NULL): flag %d, source %d, tag %d, error %d\n", g_rank,
           flag, empty.MPI_SOURCE, empty.MPI_TAG, empty.MPI_ERROR);
}

/* MPI's progress rule: a rank waiting in Coral must still drive MPI, for a peer may need this
 * rank's MPI traffic before it can reach the collective waited on. The last rank waits for a
 * scan (MPI's own: partial sums pass from rank to rank) before it joins an all-reduce on Coral,
 * which the others wait for first: through MPI_Wait, MPI_Waitall, then the blocking call itself.
 * Waiting in Coral alone hangs them all from P=3. */
void progress_rule(void) {
  for (int round = 0; round < 3; ++round) {
    long x = g_rank + 1, prefix = 0, in[16], out[16];
    for (int i = 0; i < 16; ++i) in[i] = g_rank + i;
    MPI_Request scan, sum;
    MPI_Status st[1];
    MPI_Iscan(&x, &prefix, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &scan);
    if (g_rank == g_size - 1) MPI_Wait(&scan, MPI_STATUS_IGNORE);
    if (round == 2) {
      MPI_Allreduce(in, out, 16, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    } else {
      MPI_Iallreduce(in, out, 16, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &sum);
      if (round == 0)
        MPI_Wait(&sum, MPI_STATUS_IGNORE);
      else
        MPI_Waitall(1, &sum, st);
    }
    if (g_rank != g_size - 1) MPI_Wait(&scan, MPI_STATUS_IGNORE);
    ++g_checks;
    int bad = prefix != (long)(g_rank + 1) * (g_rank + 2) / 2;
    for (int i = 0; i < 16; ++i) bad |= out[i] != (long)g_size * (g_size - 1) / 2 + (long)g_size * i;
    if (bad && ++g_failures <= 10) printf("FAIL rank %d: progress rule (round %d): wrong results\n", g_rank, round);
  }
}

/* A send too large for MPI's eager protocol needs its sender's progress to complete, and the
 * sender waits in a barrier on Coral for the receiver to get past its blocking receive (as
 * MPICH's pt2pt/scancel2). Round 1 does the same behind a non-blocking all-reduce still running
 * on Coral, which the barrier waits for first. Round 2 on a new communicator, where the
 * all-reduce comes first: a non-blocking call must not wait there for the peers to make Coral's
 * twin of it. Meanwhile a message waits unreceived at rank 0: a probe for any message finds it
 * and may return without driving MPI at all, so that must not be how the interposer drives MPI. */
void send_across_barrier(void) {
  enum { kBig = 1 << 20 };
  unsigned char* big = malloc(kBig);
  for (int i = 0; i < kBig; ++i) big[i] = (unsigned char)(g_rank == 0 ? i * 7 : 0);
  if (g_rank == 1) MPI_Send(&g_rank, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
  PMPI_Barrier(MPI_COMM_WORLD);
  for (int round = 0; round < 3; ++round) {
    MPI_Comm comm = MPI_COMM_WORLD;
    if (round == 2) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    long x = g_rank, total = -1;
    MPI_Request first = MPI_REQUEST_NULL;
    if (g_rank == 0 && g_size > 1) {
      MPI_Request send;
      if (round > 0) MPI_Iallreduce(&x, &total, 1, MPI_LONG, MPI_SUM, comm, &first);
      MPI_Isend(big, kBig, MPI_BYTE, 1, 99, comm, &send);
      MPI_Barrier(comm);
      MPI_Wait(&send, MPI_STATUS_IGNORE);
    } else {
      if (g_rank == 1) {
        memset(big, 0, kBig);
        MPI_Recv(big, kBig, MPI_BYTE, 0, 99, comm, MPI_STATUS_IGNORE);
      }
      if (round > 0) MPI_Iallreduce(&x, &total, 1, MPI_LONG, MPI_SUM, comm, &first);
      MPI_Barrier(comm);
      int bad = 0;
      for (int i = 0; g_rank == 1 && i < kBig; ++i) bad |= big[i] != (unsigned char)(i * 7);
      ++g_checks;
      if (bad && ++g_failures <= 10)
        printf("FAIL rank %d: rendezvous send across a barrier (round %d): wrong data\n", g_rank, round);
    }
    MPI_Wait(&first, MPI_STATUS_IGNORE);
    ++g_checks;
    if (round > 0 && total != (long)g_size * (g_size - 1) / 2 && ++g_failures <= 10)
      printf("FAIL rank %d: all-reduce before the barrier (round %d) gave %ld\n", g_rank, round, total);
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  }
  if (g_rank == 0 && g_size > 1) {
    int from = -1;
    MPI_Recv(&from, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ++g_checks;
    if (from != 1 && ++g_failures <= 10) printf("FAIL rank 0: the early message held %d\n", from);
  }
  free(big);
}

static void my_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  int* a = in;
  int* b = inout;
  for (int i = 0; i < *len * 2; ++i) b[i] += a[i];
}

/* A derived type with a user op must reach MPI (the report line counts it) and be right. */
void pass_through(void) {
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  MPI_Op op;
  MPI_Op_create(my_sum, 1, &op);
  int in[8], out[8] = {0};
  for (int i = 0; i < 8; ++i) in[i] = g_rank + i;
  MPI_Allreduce(in, out, 4, pair, op, MPI_COMM_WORLD);
  ++g_checks;
  for (int i = 0; i < 8; ++i)
    if (out[i] != g_size * (g_size - 1) / 2 + g_size * i) {
      if (++g_failures <= 10) printf("FAIL rank %d: derived type with a user op: [%d] = %d\n", g_rank, i, out[i]);
      break;
    }
  MPI_Op_free(&op);
  MPI_Type_free(&pair);
}

/* Empty calls with null buffers, as mpi4py makes them for empty arrays: each must succeed and
 * touch nothing (the sanitizer pass, scripts/run-sanitizers.sh --compat, sees any access). */
void empty_null_buffers(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Request rq;
  int rc[9];
  rc[0] = MPI_Allreduce(MPI_IN_PLACE, NULL, 0, MPI_DOUBLE, MPI_SUM, comm);
  rc[1] = MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_MAX, comm);
  rc[2] = MPI_Reduce_scatter_block(MPI_IN_PLACE, NULL, 0, MPI_FLOAT, MPI_SUM, comm);
  rc[3] = MPI_Reduce_scatter_block(NULL, NULL, 0, MPI_FLOAT, MPI_SUM, comm);
  rc[4] = MPI_Reduce(g_rank == 0 ? MPI_IN_PLACE : NULL, NULL, 0, MPI_LONG, MPI_SUM, 0, comm);
  rc[5] = MPI_Bcast(NULL, 0, MPI_BYTE, 0, comm);
  rc[6] = MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm);
  rc[7] = MPI_Iallreduce(MPI_IN_PLACE, NULL, 0, MPI_DOUBLE, MPI_SUM, comm, &rq);
  if (rc[7] == MPI_SUCCESS) rc[7] = MPI_Wait(&rq, MPI_STATUS_IGNORE);
  rc[8] = MPI_Alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm);
  for (int i = 0; i < 9; ++i) {
    ++g_checks;
    if (rc[i] != MPI_SUCCESS && ++g_failures <= 10)
      printf("FAIL rank %d: empty call %d with null buffers: %d\n", g_rank, i, rc[i]);
  }
  MPI_Comm_free(&comm);
}
