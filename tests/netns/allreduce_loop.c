#define _POSIX_C_SOURCE 200809L
/* All-reduces in a loop until told to stop, for failure tests: prints "ready" once the
 * communicator is up and, on failure, the error code's name, the library's message and how long
 * the failing call took. Usage: allreduce_loop SECONDS [BYTES]. Exit 3 on a collective error. */
#include <coral/coral.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 10;
  size_t count = (argc > 2 ? (size_t)atol(argv[2]) : 1 << 20) / sizeof(float);
  coralComm_t comm;
  if (coralCommInitEnv(&comm) != coralSuccess) {
    fprintf(stderr, "init failed\n");
    return 2;
  }
  int rank;
  coralCommUserRank(comm, &rank);
  if (count < 1) count = 1;
  float* buf = calloc(count, sizeof(float));
  printf("rank %d: ready\n", rank);
  fflush(stdout);
  double start = now();
  long iters = 0;
  for (;;) {
    /* The decision to stop travels in the reduced data, so every rank stops after the same call. */
    buf[0] = now() - start >= seconds ? 1.0f : 0.0f;
    double t0 = now();
    coralResult_t rc = coralAllReduce(buf, buf, count, coralFloat32, coralSum, comm, NULL);
    if (rc != coralSuccess) {
      const char* name = rc == coralRemoteError ? "coralRemoteError"
                         : rc == coralTimeout   ? "coralTimeout"
                                                : "other error";
      printf("rank %d: %s (%s) after %.3f s in the call: %s\n", rank, name, coralGetErrorString(rc), now() - t0,
             coralGetLastError(comm));
      fflush(stdout);
      return 3;
    }
    ++iters;
    if (buf[0] > 0) break;
  }
  printf("rank %d: %ld all-reduces ok\n", rank, iters);
  coralCommDestroy(comm);
  free(buf);
  return 0;
}
