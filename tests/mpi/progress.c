/* MPI's progress rule through MPI_Test: rank 0 posts a send too large to go eagerly, starts a
 * non-blocking all-reduce and polls it with MPI_Test alone; rank 1 first receives that message,
 * then joins the all-reduce. The send completes only if rank 0's polling drives MPI, so an
 * interposer whose MPI_Test does not would hang here (seen over Open MPI's tcp transport).
 * Prints "progress: ok" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = 8 << 20;
  char* big = malloc(n);
  memset(big, rank + 1, n);
  long mine = rank + 1, sum = 0;
  MPI_Request coll, send;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Isend(big, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &send);
    MPI_Iallreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &coll);
    for (int done = 0; !done;) MPI_Test(&coll, &done, MPI_STATUS_IGNORE);
    MPI_Wait(&send, MPI_STATUS_IGNORE);
  } else {
    if (rank == 1) MPI_Recv(big, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Iallreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &coll);
    MPI_Wait(&coll, MPI_STATUS_IGNORE);
  }
  const long want = (long)size * (size + 1) / 2;
  int bad = sum != want || (rank == 1 && big[n - 1] != 1), all = 0;
  PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(all ? "progress: wrong results on %d rank(s)\n" : "progress: ok\n", all);
  free(big);
  MPI_Finalize();
  return all != 0;
}
