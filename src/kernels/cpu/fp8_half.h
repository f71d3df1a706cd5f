// fp8 <-> fp16 in 16-bit lanes, the fast route of the fp8 reductions (reduce_impl.h), in the
// AVX2 and AVX-512 tables (GCC vector extensions, so one text serves both widths; intrinsics
// only where bytes widen or narrow and where F16C converts).
//
// An fp8 code shifted into fp16's bit layout is an fp16 value: the same value for e5m2 (fp16's
// top byte), the value times 2^-8 for e4m3 (bias 7 against fp16's 15), subnormals included. So
// codes widen with a shift, F16C turns them into floats, the op runs on values scaled alike (a
// product is scaled back once), and the result returns through fp16 (vcvtps2ph) and an integer
// round-to-nearest-even of the dropped bits. The float route (kernels/cpu/fp8_simd.h) works in
// 32-bit lanes end to end and ran at a third of bf16's speed.
//
// Rounding twice, float -> fp16 -> fp8, equals rounding once for the sum, product, max or min of
// two fp8 values: their exact result has few significant bits, so it either fits fp16 or lies
// too far from an fp8 midpoint for fp16's rounding to reach it. The kernel test checks every
// pair of codes under every op against the scalar reference. A quotient or a product with a
// float scalar (AVG's scaling, PreMulSum) has no such bound and stays on the float route.
#pragma once
#include <bit>
#include <cstdint>

#include "kernels/cpu/fp8_simd.h"
#include "kernels/cpu/half.h"

// Twice fp8_simd.h's lanes: 16-bit lanes in the same registers (both tables have F16C).
#if defined(CORAL_FP8_LANES) && defined(__F16C__)
#define CORAL_FP8_HALF_LANES (2 * CORAL_FP8_LANES)

namespace coral::kernels::CORAL_KERNEL_NS::fp8h {

constexpr int kLanes = CORAL_FP8_HALF_LANES;
typedef uint16_t VH __attribute__((vector_size(2 * kLanes)));
typedef int16_t VS __attribute__((vector_size(2 * kLanes)));
using VF = fp8v::VF;  // half the lanes, as floats

// fp16 holds an fp8 value times 2^(Bias - 15); floats from it are scaled alike.
template <class F>
constexpr float kScaled = 1.0f / static_cast<float>(1u << (15 - F::kBias));
template <class F>
constexpr int kDrop = 10 - F::kMant;  // fp16 mantissa bits below fp8's

// Every value compared is below 2^15, so signed compares (the ones AVX2 has) are exact.
[[gnu::always_inline]] inline VS lt(VH a, VH b) { return reinterpret_cast<VS>(a) < reinterpret_cast<VS>(b); }

// kLanes fp8 codes -> fp16 bit patterns of the scaled values (NaN: a NaN).
template <class F>
[[gnu::always_inline]] inline VH to_half(const uint8_t* p) {
  // Widening and narrowing by intrinsics, as in fp8_simd.h; the masked forms with every lane on
  // keep GCC 12 from warning about the unmasked ones' undefined filler.
#if CORAL_FP8_HALF_LANES == 32
  const VH c = reinterpret_cast<VH>(
      _mm512_maskz_cvtepu8_epi16(~__mmask32{0}, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#else
  const VH c = reinterpret_cast<VH>(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#endif
  if constexpr (F::kBias == 15) return c << 8;  // e5m2 is fp16's top byte
  const VH em = c & 0x7f;
  VH h = em << kDrop<F>;
  h = lt(em, VH{} + F::kNanFrom) ? h : VH{} + 0x7e00;  // e4m3's NaN codes land on finite values
  return h | ((c & 0x80) << 8);
}

// fp16 bit patterns of scaled values -> kLanes fp8 codes, as Fp8Format::encode rounds the
// values: nearest even, saturating, every NaN to 0x7f.
template <class F>
[[gnu::always_inline]] inline void from_half(uint8_t* p, VH h) {
  constexpr uint32_t max_bits = std::bit_cast<uint32_t>(std::bit_cast<float>(F::kMaxBits) * kScaled<F>);
  constexpr uint16_t max_half =
      static_cast<uint16_t>((((max_bits >> 23) - 127 + 15) << 10) | ((max_bits >> 13) & 0x3ff));
  const VH abs = h & 0x7fff;
  const VS nan = lt(VH{} + 0x7c00, abs);
  const VH a = lt(abs, VH{} + max_half) ? abs : VH{} + max_half;  // saturate, infinities too
  VH r = (a + ((1u << (kDrop<F> - 1)) - 1) + ((a >> kDrop<F>)&1)) >> kDrop<F>;
  r |= (h >> 8) & 0x80;
  r = nan ? VH{} + 0x7f : r;
#if CORAL_FP8_HALF_LANES == 32
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_maskz_cvtepi16_epi8(~__mmask32{0}, reinterpret_cast<__m512i>(r)));
#else
  const __m256i b = _mm256_packus_epi16(reinterpret_cast<__m256i>(r), reinterpret_cast<__m256i>(r));  // lanes < 256
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(_mm256_permute4x64_epi64(b, 0x08)));
#endif
}

// Half the lanes of h as floats (part 0 or 1), and back, rounding to nearest even.
[[gnu::always_inline]] inline VF floats(VH h, int part) {
#if CORAL_FP8_HALF_LANES == 32
  const __m512i v = reinterpret_cast<__m512i>(h);
  return reinterpret_cast<VF>(_mm512_maskz_cvtph_ps(
      0xffff, part ? _mm512_maskz_extracti64x4_epi64(0xff, v, 1) : _mm512_maskz_extracti64x4_epi64(0xff, v, 0)));
#else
  const __m256i v = reinterpret_cast<__m256i>(h);
  return reinterpret_cast<VF>(_mm256_cvtph_ps(part ? _mm256_extracti128_si256(v, 1) : _mm256_castsi256_si128(v)));
#endif
}
[[gnu::always_inline]] inline VH halves(VF lo, VF hi) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
#if CORAL_FP8_HALF_LANES == 32
  const __m256i l = _mm512_maskz_cvtps_ph(0xffff, reinterpret_cast<__m512>(lo), kRound);
  const __m256i h = _mm512_maskz_cvtps_ph(0xffff, reinterpret_cast<__m512>(hi), kRound);
  return reinterpret_cast<VH>(_mm512_maskz_inserti64x4(0xff, _mm512_castsi256_si512(l), h, 1));
#else
  const __m128i l = _mm256_cvtps_ph(reinterpret_cast<__m256>(lo), kRound);
  const __m128i h = _mm256_cvtps_ph(reinterpret_cast<__m256>(hi), kRound);
  return reinterpret_cast<VH>(_mm256_set_m128i(h, l));
#endif
}

// d[0..kLanes) = fp8(f(x, y)) lane by lane, f taking and giving scaled floats. d may alias x
// or y: both are read before d is written.
template <class F, class Fn>
[[gnu::always_inline]] inline void apply(uint8_t* d, const uint8_t* x, const uint8_t* y, Fn f) {
  const VH hx = to_half<F>(x), hy = to_half<F>(y);
  from_half<F>(d, halves(f(floats(hx, 0), floats(hy, 0)), f(floats(hx, 1), floats(hy, 1))));
}

}  // namespace coral::kernels::CORAL_KERNEL_NS::fp8h
#endif
