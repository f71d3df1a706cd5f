/* The interposer against MPI itself: each intercepted call (MPI_X, Coral's when coral-mpi preloads
 * the interposer) runs on the same inputs as PMPI_X (always the MPI's own), and the results must
 * be identical bit for bit. Integers are compared exactly; floats hold small integers, so sums,
 * products, minima and maxima are exact in any order.
 * Usage: conformance [counts, comma-separated; default 0,1,7,1000,1048579] [all-ops]
 * Rank 0 prints `conformance: P=<n> checks=<N> failures=<F>`; exit status 1 on any failure. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

int g_rank, g_size;
long g_checks, g_failures;
bool g_interposed; /* MPI_X is coral-mpi's, not MPI's own */

static const Type kTypes[] = {
    {0, "MPI_INT8_T", 1, kSigned},
    {0, "MPI_UNSIGNED_CHAR", 1, kUnsigned},
    {0, "MPI_SHORT", 2, kSigned},
    {0, "MPI_INT", 4, kSigned},
    {0, "MPI_UNSIGNED", 4, kUnsigned},
    {0, "MPI_LONG", 8, kSigned},
    {0, "MPI_UNSIGNED_LONG", 8, kUnsigned},
    {0, "MPI_INT64_T", 8, kSigned},
    {0, "MPI_UINT64_T", 8, kUnsigned},
    {0, "MPI_FLOAT", 4, kFloat},
    {0, "MPI_DOUBLE", 8, kFloat},
    {0, "MPI_C_BOOL", 1, kBool},
    {0, "MPI_BYTE", 1, kByte},
    {0, "MPI_C_FLOAT_COMPLEX", 8, kComplex},
    {0, "MPI_C_DOUBLE_COMPLEX", 16, kComplex},
};
enum { kNumTypes = sizeof kTypes / sizeof kTypes[0] };
static Type types[kNumTypes];

static const struct {
  MPI_Op op;
  const char* name;
} kOps[] = {{0, "SUM"}, {0, "PROD"}, {0, "MIN"},  {0, "MAX"}, {0, "BAND"},
            {0, "BOR"}, {0, "BXOR"}, {0, "LAND"}, {0, "LOR"}, {0, "LXOR"}};
static MPI_Op ops[10];

static void init_tables(void) {
  const MPI_Datatype t[kNumTypes] = {
      MPI_INT8_T,        MPI_UNSIGNED_CHAR,   MPI_SHORT,           MPI_INT,   MPI_UNSIGNED, MPI_LONG,
      MPI_UNSIGNED_LONG, MPI_INT64_T,         MPI_UINT64_T,        MPI_FLOAT, MPI_DOUBLE,   MPI_C_BOOL,
      MPI_BYTE,          MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX};
  for (int i = 0; i < kNumTypes; ++i) types[i] = kTypes[i], types[i].type = t[i];
  const MPI_Op o[10] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
  memcpy(ops, o, sizeof ops);
}

/* In place, coral-mpi's reduce-scatter leaves the buffer past the result as the input was (Open
 * MPI's does so for small messages only, so MPI is no reference there): `input` holds that input.
 * Only where Coral runs the call: 16-bit arithmetic goes to MPI (Coral has no 16-bit integers). */
static void check_kept(const Pair* recv, const Pair* input, size_t from, size_t to, const Type* t, int op,
                       const char* what) {
  if (!g_interposed || (t->size == 2 && op <= 3)) return;
  char kept[200];
  snprintf(kept, sizeof kept, "%s, past the result (against its input)", what);
  const Pair rest = {recv->a + from, input->a + from, to - from};
  pair_check(&rest, to - from, kept);
}

/* Which ops MPI defines for which kinds (op index as in kOps). */
static bool op_allowed(int kind, int op) {
  /* Complex sums run on Coral. Products go to MPI, and its blocking and non-blocking forms
   * multiply in different orders, which can flip the sign of a zero part. */
  if (kind == kComplex) return op == 0;
  if (op <= 3) return kind == kSigned || kind == kUnsigned || kind == kFloat;
  if (op <= 6) return kind == kSigned || kind == kUnsigned || kind == kByte;
  return kind == kSigned || kind == kUnsigned || kind == kBool;
}

