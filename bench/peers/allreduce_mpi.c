/* The same measurement as allreduce_coral.c over MPI_Allreduce (built for Open MPI and MPICH). */
#include <mpi.h>

#include "../allreduce_common.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const char* lib = getenv("BENCH_LIB") ? getenv("BENCH_LIB") : "mpi";
  size_t sizes[64];
  size_t ns = bench_sizes(argc, argv, sizes, 64);
  for (size_t s = 0; s < ns; s++) {
    size_t count = sizes[s] / 4 ? sizes[s] / 4 : 1;
    float* in = malloc(count * 4);
    float* out = malloc(count * 4);
    for (size_t i = 0; i < count; i++) in[i] = (float)(rank + i % 7);
    for (int w = 0; w < 3; w++) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double c0 = bench_now(), cal, calmax;
    for (int w = 0; w < 3; w++) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    cal = (bench_now() - c0) / 3;
    MPI_Allreduce(&cal, &calmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int iters = bench_iters(calmax);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    for (int it = 0; it < iters; it++) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (bench_now() - t0) / iters, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) bench_print(lib, p, count * 4, tmax);
    free(in);
    free(out);
  }
  MPI_Finalize();
  return 0;
}
