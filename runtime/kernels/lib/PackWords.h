//===- PackWords.h - Word transpose packing for the GEMMs -------*- C++ -*-===//
//
// Internal to ratrain_kernels (Kernels.cpp, Attention.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_KERNELS_LIB_PACKWORDS_H
#define RATRAIN_KERNELS_LIB_PACKWORDS_H

#include <cstdint>

namespace ratrain::kernels {

/// Packs a row-major operand of `rows` rows of `srcWords` 32-bit words
/// (fp32 values or k-pairs of bf16) into the packed GEMMs' panels:
///   dst[(tile * dstWords + kp) * width + i] = src[(tile * width + i) *
///   srcWords + kp]
/// for tile < ceil(rows / width), kp < dstWords (>= srcWords), i < width, with
/// zeros beyond the last row and beyond srcWords. `width` (the micro-tile's
/// rows or columns) is 1 to 32. Runs the tiles on Halide's thread pool.
/// Returns 0, or -1 for a width out of range.
int packWordsTransposed(const uint32_t *src, int64_t rows, int64_t srcWords,
                        int width, int64_t dstWords, uint32_t *dst);

/// packWordsTransposed on rows `srcStride` (>= srcWords) words apart, on the
/// calling thread: for callers that already run on Halide's thread pool
/// (the vdpbf16ps attention backward stages each head's q and dO with it,
/// lib/Attention.cpp). Returns 0, or -1 for a width or stride out of range.
int packWordsTransposedSerial(const uint32_t *src, int64_t rows,
                              int64_t srcWords, int64_t srcStride, int width,
                              int64_t dstWords, uint32_t *dst);

} // namespace ratrain::kernels

#endif // RATRAIN_KERNELS_LIB_PACKWORDS_H
