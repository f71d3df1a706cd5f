// Collective correctness checks shared by the thread-ranks test and the coral-run test program,
// over the exact-valued inputs of bench/common/exact_values.h.
#pragma once
#include <coral/coral.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/common/exact_values.h"

namespace checks {

using namespace exact;

// Runs one collective; returns its result code (the harness supplies C API or internal calls).
using Runner = std::function<coralResult_t(Coll, const void* send, void* recv, size_t count, coralDataType_t,
                                           coralRedOp_t, int root)>;

struct Case {
  Coll coll;
  coralDataType_t t;
  coralRedOp_t op;
  size_t count;
  bool in_place;
  int root;
};

inline std::string describe(const Case& c) {
  static const char* colls[] = {"allreduce", "reducescatter", "allgather", "broadcast", "reduce"};
  return std::string(colls[static_cast<int>(c.coll)]) + " dtype=" + std::to_string(c.t) +
         " op=" + std::to_string(static_cast<int>(c.op)) + " count=" + std::to_string(c.count) +
         (c.in_place ? " in-place" : "") + " root=" + std::to_string(c.root);
}

// Runs one case on this rank; returns "" or what went wrong.
// coralCommInitEnv with rank and size; nullptr, after saying why on stderr, when it fails.
inline coralComm_t init_from_env(int* rank, int* size) {
  coralComm_t comm;
  if (coralCommInitEnv(&comm) != coralSuccess) {
    std::fprintf(stderr, "init failed: %s\n", coralGetLastError(nullptr));
    return nullptr;
  }
  coralCommUserRank(comm, rank);
  coralCommCount(comm, size);
  return comm;
}

inline std::string run_case(const Runner& run, int rank, int p, const Case& c) {
  const size_t es = size_of(c.t), n = c.count;
  const bool scatter = c.coll == Coll::ReduceScatter, gather = c.coll == Coll::AllGather;
  const size_t send_n = scatter ? n * p : n, recv_n = gather ? n * p : n;
  std::vector<uint8_t> send, recv(recv_n * es + 1, 0xEE), buf;
  coralRedOp_t fill_op = (c.coll == Coll::AllGather || c.coll == Coll::Broadcast) ? coralSum : c.op;
  fill(send, rank, send_n, c.t, fill_op);
  const void* sp = send.data();
  void* rp = recv.data();
  if (c.in_place) {
    // NCCL's in-place layouts: RS recv = send + rank*n; AG send = recv + rank*n.
    buf.assign(std::max(send_n, recv_n) * es + 1, 0xEE);
    size_t send_at = gather ? rank * n : 0, recv_at = scatter ? rank * n : 0;
    if (!send.empty()) std::memcpy(buf.data() + send_at * es, send.data(), send.size());
    sp = buf.data() + send_at * es;
    rp = buf.data() + recv_at * es;
  }
  coralResult_t rc = run(c.coll, sp, rp, n, c.t, c.op, c.root);
  if (rc != coralSuccess) return describe(c) + ": returned " + coralGetErrorString(rc);
  size_t wrong = count_wrong(c.coll, rank, p, c.t, c.op, c.root, n, rp);
  if (wrong) return describe(c) + ": rank " + std::to_string(rank) + ": " + std::to_string(wrong) + " elements wrong";
  if (!c.in_place && recv[recv_n * es] != 0xEE) return describe(c) + ": wrote past the end of recvbuff";
  return "";
}

inline std::vector<Case> all_cases(int p) {
  std::vector<Case> out;
  const coralRedOp_t ops[] = {coralSum, coralProd, coralMax, coralMin, coralAvg};
  for (int t = 0; t < coralNumTypes; ++t) {
    auto dt = static_cast<coralDataType_t>(t);
    for (coralRedOp_t op : ops)
      for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), (size_t(1) << 20) + 3})
        for (bool ip : {false, true}) out.push_back({Coll::AllReduce, dt, op, n, ip, 0});
    // Bitwise ops, integer types only: all-reduce, reduce-scatter and reduce.
    if (!exact::Val::of(dt, 0).is_float())
      for (coralRedOp_t op : {coralBand, coralBor, coralBxor})
        for (size_t n : {size_t(0), size_t(7), size_t(1000), size_t(70001)})
          for (bool ip : {false, true}) {
            out.push_back({Coll::AllReduce, dt, op, n, ip, 0});
            out.push_back({Coll::ReduceScatter, dt, op, n, ip, 0});
            out.push_back({Coll::Reduce, dt, op, n, ip, static_cast<int>(n % p)});
          }
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(70001)}) {
      coralRedOp_t op = ops[(t + n) % 5];
      for (bool ip : {false, true}) {
        out.push_back({Coll::ReduceScatter, dt, op, n, ip, 0});
        out.push_back({Coll::AllGather, dt, coralSum, n, ip, 0});
        out.push_back({Coll::Broadcast, dt, coralSum, n, ip, static_cast<int>(n % p)});
        out.push_back({Coll::Reduce, dt, op, n, ip, static_cast<int>((n + 1) % p)});
      }
    }
  }
  return out;
}

}  // namespace checks
