/* MPI_Iallreduce followed at once by MPI_Wait, the latency of a non-blocking call's wait path
 * (run it under coral-mpi). A plain timing loop: the interposer's wait sleeps in Coral in slices
 * and drives MPI between them, and this shows what that costs against a single blocking wait.
 *   iallreduce_wait [DOUBLES] [ITERATIONS] [wait|any|some]   (the completion call)
 * Rank 0 prints the mean microseconds per call and checks the last sum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 1, iters = argc > 2 ? atoi(argv[2]) : 20000;
  const char how = argc > 3 ? argv[3][0] : 'w';
  double* in = malloc(sizeof(double) * (size_t)n);
  double* out = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; ++i) in[i] = rank + i;
  MPI_Request r;
  double t = 0;
  MPI_Barrier(MPI_COMM_WORLD);           // a communicator meets Coral at its first blocking collective
  for (int i = -1000; i < iters; ++i) {  // the first 1000 warm up
    if (i == 0) t = MPI_Wtime();
    MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    if (how == 'a') {
      int index;
      MPI_Waitany(1, &r, &index, MPI_STATUS_IGNORE);
    } else if (how == 's') {
      int outcount, index;
      MPI_Waitsome(1, &r, &outcount, &index, MPI_STATUSES_IGNORE);
    } else {
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  t = MPI_Wtime() - t;
  const int bad = n > 0 && out[n - 1] != (double)size * (size - 1) / 2 + (double)size * (n - 1);
  if (rank == 0)
    printf("%d doubles, P=%d, %s: %.2f us per call%s\n", n, size,
           how == 'a'   ? "MPI_Waitany"
           : how == 's' ? "MPI_Waitsome"
                        : "MPI_Wait",
           t / iters * 1e6, bad ? " WRONG SUM" : "");
  free(in);
  free(out);
  MPI_Finalize();
  return bad;
}
