/* A rank that dies (SIGKILL) or stops (SIGSTOP) mid-job, for test_failure.sh: the others must
 * fail within CORAL_TIMEOUT with Coral's message instead of hanging. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int sig = argc > 1 && strcmp(argv[1], "stop") == 0 ? SIGSTOP : SIGKILL;
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 2) raise(sig);
  for (int i = 0; i < 10000000; ++i) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d: all-reduces done without rank 2\n", rank);
  MPI_Finalize();
  return 0;
}
