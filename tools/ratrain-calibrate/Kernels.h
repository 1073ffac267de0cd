//===- Kernels.h - Measurement kernels of ratrain-calibrate -----*- C++ -*-===//
//
// Compiled with -O3 -march=native (see CMakeLists.txt): each function runs a
// fixed amount of work and returns it, so the caller times it.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_KERNELS_H
#define RATRAIN_CALIBRATE_KERNELS_H

#include <cstddef>
#include <cstdint>

namespace ratrain::calibrate {

/// Runs `iterations` rounds of independent FP32 FMA chains in registers;
/// returns the FLOPs executed (2 per lane per FMA). `sink` defeats dead-code
/// elimination.
double fp32FmaKernel(int64_t iterations, float *sink);

/// The same with bf16 dot products (AVX512_BF16 vdpbf16ps: 2 products + 2
/// adds per FP32 lane); returns 0 when the CPU or compiler lacks them.
double bf16DotKernel(int64_t iterations, float *sink);

/// Name of the vector ISA the FMA kernel was compiled for.
const char *fmaIsaName();
bool hasBF16Kernel();

/// STREAM triad a[i] = b[i] + s * c[i] over n floats; returns bytes moved
/// (3 * 4 * n: two reads, one write).
double triadKernel(float *a, const float *b, const float *c, size_t n, float s);

/// An Adam-like memory-bound update over n parameters: reads FP32 master,
/// m, v and a gradient, writes master, m, v (28 bytes/param); returns bytes.
double adamKernel(float *master, float *m, float *v, const float *grad,
                  size_t n);

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_KERNELS_H
