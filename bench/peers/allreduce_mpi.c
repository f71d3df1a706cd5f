/* The same measurement as allreduce_coral.c over MPI_Allreduce (built for Open MPI and MPICH). */
#include <mpi.h>

#include "../allreduce_common.h"

static int ar(void* c, const float* in, float* out, size_t n) {
  (void)c;
  return MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
}
static int mx(void* c, double in, double* out) {
  (void)c;
  return MPI_Allreduce(&in, out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS;
}
static int bar(void* c) {
  (void)c;
  return MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  bench_lib lib = {getenv("BENCH_LIB") ? getenv("BENCH_LIB") : "mpi", 0, 1, ar, mx, bar, NULL};
  MPI_Comm_rank(MPI_COMM_WORLD, &lib.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &lib.nranks);
  int rc = bench_main(&lib, argc, argv);
  if (rc) MPI_Abort(MPI_COMM_WORLD, rc);
  MPI_Finalize();
  return 0;
}
