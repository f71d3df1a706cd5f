/* Creation (non-blocking, inside a group, InitAll, scalable), revoke, split, shrink after a
 * rank is killed, abort, an asynchronous error on a stream, and bad arguments. */
#define _GNU_SOURCE
#include <coral/coral_device.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A float sum of the ranks' (rank + 1) over comm; returns the failures. */
static int sum_check(ncclComm_t comm, int expect_ranks, const char* what) {
  int failures = 0;
  float in[5], out[5];
  int me = -1, n = -1;
  ncclCommUserRank(comm, &me);
  ncclCommCount(comm, &n);
  EXPECT(n == expect_ranks, "%s: ncclCommCount %d, want %d", what, n, expect_ranks);
  for (int i = 0; i < 5; ++i) in[i] = (float)(me + 1 + i);
  ncclResult_t r = ncclAllReduce(in, out, 5, ncclFloat, ncclSum, comm, NULL);
  EXPECT(r == ncclSuccess, "%s: ncclAllReduce: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(comm));
  for (int i = 0; i < 5; ++i) EXPECT(out[i] == (float)(n * (n + 1) / 2 + n * i), "%s: [%d] = %g", what, i, out[i]);
  return failures;
}

static int nonblocking_init(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, nranks, id, rank, &cfg);
  EXPECT(r == ncclSuccess || r == ncclInProgress, "non-blocking init: %s", ncclGetErrorString(r));
  ncclResult_t state = ncclInProgress;
  for (double t0 = now(); state == ncclInProgress && now() - t0 < 30;) {
    EXPECT(ncclCommGetAsyncError(comm, &state) == ncclSuccess, "ncclCommGetAsyncError");
    if (state == ncclInProgress) usleep(1000);
  }
  EXPECT(state == ncclSuccess, "non-blocking init ended with %s", ncclGetErrorString(state));
  if (state == ncclSuccess) failures += sum_check(comm, nranks, "non-blocking init");
  if (state != ncclSuccess) return failures;
  /* A split inherits non-blocking: the child comes back at once, polled as torch polls it. */
  ncclComm_t sub = NULL;
  r = ncclCommSplit(comm, rank % 2, rank, &sub, NULL);
  EXPECT(r == ncclSuccess || r == ncclInProgress, "non-blocking split: %s", ncclGetErrorString(r));
  EXPECT(sub != NULL, "non-blocking split gave no communicator (%s)", ncclGetErrorString(r));
  state = ncclInProgress;
  for (double t0 = now(); sub && state == ncclInProgress && now() - t0 < 30;) {
    EXPECT(ncclCommGetAsyncError(sub, &state) == ncclSuccess, "ncclCommGetAsyncError of the split");
    if (state == ncclInProgress) usleep(1000);
  }
  if (sub && state == ncclSuccess) failures += sum_check(sub, (nranks - rank % 2 + 1) / 2, "non-blocking split");
  /* Asking for blocking in the split's config: usable when the call returns. */
  ncclComm_t all = NULL;
  ncclConfig_t bcfg = NCCL_CONFIG_INITIALIZER;
  bcfg.blocking = 1;
  r = ncclCommSplit(comm, 0, rank, &all, &bcfg);
  EXPECT(r == ncclSuccess && all, "blocking split of a non-blocking parent: %s", ncclGetErrorString(r));
  if (all) failures += sum_check(all, nranks, "blocking split of a non-blocking parent");
  /* Shrink likewise hands over its child. */
  ncclComm_t small = NULL;
  int last = nranks - 1;
  if (rank != last) {
    r = ncclCommShrink(comm, &last, 1, &small, NULL, NCCL_SHRINK_DEFAULT);
    EXPECT((r == ncclSuccess || r == ncclInProgress) && small, "non-blocking shrink: %s", ncclGetErrorString(r));
    state = ncclInProgress;
    for (double t0 = now(); small && state == ncclInProgress && now() - t0 < 30; usleep(1000))
      ncclCommGetAsyncError(small, &state);
    if (small && state == ncclSuccess) failures += sum_check(small, nranks - 1, "non-blocking shrink");
  }
  if (small) ncclCommDestroy(small);
  if (all) ncclCommDestroy(all);
  if (sub) ncclCommDestroy(sub);
  ncclCommDestroy(comm);
  return failures;
}

