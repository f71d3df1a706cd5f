/* The harness, exact values for every dtype, and the collectives matrix; faults.c has the rest. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite.h"

int g_rank = -1;

struct shared_id {
  volatile int ready;
  ncclUniqueId id;
};

/* A SIGKILLed rank cannot unlink its emulated device memory; the harness does it for it. */
static void remove_leftovers(pid_t pid) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "/dev/shm/coral-emu-%d-*", (int)pid);
  glob_t g;
  if (glob(pattern, 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; ++i) unlink(g.gl_pathv[i]);
  globfree(&g);
}

int run_ranks(const char* name, int nranks, rank_fn fn, int killed) {
  fflush(stdout);  // or every fork prints what is buffered again
  struct shared_id* sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return perror("mmap"), 1;
  sh->ready = 0;
  pid_t pids[16];
  for (int r = 0; r < nranks; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm(60);  // a hang fails the test instead of the whole suite's timeout
      g_rank = r;
      if (r == 0) {
        ncclUniqueId id;
        if (ncclGetUniqueId(&id) != ncclSuccess) _exit(3);
        sh->id = id;
        __atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
      }
      while (!__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE)) usleep(1000);
      int f = fn(r, nranks, sh->id);
      fflush(stdout);
      fflush(stderr);
      _exit(f > 100 ? 100 : f);
    }
  }
  int failures = 0;
  for (int r = 0; r < nranks; ++r) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (r == killed) {
      if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
        fprintf(stderr, "nccl suite: %s: rank %d was to die by SIGKILL (status %#x)\n", name, r, st);
        ++failures;
      }
      remove_leftovers(pids[r]);
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "nccl suite: %s: rank %d %s %d\n", name, r, WIFEXITED(st) ? "failures" : "died of signal",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      failures += WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
  }
  munmap(sh, sizeof *sh);
  printf("%-28s P=%d %s\n", name, nranks, failures ? "FAILED" : "ok");
  fflush(stdout);
  return failures;
}

/* --- values ----------------------------------------------------------------------------------- */
/* Small floats: exponent bits, mantissa bits, bias (fp16, bf16, e4m3, e5m2). */
static int minifloat(ncclDataType_t t, int* e, int* m, int* bias) {
  switch (t) {
    case ncclFloat16:
      return *e = 5, *m = 10, *bias = 15, 1;
    case ncclBfloat16:
      return *e = 8, *m = 7, *bias = 127, 1;
    case ncclFloat8e4m3:
      return *e = 4, *m = 3, *bias = 7, 1;
    case ncclFloat8e5m2:
      return *e = 5, *m = 2, *bias = 15, 1;
    default:
      return 0;
  }
}

size_t type_size(ncclDataType_t t) {
  static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return s[t];
}

