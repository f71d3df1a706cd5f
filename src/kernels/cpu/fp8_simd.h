// fp8 <-> float for a vector of lanes, in the AVX2 and AVX-512 tables (GCC vector extensions,
// so one text serves both widths): the operations of Fp8Format::decode/encode (cpu/half.h) lane
// by lane, with selects for its branches, so every lane is bit for bit the scalar reference.
// Included by reduce_impl.h, in the namespace of the instruction set it is compiled for.
#pragma once
#include <cstdint>

#include "kernels/cpu/half.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define CORAL_FP8_LANES 16
#elif defined(__AVX2__)
#define CORAL_FP8_LANES 8
#endif

#ifdef CORAL_FP8_LANES
#include <immintrin.h>

namespace coral::kernels::CORAL_KERNEL_NS::fp8v {

constexpr int kLanes = CORAL_FP8_LANES;
typedef uint32_t VU __attribute__((vector_size(4 * kLanes)));
typedef int32_t VI __attribute__((vector_size(4 * kLanes)));
typedef float VF __attribute__((vector_size(4 * kLanes)));

[[gnu::always_inline]] inline VU splat(uint32_t x) { return VU{} + x; }
// Every value compared is below 2^31, so signed compares (the ones AVX2 has) are exact.
[[gnu::always_inline]] inline VI lt(VU a, VU b) { return reinterpret_cast<VI>(a) < reinterpret_cast<VI>(b); }

template <class F>
[[gnu::always_inline]] inline VF load(const uint8_t* p) {
  // Widening and narrowing by intrinsics: GCC lowers a conversion from or to a vector of 8 or 16
  // bytes lane by lane. (The all-ones masks keep GCC 12 from warning about the unmasked forms.)
#if CORAL_FP8_LANES == 16
  const VU x =
      reinterpret_cast<VU>(_mm512_maskz_cvtepu8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#else
  const VU x = reinterpret_cast<VU>(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#endif
  const VU sign = (x & 0x80u) << 24;
  const VU em = x & 0x7fu;
  const VU norm = (em << F::kShift) + F::kRebias;
  const VU sub = reinterpret_cast<VU>(__builtin_convertvector(reinterpret_cast<VI>(em), VF) * F::kSubStep);
  VU r = lt(em, splat(1u << F::kMant)) ? sub : norm;
  r = reinterpret_cast<VI>(em == F::kInfCode) ? splat(0x7f800000u) : r;
  r = lt(em, splat(F::kNanFrom)) ? r : splat(0x7fc00000u);
  return reinterpret_cast<VF>(r | sign);
}

template <class F>
[[gnu::always_inline]] inline void store(uint8_t* p, VF f) {
  const VU u = reinterpret_cast<VU>(f);
  const VU sign = (u >> 24) & 0x80u;
  VU a = u & 0x7fffffffu;
  const VI nan = lt(splat(0x7f800000u), a);
  a = lt(a, splat(F::kMaxBits)) ? a : splat(F::kMaxBits);
  const VU norm = (a - F::kRebias + ((1u << (F::kShift - 1)) - 1u) + ((a >> F::kShift) & 1u)) >> F::kShift;
  const VU sub = reinterpret_cast<VU>(reinterpret_cast<VF>(a) + F::kMagic) - std::bit_cast<uint32_t>(F::kMagic);
  VU r = (lt(a, splat(F::kMinNormBits)) ? sub : norm) | sign;
  r = nan ? splat(0x7fu) : r;
#if CORAL_FP8_LANES == 16
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_maskz_cvtepi32_epi8(0xffff, reinterpret_cast<__m512i>(r)));
#else
  const __m256i w = _mm256_packus_epi32(reinterpret_cast<__m256i>(r), reinterpret_cast<__m256i>(r));  // lanes < 256
  const __m256i b = _mm256_packus_epi16(w, w);  // bytes 0-3 of each 128-bit half
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p),
                   _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
#endif
}

}  // namespace coral::kernels::CORAL_KERNEL_NS::fp8v
#endif