static int group_init(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm = NULL;
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  ncclResult_t r = ncclCommInitRank(&comm, nranks, id, rank);
  EXPECT(r == ncclSuccess || r == ncclInProgress, "init inside a group: %s", ncclGetErrorString(r));
  r = ncclGroupEnd();
  EXPECT(r == ncclSuccess, "ncclGroupEnd after init: %s", ncclGetErrorString(r));
  if (r == ncclSuccess) failures += sum_check(comm, nranks, "group init");
  ncclCommDestroy(comm);
  return failures;
}

/* Ranks 0, 2 colour 0 (key reverses them), rank 1 colour 1, rank 3 no colour. */
static int split(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm, sub = NULL;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  int color = rank == 3 ? NCCL_SPLIT_NOCOLOR : rank % 2;
  ncclResult_t r = ncclCommSplit(comm, color, -rank, &sub, NULL);
  EXPECT(r == ncclSuccess, "ncclCommSplit: %s (%s)", ncclGetErrorString(r), ncclGetLastError(comm));
  if (rank == 3) {
    EXPECT(sub == NULL, "NCCL_SPLIT_NOCOLOR gave a communicator");
  } else if (sub) {
    int me = -1;
    ncclCommUserRank(sub, &me);
    EXPECT(me == (rank == 0 ? 1 : 0), "split: rank %d has sub-rank %d", rank, me);
    failures += sum_check(sub, rank % 2 ? 1 : 2, "split");
    ncclCommDestroy(sub);
  }
  failures += sum_check(comm, nranks, "parent after split");
  ncclCommDestroy(comm);
  return failures;
}

/* Rank 3 is killed; the others' next call fails (no hang), and a shrink without it works. */
static int shrink(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm, small = NULL;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  failures += sum_check(comm, nranks, "before the kill");
  if (rank == 3) raise(SIGKILL);
  float x[1024] = {0}, y[1024];
  double t0 = now();
  ncclResult_t r = ncclAllReduce(x, y, 1024, ncclFloat, ncclSum, comm, NULL);
  EXPECT(r != ncclSuccess, "an all-reduce with a killed rank succeeded");
  EXPECT(now() - t0 < 20, "the failure took %.1f s", now() - t0);
  EXPECT(strlen(ncclGetLastError(comm)) > 0, "no message after %s", ncclGetErrorString(r));
  int gone = 3;
  r = ncclCommShrink(comm, &gone, 1, &small, NULL, NCCL_SHRINK_ABORT);
  EXPECT(r == ncclSuccess, "ncclCommShrink: %s (%s)", ncclGetErrorString(r), ncclGetLastError(comm));
  if (r == ncclSuccess) failures += sum_check(small, nranks - 1, "shrunk");
  ncclCommDestroy(small);
  ncclCommAbort(comm);
  return failures;
}

/* Rank 0 aborts its communicator; the others' call on theirs must fail, not hang. */
static int abort_peer(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  failures += sum_check(comm, nranks, "before abort");
  if (rank == 0) {
    EXPECT(ncclCommAbort(comm) == ncclSuccess, "ncclCommAbort");
    return failures;
  }
  float x[8] = {0}, y[8];
  double t0 = now();
  ncclResult_t r = ncclAllReduce(x, y, 8, ncclFloat, ncclSum, comm, NULL);
  EXPECT(r != ncclSuccess, "an all-reduce against an aborted rank succeeded");
  EXPECT(now() - t0 < 20, "the failure took %.1f s", now() - t0);
  ncclCommAbort(comm);
  return failures;
}

/* On the stand-in GPU the call is queued on a stream and returns at once; the peer's death
 * shows up through ncclCommGetAsyncError. */
