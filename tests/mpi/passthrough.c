/* For test_launcher.sh: exactly three all-reduces, so the report line can say which route each
 * took. A derived datatype (MPI reduces it only with a user op) goes to MPI for its type, MPI_INT
 * with a user op for its op, and MPI_INT/MPI_SUM to Coral; every result is checked. */
#include <mpi.h>
#include <stdio.h>

/* Sums ints, whatever contiguous type of ints it is given. */
static void my_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  int bytes = 0;
  MPI_Type_size(*type, &bytes);
  const int* a = in;
  int* b = inout;
  for (int i = 0; i < *len * bytes / (int)sizeof(int); ++i) b[i] += a[i];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int in[8], out[8];
  for (int i = 0; i < 8; ++i) in[i] = rank + i;
  const int want0 = size * (size - 1) / 2;
  MPI_Op op;
  MPI_Op_create(my_sum, 1, &op);
  /* Derived type (and a user op, as MPI requires): passed for the type. */
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  MPI_Allreduce(in, out, 4, pair, op, MPI_COMM_WORLD);
  for (int i = 0; i < 8; ++i) bad += out[i] != want0 + size * i;
  MPI_Type_free(&pair);
  /* Predefined type, user op: passed for the op. */
  MPI_Allreduce(in, out, 8, MPI_INT, op, MPI_COMM_WORLD);
  for (int i = 0; i < 8; ++i) bad += out[i] != want0 + size * i;
  MPI_Op_free(&op);
  /* Both predefined: Coral's. */
  MPI_Allreduce(in, out, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < 8; ++i) bad += out[i] != want0 + size * i;
  int all = 0;
  PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("passthrough: P=%d wrong=%d\n", size, all);
  MPI_Finalize();
  return all != 0;
}
