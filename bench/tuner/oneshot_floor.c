/* What an 8-byte all-reduce costs here with nothing but its synchronization: P processes pinned
 * like coral-run --bind-to core (rank r on the r-th allowed CPU, round robin), each call writing
 * its two floats and a sequence number into its own slot of one shared mapping, then waiting for
 * every peer's in rank order (sched_yield while one is missing) and summing them. No library,
 * no checks, no tags. (Spinning instead while the awaited rank runs on the other CPU, Coral's
 * yield rule, measured the same here.) The sweep compares the ring against this to tell whether "3x faster than
 * the ring" is within reach of any one-shot on this machine. (Only for tiny vectors: for KiBs
 * its plain loops are no floor; the library's one-shot beats it there.)
 * Usage: oneshot_floor P ITERS [FLOATS]   (FLOATS up to 256, default 2; prints
 * "oneshot-floor P=.. us=..", median of 5 runs) */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxRanks = 64, kMaxFloats = 256, kRuns = 5 };

struct slot {
  _Alignas(64) atomic_long seq;
  float data[kMaxFloats];
};

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* One run: P processes, ITERS timed calls after a warm-up; returns rank 0's us per call. */
static double run(int p, int iters, int nf, int* cpus, int ncpu) {
  struct slot* s = mmap(NULL, sizeof(struct slot) * 2 * p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  double* result = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED || result == MAP_FAILED) exit(1);
  for (int r = 0; r < p; r++) {
    if (fork() != 0) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[r % ncpu], &one);
    sched_setaffinity(0, sizeof one, &one);
    float acc[kMaxFloats] = {0}, mine[kMaxFloats];
    for (int i = 0; i < nf; i++) mine[i] = i % 2 ? 1.0f : (float)r;
    const int warm = iters / 10 + 10;
    double t0 = 0;
    for (long k = 1; k <= warm + iters; k++) {
      if (k == warm + 1) t0 = now_us();
      struct slot* mine_slot = &s[(k & 1) * p + r]; /* a slot is reused two calls later, when all have read it */
      memcpy(mine_slot->data, mine, nf * sizeof(float));
      atomic_store_explicit(&mine_slot->seq, k, memory_order_release);
      for (int q = 0; q < p; q++) {
        struct slot* in = &s[(k & 1) * p + q];
        while (atomic_load_explicit(&in->seq, memory_order_acquire) < k) sched_yield();
        for (int i = 0; i < nf; i++) acc[i] = q ? acc[i] + in->data[i] : in->data[i];
      }
    }
    if (r == 0) *result = (now_us() - t0) / iters;
    _exit(nf > 1 && acc[1] != (float)p); /* every peer's 1.0 counted once */
  }
  int st, bad = 0;
  while (wait(&st) > 0) bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  if (bad) {
    fprintf(stderr, "oneshot_floor: a rank failed or summed wrong\n");
    exit(1);
  }
  double us = *result;
  munmap(s, sizeof(struct slot) * 2 * p);
  munmap(result, sizeof(double));
  return us;
}

static int cmp(const void* a, const void* b) { return *(const double*)a < *(const double*)b ? -1 : 1; }

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: oneshot_floor P ITERS [FLOATS]\n");
    return 2;
  }
  int p = atoi(argv[1]), iters = atoi(argv[2]), nf = argc > 3 ? atoi(argv[3]) : 2;
  if (p < 1 || p > kMaxRanks || iters < 1 || nf < 1 || nf > kMaxFloats) return 2;
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int cpus[CPU_SETSIZE], ncpu = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &allowed)) cpus[ncpu++] = c;
  double t[kRuns];
  for (int i = 0; i < kRuns; i++) t[i] = run(p, iters, nf, cpus, ncpu);
  qsort(t, kRuns, sizeof t[0], cmp);
  printf("oneshot-floor P=%d us=%.2f\n", p, t[kRuns / 2]);
  return 0;
}