static int async_error(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  void *buf = NULL, *stream = NULL;
  EXPECT(ncclMemAlloc(&buf, 1 << 20) == ncclSuccess, "ncclMemAlloc");
  EXPECT(coralStreamCreate(&stream) == coralSuccess, "coralStreamCreate");
  float* f = buf;
  for (int i = 0; i < 1024; ++i) f[i] = (float)(rank + i);
  ncclResult_t r = ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, stream);
  EXPECT(r == ncclSuccess, "device all-reduce: %s (%s)", ncclGetErrorString(r), ncclGetLastError(comm));
  EXPECT(coralStreamSynchronize(stream) == coralSuccess, "coralStreamSynchronize");
  for (int i = 0; i < 1024; ++i) EXPECT(f[i] == (float)(1 + 2 * i), "device all-reduce [%d] = %g", i, f[i]);
  ncclResult_t state = ncclInProgress;
  ncclCommGetAsyncError(comm, &state);
  EXPECT(state == ncclSuccess, "async error %s before any failure", ncclGetErrorString(state));
  if (rank == 1) raise(SIGKILL);
  r = ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, stream);
  state = r;
  for (double t0 = now(); state == ncclSuccess && now() - t0 < 20; usleep(2000)) ncclCommGetAsyncError(comm, &state);
  EXPECT(state != ncclSuccess && state != ncclInProgress, "no asynchronous error after the peer died (%s)",
         ncclGetErrorString(state));
  EXPECT(strlen(ncclGetLastError(comm)) > 0, "no message with the asynchronous error");
  coralStreamSynchronize(stream);
  ncclCommAbort(comm);
  ncclMemFree(buf);
  return failures;
}

/* Revoke as NCCL's fault-tolerance pattern uses it: ranks 0 and 1 have an all-reduce in flight
 * that rank 2 never joins; rank 0 revokes, which ends its own and rank 1's operation (NCCL:
 * "stops all in-flight operations") instead of leaving them to the timeout. Only rank 0 revokes
 * (NCCL's revoke is local): rank 1 saw its operation fail, rank 2 saw nothing. Then all split the
 * communicator (one colour) and shrink it, and both work. */
static int revoke_then_split(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm, sub = NULL, small = NULL;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  void *buf = NULL, *stream = NULL;
  EXPECT(ncclMemAlloc(&buf, 4096) == ncclSuccess, "ncclMemAlloc");
  EXPECT(coralStreamCreate(&stream) == coralSuccess, "coralStreamCreate");
  /* One all-reduce of all three first: the links between GPUs are made at the first call. */
  EXPECT(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, stream) == ncclSuccess, "all-reduce");
  EXPECT(coralStreamSynchronize(stream) == coralSuccess, "coralStreamSynchronize");
  double t0 = now();
  if (rank < 2) {
    ncclResult_t r = ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, stream);
    EXPECT(r == ncclSuccess, "queueing the all-reduce: %s", ncclGetErrorString(r));
  }
  usleep(300 * 1000); /* the all-reduce is under way and stuck on rank 2 */
  if (rank == 0) EXPECT(ncclCommRevoke(comm, 0) == ncclSuccess, "ncclCommRevoke");
  if (rank < 2) {
    coralStreamSynchronize(stream); /* fails or not: it must return, long before the timeout */
    EXPECT(now() - t0 < 3, "the in-flight all-reduce took %.1f s to end after the revoke", now() - t0);
  }
  ncclResult_t r;
  if (rank == 0) {
    EXPECT(ncclCommRevoke(comm, 0) == ncclSuccess, "ncclCommRevoke twice");
    ncclResult_t state = ncclInProgress;
    for (double t1 = now(); state == ncclInProgress && now() - t1 < 10; usleep(1000))
      ncclCommGetAsyncError(comm, &state);
    EXPECT(state == ncclSuccess, "a revoked communicator's state is %s, not ncclSuccess once quiet",
           ncclGetErrorString(state));
    r = ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, stream);
    EXPECT(r == ncclInvalidUsage, "an all-reduce on a revoked communicator gave %s", ncclGetErrorString(r));
    EXPECT(ncclCommFinalize(comm) == ncclInvalidUsage, "ncclCommFinalize after revoke is invalid");
  }
  r = ncclCommSplit(comm, 0, rank, &sub, NULL);
  EXPECT(r == ncclSuccess, "ncclCommSplit after revoke: %s (%s)", ncclGetErrorString(r), ncclGetLastError(comm));
  if (sub) failures += sum_check(sub, nranks, "split after revoke");
  if (rank != 1) { /* the excluded rank takes no part, as a dead one would not */
    int drop = 1;
    r = ncclCommShrink(comm, &drop, 1, &small, NULL, NCCL_SHRINK_DEFAULT);
    EXPECT(r == ncclSuccess, "ncclCommShrink after revoke: %s (%s)", ncclGetErrorString(r), ncclGetLastError(comm));
    if (small) failures += sum_check(small, nranks - 1, "shrink after revoke");
  }
  if (small) ncclCommDestroy(small);
  if (sub) ncclCommDestroy(sub);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy after revoke");
  coralStreamDestroy(stream);
  ncclMemFree(buf);
  return failures;
}

