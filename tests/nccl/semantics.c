/* NCCL's documented semantics where a program depends on them: splits inside a group driven by
 * one thread, a group's failure returned by its end (and the group dropped), communicators used
 * before a non-blocking creation is done, the process-wide last error, config checks, and the
 * calls NCCL accepts with NULL. */
#define _DEFAULT_SOURCE /* usleep */
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "suite.h"

/* One thread drives both ranks (ncclCommInitAll): their splits must be under way together,
 * which NCCL does at the group's end. A split of one alone would wait for the other forever. */
static int split_in_group(void) {
  int failures = 0;
  ncclComm_t c[2], s[2] = {NULL, NULL};
  EXPECT(ncclCommInitAll(c, 2, NULL) == ncclSuccess, "ncclCommInitAll: %s", ncclGetLastError(NULL));
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  for (int i = 0; i < 2; ++i) EXPECT(ncclCommSplit(c[i], 0, 1 - i, &s[i], NULL) == ncclSuccess, "ncclCommSplit %d", i);
  EXPECT(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd after two splits: %s", ncclGetLastError(NULL));
  float x[2][4] = {{1, 2, 3, 4}, {10, 20, 30, 40}}, y[2][4] = {{0}};
  int n = 0, rank = -1;
  EXPECT(s[0] && ncclCommCount(s[0], &n) == ncclSuccess && n == 2, "the split's child has %d ranks", n);
  EXPECT(s[0] && ncclCommUserRank(s[0], &rank) == ncclSuccess && rank == 1, "key 1 made child 0 rank %d", rank);
  EXPECT(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  for (int i = 0; i < 2; ++i) ncclAllReduce(x[i], y[i], 4, ncclFloat, ncclSum, s[i], NULL);
  EXPECT(ncclGroupEnd() == ncclSuccess, "all-reduce on the children: %s", ncclGetLastError(NULL));
  EXPECT(y[0][3] == 44 && y[1][0] == 11, "all-reduce on the children gave %g %g", y[0][3], y[1][0]);
  for (int i = 0; i < 2; ++i) ncclCommDestroy(s[i]), ncclCommDestroy(c[i]);
  return failures;
}

/* A call the group refuses fails the group: its end returns the first failure and runs none
 * of its calls (NCCL drops the group); the next group runs. */
static int group_failure(void) {
  int failures = 0;
  ncclComm_t c[2];
  EXPECT(ncclCommInitAll(c, 2, NULL) == ncclSuccess, "ncclCommInitAll: %s", ncclGetLastError(NULL));
  float x[2][4] = {{1, 2, 3, 4}, {1, 2, 3, 4}}, y[2][4] = {{0}};
  ncclGroupStart();
  for (int i = 0; i < 2; ++i) ncclAllReduce(x[i], y[i], 4, ncclFloat, ncclSum, c[i], NULL);
  EXPECT(ncclAllReduce(x[0], y[0], 4, ncclFloat, ncclSum, NULL, NULL) == ncclInvalidArgument, "NULL comm in a group");
  ncclResult_t r = ncclGroupEnd();
  EXPECT(r == ncclInvalidArgument, "ncclGroupEnd of a group with a NULL comm gave %d", r);
  EXPECT(strstr(ncclGetLastError(NULL), "comm is NULL") != NULL, "last error '%s'", ncclGetLastError(NULL));
  EXPECT(y[0][0] == 0 && y[1][0] == 0, "a failed group's calls ran: %g %g", y[0][0], y[1][0]);
  ncclGroupStart();
  for (int i = 0; i < 2; ++i) ncclAllReduce(x[i], y[i], 4, ncclFloat, ncclSum, c[i], NULL);
  r = ncclGroupEnd();
  EXPECT(r == ncclSuccess && y[0][0] == 2 && y[1][0] == 2, "the next group: %d, %g %g", r, y[0][0], y[1][0]);
  for (int i = 0; i < 2; ++i) ncclCommDestroy(c[i]);
  return failures;
}

/* Rank 1 comes a second late, so rank 0's non-blocking creation is still under way: a call on it
 * is refused (NCCL: ncclInvalidArgument), not taken as queued with ncclInProgress and lost. */
static int used_before_ready(int rank, int nranks, ncclUniqueId id) {
  int failures = 0;
  (void)nranks;
  if (rank == 1) sleep(1);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, 2, id, rank, &cfg);
  EXPECT(r == ncclSuccess || r == ncclInProgress, "non-blocking init gave %d", r);
  float x[4] = {1, 2, 3, 4}, y[4] = {0};
  if (rank == 0) {
    int n = 0;
    EXPECT(ncclCommCount(comm, &n) == ncclInvalidArgument, "ncclCommCount before the creation is done");
    r = ncclAllReduce(x, y, 4, ncclFloat, ncclSum, comm, NULL);
    EXPECT(r == ncclInvalidArgument, "ncclAllReduce before the creation is done gave %d", r);
  }
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress && ncclCommGetAsyncError(comm, &state) == ncclSuccess) usleep(1000);
  EXPECT(state == ncclSuccess, "creation ended with %d", state);
  r = ncclAllReduce(x, y, 4, ncclFloat, ncclSum, comm, NULL);
  if (r == ncclInProgress) {
    while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress) usleep(1000);
    r = state;
  }
  EXPECT(r == ncclSuccess && y[3] == 8, "the all-reduce once ready: %d, %g", r, y[3]);
  ncclCommDestroy(comm);
  return failures;
}

