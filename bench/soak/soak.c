/* Soak: N all-reduces of mixed sizes and types, every result checked exactly, resident memory
 * sampled. Every rank draws the same sequence of (size, dtype, op) from the seed; the values are
 * small integers, so sums are exact in float too. Prints one line per rank at the end:
 *   soak: rank R ops N wrong W seconds S ops/s X rss_start_kib A rss_end_kib B rss_max_kib C
 * Usage: coral-soak OPS [MAX_BYTES] [SEED]. Exit 3 on a collective error, 4 on a wrong result. */
#define _POSIX_C_SOURCE 200809L
#include <coral/coral.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long rss_kib(void) {
  long pages = 0, rss = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = -1;
  fclose(f);
  return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static uint64_t next(uint64_t* s) { /* splitmix64: the same stream on every rank */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int main(int argc, char** argv) {
  long ops = argc > 1 ? atol(argv[1]) : 100000;
  size_t max_bytes = argc > 2 ? (size_t)atol(argv[2]) : 1 << 20;
  uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
  coralComm_t comm;
  if (coralCommInitEnv(&comm) != coralSuccess) return 2;
  int rank, p;
  coralCommUserRank(comm, &rank);
  coralCommCount(comm, &p);
  size_t max_elems = max_bytes / 4 ? max_bytes / 4 : 1;
  int32_t* ibuf = malloc(max_elems * 4);
  float* fbuf = malloc(max_elems * 4);
  long wrong = 0, rss0 = -1, rss_max = 0;
  double t0 = now();
  for (long i = 0; i < ops; ++i) {
    uint64_t r = next(&seed);
    /* Sizes log-uniform from 1 element to max_elems: most calls small, some large. */
    int bits = 0;
    while ((((size_t)1) << (bits + 1)) <= max_elems) bits++;
    size_t n = ((size_t)1 << (r % (bits + 1))) + (r >> 20) % 7;
    if (n > max_elems) n = max_elems;
    int is_float = (r >> 8) & 1, use_max = ((r >> 9) & 3) == 0;
    coralResult_t rc;
    if (is_float) {
      for (size_t k = 0; k < n; ++k) fbuf[k] = (float)((rank + k + (size_t)i) % 17);
      rc = coralAllReduce(fbuf, fbuf, n, coralFloat32, use_max ? coralMax : coralSum, comm, NULL);
    } else {
      for (size_t k = 0; k < n; ++k) ibuf[k] = (int32_t)((rank * 3 + k + (size_t)i) % 1001);
      rc = coralAllReduce(ibuf, ibuf, n, coralInt32, use_max ? coralMax : coralSum, comm, NULL);
    }
    if (rc != coralSuccess) {
      fprintf(stderr, "soak: rank %d op %ld failed: %s\n", rank, i, coralGetLastError(comm));
      return 3;
    }
    for (size_t k = 0; k < n; ++k) {
      long want = 0, got;
      for (int q = 0; q < p; ++q) {
        long v = is_float ? (long)((q + k + (size_t)i) % 17) : (long)((q * 3 + k + (size_t)i) % 1001);
        want = use_max ? (q == 0 || v > want ? v : want) : want + v;
      }
      got = is_float ? (long)fbuf[k] : (long)ibuf[k];
      if (got != want || (is_float && fbuf[k] != (float)want)) {
        if (wrong < 5) fprintf(stderr, "soak: rank %d op %ld [%zu] = %ld, want %ld\n", rank, i, k, got, want);
        wrong++;
      }
    }
    if (i % 1000 == 0) {
      long m = rss_kib();
      /* The first sample after warm-up is the baseline: buffers and connections exist by then. */
      if (i == 1000 || (rss0 < 0 && ops <= 1000)) rss0 = m;
      if (m > rss_max) rss_max = m;
    }
  }
  double secs = now() - t0;
  long rss1 = rss_kib();
  if (rss0 < 0) rss0 = rss1;
  if (rss1 > rss_max) rss_max = rss1;
  printf("soak: rank %d ops %ld wrong %ld seconds %.1f ops/s %.0f rss_start_kib %ld rss_end_kib %ld rss_max_kib %ld\n",
         rank, ops, wrong, secs, ops / secs, rss0, rss1, rss_max);
  coralCommDestroy(comm);
  free(ibuf);
  free(fbuf);
  return wrong ? 4 : 0;
}
