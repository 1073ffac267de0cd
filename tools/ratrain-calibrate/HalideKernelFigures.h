//===- HalideKernelFigures.h - Halide kernel measurements ------*- C++ -*-===//
//
// The runtime's Halide kernels (ratrain_kernels) timed on one cluster's
// threads, for the kernel efficiencies and the GEMM time fit of the machine
// file. Built only when the kernels are (RATRAIN_HAVE_KERNELS). Rates are
// per CPU-second of the process, i.e. per busy core; the host is shared.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_HALIDEKERNELFIGURES_H
#define RATRAIN_CALIBRATE_HALIDEKERNELFIGURES_H

#include "ratrain/Machine/KernelTimeFit.h"

#include <cstdint>
#include <vector>

namespace ratrain::calibrate {

struct GemmFigure {
  const char *what;
  int64_t m, n, k;
  double fp32 = 0, bf16 = 0; ///< FLOP/s per core
};

struct AttentionFigure {
  const char *what;
  int64_t b, s, hq, hkv, d;
  double forward = 0, backward = 0;         ///< FLOP/s per core, fp32
  double forwardBf16 = 0, backwardBf16 = 0; ///< FLOP/s per core, bf16
};

/// The NT GEMM (Y = X W^T) in fp32 and with bf16 operands: fills g.fp32 and
/// g.bf16 (FLOP/s per core; 0 when a call fails).
void measureGemm(GemmFigure &g, int reps);

/// The GEMM time fit's samples: 14 shapes, fp32 and bf16, seconds per call
/// on operands cycling through `workingSetBytes` (see the definition).
void measureGemmFitSamples(int reps, int64_t workingSetBytes,
                           std::vector<KernelTimeSample> &f32,
                           std::vector<KernelTimeSample> &bf16);

/// Causal GQA attention forward and backward: fills f.forward and
/// f.backward (FLOP/s per core, FLOPs as the cost model counts them).
void measureAttention(AttentionFigure &f, int reps);

/// AdamW over n parameters with the bf16 view; bytes/s per core.
double measureAdamW(int64_t n, int reps);

/// RMSNorm forward of [t, h]; bytes/s per core.
double measureRmsNorm(int64_t t, int64_t h, int reps);

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_HALIDEKERNELFIGURES_H
