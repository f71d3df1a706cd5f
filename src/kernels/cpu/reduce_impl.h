// The reduction loops, compiled once per instruction set: scalar.cc (vectoriser off: the
// reference), avx2.cc and avx512.cc (compiled with -m flags so the same loops vectorise).
// Define CORAL_KERNEL_NS and CORAL_KERNEL_NAME before including.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/fp8_half.h"
#include "kernels/cpu/fp8_simd.h"
#include "kernels/cpu/half.h"
#include "kernels/reduce.h"
#if defined(__F16C__) && defined(__AVX2__)
#include <immintrin.h>
#endif

namespace coral::kernels::CORAL_KERNEL_NS {

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

// Integers wrap (through unsigned arithmetic, which is defined); floats are IEEE.
template <class T>
struct Arith {
  using U = std::make_unsigned_t<T>;
  static T sum(T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); }
  static T prod(T a, T b) { return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b))); }
};
template <>
struct Arith<float> {
  static float sum(float a, float b) { return a + b; }
  static float prod(float a, float b) { return a * b; }
};
template <>
struct Arith<double> {
  static double sum(double a, double b) { return a + b; }
  static double prod(double a, double b) { return a * b; }
};

struct OpSum {
  template <class T>
  static T apply(T a, T b) {
    return Arith<T>::sum(a, b);
  }
};
struct OpProd {
  template <class T>
  static T apply(T a, T b) {
    return Arith<T>::prod(a, b);
  }
};
struct OpMax {
  template <class T>
  static T apply(T a, T b) {
    return a > b ? a : b;
  }
};
struct OpMin {
  template <class T>
  static T apply(T a, T b) {
    return a < b ? a : b;
  }
};

// Bitwise ops take integer types only (the API refuses them for floats), on the bits as stored.
struct OpBand {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>(a & b);
  }
};
struct OpBor {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>(a | b);
  }
};
struct OpBxor {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>(a ^ b);
  }
};

// Users pass buffers at any byte address: element i is read and written with memcpy, which is
// defined for any alignment and compiles to plain (vector) loads and stores.
template <class T>
inline T ld(const void* p, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + sizeof(T) * i, sizeof(T));
  return v;
}
template <class T>
inline void st(void* p, size_t i, T v) {
  std::memcpy(static_cast<char*>(p) + sizeof(T) * i, &v, sizeof(T));
}
inline uint16_t ld16(const void* p, size_t i) { return ld<uint16_t>(p, i); }
inline void st16(void* p, size_t i, uint16_t v) { st<uint16_t>(p, i, v); }

// Not inlined, into reduce_many either: inlined, the compiler may swap an addition's operands,
// which changes which NaN's payload comes out, and the fold would no longer be the chain.
template <class T, class Op>
[[gnu::noinline]] void reduce_native(void* dst, const void* a, const void* b, size_t n) {
  // Inputs may alias dst exactly, so no __restrict__; GCC versions the loop on overlap.
  for (size_t i = 0; i < n; ++i) st<T>(dst, i, Op::apply(ld<T>(a, i), ld<T>(b, i)));
}

// Half types accumulate in float and round once.
template <class Op>
[[gnu::noinline]] void reduce_bf16(void* dst, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    st16(dst, i, float_to_bf16(Op::apply(bf16_to_float(ld16(a, i)), bf16_to_float(ld16(b, i)))));
}

template <class Op>
[[gnu::noinline]] void reduce_f16(void* dst, const void* a, const void* b, size_t n) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX2__)
  auto* d = static_cast<char*>(dst);
  auto* x = static_cast<const char*>(a);
  auto* y = static_cast<const char*>(b);
#endif
#if defined(__F16C__) && defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    __m256 fx = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * i)));
    __m256 fy = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + 2 * i)));
    __m256 r;
    if constexpr (std::is_same_v<Op, OpSum>)
      r = _mm256_add_ps(fx, fy);
    else if constexpr (std::is_same_v<Op, OpProd>)
      r = _mm256_mul_ps(fx, fy);
    else if constexpr (std::is_same_v<Op, OpMax>)
      r = _mm256_max_ps(fx, fy);  // fx > fy ? fx : fy
    else
      r = _mm256_min_ps(fx, fy);
    // min/max_ps return the second operand on ties/NaN; the scalar form matches that order.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * i),
                     _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
  for (; i < n; ++i) st16(dst, i, float_to_half(Op::apply(half_to_float(ld16(a, i)), half_to_float(ld16(b, i)))));
}

// fp8 (F is Fp8E4M3 or Fp8E5M2) computes each step in float and rounds once, as CUDA does (the
// SIMD route through fp16 gives the same bits: kernels/cpu/fp8_half.h).
#ifdef CORAL_FP8_LANES
template <class Op>
inline fp8v::VF vapply(fp8v::VF a, fp8v::VF b) {
  if constexpr (std::is_same_v<Op, OpSum>)
    return a + b;
  else if constexpr (std::is_same_v<Op, OpProd>)
    return a * b;
  else if constexpr (std::is_same_v<Op, OpMax>)
    return a > b ? a : b;  // the scalar form, so ties and NaNs pick the same operand
  else
    return a < b ? a : b;
}
#endif

