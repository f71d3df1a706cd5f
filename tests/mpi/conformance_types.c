/* Derived types whose bytes are not their packed form although they fill their extent exactly:
 * the interposer must pack them (see conformance.c). */
#include <stdio.h>
#include <stdlib.h>

#include "conformance.h"

/* Two ints listed in reverse order ({1, 0}): one rank sends with it, the others receive plain
 * MPI_INTs, so the reversal must survive the call. Broadcast and all-gather, against MPI. */
void reordered(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int blocks[2] = {1, 1}, displs[2] = {1, 0};
  MPI_Datatype swapped;
  MPI_Type_indexed(2, blocks, displs, MPI_INT, &swapped);
  MPI_Type_commit(&swapped);
  const Type ints = {MPI_INT, "MPI_INT", 4, kSigned};
  Pair buf = pair_new(2 * (size_t)size * sizeof(int)), out = pair_new(2 * (size_t)size * sizeof(int));
  for (int root = 0; root<size; root += size> 2 ? size - 1 : 1) {
    pair_fill(&buf, &ints, 4, rank, 40 + root, false);
    if (rank == root) {
      MPI_Bcast(buf.a, 2, swapped, root, comm);
      PMPI_Bcast(buf.b, 2, swapped, root, comm);
    } else {
      MPI_Bcast(buf.a, 4, MPI_INT, root, comm);
      PMPI_Bcast(buf.b, 4, MPI_INT, root, comm);
    }
    char what[80];
    snprintf(what, sizeof what, "Bcast from a reordered indexed type, root %d", root);
    pair_check(&buf, 4 * sizeof(int), what);
  }
  pair_fill(&buf, &ints, 2, rank, 50, false);
  pair_fill(&out, &ints, 2 * size, rank, 51, false);
  MPI_Allgather(buf.a, 1, swapped, out.a, 2, MPI_INT, comm);
  PMPI_Allgather(buf.b, 1, swapped, out.b, 2, MPI_INT, comm);
  pair_check(&out, 2 * (size_t)size * sizeof(int), "Allgather from a reordered indexed type");
  pair_free(&buf);
  pair_free(&out);
  MPI_Type_free(&swapped);
}
