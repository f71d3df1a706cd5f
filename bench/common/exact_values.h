// Inputs whose reductions are exact in every dtype (bf16 and fp8 included), so the expected
// result is known whatever the reduction order: small integers built from rank and index
// (nccl-tests' idea). Values repeat with period kPeriod in the index, which keeps computing the expected
// values cheap for large buffers. Shared by coral-bench's -c check and the test suite.
#pragma once
#include <coral/coral.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/half.h"

namespace exact {

enum class Coll {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce,
  AllToAll,
  AllToAllv,
  Gather,
  Scatter,
  AllGatherv,
  ReduceScatterv
};

// Stands for "a PreMulSum op with premul_scalar(rank, dtype)" in cases and fills: the harness
// creates the real op (its handle is per communicator and dtype). It lies in the range of
// PreMulSum handles, so a harness that forgets to map it is refused rather than summed.
constexpr coralRedOp_t kPremul = static_cast<coralRedOp_t>(0x3ffffff0);

inline size_t size_of(coralDataType_t t) {
  switch (t) {
    case coralInt8:
    case coralUint8:
    case coralFloat8e4m3:
    case coralFloat8e5m2:
      return 1;
    case coralFloat16:
    case coralBfloat16:
      return 2;
    case coralInt32:
    case coralUint32:
    case coralFloat32:
      return 4;
    default:
      return 8;
  }
}

inline bool is_fp8(coralDataType_t t) { return t == coralFloat8e4m3 || t == coralFloat8e5m2; }

inline int64_t value(int rank, size_t index, coralRedOp_t op) {
  // Bitwise ops: 7 varied bits, so and, or and xor over ranks each keep some and clear some.
  if (op == coralBand || op == coralBor || op == coralBxor)
    return static_cast<int64_t>(((rank + 1) * 37 + index * 11) % 128);
  if (op == coralProd) return 1 + static_cast<int64_t>((rank + index) % 2);
  if (op == coralMax || op == coralMin) return static_cast<int64_t>((rank * 7 + index * 3) % 11) - 5;
  return static_cast<int64_t>(rank + 1) * static_cast<int64_t>(index % 5 + 1) - 3;
}

// As a double of type t. fp8 holds every integer only up to 16 (e4m3) or 8 (e5m2), so its sums
// (and the copies of all-gather and broadcast, which use sum's values) take -1, 0 or 1 times a
// power of two that depends on the index alone. The sign patterns differ between ranks 0-8, and
// at any index at most 6 of 16 ranks share a sign, so every partial sum stays within 8 of them.
// Products (1 and 2), max and min (-5..5) are exact as they are.
inline double value(int rank, size_t index, coralRedOp_t op, coralDataType_t t) {
  if (is_fp8(t) && (op == coralSum || op == coralAvg)) {
    static const double scale[] = {0.5, 1, 2, 4};
    const int sign = static_cast<int>((index * ((rank + 1) % 3) + rank / 3) % 3) - 1;
    return sign * scale[index / 3 % 4];
  }
  return static_cast<double>(value(rank, index, op));
}

// Typed scalar arithmetic with the library's documented semantics (integers wrap, avg = sum
// then divide, halves computed in float and rounded once).
struct Val {
  coralDataType_t t;
  int64_t i = 0;  // integers, kept wrapped to the type
  double f = 0;   // floating types

