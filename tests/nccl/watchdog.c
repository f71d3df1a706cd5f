/* torch's watchdog: ncclCommAbort from its own thread while the main thread is stuck in a call
 * on the same communicator. Here the stuck call is rank 0's first call on device buffers (the
 * stand-in GPU's), which waits for rank 1 to connect device links, and rank 1 never makes one;
 * alone, or in a group (whose end runs it).
 * The call must end soon after the abort, the abort must return, and nothing may touch the
 * freed communicator (ASan would see it). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <coral/coral_device.h>

#include "suite.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct watchdog {
  ncclComm_t comm;
  double took; /* seconds ncclCommAbort took */
};

static void* watchdog_main(void* arg) {
  struct watchdog* w = (struct watchdog*)arg;
  usleep(300 * 1000);
  const double t0 = now();
  ncclCommAbort(w->comm);
  w->took = now() - t0;
  return NULL;
}

static int watchdog_abort(int rank, int nranks, ncclUniqueId id, int grouped) {
  int failures = 0;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  if (rank == 1) {
    /* A host call: it waits on rank 0, and fails once rank 0 aborts. */
    float x[4] = {1, 2, 3, 4};
    const double t0 = now();
    const ncclResult_t r = ncclAllReduce(x, x, 4, ncclFloat, ncclSum, comm, NULL);
    EXPECT(r != ncclSuccess, "rank 1's all-reduce succeeded without rank 0");
    EXPECT(now() - t0 < 20, "rank 1's all-reduce ended %.1f s after the start", now() - t0);
    ncclCommAbort(comm);
    return failures;
  }
  float* buf = NULL;
  void* stream = NULL;
  EXPECT(ncclMemAlloc((void**)&buf, 1024 * sizeof(float)) == ncclSuccess, "ncclMemAlloc");
  EXPECT(coralStreamCreate(&stream) == coralSuccess, "coralStreamCreate");
  if (!buf || !stream) return failures + 1;
  struct watchdog w = {comm, -1};
  pthread_t t;
  pthread_create(&t, NULL, watchdog_main, &w);
  const double t0 = now();
  ncclResult_t r;
  if (grouped) {
    ncclGroupStart();
    r = ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, stream);
    const ncclResult_t end = ncclGroupEnd();
    if (r == ncclSuccess) r = end;
  } else {
    r = ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, stream);
  }
  const double waited = now() - t0;
  pthread_join(t, NULL);
  EXPECT(r != ncclSuccess, "the device all-reduce succeeded without rank 1");
  /* CORAL_TIMEOUT is 5 s in this suite: the stuck call, left alone, would end at 5 s. */
  EXPECT(waited < 3, "the device all-reduce ended %.1f s after the start, not at the abort", waited);
  EXPECT(w.took >= 0 && w.took < 3, "ncclCommAbort took %.1f s", w.took);
  coralStreamDestroy(stream);
  ncclMemFree(buf);
  return failures;
}

static int alone(int rank, int nranks, ncclUniqueId id) { return watchdog_abort(rank, nranks, id, 0); }
static int grouped(int rank, int nranks, ncclUniqueId id) { return watchdog_abort(rank, nranks, id, 1); }

int suite_watchdog(void) {
  return run_ranks("abort from a watchdog thread", 2, alone, -1) +
         run_ranks("abort from a watchdog, in a group", 2, grouped, -1);
}