/* MPI's reduce at the root, in place or not. MPICH 4.0.2 crashes in MPI_Reduce with MPI_IN_PLACE
 * at a root other than 0 (P=3, 1000 ints; it reads address -1, its MPI_IN_PLACE): the reference
 * reads a copy of the input instead, and the in-place calls use root 0 (a call the interposer
 * passes to MPI would crash there too). */
static void reference_reduce(bool in_place, const Pair* send, Pair* recv, size_t bytes, int n, const Type* t, int o,
                             int root, MPI_Comm comm) {
  if (!in_place) {
    PMPI_Reduce(send->b, recv->b, n, t->type, ops[o], root, comm);
    return;
  }
  unsigned char* input = malloc(bytes + 1);
  memcpy(input, recv->b, bytes);
  PMPI_Reduce(input, recv->b, n, t->type, ops[o], root, comm);
  free(input);
}

/* Reductions: same count on every rank, result compared where MPI defines it. */
static void reductions(MPI_Comm comm, int n, const Type* t, int o) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t bytes = (size_t)n * t->size, all = bytes * size;
  Pair send = pair_new(all), recv = pair_new(all);
  char what[160];
  for (int in_place = 0; in_place < 2; ++in_place) {
    const int root = size > 1 && !in_place ? 1 : 0;
    /* all-reduce */
    pair_fill(&send, t, n, rank, 1, o == 1);
    pair_fill(&recv, t, n, rank, 1, o == 1);
    snprintf(what, sizeof what, "Allreduce%s %s %s n=%d", in_place ? "(in place)" : "", t->name, kOps[o].name, n);
    MPI_Allreduce(in_place ? MPI_IN_PLACE : send.a, recv.a, n, t->type, ops[o], comm);
    PMPI_Allreduce(in_place ? MPI_IN_PLACE : send.b, recv.b, n, t->type, ops[o], comm);
    pair_check(&recv, bytes, what);
    /* reduce to root; in place only at the root */
    pair_fill(&send, t, n, rank, 2, o == 1);
    pair_fill(&recv, t, n, rank, 2, o == 1);
    const bool ip = in_place && rank == root;
    snprintf(what, sizeof what, "Reduce%s %s %s n=%d root=%d", in_place ? "(in place)" : "", t->name, kOps[o].name, n,
             root);
    MPI_Reduce(ip ? MPI_IN_PLACE : send.a, recv.a, n, t->type, ops[o], root, comm);
    reference_reduce(ip, &send, &recv, bytes, n, t, o, root, comm);
    if (rank == root) pair_check(&recv, bytes, what);
    /* reduce-scatter-block: input of size blocks */
    pair_fill(&send, t, n * size, rank, 3, o == 1);
    pair_fill(&recv, t, n * size, rank, 3, o == 1);
    snprintf(what, sizeof what, "Reduce_scatter_block%s %s %s n=%d", in_place ? "(in place)" : "", t->name,
             kOps[o].name, n);
    MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send.a, recv.a, n, t->type, ops[o], comm);
    PMPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send.b, recv.b, n, t->type, ops[o], comm);
    pair_check(&recv, bytes, what);
    if (in_place) check_kept(&recv, &send, bytes, all, t, o, what);
    /* reduce-scatter with uneven counts: rank j gets n - j % 2 (at least 0), blocking and not.
     * Counts where a rank's block is bigger than those before it would hit MPICH 4.0.2's
     * in-place reduce-scatter, which memcpy()s overlapping ranges. */
    int* counts = malloc(sizeof(int) * size);
    int total = 0;
    for (int j = 0; j < size; ++j) counts[j] = n > 0 ? n - j % 2 : 0, total += counts[j];
    for (int nb = 0; nb < 2; ++nb) {
      MPI_Request rq;
      pair_fill(&send, t, total, rank, 4 + 4 * nb, o == 1);
      pair_fill(&recv, t, total, rank, 4 + 4 * nb, o == 1);
      snprintf(what, sizeof what, "%s%s %s %s n=%d", nb ? "Ireduce_scatter" : "Reduce_scatter",
               in_place ? "(in place)" : "", t->name, kOps[o].name, n);
      if (nb) {
        MPI_Ireduce_scatter(in_place ? MPI_IN_PLACE : send.a, recv.a, counts, t->type, ops[o], comm, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
      } else {
        MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : send.a, recv.a, counts, t->type, ops[o], comm);
      }
      PMPI_Reduce_scatter(in_place ? MPI_IN_PLACE : send.b, recv.b, counts, t->type, ops[o], comm);
      pair_check(&recv, (size_t)counts[rank] * t->size, what);
      if (in_place) check_kept(&recv, &send, (size_t)counts[rank] * t->size, (size_t)total * t->size, t, o, what);
    }
    free(counts);
    /* the non-blocking forms, completed by MPI_Wait */
    MPI_Request q;
    pair_fill(&send, t, n, rank, 5, o == 1);
    pair_fill(&recv, t, n, rank, 5, o == 1);
    snprintf(what, sizeof what, "Iallreduce%s %s %s n=%d", in_place ? "(in place)" : "", t->name, kOps[o].name, n);
    MPI_Iallreduce(in_place ? MPI_IN_PLACE : send.a, recv.a, n, t->type, ops[o], comm, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    PMPI_Allreduce(in_place ? MPI_IN_PLACE : send.b, recv.b, n, t->type, ops[o], comm);
    pair_check(&recv, bytes, what);
    pair_fill(&send, t, n, rank, 6, o == 1);
    pair_fill(&recv, t, n, rank, 6, o == 1);
    snprintf(what, sizeof what, "Ireduce%s %s %s n=%d", in_place ? "(in place)" : "", t->name, kOps[o].name, n);
    MPI_Ireduce(ip ? MPI_IN_PLACE : send.a, recv.a, n, t->type, ops[o], root, comm, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    reference_reduce(ip, &send, &recv, bytes, n, t, o, root, comm);
    if (rank == root) pair_check(&recv, bytes, what);
    pair_fill(&send, t, n * size, rank, 7, o == 1);
    pair_fill(&recv, t, n * size, rank, 7, o == 1);
    snprintf(what, sizeof what, "Ireduce_scatter_block%s %s %s n=%d", in_place ? "(in place)" : "", t->name,
             kOps[o].name, n);
    MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : send.a, recv.a, n, t->type, ops[o], comm, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    PMPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send.b, recv.b, n, t->type, ops[o], comm);
    pair_check(&recv, bytes, what);
    if (in_place) check_kept(&recv, &send, bytes, all, t, o, what);
  }
  pair_free(&send);
  pair_free(&recv);
}