const char* type_name(ncclDataType_t t) {
  static const char* n[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                            "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return n[t];
}

double get_elem(const void* buf, ncclDataType_t t, size_t i) {
  const char* p = (const char*)buf + i * type_size(t);
  int eb, mb, bias;
  if (minifloat(t, &eb, &mb, &bias)) {
    unsigned bits = type_size(t) == 1 ? *(const uint8_t*)p : *(const uint16_t*)p;
    unsigned sign = bits >> (eb + mb), ex = (bits >> mb) & ((1u << eb) - 1), man = bits & ((1u << mb) - 1);
    double v = ex == 0 ? ldexp(man, 1 - bias - mb) : ldexp((double)(man | (1u << mb)), (int)ex - bias - mb);
    return sign ? -v : v;
  }
  switch (t) {
    case ncclInt8:
      return *(const int8_t*)p;
    case ncclUint8:
      return *(const uint8_t*)p;
    case ncclInt32:
      return *(const int32_t*)p;
    case ncclUint32:
      return *(const uint32_t*)p;
    case ncclInt64:
      return (double)*(const int64_t*)p;
    case ncclUint64:
      return (double)*(const uint64_t*)p;
    case ncclFloat32:
      return *(const float*)p;
    default:
      return *(const double*)p;
  }
}

void set_elem(void* buf, ncclDataType_t t, size_t i, double v) {
  char* p = (char*)buf + i * type_size(t);
  int eb, mb, bias;
  if (minifloat(t, &eb, &mb, &bias)) {  // only values the type holds exactly (all normal here)
    unsigned bits = 0;
    if (v != 0) {
      int e;
      double f = frexp(fabs(v), &e);  // f in [0.5, 1)
      bits = ((unsigned)(e - 1 + bias) << mb) | (unsigned)llround((f * 2 - 1) * (1 << mb));
      if (v < 0) bits |= 1u << (eb + mb);
    }
    if (type_size(t) == 1)
      *(uint8_t*)p = (uint8_t)bits;
    else
      *(uint16_t*)p = (uint16_t)bits;
    return;
  }
  switch (t) {
    case ncclInt8:
      *(int8_t*)p = (int8_t)v;
      break;
    case ncclUint8:
      *(uint8_t*)p = (uint8_t)v;
      break;
    case ncclInt32:
      *(int32_t*)p = (int32_t)v;
      break;
    case ncclUint32:
      *(uint32_t*)p = (uint32_t)v;
      break;
    case ncclInt64:
      *(int64_t*)p = (int64_t)v;
      break;
    case ncclUint64:
      *(uint64_t*)p = (uint64_t)v;
      break;
    case ncclFloat32:
      *(float*)p = (float)v;
      break;
    default:
      *(double*)p = v;
      break;
  }
}

/* Chosen so every result is exact in every type at P=4: e5m2 (2 mantissa bits) gets 0/1 inputs
 * (1/2 for products), the others k+r with k = i%3 (sums 6..14, products up to 120). */
double input_value(ncclDataType_t t, ncclRedOp_t o, int r, size_t i) {
  if (t == ncclFloat8e5m2) return (double)((i + (size_t)r) % 2) + (o == ncclProd ? 1 : 0);
  return (double)(i % 3) + r;
}

static int is_integer(ncclDataType_t t) { return t <= ncclUint64; }

double expected(ncclDataType_t t, ncclRedOp_t o, int nranks, size_t i, double premul) {
  double acc = input_value(t, o, 0, i);
  for (int r = 1; r < nranks; ++r) {
    double x = input_value(t, o, r, i);
    if (o == ncclProd)
      acc *= x;
    else if (o == ncclMax)
      acc = x > acc ? x : acc;
    else if (o == ncclMin)
      acc = x < acc ? x : acc;
    else
      acc += x;
  }
  if (o == ncclAvg) acc = is_integer(t) ? floor(acc / nranks) : acc / nranks;
  if (premul != 0) {  // PreMulSum: the sum of the scaled inputs
    acc = 0;
    for (int r = 0; r < nranks; ++r) acc += premul * input_value(t, o, r, i);
  }
  return acc;
}

/* --- the collectives matrix ------------------------------------------------------------------- */
static void fill(void* buf, ncclDataType_t t, ncclRedOp_t o, int r, size_t n) {
  for (size_t i = 0; i < n; ++i) set_elem(buf, t, i, input_value(t, o, r, i));
}

static int check_allreduce(ncclComm_t comm, int rank, int nranks, ncclDataType_t t, size_t n) {
  int failures = 0;
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, ncclNumOps /* premulsum */};
  char* in = malloc(n * 8 + 8);
  char* out = malloc(n * 8 + 8);
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; ++k) {
    ncclRedOp_t o = ops[k], use = o;
    double premul = 0;
    // 0/1 inputs averaged over 3 ranks are thirds, which no float holds exactly.
    if (o == ncclAvg && t == ncclFloat8e5m2 && nranks % 2) continue;
    char scalar[8];
    if (o == ncclNumOps) {  // PreMulSum by 2, the scalar in host memory
      premul = 2;
      set_elem(scalar, t, 0, 2);
      EXPECT(ncclRedOpCreatePreMulSum(&use, scalar, t, ncclScalarHostImmediate, comm) == ncclSuccess,
             "ncclRedOpCreatePreMulSum %s", type_name(t));
      o = ncclSum;
    }
    fill(in, t, o, rank, n);
    memset(out, 0xee, n * type_size(t));
    ncclResult_t res = ncclAllReduce(in, out, n, t, use, comm, NULL);
    EXPECT(res == ncclSuccess, "ncclAllReduce %s op %d n=%zu: %s (%s)", type_name(t), (int)k, n,
           ncclGetErrorString(res), ncclGetLastError(comm));
    const ncclRedOp_t eo = premul ? ncclSum : ops[k];
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < n; ++i)
      if (get_elem(out, t, i) != expected(t, eo, nranks, i, premul) && !wrong++) first = i;
    EXPECT(wrong == 0, "ncclAllReduce %s op %d n=%zu: %zu wrong, first at %zu: %g, want %g", type_name(t), (int)k, n,
           wrong, first, get_elem(out, t, first), expected(t, eo, nranks, first, premul));
    if (premul) ncclRedOpDestroy(use, comm);
  }
  free(in);
  free(out);
  return failures;
}

