// IEEE binary16 and bfloat16 <-> float conversions, round to nearest even; NaNs are quieted
// and keep their payload's top bits, as the F16C instructions do.
#pragma once
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

}  // namespace coral::kernels
