/* coral-run -n P ./coral-allreduce-bench [bytes...] */
#include <coral/coral.h>

#include "allreduce_common.h"

static int ar(void* c, const float* in, float* out, size_t n) {
  return coralAllReduce(in, out, n, coralFloat32, coralSum, (coralComm_t)c, NULL) != coralSuccess;
}
static int mx(void* c, double in, double* out) {
  return coralAllReduce(&in, out, 1, coralFloat64, coralMax, (coralComm_t)c, NULL) != coralSuccess;
}
static int bar(void* c) { return coralBarrier((coralComm_t)c) != coralSuccess; }

int main(int argc, char** argv) {
  coralComm_t comm = NULL;
  if (coralCommInitEnv(&comm) != coralSuccess) {
    fprintf(stderr, "coralCommInitEnv: %s\n", coralGetLastError(NULL));
    return 1;
  }
  bench_lib lib = {"coral", 0, 1, ar, mx, bar, comm};
  coralCommUserRank(comm, &lib.rank);
  coralCommCount(comm, &lib.nranks);
  int rc = bench_main(&lib, argc, argv);
  if (rc) fprintf(stderr, "coral: %s\n", coralGetLastError(comm));
  coralCommDestroy(comm);
  return rc;
}
