/* Every rank contributes rank+1; every rank checks it receives n(n+1)/2.
 * Run: coral-run -n 4 ./hello */
#include <coral/coral.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                      \
  do {                                                                                                   \
    coralResult_t rc_ = (call);                                                                          \
    if (rc_ != coralSuccess) {                                                                           \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, coralGetErrorString(rc_), coralGetLastError(NULL)); \
      return 1;                                                                                          \
    }                                                                                                    \
  } while (0)

int main(void) {
  coralComm_t comm;
  CHECK(coralCommInitEnv(&comm));
  int rank, n;
  CHECK(coralCommUserRank(comm, &rank));
  CHECK(coralCommCount(comm, &n));
  enum { COUNT = 1 << 20 };
  float* buf = malloc(sizeof(float) * COUNT);
  for (int i = 0; i < COUNT; i++) buf[i] = (float)(rank + 1);
  CHECK(coralAllReduce(buf, buf, COUNT, coralFloat32, coralSum, comm, NULL));
  int wrong = 0;
  for (int i = 0; i < COUNT; i++) wrong += buf[i] != (float)(n * (n + 1) / 2);
  printf("rank %d of %d: all-reduce of %d floats %s (value %.0f)\n", rank, n, COUNT, wrong ? "WRONG" : "correct",
         buf[0]);
  free(buf);
  CHECK(coralCommDestroy(comm));
  return wrong != 0;
}
