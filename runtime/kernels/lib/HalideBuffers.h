//===- HalideBuffers.h - Halide buffers over the API's arrays ---*- C++ -*-===//
//
// What the kernels' C++ API (Kernels.cpp, Attention.cpp) shares to describe
// the caller's row-major arrays to the AOT pipelines. Internal to
// ratrain_kernels: no Halide type leaves the library.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_KERNELS_LIB_HALIDEBUFFERS_H
#define RATRAIN_KERNELS_LIB_HALIDEBUFFERS_H

#include "HalideBuffer.h"

#include <climits>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace ratrain::kernels {

using Halide::Runtime::Buffer;

/// A dense Halide buffer over `data`: extents listed innermost first.
/// Halide indexes with int32: a tensor of 2^31 elements or more is described
/// with zero extents, so the pipeline fails its bounds check and returns an
/// error instead of wrapping around.
template <typename T>
Buffer<T> dense(const T *data, std::initializer_list<int64_t> extents) {
  std::vector<halide_dimension_t> dims;
  int64_t stride = 1;
  bool tooLarge = false;
  for (int64_t e : extents) {
    tooLarge |= e > INT32_MAX || stride * e > INT32_MAX;
    dims.push_back(halide_dimension_t(0, static_cast<int32_t>(e),
                                      static_cast<int32_t>(stride)));
    stride *= e;
  }
  if (tooLarge)
    for (halide_dimension_t &d : dims)
      d.extent = 0;
  return Buffer<T>(const_cast<T *>(data), static_cast<int>(dims.size()),
                   dims.data());
}

/// Columns [first, first + count) of the row-major `rows` x `rowLength`
/// matrix at `data`, as a 2-D buffer (columns innermost; the rows keep the
/// matrix's stride). Too large for int32 indexing: zero extents, as dense.
template <typename T>
Buffer<T> columns(const T *data, int64_t rows, int64_t rowLength, int64_t first,
                  int64_t count) {
  const bool tooLarge =
      rowLength > INT32_MAX || rows > INT32_MAX || rows * rowLength > INT32_MAX;
  halide_dimension_t dims[2] = {
      halide_dimension_t(0, tooLarge ? 0 : static_cast<int32_t>(count), 1),
      halide_dimension_t(0, tooLarge ? 0 : static_cast<int32_t>(rows),
                         static_cast<int32_t>(rowLength))};
  return Buffer<T>(const_cast<T *>(data + first), 2, dims);
}

} // namespace ratrain::kernels

#endif // RATRAIN_KERNELS_LIB_HALIDEBUFFERS_H
