//===- Half.h - bf16 / f16 <-> f32 conversions ------------------*- C++ -*-===//
//
// Bit-exact conversions used by the 16-bit reduction operators and by
// checkpoint I/O. Rounding is to nearest, ties to even; NaN stays NaN.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_HALF_H
#define RATRAIN_RUNTIME_HALF_H

#include <cstdint>
#include <cstring>

namespace ratrain::rt {

inline float bf16ToFloat(uint16_t value) {
  uint32_t bits = uint32_t(value) << 16;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

/// Without a branch (the NaN case is a select), so that loops over arrays
/// vectorize (ReduceLoops.cpp).
inline uint16_t floatToBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  uint32_t quiet = (bits >> 16) | 0x0040u; // NaN: keep it quiet and a NaN.
  return uint16_t((bits & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

inline float f16ToFloat(uint16_t value) {
  uint32_t sign = uint32_t(value & 0x8000u) << 16;
  uint32_t exponent = (value >> 10) & 0x1fu;
  uint32_t mantissa = value & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) { // Inf / NaN.
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) { // Normal.
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) { // Zero.
    bits = sign;
  } else { // Subnormal: normalize.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    bits = sign | (uint32_t(113 - shift) << 23) | (mantissa << 13);
  }
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

inline uint16_t floatToF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN.
    return uint16_t(sign | 0x7e00u);
  if (magnitude >= 0x477ff000u) // Rounds to >= 65520: infinity.
    return uint16_t(sign | 0x7c00u);
  if (magnitude < 0x38800000u) { // Below the smallest normal: subnormal.
    if (magnitude < 0x33000000u) // Below half the smallest subnormal.
      return sign;
    // value = mantissa * 2^(exponent - 150); the f16 subnormal unit is
    // 2^-24, so the result is mantissa >> (126 - exponent), rounded.
    uint32_t exponent = magnitude >> 23;
    uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    uint32_t rshift = 126 - exponent; // 14..24
    uint32_t half = 1u << (rshift - 1);
    uint32_t result = mantissa >> rshift;
    uint32_t remainder = mantissa & ((1u << rshift) - 1);
    if (remainder > half || (remainder == half && (result & 1u)))
      ++result;
    return uint16_t(sign | result);
  }
  // Normal: rebias the exponent and round the mantissa to 10 bits.
  uint32_t rebased = magnitude - 0x38000000u; // exponent - 112
  uint32_t result = rebased >> 13;
  uint32_t remainder = rebased & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u)))
    ++result; // May carry into the exponent, which is correct.
  return uint16_t(sign | result);
}

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_HALF_H
