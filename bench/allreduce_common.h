/* Shared by the Coral and MPI all-reduce timers so both measure the same thing the same way:
 * out-of-place float32 sum, a barrier, then `iters` back-to-back calls; time = the slowest rank's
 * mean per call; busbw = algbw * 2(P-1)/P. */
#ifndef CORAL_BENCH_ALLREDUCE_COMMON_H
#define CORAL_BENCH_ALLREDUCE_COMMON_H
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const size_t kBenchSizes[] = {8, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20};

static double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Calls for ~0.3 s given the slowest rank's time per call, between 5 and 20000. Every rank
 * must use the same count, so pass the value agreed through a max-reduction. */
static int bench_iters(double seconds_per_call) {
  double it = 0.3 / (seconds_per_call > 1e-9 ? seconds_per_call : 1e-9);
  if (it > 20000) it = 20000;
  if (it < 5) it = 5;
  return (int)it;
}

static void bench_print(const char* lib, int p, size_t bytes, double seconds) {
  double algbw = bytes / seconds / 1e9;
  printf("%s P=%d bytes=%zu time_us=%.3f algbw=%.4f busbw=%.4f\n", lib, p, bytes, seconds * 1e6, algbw,
         algbw * 2.0 * (p - 1) / p);
  fflush(stdout);
}

/* Inputs are rank + i % 7, so every element of the sum is known exactly: returns the number of
 * wrong elements of out. */
static size_t bench_wrong(const float* out, size_t count, int p) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; i++) wrong += out[i] != (float)(p * (p - 1) / 2 + p * (int)(i % 7));
  return wrong;
}

/* The library under test: a float32 sum all-reduce, a max-reduction of one double (to agree on
 * iteration counts and report the slowest rank) and a barrier; each returns 0 on success. */
typedef struct {
  const char* name;
  int rank, nranks;
  int (*allreduce)(void* ctx, const float* in, float* out, size_t count);
  int (*max)(void* ctx, double in, double* out);
  int (*barrier)(void* ctx);
  void* ctx;
} bench_lib;

static size_t bench_sizes(int argc, char** argv, size_t* out, size_t max);

/* The whole measurement for every size in argv; returns the process exit status. */
static int bench_main(const bench_lib* lib, int argc, char** argv) {
  size_t sizes[64];
  size_t ns = bench_sizes(argc, argv, sizes, 64);
  for (size_t s = 0; s < ns; s++) {
    size_t count = sizes[s] / 4 ? sizes[s] / 4 : 1;
    float* in = (float*)malloc(count * 4);
    float* out = (float*)malloc(count * 4);
    int err = 0;
    for (size_t i = 0; i < count; i++) in[i] = (float)(lib->rank + i % 7);
    for (int w = 0; w < 3; w++) err |= lib->allreduce(lib->ctx, in, out, count);
    double c0 = bench_now(), calmax = 0, tmax = 0;
    for (int w = 0; w < 3; w++) err |= lib->allreduce(lib->ctx, in, out, count);
    err |= lib->max(lib->ctx, (bench_now() - c0) / 3, &calmax);
    int iters = bench_iters(calmax);
    err |= lib->barrier(lib->ctx);
    double t0 = bench_now();
    for (int it = 0; it < iters && !err; it++) err |= lib->allreduce(lib->ctx, in, out, count);
    err |= lib->max(lib->ctx, (bench_now() - t0) / iters, &tmax);
    if (err || bench_wrong(out, count, lib->nranks)) {
      fprintf(stderr, "%s: %s all-reduce at %zu bytes\n", lib->name, err ? "failed" : "wrong", count * 4);
      return 1;
    }
    if (lib->rank == 0) bench_print(lib->name, lib->nranks, count * 4, tmax);
    free(in);
    free(out);
  }
  return 0;
}

/* Sizes from argv (bytes), else the default list. */
static size_t bench_sizes(int argc, char** argv, size_t* out, size_t max) {
  size_t n = 0;
  for (int i = 1; i < argc && n < max; i++) out[n++] = strtoull(argv[i], NULL, 10);
  if (n == 0)
    for (; n < sizeof kBenchSizes / sizeof kBenchSizes[0]; n++) out[n] = kBenchSizes[n];
  return n;
}
#endif
