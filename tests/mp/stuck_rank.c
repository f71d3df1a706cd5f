/* Under coral-run: all-reduces until told otherwise. STUCK_RANK=r stops rank r after STUCK_AFTER
 * all-reduces, by SIGSTOP (STUCK_HOW=stop) or by sleeping outside Coral (STUCK_HOW=sleep), so
 * the tests can see how the others, and coral-run, explain the hang. */
#include <coral/coral.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  coralComm_t comm;
  if (coralCommInitEnv(&comm) != coralSuccess) return 2;
  int rank = 0;
  coralCommUserRank(comm, &rank);
  const char* s = getenv("STUCK_RANK");
  const int stuck = s ? atoi(s) : -1;
  const int after = getenv("STUCK_AFTER") ? atoi(getenv("STUCK_AFTER")) : 10;
  const char* how = getenv("STUCK_HOW") ? getenv("STUCK_HOW") : "stop";
  static float buf[1 << 18];
  for (int i = 0; i < 1000000; ++i) {
    if (rank == stuck && i == after) {
      if (strcmp(how, "stop") == 0)
        raise(SIGSTOP);
      else /* a signal (coral-run's SIGUSR1) ends a sleep early: sleep on */
        for (int k = 0; k < 600; ++k) usleep(100 * 1000);
    }
    coralResult_t rc = coralAllReduce(buf, buf, sizeof buf / sizeof buf[0], coralFloat32, coralSum, comm, NULL);
    if (rc != coralSuccess) {
      fprintf(stderr, "rank %d: %s\n", rank, coralGetLastError(comm));
      return 1;
    }
  }
  coralCommDestroy(comm);
  return 0;
}
