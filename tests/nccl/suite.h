/* The NCCL-ABI shim under a C program written against nccl.h alone (plus coral_device.h for the
 * stand-in GPU's streams). Ranks are forked processes; rank 0 makes the unique id and hands it to
 * the others through shared memory, as an MPI program would with MPI_Bcast. */
#ifndef CORAL_TESTS_NCCL_SUITE_H
#define CORAL_TESTS_NCCL_SUITE_H
#include <nccl.h>
#include <stddef.h>

/* One test body, run on every rank; returns its number of failures. */
typedef int (*rank_fn)(int rank, int nranks, ncclUniqueId id);

/* Forks nranks ranks running fn and waits for them; `killed` is a rank expected to die by
 * SIGKILL (-1: none). Returns the failures: a rank's own count, or 1 for a rank that exited
 * abnormally or hung past the alarm. */
int run_ranks(const char* name, int nranks, rank_fn fn, int killed);

/* Element i of rank r's input for dtype t and op o, and the exact result expected. */
double input_value(ncclDataType_t t, ncclRedOp_t o, int r, size_t i);
double expected(ncclDataType_t t, ncclRedOp_t o, int nranks, size_t i, double premul);
/* Element i of a buffer of dtype t, as a double, and its encoding (exactly representable values). */
double get_elem(const void* buf, ncclDataType_t t, size_t i);
void set_elem(void* buf, ncclDataType_t t, size_t i, double v);
size_t type_size(ncclDataType_t t);
const char* type_name(ncclDataType_t t);

#define EXPECT(cond, ...)                                                                             \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      char what_[512];                                                                                \
      snprintf(what_, sizeof what_, __VA_ARGS__);                                                     \
      fprintf(stderr, "nccl suite: rank %d: FAILED %s (%s:%d)\n", g_rank, what_, __FILE__, __LINE__); \
      ++failures;                                                                                     \
    }                                                                                                 \
  } while (0)
extern int g_rank;

int suite_collectives(int rank, int nranks, ncclUniqueId id);
int suite_faults(void);
int suite_watchdog(void);
int suite_semantics(void);
#endif
