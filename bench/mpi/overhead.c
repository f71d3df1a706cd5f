/* The interposer's cost against Coral's own API, in one process: MPI_Allreduce (run under
 * coral-mpi, so the interposer serves it) and coralAllReduce on a Coral communicator of the same
 * ranks, same buffers, alternating in rounds. Separate runs of osu_allreduce and coral-bench
 * differ by more than the interposer costs (this VM's memory bandwidth drifts 20% between runs
 * at 4-16 MiB); pairing the two in each round cancels that drift.
 *   coral-mpi overhead [-t SECONDS_PER_SIZE] [SIZE...]
 * Prints per size: bytes, median us of each over the rounds (average over ranks), and the median
 * of the rounds' ratios interposer / direct. Rank 0 checks both results. */
#define _POSIX_C_SOURCE 200809L
#include <coral/coral.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kRounds = 9 };

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One block of `iters` calls, between barriers; the average over ranks of the per-call time. */
static double block(int direct, int iters, const float* in, float* out, int count, coralComm_t comm, int np) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    if (direct) {
      if (coralAllReduce(in, out, (size_t)count, coralFloat32, coralSum, comm, NULL) != coralSuccess) {
        fprintf(stderr, "overhead: coralAllReduce: %s\n", coralGetLastError(comm));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    } else {
      MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
  }
  double mine = (MPI_Wtime() - t0) / iters * 1e6, sum = 0;
  PMPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / np;
}

static size_t wrong(const float* out, int count, int np) {
  size_t bad = 0;
  for (int i = 0; i < count; i++) bad += out[i] != (float)(np * (np - 1) / 2 + np * (i % 7));
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  size_t sizes[64], ns = 0, biggest = sizeof(float);
  double budget = 0.5;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-t") && i + 1 < argc) {
      budget = atof(argv[++i]);
    } else if (ns < 64) {
      char* end;
      double v = strtod(argv[i], &end);
      v *= *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20 : 1;
      sizes[ns++] = v < sizeof(float) ? sizeof(float) : (size_t)v;
      if (sizes[ns - 1] > biggest) biggest = sizes[ns - 1];
    }
  }
  coralUniqueId id;
  int made = rank == 0 ? coralGetUniqueId(&id) : coralSuccess;
  PMPI_Bcast(&made, 1, MPI_INT, 0, MPI_COMM_WORLD);
  PMPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  coralComm_t comm = NULL;
  if (made != coralSuccess || coralCommInitRank(&comm, np, id, rank) != coralSuccess) {
    fprintf(stderr, "overhead: rank %d: no Coral communicator: %s\n", rank, coralGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  float* in = malloc(biggest);
  float* out = malloc(biggest);
  if (!in || !out) {
    fprintf(stderr, "overhead: cannot allocate %zu bytes\n", biggest);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < biggest / sizeof(float); i++) in[i] = (float)(rank + (int)(i % 7));
  if (rank == 0)
    printf("# bytes interposer_us direct_us ratio calls_per_block (medians of %d paired rounds)\n", kRounds);
  int status = 0;
  /* The first MPI_Allreduce creates the interposer's communicator: not part of any timing. */
  block(0, 10, in, out, 1, comm, np);
  block(1, 10, in, out, 1, comm, np);
  for (size_t k = 0; k < ns; k++) {
    int count = (int)(sizes[k] / sizeof(float));
    /* Calibrated on blocks of growing length until one is a quarter of the per-block share of
     * the budget (the first calls at a size run slow). block() returns the same on every rank,
     * so all agree on the count. */
    const double share = budget / (2 * kRounds);
    block(0, 1, in, out, count, comm, np); /* first touches of the pages at this size */
    block(1, 1, in, out, count, comm, np);
    int iters = 1;
    double per_call = block(0, 1, in, out, count, comm, np) * 1e-6;
    while (per_call * iters < share / 4 && iters < 200000) {
      iters *= 4;
      per_call = block(0, iters, in, out, count, comm, np) * 1e-6;
    }
    iters = (int)(share / per_call);
    iters = iters < 2 ? 2 : iters > 200000 ? 200000 : iters;
    double ti[kRounds], td[kRounds], ratio[kRounds];
    for (int r = 0; r < kRounds; r++) {
      int first = r % 2; /* alternate which goes first: neither always gets the warm caches */
      double a = block(first, iters, in, out, count, comm, np);
      if (rank == 0 && wrong(out, count, np)) status = 1;
      double b = block(!first, iters, in, out, count, comm, np);
      if (rank == 0 && wrong(out, count, np)) status = 1;
      ti[r] = first ? b : a;
      td[r] = first ? a : b;
      ratio[r] = ti[r] / td[r];
    }
    if (rank == 0) {
      printf("%zu %.3f %.3f %.3f %d\n", (size_t)count * sizeof(float), median(ti, kRounds), median(td, kRounds),
             median(ratio, kRounds), iters);
      fflush(stdout);
    }
  }
  if (rank == 0 && status) fprintf(stderr, "overhead: a result was wrong\n");
  PMPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  coralCommDestroy(comm);
  free(in);
  free(out);
  MPI_Finalize();
  return status;
}
