/* MPI-lite on the CPU, under coral-run: every call nccl-tests makes with MPI=1, with the values
 * checked, then (built with the drop-in libnccl.so.2) nccl-tests' bootstrap: the unique id
 * broadcast through MPI, ncclCommInitRank on a communicator split off MPI_COMM_WORLD, and an
 * ncclAllReduce on host buffers, so the GPU machine's nccl-tests run meets no surprise there. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mpi.h"
#ifdef MPI_LITE_NCCL
#include <nccl.h>
#endif

static int errors = 0;
static int me = -1;

static void expect(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "rank %d: %s is wrong\n", me, what);
    errors++;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int flag = 0, P = 0;
  MPI_Initialized(&flag);
  expect(flag == 1, "MPI_Initialized");
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &P);

  uint64_t hashes[64] = {0};
  if (P > 64) return 2;
  hashes[me] = 1000u + (uint64_t)me;
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hashes, sizeof(uint64_t), MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 0; r < P; r++) expect(hashes[r] == 1000u + (uint64_t)r, "MPI_Allgather in place");

  int v = me + 1;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  expect(v == 1, "MPI_Allreduce MIN int");
  int64_t m = me * 10;
  MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  expect(m == (P - 1) * 10, "MPI_Allreduce MAX int64");
  long long s = me, s2 = 0;
  MPI_Allreduce(&s, &s2, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  expect(s2 == (long long)P * (P - 1) / 2, "MPI_Allreduce SUM long long");
  double d = 0.5 * me;
  MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  expect(d == 0.25 * P * (P - 1), "MPI_Allreduce SUM double");

  char line[32], lines[64 * 32];
  snprintf(line, sizeof line, "line of rank %d", me);
  MPI_Gather(line, (int)sizeof line, MPI_BYTE, lines, (int)sizeof line, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (me == 0)
    for (int r = 0; r < P; r++) {
      snprintf(line, sizeof line, "line of rank %d", r);
      expect(strcmp(lines + r * 32, line) == 0, "MPI_Gather of bytes");
    }
  double times[3] = {me, me + 0.5, me + 0.25}, all[64 * 3];
  MPI_Gather(times, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, P - 1, MPI_COMM_WORLD);
  if (me == P - 1)
    for (int r = 0; r < P; r++) expect(all[3 * r] == r && all[3 * r + 1] == r + 0.5, "MPI_Gather of doubles");

  /* nccl-tests' NCCL_TESTS_SPLIT=%2: even and odd ranks in two communicators. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
  int hr = -1, hs = -1;
  MPI_Comm_rank(half, &hr);
  MPI_Comm_size(half, &hs);
  expect(hr == me / 2 && hs == (P - me % 2 + 1) / 2, "MPI_Comm_split rank and size");
  char word[16] = "";
  if (hr == 0) snprintf(word, sizeof word, "root %d", me);
  MPI_Bcast(word, (int)sizeof word, MPI_BYTE, 0, half);
  char want[16];
  snprintf(want, sizeof want, "root %d", me % 2);
  expect(strcmp(word, want) == 0, "MPI_Bcast on a split communicator");
  MPI_Comm none;
  MPI_Comm_split(MPI_COMM_WORLD, me == 0 ? MPI_UNDEFINED : 1, 0, &none);
  expect((me == 0) == (none == MPI_COMM_NULL), "MPI_Comm_split with MPI_UNDEFINED");
  if (none != MPI_COMM_NULL) MPI_Comm_free(&none);

#ifdef MPI_LITE_NCCL
  ncclUniqueId id;
  if (hr == 0 && ncclGetUniqueId(&id) != ncclSuccess) return 3;
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, half);
  ncclComm_t comm;
  ncclResult_t rc = ncclCommInitRank(&comm, hs, id, hr);
  expect(rc == ncclSuccess, "ncclCommInitRank");
  if (rc == ncclSuccess) {
    float x[1000];
    for (int i = 0; i < 1000; i++) x[i] = (float)(i + me);
    expect(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, NULL) == ncclSuccess, "ncclAllReduce");
    /* The members of this half are me%2, me%2+2, ...: their sum of i + rank. */
    float base = 0;
    for (int r = me % 2; r < P; r += 2) base += (float)r;
    for (int i = 0; i < 1000; i++)
      if (x[i] != hs * (float)i + base) {
        expect(0, "ncclAllReduce on host buffers");
        break;
      }
    ncclCommDestroy(comm);
  }
#endif
  MPI_Comm_free(&half);
  expect(half == MPI_COMM_NULL, "MPI_Comm_free");
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) printf("mpi_lite: %d ranks, %s\n", P, errors ? "FAILED" : "all calls right");
  MPI_Finalize();
  return errors ? 1 : 0;
}