static int parse_counts(const char* s, int* out, int max) {
  int k = 0;
  while (s && *s && k < max) {
    out[k++] = atoi(s);
    s = strchr(s, ',');
    if (s) ++s;
  }
  return k;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  init_tables();
  g_interposed = dlsym(RTLD_DEFAULT, "MPI_Allreduce") != dlsym(RTLD_DEFAULT, "PMPI_Allreduce");
  int counts[16];
  const int ncounts = parse_counts(argc > 1 ? argv[1] : "0,1,7,1000,1048579", counts, 16);
  const bool all_ops = argc > 2 && strcmp(argv[2], "all-ops") == 0;
  for (int c = 0; c < ncounts; ++c) {
    const int n = counts[c];
    for (int t = 0; t < kNumTypes; ++t)
      for (int o = 0; o < 10; ++o) {
        if (!op_allowed(types[t].kind, o)) continue;
        /* the largest counts: one op of each family keeps the run short, unless told `all-ops` */
        if (n > 65536 && !all_ops && o != 0 && o != 6 && o != 7) continue;
        reductions(MPI_COMM_WORLD, n, &types[t], o);
      }
    for (int t = 0; t < kNumTypes; ++t) movement(MPI_COMM_WORLD, n, &types[t]);
  }
  strided(MPI_COMM_WORLD);
  reordered(MPI_COMM_WORLD);
  communicators(&types[3], &types[10]);
  requests();
  progress_rule();
  send_across_barrier();
  pass_through();
  empty_null_buffers();
  long total[2] = {g_checks, g_failures}, sum[2];
  PMPI_Allreduce(total, sum, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("conformance: P=%d checks=%ld failures=%ld\n", g_size, sum[0], sum[1]);
  MPI_Finalize();
  return sum[1] != 0;
}
