/* An OSU-style MPI_Allreduce latency test (float32 sum, separate send and receive buffers, as
 * osu_allreduce does), with busbw added for the 2(P-1)/P bound. The same binary runs plain and
 * under coral-mpi, so the two differ only by the interposer.
 *   osu_allreduce [-m MAX_BYTES] [-t SECONDS_PER_SIZE] [SIZE...]
 * Each size: 5 warm-up calls, then as many as fit in SECONDS_PER_SIZE (5..10^6, agreed by all
 * ranks) after a tenth as many untimed, timed between barriers; the latency of a rank is its mean per call, reported as
 * the average, minimum and maximum over ranks. Rank 0 checks every element of the last result. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char* s) {
  char* end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'K':
    case 'k':
      v *= 1 << 10;
      break;
    case 'M':
    case 'm':
      v *= 1 << 20;
      break;
    case 'G':
    case 'g':
      v *= 1 << 30;
      break;
    default:
      break;
  }
  return (size_t)v;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  size_t sizes[64], ns = 0, max_bytes = 256u << 20;
  double budget = 0.3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-m") && i + 1 < argc) {
      max_bytes = parse_size(argv[++i]);
    } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
      budget = atof(argv[++i]);
    } else if (ns < 64) {
      sizes[ns++] = parse_size(argv[i]);
    }
  }
  if (ns == 0)
    for (size_t s = 8; s <= max_bytes && ns < 64; s *= 4) sizes[ns++] = s;
  size_t biggest = 0;
  for (size_t i = 0; i < ns; i++) {
    if (sizes[i] < sizeof(float)) sizes[i] = sizeof(float);
    if (sizes[i] > biggest) biggest = sizes[i];
  }
  float* in = malloc(biggest);
  float* out = malloc(biggest);
  if (!in || !out) {
    fprintf(stderr, "osu_allreduce: cannot allocate %zu bytes\n", biggest);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < biggest / sizeof(float); i++) in[i] = (float)(rank + (int)(i % 7));
  if (rank == 0) {
    printf("# OSU MPI Allreduce Latency Test (float32 sum), %d processes\n", np);
    printf("%-12s %16s %16s %16s %12s %12s\n", "# Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)",
           "Iterations", "busbw(GB/s)");
    fflush(stdout);
  }
  int status = 0;
  for (size_t k = 0; k < ns; k++) {
    int count = (int)(sizes[k] / sizeof(float));
    size_t bytes = (size_t)count * sizeof(float);
    double t0 = 0;
    for (int w = 0; w < 5; w++) {
      if (w == 2) t0 = MPI_Wtime();
      MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double trial = (MPI_Wtime() - t0) / 3, slowest;
    MPI_Allreduce(&trial, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double want = budget / (slowest > 1e-9 ? slowest : 1e-9);
    int iters = want > 1e6 ? 1000000 : want < 5 ? 5 : (int)want;
    // A tenth more untimed first: the first calls on a communicator set up its connections.
    for (int i = 0; i < iters / 10; i++) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - t0) / iters * 1e6, sum, lo, hi;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      size_t wrong = 0;
      for (int i = 0; i < count; i++) wrong += out[i] != (float)(np * (np - 1) / 2 + np * (i % 7));
      double avg = sum / np;
      printf("%-12zu %16.2f %16.2f %16.2f %12d %12.4f\n", bytes, avg, lo, hi, iters,
             bytes / (avg * 1e3) * 2.0 * (np - 1) / np);
      fflush(stdout);
      if (wrong) {
        fprintf(stderr, "osu_allreduce: %zu of %d elements wrong at %zu bytes\n", wrong, count, bytes);
        status = 1;
      }
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(in);
  free(out);
  MPI_Finalize();
  return status;
}
