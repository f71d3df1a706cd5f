// Run under coral-run: every collective through the public C API, exact checks, then p2p and
// barrier. Exits non-zero with the first failure.
#include <coral/coral.h>

#include <cstdio>
#include <vector>

#include "common/checks.h"

int main() {
  coralComm_t comm;
  if (coralCommInitEnv(&comm) != coralSuccess) {
    std::fprintf(stderr, "init failed: %s\n", coralGetLastError(nullptr));
    return 2;
  }
  int rank, p;
  coralCommUserRank(comm, &rank);
  coralCommCount(comm, &p);
  checks::Runner run = [&](checks::Coll c, const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op, int root) {
    switch (c) {
      case checks::Coll::AllReduce: return coralAllReduce(s, r, n, t, op, comm, nullptr);
      case checks::Coll::ReduceScatter: return coralReduceScatter(s, r, n, t, op, comm, nullptr);
      case checks::Coll::AllGather: return coralAllGather(s, r, n, t, comm, nullptr);
      case checks::Coll::Broadcast: return coralBroadcast(s, r, n, t, root, comm, nullptr);
      case checks::Coll::Reduce: return coralReduce(s, r, n, t, op, root, comm, nullptr);
    }
    return coralInternalError;
  };
  int cases = 0;
  for (const checks::Case& c : checks::all_cases(p)) {
    std::string e = checks::run_case(run, rank, p, c);
    if (!e.empty()) {
      std::fprintf(stderr, "FAIL %s (%s)\n", e.c_str(), coralGetLastError(comm));
      return 1;
    }
    cases++;
  }
  // Non-blocking all-reduces overlapping with local work, completed in order.
  std::vector<std::vector<double>> bufs(4, std::vector<double>(100000));
  std::vector<coralRequest_t> reqs(4);
  for (int k = 0; k < 4; ++k) {
    for (auto& x : bufs[k]) x = rank + k;
    if (coralIAllReduce(bufs[k].data(), bufs[k].data(), bufs[k].size(), coralFloat64, coralSum, comm, &reqs[k]) != coralSuccess)
      return 1;
  }
  for (int k = 3; k >= 0; --k)
    if (coralWait(reqs[k]) != coralSuccess) return 1;
  for (int k = 0; k < 4; ++k)
    if (bufs[k][99999] != p * (p - 1) / 2.0 + p * k) {
      std::fprintf(stderr, "FAIL non-blocking all-reduce %d\n", k);
      return 1;
    }
  // Ring of sends: each rank sends to the next, receives from the previous (even ranks first).
  if (p > 1) {
    std::vector<int32_t> out(1001, rank), in(1001, -1);
    int next = (rank + 1) % p, prev = (rank + p - 1) % p;
    coralResult_t a, b;
    if (rank % 2 == 0) {
      a = coralSend(out.data(), out.size(), coralInt32, next, comm, nullptr);
      b = coralRecv(in.data(), in.size(), coralInt32, prev, comm, nullptr);
    } else {
      b = coralRecv(in.data(), in.size(), coralInt32, prev, comm, nullptr);
      a = coralSend(out.data(), out.size(), coralInt32, next, comm, nullptr);
    }
    if (a || b || in[1000] != prev) {
      std::fprintf(stderr, "FAIL send/recv\n");
      return 1;
    }
  }
  if (coralBarrier(comm) != coralSuccess) return 1;
  coralCommDestroy(comm);
  std::printf("rank %d: %d collective cases passed\n", rank, cases);
  return 0;
}
