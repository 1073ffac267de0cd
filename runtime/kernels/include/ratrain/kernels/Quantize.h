//===- Quantize.h - Block-wise quantization kernels -------------*- C++ -*-===//
//
// ZeRO++-style block-wise symmetric quantization of flat arrays for
// quantized communication (qwZ all-gathers, qgZ reduce-scatters), on the
// AOT-compiled Halide pipelines of generators/QuantizeGenerators.cpp.
//
// n values are cut into blocks of `blockSize` consecutive elements (the last
// block may be short); block b has one fp32 scale absmax_b * (1 / qmax) (the
// fp32 reciprocal), qmax = 127 (int8) or 7 (int4), and element i the code
// round(x_i / scale_b) (ties to even; 0 in an all-zero block), so that decoding
// q_i * scale_b is within scale_b / 2 of x_i. Codes are bytes: int8 one
// two's-complement byte per element; int4 two per byte, element 2j in the low
// nibble of byte j and 2j + 1 in the high nibble (a missing last element is 0).
//
// Conventions as in Kernels.h: raw pointers, 0 on success and a nonzero
// Halide error code otherwise, -1 for invalid sizes (nothing run), fewer than
// 2^31 elements per array.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_KERNELS_QUANTIZE_H
#define RATRAIN_KERNELS_QUANTIZE_H

#include "ratrain/kernels/Kernels.h"

#include <cstdint>

namespace ratrain::kernels {

/// Width of a quantization code.
enum class CodeWidth { Int8, Int4 };
/// Element type of a quantized array's values (16-bit ones as uint16_t bit
/// patterns).
enum class ValueType { F32, BF16, F16 };

/// The block size ZeRO++ uses and the runtime's default.
inline constexpr int64_t kDefaultQuantBlock = 256;

/// Bytes of the codes of n elements: n (int8) or ceil(n / 2) (int4).
inline int64_t quantCodeBytes(CodeWidth width, int64_t n) {
  return width == CodeWidth::Int8 ? n : (n + 1) / 2;
}
/// Scales of n elements in blocks of blockSize: ceil(n / blockSize).
inline int64_t quantBlockCount(int64_t n, int64_t blockSize) {
  return (n + blockSize - 1) / blockSize;
}

/// Quantizes x[0, n) (of type `type`): codes [quantCodeBytes(width, n)] and
/// scales [quantBlockCount(n, blockSize)] overwritten.
int quantizeBlocks(CodeWidth width, ValueType type, int64_t n,
                   int64_t blockSize, const void *x, uint8_t *codes,
                   float *scales);

/// Decodes n elements: y[i] = code_i * scale_{i / blockSize}, overwritten,
/// as fp32 or rounded (to nearest even) to bf16 / f16 (`type`).
int dequantizeBlocks(CodeWidth width, ValueType type, int64_t n,
                     int64_t blockSize, const uint8_t *codes,
                     const float *scales, void *y);

/// acc[i] += code_i * scale_{i / blockSize}, i < n (fp32, accumulated).
int dequantizeAccumulate(CodeWidth width, int64_t n, int64_t blockSize,
                         const uint8_t *codes, const float *scales, float *acc);

} // namespace ratrain::kernels

#endif // RATRAIN_KERNELS_QUANTIZE_H
