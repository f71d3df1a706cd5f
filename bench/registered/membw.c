/* The memory-bandwidth ceiling of an all-reduce on this host: P processes copying big buffers
 * at once, as P ranks' reductions stream memory at once. Prints the bytes copied per second of
 * all of them together (each copied byte is one read and one write of memory).
 *   membw P BYTES */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: membw P BYTES\n");
    return 2;
  }
  const int p = atoi(argv[1]);
  const size_t bytes = strtoull(argv[2], NULL, 10);
  const int reps = 8;
  /* Shared: each child writes its seconds for the timed copies. */
  double* sec = mmap(NULL, sizeof(double) * p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  volatile int* go = mmap(NULL, sizeof(int) * 2, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  for (int r = 0; r < p; ++r) {
    if (fork() == 0) {
      char* a = malloc(bytes);
      char* b = malloc(bytes);
      memset(a, r + 1, bytes);
      memset(b, 0, bytes);
      __atomic_add_fetch(&go[0], 1, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&go[0], __ATOMIC_SEQ_CST) < p) {}
      double t0 = now();
      for (int i = 0; i < reps; ++i) memcpy(i % 2 ? a : b, i % 2 ? b : a, bytes);
      sec[r] = now() - t0;
      _exit(b[bytes / 2] == 0);
    }
  }
  int bad = 0, status;
  while (wait(&status) > 0) bad |= !WIFEXITED(status) || WEXITSTATUS(status);
  double slowest = 0;
  for (int r = 0; r < p; ++r) slowest = sec[r] > slowest ? sec[r] : slowest;
  printf("membw P=%d bytes=%zu copy_GBps=%.3f\n", p, bytes, (double)bytes * reps * p / slowest / 1e9);
  return bad;
}