/* The data-movement collectives and reduce/reduce-scatter on one dtype: each element names the
 * rank and index it came from, so a misplaced block shows. */
static int check_others(ncclComm_t comm, int rank, int p, ncclDataType_t t, size_t n) {
  int failures = 0;
  const size_t es = type_size(t);
  char* in = calloc(n * p + 1, es);
  char* out = calloc(n * p + 1, es);
  /* Broadcast from rank 1 (p > 1) and Reduce(sum) to rank p-1. */
  int root = p > 1 ? 1 : 0;
  fill(in, t, ncclSum, rank, n);
  EXPECT(ncclBroadcast(in, out, n, t, root, comm, NULL) == ncclSuccess, "ncclBroadcast %s", type_name(t));
  for (size_t i = 0; i < n; ++i)
    EXPECT(get_elem(out, t, i) == input_value(t, ncclSum, root, i), "bcast %s [%zu]", type_name(t), i);
  EXPECT(ncclReduce(in, out, n, t, ncclSum, p - 1, comm, NULL) == ncclSuccess, "ncclReduce %s", type_name(t));
  if (rank == p - 1)
    for (size_t i = 0; i < n; ++i)
      EXPECT(get_elem(out, t, i) == expected(t, ncclSum, p, i, 0), "reduce %s [%zu]", type_name(t), i);
  /* AllGather: block r is rank r's input. */
  EXPECT(ncclAllGather(in, out, n, t, comm, NULL) == ncclSuccess, "ncclAllGather %s", type_name(t));
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < n; ++i)
      EXPECT(get_elem(out, t, r * n + i) == input_value(t, ncclSum, r, i), "allgather %s [%d][%zu]", type_name(t), r,
             i);
  /* ReduceScatter: rank r gets block r of the sum of p*n inputs. */
  fill(in, t, ncclSum, rank, n * p);
  EXPECT(ncclReduceScatter(in, out, n, t, ncclSum, comm, NULL) == ncclSuccess, "ncclReduceScatter %s", type_name(t));
  for (size_t i = 0; i < n; ++i)
    EXPECT(get_elem(out, t, i) == expected(t, ncclSum, p, rank * n + i, 0), "reducescatter %s [%zu]", type_name(t), i);
  /* AlltoAll: block j of rank r goes to rank j's block r; values r + (j%2) keep fp8 exact. */
  for (int j = 0; j < p; ++j)
    for (size_t i = 0; i < n; ++i) set_elem(in, t, j * n + i, rank + (j + i) % 2);
  EXPECT(ncclAlltoAll(in, out, n, t, comm, NULL) == ncclSuccess, "ncclAlltoAll %s", type_name(t));
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < n; ++i)
      EXPECT(get_elem(out, t, r * n + i) == r + (rank + i) % 2, "alltoall %s [%d][%zu]", type_name(t), r, i);
  /* Gather to rank 0, Scatter from rank p-1 (the same layout as AlltoAll's). */
  fill(in, t, ncclSum, rank, n);
  EXPECT(ncclGather(in, out, n, t, 0, comm, NULL) == ncclSuccess, "ncclGather %s", type_name(t));
  if (rank == 0)
    for (int r = 0; r < p; ++r)
      for (size_t i = 0; i < n; ++i)
        EXPECT(get_elem(out, t, r * n + i) == input_value(t, ncclSum, r, i), "gather %s [%d][%zu]", type_name(t), r, i);
  for (int j = 0; j < p; ++j)
    for (size_t i = 0; i < n; ++i) set_elem(in, t, j * n + i, j + (i % 2));
  EXPECT(ncclScatter(in, out, n, t, p - 1, comm, NULL) == ncclSuccess, "ncclScatter %s", type_name(t));
  for (size_t i = 0; i < n; ++i)
    EXPECT(get_elem(out, t, i) == rank + (double)(i % 2), "scatter %s [%zu]", type_name(t), i);
  free(in);
  free(out);
  return failures;
}

