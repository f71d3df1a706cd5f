// fp8 <-> fp16 for 32 lanes of AVX-512, the fast route of the fp8 reductions (reduce_impl.h).
// An fp8 code shifted into fp16's bit layout is an fp16 value: the same value for e5m2 (fp16's
// top byte), the value times 2^-8 for e4m3 (bias 7 against fp16's 15), subnormals included. So
// codes widen with a shift, F16C turns them into floats 16 at a time, the op runs on values
// scaled alike (a product is scaled back once), and the result returns through fp16 (one
// vcvtps2ph) and an integer round-to-nearest-even of the dropped bits. The float route
// (kernels/cpu/fp8_simd.h) works in 32-bit lanes end to end and ran at a third of bf16's speed.
//
// Rounding twice, float -> fp16 -> fp8, equals rounding once for the sum, product, max or min of
// two fp8 values: their exact result has few significant bits, so it either fits fp16 or lies
// too far from an fp8 midpoint for fp16's rounding to reach it. The kernel test checks every
// pair of codes under every op against the scalar reference. A quotient or a product with a
// float scalar (AVG's scaling, PreMulSum) has no such bound and stays on the float route.
#pragma once
#include <cstdint>

#include "kernels/cpu/half.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>

namespace coral::kernels::CORAL_KERNEL_NS::fp8h {

[[gnu::always_inline]] inline __m512i splat(int x) { return _mm512_set1_epi16(static_cast<short>(x)); }

// fp16 holds an fp8 value times 2^(Bias - 15); floats from it are scaled alike.
template <class F>
constexpr float kScaled = 1.0f / static_cast<float>(1u << (15 - F::kBias));
template <class F>
constexpr int kDrop = 10 - F::kMant;  // fp16 mantissa bits below fp8's

// 32 fp8 codes -> 32 fp16 bit patterns of the scaled values (NaN: a NaN).
template <class F>
[[gnu::always_inline]] inline __m512i to_half(__m256i codes) {
  // The masked forms with every lane on: GCC 12 warns about the unmasked ones' undefined filler.
  const __m512i c = _mm512_maskz_cvtepu8_epi16(~__mmask32{0}, codes);
  if constexpr (F::kBias == 15) return _mm512_slli_epi16(c, 8);  // e5m2 is fp16's top byte
  const __m512i em = _mm512_and_si512(c, splat(0x7f));
  __m512i h = _mm512_slli_epi16(em, kDrop<F>);
  // e4m3's NaN codes land on finite fp16 values.
  h = _mm512_mask_mov_epi16(h, _mm512_cmpge_epu16_mask(em, splat(F::kNanFrom)), splat(0x7e00));
  return _mm512_or_si512(h, _mm512_slli_epi16(_mm512_and_si512(c, splat(0x80)), 8));
}

// 32 fp16 bit patterns of scaled values -> 32 fp8 codes, as Fp8Format::encode rounds the values:
// nearest even, saturating, every NaN to 0x7f.
template <class F>
[[gnu::always_inline]] inline __m256i from_half(__m512i h) {
  constexpr uint32_t max_bits = std::bit_cast<uint32_t>(std::bit_cast<float>(F::kMaxBits) * kScaled<F>);
  constexpr int max_half = static_cast<int>((((max_bits >> 23) - 127 + 15) << 10) | ((max_bits >> 13) & 0x3ff));
  const __m512i abs = _mm512_and_si512(h, splat(0x7fff));
  const __mmask32 nan = _mm512_cmpgt_epu16_mask(abs, splat(0x7c00));
  const __m512i a = _mm512_min_epu16(abs, splat(max_half));  // saturate, infinities too
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(a, kDrop<F>), splat(1));
  __m512i r = _mm512_srli_epi16(_mm512_add_epi16(_mm512_add_epi16(a, splat((1 << (kDrop<F> - 1)) - 1)), lsb), kDrop<F>);
  r = _mm512_or_si512(r, _mm512_and_si512(_mm512_srli_epi16(h, 8), splat(0x80)));
  r = _mm512_mask_mov_epi16(r, nan, splat(0x7f));
  return _mm512_maskz_cvtepi16_epi8(~__mmask32{0}, r);
}

// d[0..32) = fp8(f(x, y)) lane by lane, f taking and giving 16 scaled floats. d may alias x or
// y: both are read before d is written.
template <class F, class Fn>
[[gnu::always_inline]] inline void apply32(uint8_t* d, const uint8_t* x, const uint8_t* y, Fn f) {
  const __m512i hx = to_half<F>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
  const __m512i hy = to_half<F>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y)));
  constexpr __mmask16 all = 0xffff;
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const auto floats = [](__m512i v, int half) {
    return _mm512_maskz_cvtph_ps(
        all, half ? _mm512_maskz_extracti64x4_epi64(0xff, v, 1) : _mm512_maskz_extracti64x4_epi64(0xff, v, 0));
  };
  const __m256i lo = _mm512_maskz_cvtps_ph(all, f(floats(hx, 0), floats(hy, 0)), kRound);
  const __m256i hi = _mm512_maskz_cvtps_ph(all, f(floats(hx, 1), floats(hy, 1)), kRound);
  const __m512i h = _mm512_maskz_inserti64x4(0xff, _mm512_castsi256_si512(lo), hi, 1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), from_half<F>(h));
}

}  // namespace coral::kernels::CORAL_KERNEL_NS::fp8h
#endif
