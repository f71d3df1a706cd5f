// IEEE binary16 and bfloat16 <-> float conversions, round to nearest even; NaNs are quieted
// and keep their payload's top bits, as the F16C instructions do. Then OCP fp8 <-> float.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>

namespace coral::kernels {

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu;
  if (em == 0x7c00u) return bits_to_float(sign | 0x7f800000u);
  if (em > 0x7c00u) return bits_to_float(sign | 0x7fc00000u | ((em & 0x3ffu) << 13));  // NaN, quieted
  if (em >= 0x0400u) return bits_to_float(sign | ((em << 13) + (112u << 23)));
  // Subnormal or zero: em * 2^-24 is exact in float.
  return bits_to_float(sign | float_to_bits(static_cast<float>(em) * 5.9604644775390625e-8f));
}

inline uint16_t float_to_half(float f) {
  uint32_t u = float_to_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  uint32_t out;
  if (u >= (143u << 23)) {  // >= 2^16: overflow to inf; NaN keeps its top payload bits, quieted
    out = u > 0x7f800000u ? (0x7e00u | ((u >> 13) & 0x3ffu)) : 0x7c00u;
  } else if (u < (113u << 23)) {  // result subnormal or zero: let an FP add do the rounding
    const float magic = 0.5f;     // its ulp is 2^-24, the half subnormal step
    out = float_to_bits(bits_to_float(u) + magic) - float_to_bits(magic);
  } else {
    uint32_t odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    out = u >> 13;
  }
  return static_cast<uint16_t>(out | sign);
}

inline float bf16_to_float(uint16_t h) { return bits_to_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? ((u >> 16) | 0x40u) : rounded);
}

// OCP fp8 as CUDA's cuda_fp8.h converts it (the kernels on both sides must agree bit for bit):
// e4m3 is the "FN" variant (no infinities, max 448, NaN 0x7f/0xff), e5m2 is IEEE-like (max
// 57344, infinities 0x7c/0xfc). float -> fp8 is __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...):
// round to nearest even, anything past the largest finite value (infinities too) to that value,
// and every NaN to 0x7f (cuda_fp8.hpp canonicalises NaNs before converting, dropping the sign).
// A format is its mantissa width and exponent bias; the branch-free encoder is written so its
// vector form (kernels/cpu/fp8_simd.h) is the same operations lane by lane.
template <int Mant, int Bias, uint32_t MaxBits, uint32_t InfCode>
struct Fp8Format {
  static constexpr int kMant = Mant;
  static constexpr int kBias = Bias;
  static constexpr int kShift = 23 - Mant;  // float mantissa bits dropped
  static constexpr uint32_t kRebias = static_cast<uint32_t>(127 - Bias) << 23;
  static constexpr uint32_t kMaxBits = MaxBits;  // largest finite, as float bits
  static constexpr uint32_t kMinNormBits = static_cast<uint32_t>(1 - Bias + 127) << 23;
  // Adding this float puts the subnormal step (2^(1-Bias-Mant)) in the float's last place.
  static constexpr float kMagic = static_cast<float>(1u << (1 - Bias - Mant + 23));
  static constexpr float kSubStep = 1.0f / static_cast<float>(1u << (Bias + Mant - 1));
  static constexpr uint32_t kInfCode = InfCode;  // |code| of infinity; 0x100: none
  static constexpr uint32_t kNanFrom = InfCode == 0x100 ? 0x7f : InfCode + 1;

  // Always inlined: the kernels' files are compiled with different -m flags, and an out-of-line
  // copy the linker shares between them could be one with instructions this CPU lacks.
  [[gnu::always_inline]] static constexpr float decode(uint8_t b) {
    const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
    const uint32_t em = b & 0x7fu;
    uint32_t r;
    if (em >= kNanFrom)
      r = 0x7fc00000u;
    else if (em == kInfCode)
      r = 0x7f800000u;
    else if (em >= (1u << Mant))
      r = (em << kShift) + kRebias;
    else  // subnormal or zero: em steps, exact in float
      r = std::bit_cast<uint32_t>(static_cast<float>(em) * kSubStep);
    return std::bit_cast<float>(r | sign);
  }

  [[gnu::always_inline]] static constexpr uint8_t encode(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7fffffffu;
    const bool nan = a > 0x7f800000u;
    a = a < kMaxBits ? a : kMaxBits;  // saturate (infinities and NaNs too; NaN is fixed below)
    // Normal: rebias the exponent and round the dropped bits to nearest even (as float_to_half);
    // below kMinNormBits this wraps and is not used.
    const uint32_t norm = (a - kRebias + (1u << (kShift - 1)) - 1u + ((a >> kShift) & 1u)) >> kShift;
    // Below the smallest normal an FP add does the rounding (to nearest even, in the last place).
    const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + kMagic) - std::bit_cast<uint32_t>(kMagic);
    const uint32_t r = (a < kMinNormBits ? sub : norm) | sign;
    return static_cast<uint8_t>(nan ? 0x7fu : r);
  }
};

using Fp8E4M3 = Fp8Format<3, 7, 0x43e00000u, 0x100u>;  // max 448
using Fp8E5M2 = Fp8Format<2, 15, 0x47600000u, 0x7cu>;  // max 57344

inline float fp8e4m3_to_float(uint8_t b) { return Fp8E4M3::decode(b); }
inline uint8_t float_to_fp8e4m3(float f) { return Fp8E4M3::encode(f); }
inline float fp8e5m2_to_float(uint8_t b) { return Fp8E5M2::decode(b); }
inline uint8_t float_to_fp8e5m2(float f) { return Fp8E5M2::encode(f); }

}  // namespace coral::kernels