/* Send/recv around a ring inside one group, both directions at once. */
static int check_ring(ncclComm_t comm, int rank, int p) {
  int failures = 0;
  enum { N = 4099 };
  static int32_t out_r[N], out_l[N], from_l[N], from_r[N];
  for (int i = 0; i < N; ++i) out_r[i] = rank * 100000 + i, out_l[i] = -(rank * 100000 + i);
  int right = (rank + 1) % p, left = (rank + p - 1) % p;
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  ncclSend(out_r, N, ncclInt32, right, comm, NULL);
  ncclSend(out_l, N, ncclInt32, left, comm, NULL);
  ncclRecv(from_l, N, ncclInt32, left, comm, NULL);
  ncclRecv(from_r, N, ncclInt32, right, comm, NULL);
  ncclResult_t r = ncclGroupEnd();
  EXPECT(r == ncclSuccess, "ring group: %s (%s)", ncclGetErrorString(r), ncclGetLastError(comm));
  for (int i = 0; i < N; ++i) {
    EXPECT(from_l[i] == left * 100000 + i, "ring from left [%d] = %d", i, from_l[i]);
    EXPECT(from_r[i] == -(right * 100000 + i), "ring from right [%d] = %d", i, from_r[i]);
    if (failures) break;
  }
  return failures;
}

int suite_collectives(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm;
  ncclResult_t r = ncclCommInitRank(&comm, nranks, id, rank);
  EXPECT(r == ncclSuccess, "ncclCommInitRank: %s", ncclGetErrorString(r));
  if (r != ncclSuccess) return failures;
  int count = -1, me = -1;
  ncclCommCount(comm, &count);
  ncclCommUserRank(comm, &me);
  EXPECT(count == nranks && me == rank, "count %d rank %d", count, me);
  for (int t = 0; t < ncclNumTypes; ++t) {
    if (t == ncclChar) continue;                            // the same value as ncclInt8
    for (size_t n = 0; n <= 70001; n = n ? n * 37 + 2 : 1)  // 0, 1, 39, 1445, 53467 ... past a 256 KiB chunk
      failures += check_allreduce(comm, rank, nranks, (ncclDataType_t)t, n);
    failures += check_others(comm, rank, nranks, (ncclDataType_t)t, 7);
    failures += check_others(comm, rank, nranks, (ncclDataType_t)t, 1000);
  }
  failures += check_ring(comm, rank, nranks);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy");
  return failures;
}

int main(void) {
  int v = 0;
  ncclGetVersion(&v);
  Dl_info where;
  const char* lib = dladdr((void*)ncclAllReduce, &where) && where.dli_fname ? where.dli_fname : "?";
  printf("nccl suite: version %d from %s\n", v, lib);
  if (v != NCCL_VERSION_CODE)
    return fprintf(stderr, "nccl suite: version %d, header says %d\n", v, NCCL_VERSION_CODE), 1;
  int failures = 0;
  failures += run_ranks("collectives x dtypes x ops", 4, suite_collectives, -1);
  failures += run_ranks("collectives x dtypes x ops", 3, suite_collectives, -1);
  failures += suite_faults();
  failures += suite_watchdog();
  failures += suite_semantics();
  printf("nccl suite: failures=%d\n", failures);
  return failures ? 1 : 0;
}