/* Both ranks send before they receive, outside a group, more than the links buffer. Coral's
 * progress thread takes the receives queued behind a waiting send, so this completes (NCCL
 * hangs). A caller that waits on the host for each call cannot queue them: there it fails
 * within the timeout, and the message names the cycle and the cure. */
static int send_first(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  const size_t n = 4 << 20;
  float *out = NULL, *in = NULL;
  void* stream = NULL;
  EXPECT(ncclMemAlloc((void**)&out, n * sizeof(float)) == ncclSuccess, "ncclMemAlloc");
  EXPECT(ncclMemAlloc((void**)&in, n * sizeof(float)) == ncclSuccess, "ncclMemAlloc");
  EXPECT(coralStreamCreate(&stream) == coralSuccess, "coralStreamCreate");
  if (!out || !in || !stream) return failures;
  for (size_t i = 0; i < n; ++i)
    out[i] = (float)(rank * 3 + i % 1000), in[i] = -1; /* the stand-in's memory is mapped */
  const int peer = 1 - rank;
  setenv("CORAL_GPU_STREAM_WAIT", "flag", 1);
  EXPECT(ncclSend(out, n, ncclFloat, peer, comm, stream) == ncclSuccess, "ncclSend is queued");
  EXPECT(ncclRecv(in, n, ncclFloat, peer, comm, stream) == ncclSuccess, "ncclRecv is queued");
  EXPECT(coralStreamSynchronize(stream) == coralSuccess, "coralStreamSynchronize");
  ncclResult_t state = ncclInProgress;
  ncclCommGetAsyncError(comm, &state);
  EXPECT(state == ncclSuccess, "send before receive on both ranks: %s (%s)", ncclGetErrorString(state),
         ncclGetLastError(comm));
  for (size_t i = 0; i < n; i += 4099)
    EXPECT(in[i] == (float)(peer * 3 + i % 1000), "send before receive: [%zu] = %g", i, in[i]);

  setenv("CORAL_GPU_STREAM_WAIT", "host", 1);
  ncclComm_t waiting = NULL;
  EXPECT(ncclCommSplit(comm, 0, rank, &waiting, NULL) == ncclSuccess, "ncclCommSplit");
  if (waiting) {
    ncclResult_t r = ncclSend(out, n, ncclFloat, peer, waiting, stream);
    /* The first to time out (ncclSystemError) aborts the other (ncclRemoteError). */
    EXPECT(r == ncclSystemError || r == ncclRemoteError, "a send waited on the host: %s, wanted a timeout",
           ncclGetErrorString(r));
    const char* msg = ncclGetLastError(waiting);
    EXPECT(strstr(msg, "point-to-point") && strstr(msg, "cycle of waits") && strstr(msg, "one group"),
           "the message should name the point-to-point cycle and the group that avoids it: '%s'", msg);
    ncclCommAbort(waiting);
  }
  unsetenv("CORAL_GPU_STREAM_WAIT");
  ncclCommAbort(comm);
  ncclMemFree(out);
  ncclMemFree(in);
  coralStreamDestroy(stream);
  return failures;
}