/* NCCL_COMM_ID: each rank makes its own id, the same as rank 0's, and they meet at the address,
 * rank 0 serving there; a second communicator from the same id works as well. */
static int comm_id_env(int rank, int nranks, ncclUniqueId handed) {
  int failures = 0;
  ncclUniqueId id;
  EXPECT(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId with NCCL_COMM_ID: %s", ncclGetLastError(NULL));
  EXPECT(memcmp(&id, &handed, sizeof id) == 0, "NCCL_COMM_ID made another id than rank 0's");
  for (int round = 0; round < 2; ++round) {
    ncclComm_t comm = NULL;
    if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) {
      EXPECT(0, "ncclCommInitRank %d from NCCL_COMM_ID: %s", round, ncclGetLastError(NULL));
      return failures;
    }
    double x[3] = {rank, 1, round}, y[3] = {0};
    EXPECT(ncclAllReduce(x, y, 3, ncclDouble, ncclSum, comm, NULL) == ncclSuccess, "all-reduce %d: %s", round,
           ncclGetLastError(NULL));
    EXPECT(y[0] == nranks * (nranks - 1) / 2 && y[1] == nranks && y[2] == nranks * round, "all-reduce %d gave %g %g %g",
           round, y[0], y[1], y[2]);
    EXPECT(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy %d", round);
  }
  return failures;
}

/* A port nobody listens on now, for NCCL_COMM_ID. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr*)&a, &len) != 0)
    return -1;
  close(fd);
  return ntohs(a.sin_port);
}

static int comm_id(void) {
  int failures = 0;
  ncclUniqueId id;
  setenv("NCCL_COMM_ID", "no-port-here", 1);
  EXPECT(ncclGetUniqueId(&id) == ncclInvalidArgument, "NCCL_COMM_ID without a port accepted");
  EXPECT(strstr(ncclGetLastError(NULL), "NCCL_COMM_ID=no-port-here") != NULL, "last error '%s'",
         ncclGetLastError(NULL));
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", free_port());
  setenv("NCCL_COMM_ID", addr, 1);
  failures += run_ranks("ranks meeting at NCCL_COMM_ID", 3, comm_id_env, -1);
  unsetenv("NCCL_COMM_ID");
  return failures;
}

static void* fail_elsewhere(void* arg) {
  (void)arg;
  int n;
  ncclCommCount(NULL, &n);
  return NULL;
}

/* What NCCL accepts (NULLs from its own calls), refuses (a second finalize, bad config values,
 * a shrink that excludes no one), and its one last error for the whole process. */
static int edges(void) {
  int failures = 0;
  ncclUniqueId id;
  ncclComm_t comm = NULL, small = NULL;
  EXPECT(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.minCTAs = 0;
  EXPECT(ncclCommInitRankConfig(&comm, 1, id, 0, &bad) == ncclInvalidArgument, "config.minCTAs 0 accepted");
  EXPECT(strstr(ncclGetLastError(NULL), "minCTAs") != NULL, "last error '%s'", ncclGetLastError(NULL));
  ncclConfig_t flags = NCCL_CONFIG_INITIALIZER;
  flags.splitShare = 2;
  EXPECT(ncclCommInitRankConfig(&comm, 1, id, 0, &flags) == ncclInvalidArgument, "config.splitShare 2 accepted");
  ncclUniqueId ids[2] = {id, id};
  EXPECT(ncclCommInitRankScalable(&comm, 1, 0, 2, ids, NULL) == ncclInvalidArgument, "nId 2 above nranks 1");
  EXPECT(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess, "ncclCommInitRank: %s", ncclGetLastError(NULL));
  EXPECT(ncclCommDeregister(comm, NULL) == ncclSuccess, "ncclCommDeregister(comm, NULL)");
  EXPECT(ncclCommShrink(comm, NULL, 0, &small, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument,
         "a shrink that excludes no rank");
  pthread_t t;
  pthread_create(&t, NULL, fail_elsewhere, NULL);
  pthread_join(t, NULL);
  EXPECT(strstr(ncclGetLastError(NULL), "ncclCommCount") != NULL,
         "another thread's failure is not the last error: '%s'", ncclGetLastError(NULL));
  EXPECT(ncclCommFinalize(NULL) == ncclSuccess, "ncclCommFinalize(NULL)");
  EXPECT(ncclCommFinalize(comm) == ncclSuccess, "ncclCommFinalize");
  EXPECT(ncclCommFinalize(comm) == ncclInvalidArgument, "a second ncclCommFinalize");
  EXPECT(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy");
  return failures;
}

int suite_semantics(void) {
  int failures = 0;
  failures += split_in_group();
  failures += group_failure();
  failures += edges();
  failures += run_ranks("a non-blocking communicator used before it is up", 2, used_before_ready, -1);
  failures += comm_id();
  printf("nccl suite: semantics: %d failure(s)\n", failures);
  return failures;
}
