/* Shared pieces of the conformance test (conformance.c, conformance_more.c). */
#ifndef CORAL_TESTS_MPI_CONFORMANCE_H
#define CORAL_TESTS_MPI_CONFORMANCE_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

enum { kSigned, kUnsigned, kFloat, kBool, kByte, kComplex };
typedef struct {
  MPI_Datatype type;
  const char* name;
  int size;
  int kind;
} Type;

/* Two copies of one buffer: `a` for MPI_X (the interposer), `b` for PMPI_X (MPI itself). */
typedef struct {
  unsigned char *a, *b;
  size_t bytes;
} Pair;

extern int g_rank, g_size;
extern long g_checks, g_failures;
extern bool g_interposed;

Pair pair_new(size_t bytes);
void pair_free(Pair* p);
/* Fills both copies alike: n elements from (rank, salt); products get only 1s and a few 2s. */
void pair_fill(Pair* p, const Type* t, int n, int rank, int salt, bool product);
/* The first `bytes` of a and b must be equal; counts a check, reports the first difference. */
void pair_check(const Pair* p, size_t bytes, const char* what);

void movement(MPI_Comm comm, int n, const Type* t);
void strided(MPI_Comm comm);
void reordered(MPI_Comm comm);
void communicators(const Type* ints, const Type* doubles);
void requests(void);
void progress_rule(void);
void send_across_barrier(void);
void pass_through(void);
void empty_null_buffers(void);

#endif