/* Bad arguments: each call returns ncclInvalidArgument (or ncclInvalidUsage) with a message. */
static int bad_arguments(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  float x[4] = {0}, y[4];
  struct {
    ncclResult_t got, want;
    const char* what;
  } cases[] = {
      {ncclAllReduce(x, y, 4, ncclFloat, ncclSum, NULL, NULL), ncclInvalidArgument, "a NULL comm"},
      {ncclAllReduce(x, y, 4, ncclNumTypes, ncclSum, comm, NULL), ncclInvalidArgument, "dtype ncclNumTypes"},
      {ncclAllReduce(x, y, 4, ncclFloat, (ncclRedOp_t)77, comm, NULL), ncclInvalidArgument, "op 77"},
      {ncclAllReduce(NULL, y, 4, ncclFloat, ncclSum, comm, NULL), ncclInvalidArgument, "a NULL sendbuff"},
      {ncclBroadcast(x, y, 4, ncclFloat, nranks, comm, NULL), ncclInvalidArgument, "root == nranks"},
      {ncclSend(x, 4, ncclFloat, -1, comm, NULL), ncclInvalidArgument, "peer -1"},
      {ncclCommCount(comm, NULL), ncclInvalidArgument, "a NULL count"},
      {ncclCommWindowRegister(comm, x, sizeof x, NULL, 0), ncclInvalidUsage, "windows"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    EXPECT(cases[i].got == cases[i].want, "%s: got %s, want %s", cases[i].what, ncclGetErrorString(cases[i].got),
           ncclGetErrorString(cases[i].want));
  }
  EXPECT(strlen(ncclGetLastError(comm)) > 0, "no last error after bad calls");
  ncclComm_t other;
  EXPECT(ncclCommInitRank(&other, 2, id, 5) == ncclInvalidArgument, "init with rank 5 of 2");
  EXPECT(strstr(ncclGetLastError(NULL), "rank") != NULL, "the init message names the rank: '%s'",
         ncclGetLastError(NULL));
  /* The communicator still works after all that. */
  failures += sum_check(comm, nranks, "after bad arguments");
  ncclCommDestroy(comm);
  return failures;
}

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 29, 7)
/* NCCL 2.29.7's, which the shim exports as not supported for programs built against it. */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
#endif

/* One thread, three communicators on one device (ncclCommInitAll), driven in one group as
 * nccl-tests drives its per-GPU communicators; then the calls around them. */