  bool is_float() const {
    return t == coralFloat16 || t == coralBfloat16 || t == coralFloat32 || t == coralFloat64 || is_fp8(t);
  }
  static Val of(coralDataType_t t, int64_t v) {
    Val x{t};
    x.i = v;
    x.f = static_cast<double>(v);
    x.wrap();
    return x;
  }
  // Element index of rank's input for op (floats may take non-integer values). PreMulSum's
  // inputs are scaled by up to 2 before the sum, so floats take max's -5..5 (bf16 then stays
  // exact in quarters) and fp8 its own pattern; integers wrap, so they take sum's.
  static Val input(coralDataType_t t, int rank, size_t index, coralRedOp_t op) {
    if (op == kPremul) op = of(t, 0).is_float() && !is_fp8(t) ? coralMax : coralSum;
    Val x = of(t, value(rank, index, op));
    x.f = value(rank, index, op, t);
    return x;
  }
  void wrap() {
    switch (t) {
      case coralInt8:
        i = static_cast<int8_t>(i);
        break;
      case coralUint8:
        i = static_cast<uint8_t>(i);
        break;
      case coralInt32:
        i = static_cast<int32_t>(i);
        break;
      case coralUint32:
        i = static_cast<uint32_t>(i);
        break;
      default:
        break;
    }
  }
  bool is_unsigned() const { return t == coralUint8 || t == coralUint32 || t == coralUint64; }
  Val combine(const Val& o, coralRedOp_t op) const {
    Val r = *this;
    if (is_float()) {
      if (op == coralProd)
        r.f = f * o.f;
      else if (op == coralMax)
        r.f = f > o.f ? f : o.f;
      else if (op == coralMin)
        r.f = f < o.f ? f : o.f;
      else
        r.f = f + o.f;
      return r;
    }
    uint64_t a = static_cast<uint64_t>(i), b = static_cast<uint64_t>(o.i);
    bool less = is_unsigned() ? a < b : i < o.i;
    if (op == coralProd)
      r.i = static_cast<int64_t>(a * b);
    else if (op == coralMax)
      r.i = less ? o.i : i;
    else if (op == coralMin)
      r.i = less ? i : o.i;
    else if (op == coralBand)
      r.i = static_cast<int64_t>(a & b);
    else if (op == coralBor)
      r.i = static_cast<int64_t>(a | b);
    else if (op == coralBxor)
      r.i = static_cast<int64_t>(a ^ b);
    else
      r.i = static_cast<int64_t>(a + b);
    r.wrap();
    return r;
  }
  void average(int p) {
    if (!is_float()) {
      if (is_unsigned())
        i = static_cast<int64_t>(static_cast<uint64_t>(i) / static_cast<uint64_t>(p));
      else
        i = i / p;
      return;
    }
    if (t == coralFloat64)
      f = f / p;
    else if (t == coralFloat32)
      f = static_cast<float>(f) / static_cast<float>(p);
    else if (t == coralFloat16)
      f = coral::kernels::half_to_float(coral::kernels::float_to_half(static_cast<float>(f) / p));
    else if (t == coralFloat8e4m3)
      f = coral::kernels::fp8e4m3_to_float(coral::kernels::float_to_fp8e4m3(static_cast<float>(f) / p));
    else if (t == coralFloat8e5m2)
      f = coral::kernels::fp8e5m2_to_float(coral::kernels::float_to_fp8e5m2(static_cast<float>(f) / p));
    else
      f = coral::kernels::bf16_to_float(coral::kernels::float_to_bf16(static_cast<float>(f) / p));
  }
  void store(void* p) const {
    using namespace coral::kernels;
    switch (t) {
      case coralInt8:
      case coralUint8: {
        uint8_t v = static_cast<uint8_t>(i);
        std::memcpy(p, &v, 1);
        break;
      }
      case coralInt32:
      case coralUint32: {
        uint32_t v = static_cast<uint32_t>(i);
        std::memcpy(p, &v, 4);
        break;
      }
      case coralInt64:
      case coralUint64:
        std::memcpy(p, &i, 8);
        break;
      case coralFloat16: {
        uint16_t v = float_to_half(static_cast<float>(f));
        std::memcpy(p, &v, 2);
        break;
      }
      case coralBfloat16: {
        uint16_t v = float_to_bf16(static_cast<float>(f));
        std::memcpy(p, &v, 2);
        break;
      }
      case coralFloat8e4m3:
        *static_cast<uint8_t*>(p) = float_to_fp8e4m3(static_cast<float>(f));
        break;
      case coralFloat8e5m2:
        *static_cast<uint8_t*>(p) = float_to_fp8e5m2(static_cast<float>(f));
        break;
      case coralFloat32: {
        float v = static_cast<float>(f);
        std::memcpy(p, &v, 4);
        break;
      }
      default:
        std::memcpy(p, &f, 8);
    }
  }
};

constexpr size_t kPeriod = 110;

// rank's PreMulSum scalar for dtype t. Integers wrap, so any will do; floats take powers of two,
// which scale exactly: products of -5..5 by 1/4..2 sum to quarters, under 64 (exact in bf16) up
// to 12 ranks. fp8's sums need its pattern's bound on ranks sharing a sign (value() above),
// which rank-dependent scalars would break: all ranks double, which leaves the mantissas as
// they were.
inline Val premul_scalar(int rank, coralDataType_t t) {
  static const double pow2[] = {0.5, 2, 1, 0.25};
  Val s = Val::of(t, rank + 2);
  if (s.is_float()) s.f = is_fp8(t) ? 2 : pow2[rank % 4];
  return s;
}

// buf <- rank's inputs for elements [first, first + n) of the global index space; seed shifts it.
inline void fill(std::vector<uint8_t>& buf, int rank, size_t n, coralDataType_t t, coralRedOp_t op, size_t seed = 0) {
  const size_t es = size_of(t);
  buf.resize(n * es);
  uint8_t pattern[kPeriod * 8];
  for (size_t k = 0; k < kPeriod; ++k) Val::input(t, rank, k + seed, op).store(pattern + k * es);
  for (size_t i = 0; i < n; ++i) std::memcpy(buf.data() + i * es, pattern + (i % kPeriod) * es, es);
}

// Expected reduction of global index g (mod kPeriod) over all ranks.
inline std::vector<uint8_t> reduced_table(int p, coralDataType_t t, coralRedOp_t op, size_t seed = 0) {
  const size_t es = size_of(t);
  std::vector<uint8_t> tab(kPeriod * es);
  auto in = [&](int r, size_t k) {
    Val x = Val::input(t, r, k + seed, op);
    return op == kPremul ? x.combine(premul_scalar(r, t), coralProd) : x;
  };
  const coralRedOp_t combine = op == kPremul ? coralSum : op;
  for (size_t k = 0; k < kPeriod; ++k) {
    Val acc = in(0, k);
    for (int r = 1; r < p; ++r) acc = acc.combine(in(r, k), combine);
    if (op == coralAvg && p > 1) acc.average(p);  // sums are exact, so no rounding before it
    acc.store(tab.data() + k * es);
  }
  return tab;
}

}  // namespace exact
