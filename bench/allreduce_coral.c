/* coral-run -n P ./coral-allreduce-bench [bytes...] */
#include <coral/coral.h>

#include "allreduce_common.h"

#define CK(x)                                                                                  \
  do {                                                                                         \
    coralResult_t rc_ = (x);                                                                   \
    if (rc_) {                                                                                 \
      fprintf(stderr, "%s: %s %s\n", #x, coralGetErrorString(rc_), coralGetLastError(comm));   \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

int main(int argc, char** argv) {
  coralComm_t comm = NULL;
  CK(coralCommInitEnv(&comm));
  int rank, p;
  coralCommUserRank(comm, &rank);
  coralCommCount(comm, &p);
  size_t sizes[64];
  size_t ns = bench_sizes(argc, argv, sizes, 64);
  for (size_t s = 0; s < ns; s++) {
    size_t count = sizes[s] / 4 ? sizes[s] / 4 : 1;
    float* in = malloc(count * 4);
    float* out = malloc(count * 4);
    for (size_t i = 0; i < count; i++) in[i] = (float)(rank + i % 7);
    for (int w = 0; w < 3; w++) CK(coralAllReduce(in, out, count, coralFloat32, coralSum, comm, NULL));
    double c0 = bench_now(), cal, calmax;
    for (int w = 0; w < 3; w++) CK(coralAllReduce(in, out, count, coralFloat32, coralSum, comm, NULL));
    cal = (bench_now() - c0) / 3;
    CK(coralAllReduce(&cal, &calmax, 1, coralFloat64, coralMax, comm, NULL));
    int iters = bench_iters(calmax);
    CK(coralBarrier(comm));
    double t0 = bench_now();
    for (int it = 0; it < iters; it++) CK(coralAllReduce(in, out, count, coralFloat32, coralSum, comm, NULL));
    double t = (bench_now() - t0) / iters, tmax;
    CK(coralAllReduce(&t, &tmax, 1, coralFloat64, coralMax, comm, NULL));
    if (rank == 0) bench_print("coral", p, count * 4, tmax);
    free(in);
    free(out);
  }
  coralCommDestroy(comm);
  return 0;
}