static int one_process(void) {
  int failures = 0;
  ncclComm_t comms[3];
  int devs[3] = {0, 0, 0};
  ncclResult_t r = ncclCommInitAll(comms, 3, devs);
  EXPECT(r == ncclSuccess, "ncclCommInitAll: %s (%s)", ncclGetErrorString(r), ncclGetLastError(NULL));
  if (r != ncclSuccess) return failures;
  float in[3][6], out[3][6];
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 6; ++i) in[c][i] = (float)(c + i), out[c][i] = -1;
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  for (int c = 0; c < 3; ++c) ncclAllReduce(in[c], out[c], 6, ncclFloat, ncclSum, comms[c], NULL);
  r = ncclGroupEnd();
  EXPECT(r == ncclSuccess, "one group over three communicators: %s", ncclGetErrorString(r));
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 6; ++i) EXPECT(out[c][i] == (float)(3 + 3 * i), "InitAll comm %d [%d] = %g", c, i, out[c][i]);
  /* ncclBcast in place, one group again. */
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  for (int c = 0; c < 3; ++c) ncclBcast(in[c], 6, ncclFloat, 2, comms[c], NULL);
  EXPECT(ncclGroupEnd() == ncclSuccess, "ncclBcast group");
  for (int c = 0; c < 3; ++c) EXPECT(in[c][5] == 7, "ncclBcast comm %d [5] = %g", c, in[c][5]);
  int dev = -1;
  EXPECT(ncclCommCuDevice(comms[0], &dev) == ncclSuccess && dev == 0, "ncclCommCuDevice: %d", dev);
  void* handle = NULL;
  EXPECT(ncclCommRegister(comms[0], in[0], sizeof in[0], &handle) == ncclSuccess, "ncclCommRegister");
  EXPECT(ncclCommDeregister(comms[0], handle) == ncclSuccess, "ncclCommDeregister");
  r = ncclCommSuspend(comms[0], 0);
  EXPECT(r == ncclInvalidUsage && strstr(ncclGetLastError(comms[0]), "newer NCCL"),
         "ncclCommSuspend (a newer NCCL's) gave %s: %s", ncclGetErrorString(r), ncclGetLastError(comms[0]));
  EXPECT(ncclGroupSimulateEnd(NULL) == ncclInvalidUsage, "ncclGroupSimulateEnd without a group");
  ncclSimInfo_t sim0 = NCCL_SIM_INFO_INITIALIZER;
  EXPECT(ncclGroupSimulateEnd(&sim0) == ncclInvalidUsage, "ncclGroupSimulateEnd without a group");
  /* A simulated group is priced, not run, and is over: the thread's next calls are not
   * deferred. An inner level only closes, leaving the estimate alone. */
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER, inner = NCCL_SIM_INFO_INITIALIZER;
  for (int i = 0; i < 6; ++i) out[0][i] = -1;
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  for (int c = 0; c < 3; ++c) ncclAllReduce(in[c], out[c], 6, ncclFloat, ncclSum, comms[c], NULL);
  EXPECT(ncclGroupSimulateEnd(&inner) == ncclSuccess, "an inner ncclGroupSimulateEnd");
  EXPECT(inner.estimatedTime == NCCL_UNDEF_FLOAT, "an inner level estimated %g us", inner.estimatedTime);
  EXPECT(ncclGroupSimulateEnd(&sim) == ncclSuccess, "ncclGroupSimulateEnd: %s", ncclGetLastError(NULL));
  EXPECT(sim.estimatedTime > 0 && sim.estimatedTime < 1e6, "ncclGroupSimulateEnd estimated %g us", sim.estimatedTime);
  EXPECT(out[0][0] == -1, "ncclGroupSimulateEnd ran the group's all-reduce");
  /* A larger all-reduce costs more; a struct not made by NCCL_SIM_INFO_INITIALIZER is refused,
   * and the group is over all the same. */
  static float big_in[3][6 << 12], big_out[3][6 << 12];
  ncclSimInfo_t big = NCCL_SIM_INFO_INITIALIZER, raw = big;
  raw.magic = 0;
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  for (int c = 0; c < 3; ++c) ncclAllReduce(big_in[c], big_out[c], 6 << 12, ncclFloat, ncclSum, comms[c], NULL);
  EXPECT(ncclGroupSimulateEnd(&big) == ncclSuccess, "ncclGroupSimulateEnd of a large all-reduce");
  EXPECT(big.estimatedTime > sim.estimatedTime, "%g us for 24 Ki floats, %g us for 6", big.estimatedTime,
         sim.estimatedTime);
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  for (int c = 0; c < 3; ++c) ncclAllReduce(in[c], out[c], 6, ncclFloat, ncclSum, comms[c], NULL);
  r = ncclGroupSimulateEnd(&raw);
  EXPECT(r == ncclInvalidArgument && strstr(ncclGetLastError(NULL), "NCCL_SIM_INFO_INITIALIZER"),
         "ncclGroupSimulateEnd of an uninitialized simInfo gave %s: %s", ncclGetErrorString(r), ncclGetLastError(NULL));
  EXPECT(out[0][0] == -1, "a refused ncclGroupSimulateEnd ran the group's all-reduce");
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  for (int c = 0; c < 3; ++c) ncclAllReduce(in[c], out[c], 6, ncclFloat, ncclSum, comms[c], NULL);
  EXPECT(ncclGroupEnd() == ncclSuccess, "a group after ncclGroupSimulateEnd");
  EXPECT(out[0][5] == 3 * 7, "the group after ncclGroupSimulateEnd gave %g", out[0][5]);
  /* Revoked: later collectives are refused, destroy still works. */
  EXPECT(ncclCommRevoke(comms[1], 0) == ncclSuccess, "ncclCommRevoke");
  r = ncclAllReduce(in[1], out[1], 6, ncclFloat, ncclSum, comms[1], NULL);
  EXPECT(r == ncclInvalidUsage, "an all-reduce on a revoked communicator gave %s", ncclGetErrorString(r));
  for (int c = 0; c < 3; ++c) {
    if (c != 1) EXPECT(ncclCommFinalize(comms[c]) == ncclSuccess, "ncclCommFinalize %d", c);
    EXPECT(ncclCommDestroy(comms[c]) == ncclSuccess, "ncclCommDestroy %d", c);
  }
  printf("%-28s P=3 %s\n", "InitAll, one group, revoke", failures ? "FAILED" : "ok");
  return failures;
}

/* ncclCommInitRankScalable with one id, as a job with a single root would call it. */
/* The same on device buffers (the stand-in GPUs'), with each CORAL_GPU_STREAM_WAIT mode. When
 * callers wait on the host, the group must queue every communicator's call before waiting for
 * any: the first waits for ranks whose calls come after it. With two stand-in GPUs the middle
 * communicator is on GPU 1, and the thread stays on GPU 0 for the group, as nccl-tests -g N
 * does: NCCL runs each call on its communicator's GPU. */