template <class F, class Op>
[[gnu::noinline]] void reduce_fp8(void* dst, const void* a, const void* b, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* x = static_cast<const uint8_t*>(a);
  auto* y = static_cast<const uint8_t*>(b);
  size_t i = 0;
#ifdef CORAL_FP8_LANES
  // Exact aliasing only (dst == a or b): each block is read whole before it is written.
#ifdef CORAL_FP8_HALF_LANES
  for (; i + fp8h::kLanes <= n; i += fp8h::kLanes)
    fp8h::apply<F>(d + i, x + i, y + i, [](fp8h::VF p, fp8h::VF q) {
      fp8h::VF r = vapply<Op>(p, q);
      if constexpr (std::is_same_v<Op, OpProd>) r = r / fp8h::kScaled<F>;  // the scale twice: once back
      return r;
    });
#endif
  for (; i + fp8v::kLanes <= n; i += fp8v::kLanes)
    fp8v::store<F>(d + i, vapply<Op>(fp8v::load<F>(x + i), fp8v::load<F>(y + i)));
#endif
  for (; i < n; ++i) d[i] = F::encode(Op::apply(F::decode(x[i]), F::decode(y[i])));
}

template <class F>
void scale_fp8(void* dst, const void* src, size_t n, int divisor) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  const float div = static_cast<float>(divisor);
  size_t i = 0;
#ifdef CORAL_FP8_LANES
  for (; i + fp8v::kLanes <= n; i += fp8v::kLanes) fp8v::store<F>(d + i, fp8v::load<F>(s + i) / div);
#endif
  for (; i < n; ++i) d[i] = F::encode(F::decode(s[i]) / div);
}

template <class F>
void premul_fp8(void* dst, const void* src, size_t n, const void* scalar) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  const float m = F::decode(*static_cast<const uint8_t*>(scalar));
  size_t i = 0;
#ifdef CORAL_FP8_LANES
  for (; i + fp8v::kLanes <= n; i += fp8v::kLanes) fp8v::store<F>(d + i, fp8v::load<F>(s + i) * m);
#endif
  for (; i < n; ++i) d[i] = F::encode(F::decode(s[i]) * m);
}

// dst = srcs[0] (op) srcs[1] (op) ... left to right, bit for bit the chain of pairwise
// reductions, a block at a time: the block of dst stays in L1 across every source instead of
// making one pass over dst per source. A source may be dst itself (an in-place fold's own
// input); past the first two that one is read before the block is written, through `tmp`.
template <size_t Elem, ReduceFn F>
void reduce_many(void* dst, const void* const* srcs, int k, size_t n) {
  constexpr size_t kBlock = 4096;  // bytes
  auto* d = static_cast<char*>(dst);
  if (k == 1) {
    if (dst != srcs[0] && n) std::memmove(dst, srcs[0], n * Elem);
    return;
  }
  bool alias = false;
  for (int j = 2; j < k; ++j) alias |= srcs[j] == dst;
  alignas(64) char tmp[kBlock];
  for (size_t lo = 0; lo < n * Elem; lo += kBlock) {
    const size_t m = std::min(kBlock, n * Elem - lo) / Elem;
    char* acc = alias ? tmp : d + lo;
    auto at = [&](int j) { return static_cast<const char*>(srcs[j]) + lo; };
    F(acc, at(0), at(1), m);
    for (int j = 2; j < k; ++j) F(acc, acc, at(j), m);
    if (alias) std::memcpy(d + lo, tmp, m * Elem);
  }
}

template <class T>
void scale_native(void* dst, const void* src, size_t n, int divisor) {
  if constexpr (std::is_integral_v<T>) {
    // The rank count in a 64-bit integer: in T it would wrap (int8 at 128 ranks) or be 0
    // (uint8 at 256, a division by zero).
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    const W div = static_cast<W>(divisor);
    for (size_t i = 0; i < n; ++i) st<T>(dst, i, static_cast<T>(static_cast<W>(ld<T>(src, i)) / div));
  } else {
    const T div = static_cast<T>(divisor);
    for (size_t i = 0; i < n; ++i) st<T>(dst, i, static_cast<T>(ld<T>(src, i) / div));
  }
}

inline void scale_f16(void* dst, const void* src, size_t n, int divisor) {
  const float div = static_cast<float>(divisor);
  for (size_t i = 0; i < n; ++i) st16(dst, i, float_to_half(half_to_float(ld16(src, i)) / div));
}

inline void scale_bf16(void* dst, const void* src, size_t n, int divisor) {
  const float div = static_cast<float>(divisor);
  for (size_t i = 0; i < n; ++i) st16(dst, i, float_to_bf16(bf16_to_float(ld16(src, i)) / div));
}

