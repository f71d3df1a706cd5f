// Collective correctness checks shared by the thread-ranks test and the coral-run test programs,
// over the exact-valued inputs and layouts of bench/common/exact_values.h and exact_v.h.
#pragma once
#include <coral/coral.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/common/exact_v.h"

namespace checks {

using namespace exact;

// Runs one collective of the first five (all-reduce ... reduce); returns its result code (the
// harness supplies C API or internal calls).
using Runner = std::function<coralResult_t(Coll, const void* send, void* recv, size_t count, coralDataType_t,
                                           coralRedOp_t, int root)>;
// Runs the call l describes (any collective: the v-forms take their counts from l); op may be
// kPremul, which the harness turns into a PreMulSum op with premul_scalar(rank, dtype).
using CallRunner =
    std::function<coralResult_t(const Layout& l, const void* send, void* recv, coralDataType_t, coralRedOp_t)>;

struct Case {
  Coll coll;
  coralDataType_t t;
  coralRedOp_t op;
  size_t count;
  bool in_place;
  int root;
  double skew = 1;  // v-forms: exact::skew_count's ratio (infinity: some blocks empty)
};

inline const char* coll_name(Coll c) {
  static const char* names[] = {"allreduce", "reducescatter", "allgather", "broadcast",  "reduce",        "alltoall",
                                "alltoallv", "gather",        "scatter",   "allgatherv", "reducescatterv"};
  return names[static_cast<int>(c)];
}

inline std::string describe(const Case& c) {
  const std::string op = c.op == kPremul ? "premulsum" : std::to_string(static_cast<int>(c.op));
  char skew[32] = "";
  if (c.coll == Coll::AllToAllv || c.coll == Coll::AllGatherv || c.coll == Coll::ReduceScatterv)
    std::snprintf(skew, sizeof skew, " skew=%g", c.skew);
  return std::string(coll_name(c.coll)) + " dtype=" + std::to_string(c.t) + " op=" + op +
         " count=" + std::to_string(c.count) + (c.in_place ? " in-place" : "") + " root=" + std::to_string(c.root) +
         skew;
}

// A fixed share of a case list, from CHECKS_SLICE="K/N": the cases whose index is K mod N. Where
// every case in every configuration would take minutes (the sanitizer pass, the emulated hosts'
// rate-limited links), each configuration takes another K, so that together they still cover the
// whole list. Unset or malformed: every case (a malformed value is said on stderr, not ignored).
struct Slice {
  size_t k = 0, n = 1;
  bool keeps(size_t index) const { return index % n == k; }
};

inline Slice slice_from_env() {
  Slice s;
  const char* v = std::getenv("CHECKS_SLICE");
  if (!v || !*v) return s;
  unsigned long k = 0, n = 0;
  char tail = 0;
  if (std::sscanf(v, "%lu/%lu%c", &k, &n, &tail) != 2 || n == 0 || k >= n) {
    std::fprintf(stderr, "CHECKS_SLICE=%s is not K/N with 0 <= K < N: running every case\n", v);
    return s;
  }
  s.k = k;
  s.n = n;
  return s;
}

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

// Runs one case on this rank; returns "" or what went wrong. Besides the values it checks that
// nothing is written past the receive buffer (one guard byte), that a separate send buffer is
// left as it was, and that the gaps between v-blocks keep their bytes.
inline std::string run_case(const CallRunner& run, int rank, int p, const Case& c) {
  const Layout l = layout(c.coll, rank, p, c.root, c.count, c.skew);
  const size_t es = size_of(c.t);
  std::vector<uint8_t> send, recv(l.recv_elems * es + 1, 0xEE), buf, before;
  fill_send(send, l, c.t, c.op);
  const std::vector<uint8_t> sent = send;
  const void* sp = send.data();
  void* rp = recv.data();
  uint8_t* guard = recv.data() + l.recv_elems * es;
  if (c.in_place) {
    buf.assign(l.one_elems * es + 1, 0xEE);
    if (!send.empty()) std::memcpy(buf.data() + l.send_at * es, send.data(), send.size());
    sp = buf.data() + l.send_at * es;
    rp = buf.data() + l.recv_at * es;
    guard = buf.data() + l.one_elems * es;
  }
  before.assign(static_cast<uint8_t*>(rp), static_cast<uint8_t*>(rp) + l.recv_elems * es);
  coralResult_t rc = run(l, sp, rp, c.t, c.op);
  if (rc != coralSuccess) return describe(c) + ": returned " + coralGetErrorString(rc);
  size_t wrong = count_wrong(l, c.t, c.op, rp, 0, before.data());
  if (wrong) return describe(c) + ": rank " + std::to_string(rank) + ": " + std::to_string(wrong) + " elements wrong";
  if (*guard != 0xEE) return describe(c) + ": rank " + std::to_string(rank) + ": wrote past the end of recvbuff";
  if (!c.in_place && send != sent) return describe(c) + ": rank " + std::to_string(rank) + ": changed sendbuff";
  return "";
}

// The first five collectives through a Runner.
inline std::string run_case(const Runner& run, int rank, int p, const Case& c) {
  return run_case([&](const Layout& l, const void* s, void* r, coralDataType_t t,
                      coralRedOp_t op) { return run(l.coll, s, r, l.n, t, op, l.root); },
                  rank, p, c);
}

// Cases of the first five collectives (the ones a Runner serves).
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

// Cases of the collectives a CallRunner adds: all-to-all(v), gather, scatter, all-gather-v and
// reduce-scatter-v over every dtype, in and out of place; reduce-scatter-v over every op; and
// PreMulSum (kPremul) for every reducing collective. The v-forms run with empty blocks
// (skew infinity), and at 1000 also even and at skew 3. 2^20+3 elements only for a few dtypes
// (one of each size, and fp8), which bounds the thread test's time.
inline std::vector<Case> extended_cases(int p) {
  std::vector<Case> out;
  const double inf = INFINITY;
  const coralRedOp_t ops[] = {coralSum, coralProd, coralMax, coralMin, coralAvg};
  const size_t big = (size_t(1) << 20) + 3;
  for (int ti = 0; ti < coralNumTypes; ++ti) {
    auto t = static_cast<coralDataType_t>(ti);
    const bool integer = !Val::of(t, 0).is_float();
    std::vector<size_t> counts = {0, 1, 7, 1000};
    if (t == coralUint8 || t == coralBfloat16 || t == coralFloat32 || t == coralInt64 || t == coralFloat8e5m2)
      counts.push_back(big);
    for (size_t n : counts)
      for (bool ip : {false, true}) {
        const int root = static_cast<int>((n + ti) % p);
        out.push_back({Coll::AllToAll, t, coralSum, n, ip, 0});
        out.push_back({Coll::Gather, t, coralSum, n, ip, root});
        out.push_back({Coll::Scatter, t, coralSum, n, ip, (root + 1) % p});
        out.push_back({Coll::AllToAllv, t, coralSum, n, ip, 0, inf});
        out.push_back({Coll::AllGatherv, t, coralSum, n, ip, 0, inf});
        out.push_back({Coll::ReduceScatterv, t, ops[(ti + n) % 5], n, ip, 0, inf});
      }
    for (double skew : {1.0, 3.0})
      for (bool ip : {false, true}) {
        out.push_back({Coll::AllToAllv, t, coralSum, 1000, ip, 0, skew});
        out.push_back({Coll::AllGatherv, t, coralSum, 1000, ip, 0, skew});
        out.push_back({Coll::ReduceScatterv, t, coralSum, 1000, ip, 0, skew});
      }
    std::vector<coralRedOp_t> rs_ops(std::begin(ops), std::end(ops));
    if (integer) rs_ops.insert(rs_ops.end(), {coralBand, coralBor, coralBxor});
    for (coralRedOp_t op : rs_ops)
      for (size_t n : {size_t(7), size_t(1000)})
        for (bool ip : {false, true}) out.push_back({Coll::ReduceScatterv, t, op, n, ip, 0, inf});
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000)})
      for (bool ip : {false, true}) {
        out.push_back({Coll::AllReduce, t, kPremul, n, ip, 0});
        out.push_back({Coll::ReduceScatter, t, kPremul, n, ip, 0});
        out.push_back({Coll::Reduce, t, kPremul, n, ip, static_cast<int>((n + 1) % p)});
        out.push_back({Coll::ReduceScatterv, t, kPremul, n, ip, 0, inf});
      }
  }
  return out;
}

}  // namespace checks
