/* MPI_ERRORS_RETURN: a call Coral fails (counts that differ between ranks, which Coral detects)
 * returns an MPI error class, and MPI_Error_string gives Coral's message. For test_failure.sh. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  double x[64] = {0}, y[64];
  const int rc = MPI_Allreduce(x, y, rank == 0 ? 32 : 64, MPI_DOUBLE, MPI_SUM, comm);
  int cls = -1, len = 0;
  char msg[MPI_MAX_ERROR_STRING] = "";
  if (rc != MPI_SUCCESS) {
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
  }
  printf("errors: rank %d rc=%d class=%d other=%d: %s\n", rank, rc, cls, cls == MPI_ERR_OTHER, msg);
  MPI_Finalize();
  return 0;
}