static int one_process_device(const char* wait) {
  int failures = 0;
  setenv("CORAL_GPU_STREAM_WAIT", wait, 1);
  int ngpus = 0;
  ncclComm_t comms[3];
  int devs[3] = {0, 0, 0};
  if (coralDeviceCount(&ngpus) == coralSuccess && ngpus > 1) devs[1] = 1;
  ncclResult_t r = ncclCommInitAll(comms, 3, devs);
  EXPECT(r == ncclSuccess, "ncclCommInitAll: %s (%s)", ncclGetErrorString(r), ncclGetLastError(NULL));
  if (r != ncclSuccess) return failures;
  int dev = -1;
  EXPECT(ncclCommCuDevice(comms[1], &dev) == ncclSuccess && dev == devs[1], "ncclCommCuDevice: %d, want %d", dev,
         devs[1]);
  float* buf[3] = {NULL, NULL, NULL};
  void* streams[3] = {NULL, NULL, NULL};
  for (int c = 0; c < 3; ++c) {
    EXPECT(coralDeviceSet(devs[c]) == coralSuccess, "coralDeviceSet(%d)", devs[c]);
    EXPECT(coralStreamCreate(&streams[c]) == coralSuccess, "coralStreamCreate");
    EXPECT(ncclMemAlloc((void**)&buf[c], 6 * sizeof(float)) == ncclSuccess, "ncclMemAlloc");
    for (int i = 0; buf[c] && i < 6; ++i) buf[c][i] = (float)(c + i); /* the stand-in's memory is mapped */
  }
  coralDeviceSet(0);
  if (buf[0] && buf[1] && buf[2]) {
    EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
    for (int c = 0; c < 3; ++c) ncclAllReduce(buf[c], buf[c], 6, ncclFloat, ncclSum, comms[c], streams[c]);
    r = ncclGroupEnd();
    EXPECT(r == ncclSuccess, "one device group over three communicators (%s wait): %s (%s)", wait,
           ncclGetErrorString(r), ncclGetLastError(NULL));
    EXPECT(coralDeviceGet(&dev) == coralSuccess && dev == 0, "the group left the thread on GPU %d, not 0", dev);
    for (int c = 0; c < 3; ++c) EXPECT(coralStreamSynchronize(streams[c]) == coralSuccess, "coralStreamSynchronize");
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 6; ++i)
        EXPECT(buf[c][i] == (float)(3 + 3 * i), "%s wait: comm %d [%d] = %g", wait, c, i, buf[c][i]);
  }
  for (int c = 0; c < 3; ++c) {
    if (buf[c]) ncclMemFree(buf[c]);
    EXPECT(ncclCommDestroy(comms[c]) == ncclSuccess, "ncclCommDestroy %d", c);
    coralStreamDestroy(streams[c]);
  }
  unsetenv("CORAL_GPU_STREAM_WAIT");
  printf("InitAll, device, %-11s P=3 %s\n", wait, failures ? "FAILED" : "ok");
  return failures;
}

static int scalable_init(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankScalable(&comm, nranks, rank, 1, &id, NULL);
  EXPECT(r == ncclSuccess, "ncclCommInitRankScalable: %s", ncclGetErrorString(r));
  if (r == ncclSuccess) failures += sum_check(comm, nranks, "scalable init");
  ncclCommDestroy(comm);
  return failures;
}

int suite_faults(void) {
  int failures = 0;
  failures += one_process();
  failures += one_process_device("flag");
  failures += one_process_device("host");
  failures += run_ranks("ncclCommInitRankScalable", 3, scalable_init, -1);
  failures += run_ranks("non-blocking init, split", 3, nonblocking_init, -1);
  failures += run_ranks("init inside a group", 2, group_init, -1);
  failures += run_ranks("split", 4, split, -1);
  failures += run_ranks("bad arguments", 2, bad_arguments, -1);
  failures += run_ranks("abort", 3, abort_peer, -1);
  failures += run_ranks("revoke, split, shrink", 3, revoke_then_split, -1);
  failures += run_ranks("shrink after kill -9", 4, shrink, 3);
  failures += run_ranks("async error (stand-in GPU)", 2, async_error, 1);
  failures += run_ranks("send before receive, both ranks", 2, send_first, -1);
  return failures;
}
