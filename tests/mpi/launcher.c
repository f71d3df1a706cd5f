/* A small MPI program for test_launcher.sh: one of each kind of call, results checked. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double x[100], y[100];
  for (int i = 0; i < 100; ++i) x[i] = rank + i;
  MPI_Allreduce(x, y, 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < 100; ++i) bad += y[i] != size * (size - 1) / 2.0 + (double)size * i;
  int b = rank == 0 ? 42 : 0;
  MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
  bad += b != 42;
  MPI_Request q;
  MPI_Iallreduce(MPI_IN_PLACE, x, 100, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  for (int i = 0; i < 100; ++i) bad += x[i] != size - 1 + i;
  MPI_Barrier(MPI_COMM_WORLD);
  int all = 0;
  PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("launcher: P=%d wrong=%d\n", size, all);
  MPI_Finalize();
  return all != 0;
}
