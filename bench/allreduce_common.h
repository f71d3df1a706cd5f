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
  printf("%s P=%d bytes=%zu time_us=%.3f algbw=%.4f busbw=%.4f\n", lib, p, bytes, seconds * 1e6,
         algbw, algbw * 2.0 * (p - 1) / p);
  fflush(stdout);
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
