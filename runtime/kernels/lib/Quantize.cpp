//===- Quantize.cpp - C++ wrappers of the quantization kernels ------------===//
//
// Builds halide_buffer_t descriptions of the caller's arrays and calls the
// pipelines of generators/QuantizeGenerators.cpp. No Halide type leaves
// this file.
//
//===----------------------------------------------------------------------===//

#include "ratrain/kernels/Quantize.h"

#include "HalideBuffer.h"
#include "HalideRuntime.h"

#include "ratrain_k_dequantize_accumulate_i4.h"
#include "ratrain_k_dequantize_accumulate_i8.h"
#include "ratrain_k_dequantize_i4_bf16.h"
#include "ratrain_k_dequantize_i4_f16.h"
#include "ratrain_k_dequantize_i4_f32.h"
#include "ratrain_k_dequantize_i8_bf16.h"
#include "ratrain_k_dequantize_i8_f16.h"
#include "ratrain_k_dequantize_i8_f32.h"
#include "ratrain_k_quantize_i4_bf16.h"
#include "ratrain_k_quantize_i4_f16.h"
#include "ratrain_k_quantize_i4_f32.h"
#include "ratrain_k_quantize_i8_bf16.h"
#include "ratrain_k_quantize_i8_f16.h"
#include "ratrain_k_quantize_i8_f32.h"

#include <climits>

namespace ratrain::kernels {
namespace {

using Halide::Runtime::Buffer;

/// A dense 1-D Halide buffer of n elements over `data`.
template <typename T> Buffer<T> flat(const T *data, int64_t n) {
  halide_dimension_t dim(0, static_cast<int32_t>(n), 1);
  return Buffer<T>(const_cast<T *>(data), 1, &dim);
}

/// Whether n elements in blocks of blockSize are in the kernels' range.
bool validSizes(int64_t n, int64_t blockSize) {
  return n >= 0 && n < INT32_MAX && blockSize >= 1 && blockSize <= INT32_MAX;
}

} // namespace

int quantizeBlocks(CodeWidth width, ValueType type, int64_t n,
                   int64_t blockSize, const void *x, uint8_t *codes,
                   float *scales) {
  if (!validSizes(n, blockSize))
    return -1;
  if (n == 0)
    return 0;
  auto c = flat(codes, quantCodeBytes(width, n));
  auto s = flat(scales, quantBlockCount(n, blockSize));
  int32_t b = int32_t(blockSize);
  bool i8 = width == CodeWidth::Int8;
  switch (type) {
  case ValueType::F32: {
    auto in = flat(static_cast<const float *>(x), n);
    return i8 ? ratrain_k_quantize_i8_f32(in, b, s, c)
              : ratrain_k_quantize_i4_f32(in, b, s, c);
  }
  case ValueType::BF16: {
    auto in = flat(static_cast<const uint16_t *>(x), n);
    return i8 ? ratrain_k_quantize_i8_bf16(in, b, s, c)
              : ratrain_k_quantize_i4_bf16(in, b, s, c);
  }
  case ValueType::F16: {
    auto in = flat(static_cast<const uint16_t *>(x), n);
    return i8 ? ratrain_k_quantize_i8_f16(in, b, s, c)
              : ratrain_k_quantize_i4_f16(in, b, s, c);
  }
  }
  return -1;
}

int dequantizeBlocks(CodeWidth width, ValueType type, int64_t n,
                     int64_t blockSize, const uint8_t *codes,
                     const float *scales, void *y) {
  if (!validSizes(n, blockSize))
    return -1;
  if (n == 0)
    return 0;
  auto c = flat(codes, quantCodeBytes(width, n));
  auto s = flat(scales, quantBlockCount(n, blockSize));
  int32_t b = int32_t(blockSize);
  bool i8 = width == CodeWidth::Int8;
  switch (type) {
  case ValueType::F32: {
    auto out = flat(static_cast<float *>(y), n);
    return i8 ? ratrain_k_dequantize_i8_f32(c, s, b, out)
              : ratrain_k_dequantize_i4_f32(c, s, b, out);
  }
  case ValueType::BF16: {
    auto out = flat(static_cast<uint16_t *>(y), n);
    return i8 ? ratrain_k_dequantize_i8_bf16(c, s, b, out)
              : ratrain_k_dequantize_i4_bf16(c, s, b, out);
  }
  case ValueType::F16: {
    auto out = flat(static_cast<uint16_t *>(y), n);
    return i8 ? ratrain_k_dequantize_i8_f16(c, s, b, out)
              : ratrain_k_dequantize_i4_f16(c, s, b, out);
  }
  }
  return -1;
}

int dequantizeAccumulate(CodeWidth width, int64_t n, int64_t blockSize,
                         const uint8_t *codes, const float *scales,
                         float *acc) {
  if (!validSizes(n, blockSize))
    return -1;
  if (n == 0)
    return 0;
  auto c = flat(codes, quantCodeBytes(width, n));
  auto s = flat(scales, quantBlockCount(n, blockSize));
  auto a = flat(acc, n);
  int32_t b = int32_t(blockSize);
  return width == CodeWidth::Int8
             ? ratrain_k_dequantize_accumulate_i8(c, s, a, b, a)
             : ratrain_k_dequantize_accumulate_i4(c, s, a, b, a);
}

} // namespace ratrain::kernels