// PreMulSum's pre-scaling: integers multiply in their type (wrapping), floats in theirs.
template <class T>
void premul_native(void* dst, const void* src, size_t n, const void* scalar) {
  const T m = ld<T>(scalar, 0);
  for (size_t i = 0; i < n; ++i) st<T>(dst, i, Arith<T>::prod(ld<T>(src, i), m));
}

inline void premul_f16(void* dst, const void* src, size_t n, const void* scalar) {
  const float m = half_to_float(ld16(scalar, 0));
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX2__)
  auto* d = static_cast<char*>(dst);
  auto* x = static_cast<const char*>(src);
  const __m256 vm = _mm256_set1_ps(m);
  for (; i + 8 <= n; i += 8) {
    __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * i),
                     _mm256_cvtps_ph(_mm256_mul_ps(f, vm), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
  for (; i < n; ++i) st16(dst, i, float_to_half(half_to_float(ld16(src, i)) * m));
}

inline void premul_bf16(void* dst, const void* src, size_t n, const void* scalar) {
  const float m = bf16_to_float(ld16(scalar, 0));
  for (size_t i = 0; i < n; ++i) st16(dst, i, float_to_bf16(bf16_to_float(ld16(src, i)) * m));
}

// One dtype's row: the pairwise kernel of each op and its multi-source form (avg reduces as sum).
template <size_t Elem, ReduceFn Sum, ReduceFn Prod, ReduceFn Max, ReduceFn Min>
void fill_ops(Table& t, coralDataType_t dt, ScaleFn scale, PremulFn premul) {
  t.reduce[dt][coralSum] = t.reduce[dt][coralAvg] = Sum;
  t.reduce[dt][coralProd] = Prod;
  t.reduce[dt][coralMax] = Max;
  t.reduce[dt][coralMin] = Min;
  t.reduce_many[dt][coralSum] = t.reduce_many[dt][coralAvg] = reduce_many<Elem, Sum>;
  t.reduce_many[dt][coralProd] = reduce_many<Elem, Prod>;
  t.reduce_many[dt][coralMax] = reduce_many<Elem, Max>;
  t.reduce_many[dt][coralMin] = reduce_many<Elem, Min>;
  t.scale[dt] = scale;
  t.premul[dt] = premul;
}

template <class T>
void fill_native(Table& t, coralDataType_t dt) {
  fill_ops<sizeof(T), reduce_native<T, OpSum>, reduce_native<T, OpProd>, reduce_native<T, OpMax>,
           reduce_native<T, OpMin>>(t, dt, scale_native<T>, premul_native<T>);
  if constexpr (std::is_integral_v<T>) {
    const int band = op_slot(coralBand), bor = op_slot(coralBor), bxor = op_slot(coralBxor);
    t.reduce[dt][band] = reduce_native<T, OpBand>;
    t.reduce[dt][bor] = reduce_native<T, OpBor>;
    t.reduce[dt][bxor] = reduce_native<T, OpBxor>;
    t.reduce_many[dt][band] = reduce_many<sizeof(T), reduce_native<T, OpBand>>;
    t.reduce_many[dt][bor] = reduce_many<sizeof(T), reduce_native<T, OpBor>>;
    t.reduce_many[dt][bxor] = reduce_many<sizeof(T), reduce_native<T, OpBxor>>;
  }
}

template <class F>
void fill_fp8(Table& t, coralDataType_t dt) {
  fill_ops<1, reduce_fp8<F, OpSum>, reduce_fp8<F, OpProd>, reduce_fp8<F, OpMax>, reduce_fp8<F, OpMin>>(
      t, dt, scale_fp8<F>, premul_fp8<F>);
}

inline Table make_table() {
  Table t{};
  t.name = CORAL_KERNEL_NAME;
  fill_native<int8_t>(t, coralInt8);
  fill_native<uint8_t>(t, coralUint8);
  fill_native<int32_t>(t, coralInt32);
  fill_native<uint32_t>(t, coralUint32);
  fill_native<int64_t>(t, coralInt64);
  fill_native<uint64_t>(t, coralUint64);
  fill_native<float>(t, coralFloat32);
  fill_native<double>(t, coralFloat64);
  fill_ops<2, reduce_f16<OpSum>, reduce_f16<OpProd>, reduce_f16<OpMax>, reduce_f16<OpMin>>(t, coralFloat16, scale_f16,
                                                                                           premul_f16);
  fill_ops<2, reduce_bf16<OpSum>, reduce_bf16<OpProd>, reduce_bf16<OpMax>, reduce_bf16<OpMin>>(t, coralBfloat16,
                                                                                               scale_bf16, premul_bf16);
  fill_fp8<Fp8E4M3>(t, coralFloat8e4m3);
  fill_fp8<Fp8E5M2>(t, coralFloat8e5m2);
  return t;
}

const Table* table() {
  static const Table t = make_table();
  return &t;
}

}  // namespace coral::kernels::CORAL_KERNEL_NS
