// Collective correctness checks shared by the thread-ranks test and the coral-run test program.
// Inputs are integers chosen so every reduction is exact in every dtype (bf16 included), so the
// expected result is known whatever the reduction order; values repeat with period 110 in the
// global index, which keeps the expected-value computation cheap for 1M-element buffers.
#pragma once
#include <coral/coral.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu/half.h"

namespace checks {

enum class Coll { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };

// Runs one collective; returns its result code (the harness supplies C API or internal calls).
using Runner = std::function<coralResult_t(Coll, const void* send, void* recv, size_t count,
                                           coralDataType_t, coralRedOp_t, int root)>;

inline size_t size_of(coralDataType_t t) {
  switch (t) {
    case coralInt8: case coralUint8: return 1;
    case coralFloat16: case coralBfloat16: return 2;
    case coralInt32: case coralUint32: case coralFloat32: return 4;
    default: return 8;
  }
}

inline int64_t value(int rank, size_t index, coralRedOp_t op) {
  if (op == coralProd) return 1 + static_cast<int64_t>((rank + index) % 2);
  if (op == coralMax || op == coralMin) return static_cast<int64_t>((rank * 7 + index * 3) % 11) - 5;
  return static_cast<int64_t>(rank + 1) * static_cast<int64_t>(index % 5 + 1) - 3;
}

// Typed scalar arithmetic with the library's documented semantics (integers wrap, avg = sum
// then divide, halves computed in float and rounded once).
struct Val {
  coralDataType_t t;
  int64_t i = 0;   // integers, kept wrapped to the type
  double f = 0;    // floating types

  bool is_float() const { return t == coralFloat16 || t == coralBfloat16 || t == coralFloat32 || t == coralFloat64; }
  static Val of(coralDataType_t t, int64_t v) {
    Val x{t};
    x.i = v;
    x.f = static_cast<double>(v);
    x.wrap();
    return x;
  }
  void wrap() {
    switch (t) {
      case coralInt8: i = static_cast<int8_t>(i); break;
      case coralUint8: i = static_cast<uint8_t>(i); break;
      case coralInt32: i = static_cast<int32_t>(i); break;
      case coralUint32: i = static_cast<uint32_t>(i); break;
      default: break;
    }
  }
  bool is_unsigned() const { return t == coralUint8 || t == coralUint32 || t == coralUint64; }
  Val combine(const Val& o, coralRedOp_t op) const {
    Val r = *this;
    if (is_float()) {
      if (op == coralProd) r.f = f * o.f;
      else if (op == coralMax) r.f = f > o.f ? f : o.f;
      else if (op == coralMin) r.f = f < o.f ? f : o.f;
      else r.f = f + o.f;
      return r;
    }
    uint64_t a = static_cast<uint64_t>(i), b = static_cast<uint64_t>(o.i);
    bool less = is_unsigned() ? a < b : i < o.i;
    if (op == coralProd) r.i = static_cast<int64_t>(a * b);
    else if (op == coralMax) r.i = less ? o.i : i;
    else if (op == coralMin) r.i = less ? i : o.i;
    else r.i = static_cast<int64_t>(a + b);
    r.wrap();
    return r;
  }
  void average(int p) {
    if (!is_float()) {
      if (is_unsigned()) i = static_cast<int64_t>(static_cast<uint64_t>(i) / static_cast<uint64_t>(p));
      else i = i / p;
      return;
    }
    if (t == coralFloat64) f = f / p;
    else if (t == coralFloat32) f = static_cast<float>(f) / static_cast<float>(p);
    else if (t == coralFloat16) f = coral::kernels::half_to_float(coral::kernels::float_to_half(static_cast<float>(f) / p));
    else f = coral::kernels::bf16_to_float(coral::kernels::float_to_bf16(static_cast<float>(f) / p));
  }
  void store(void* p) const {
    using namespace coral::kernels;
    switch (t) {
      case coralInt8: case coralUint8: { uint8_t v = static_cast<uint8_t>(i); std::memcpy(p, &v, 1); break; }
      case coralInt32: case coralUint32: { uint32_t v = static_cast<uint32_t>(i); std::memcpy(p, &v, 4); break; }
      case coralInt64: case coralUint64: std::memcpy(p, &i, 8); break;
      case coralFloat16: { uint16_t v = float_to_half(static_cast<float>(f)); std::memcpy(p, &v, 2); break; }
      case coralBfloat16: { uint16_t v = float_to_bf16(static_cast<float>(f)); std::memcpy(p, &v, 2); break; }
      case coralFloat32: { float v = static_cast<float>(f); std::memcpy(p, &v, 4); break; }
      default: std::memcpy(p, &f, 8);
    }
  }
};

constexpr size_t kPeriod = 110;

inline void fill(std::vector<uint8_t>& buf, int rank, size_t n, coralDataType_t t, coralRedOp_t op) {
  const size_t es = size_of(t);
  buf.resize(n * es);
  uint8_t pattern[kPeriod * 8];
  for (size_t k = 0; k < kPeriod; ++k) Val::of(t, value(rank, k, op)).store(pattern + k * es);
  for (size_t i = 0; i < n; ++i) std::memcpy(buf.data() + i * es, pattern + (i % kPeriod) * es, es);
}

// Expected reduction of global index g (mod kPeriod) over all ranks.
inline std::vector<uint8_t> reduced_table(int p, coralDataType_t t, coralRedOp_t op) {
  const size_t es = size_of(t);
  std::vector<uint8_t> tab(kPeriod * es);
  for (size_t k = 0; k < kPeriod; ++k) {
    Val acc = Val::of(t, value(0, k, op));
    for (int r = 1; r < p; ++r) acc = acc.combine(Val::of(t, value(r, k, op)), op);
    if (op == coralAvg && p > 1) acc.average(p);  // sums are exact, so no rounding before it
    acc.store(tab.data() + k * es);
  }
  return tab;
}

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
  return std::string(colls[static_cast<int>(c.coll)]) + " dtype=" + std::to_string(c.t) + " op=" +
         std::to_string(c.op) + " count=" + std::to_string(c.count) + (c.in_place ? " in-place" : "") +
         " root=" + std::to_string(c.root);
}

// Runs one case on this rank; returns "" or what went wrong.
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
  const uint8_t* got = static_cast<const uint8_t*>(rp);
  std::vector<uint8_t> tab = reduced_table(p, c.t, c.op);
  for (size_t j = 0; j < recv_n; ++j) {
    uint8_t want[8];
    switch (c.coll) {
      case Coll::AllReduce: std::memcpy(want, &tab[(j % kPeriod) * es], es); break;
      case Coll::Reduce:
        if (rank != c.root) return "";
        std::memcpy(want, &tab[(j % kPeriod) * es], es);
        break;
      case Coll::ReduceScatter: std::memcpy(want, &tab[((rank * n + j) % kPeriod) * es], es); break;
      case Coll::AllGather:
        Val::of(c.t, value(static_cast<int>(j / (n ? n : 1)), j % (n ? n : 1), coralSum)).store(want);
        break;
      case Coll::Broadcast: Val::of(c.t, value(c.root, j, coralSum)).store(want); break;
    }
    if (std::memcmp(want, got + j * es, es) != 0)
      return describe(c) + ": rank " + std::to_string(rank) + " element " + std::to_string(j) + " is wrong";
  }
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
