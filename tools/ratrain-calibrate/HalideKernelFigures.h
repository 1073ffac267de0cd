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
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Planner/GemmCalls.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace ratrain::calibrate {

struct GemmFigure {
  const char *what;
  int64_t m, n, k;
  double fp32 = 0, bf16 = 0; ///< FLOP/s per core
};

/// The attention kernels' entries of the machine file.
struct AttentionCalibration {
  /// efficiency.attention_forward / _backward (fp32, of the FP32 peak) and
  /// _forward_f16 / _backward_f16 (bf16, of the bf16 peak): means over two
  /// shapes (the tiny LLaMA's h 256 as 64-wide heads, LLaMA-7B's heads).
  double forward = 0, backward = 0, forwardF16 = 0, backwardF16 = 0;
  /// attention_forward_fit / attention_backward_fit over ten shapes.
  KernelTimeFits forwardFit, backwardFit;
};

/// The NT GEMM (Y = X W^T) in fp32 and with bf16 operands: fills g.fp32 and
/// g.bf16 (FLOP/s per core; 0 when a call fails).
void measureGemm(GemmFigure &g, int reps);

/// One GEMM call's form and shape (C[m x n] over k).
struct GemmShape {
  GemmForm form;
  int64_t m, n, k;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  /// What the call touches besides its arithmetic (KernelTimeFit.h).
  double elements() const {
    return double(m) * double(k) + double(k) * double(n) +
           double(m) * double(n);
  }
};
/// The 14 shapes the GEMM time fit (gemm_fit) is fitted to.
llvm::ArrayRef<GemmShape> gemmFitShapes();
/// Times each of `shapes` with fp32 and with bf16 operands on one cluster's
/// threads: `f32[i]` and `bf16[i]` are seconds per call (CPU-seconds of the
/// process), 0 where a call failed; operands cycle through
/// `workingSetBytes` (see the definition).
void measureGemmShapes(int reps, int64_t workingSetBytes,
                       llvm::ArrayRef<GemmShape> shapes,
                       std::vector<double> &f32, std::vector<double> &bf16);

/// The GEMM entries of the machine file: gemm_fit per operand type and the
/// calls timed (gemm_measured).
struct GemmCalibration {
  KernelTimeFits fit;
  MeasuredGemms measured;
};
/// Times the 14 fit shapes on operands cycled through `cacheBytes` (the
/// last-level cache) and `modelCalls` up to kMaxMeasuredGemmFlops on
/// operands cycled through modelGemmWorkingSet(`modelStepBytes`,
/// `cacheBytes`), fp32 and bf16, on a cluster of `cores` cores; fits
/// gemm_fit to the fit shapes and lists every call timed. Prints the fits
/// and how far they are from the models' calls to stderr and the header
/// notes to `notes`, where `models` names the models (empty: none given).
GemmCalibration calibrateGemms(int reps, int64_t cacheBytes, int64_t cores,
                               double fp32PeakPerCore, double bf16PeakPerCore,
                               llvm::ArrayRef<GemmCall> modelCalls,
                               int64_t modelStepBytes, llvm::StringRef models,
                               llvm::raw_ostream &notes);
/// Fits `samples` (seconds per call on a cluster of `peak` FLOP/s) into
/// `fit` and prints it to stderr ("  LABEL (N shapes): efficiency, ns per
/// element, ns per row where there is a row term, us per call, the worst
/// shape"); returns the worst shape's relative error, or nullopt after a
/// warning naming `label` when the samples determine no fit.
std::optional<double> fitAndReport(llvm::StringRef label,
                                   llvm::ArrayRef<KernelTimeSample> samples,
                                   double peak, KernelTimeFit &fit);

/// Times the causal GQA attention forward and backward, fp32 and bf16, on
/// ten shapes (D 32 to 128, S 256 to 4096, one to four sequences) with
/// operands cycling through `workingSetBytes`, on a cluster of `cores`
/// cores: the efficiencies and the time fits (KernelTimeFit, elements = the
/// causal score entries), FLOPs as the cost model counts them. Prints a
/// line per shape and fit to stderr and the machine file's header notes to
/// `notes`. An error when a kernel fails.
llvm::Error calibrateAttention(int reps, int64_t workingSetBytes, int64_t cores,
                               double fp32PeakPerCore, double bf16PeakPerCore,
                               AttentionCalibration &result,
                               llvm::raw_ostream &notes);

/// AdamW over n parameters with the bf16 view; bytes/s per core.
double measureAdamW(int64_t n, int reps);

/// The optimizer update as a training step runs it, on `threads` threads at
/// once, each over its own n parameters (1: one cluster alone; every CPU:
/// every cluster of the node updating): an fp32 model's AdamW (fp32
/// gradients, no view) or, `sixteenBit`, a bf16 model's (bf16 gradients,
/// the bf16 view written). Bytes as CostModel::optimizerUpdate counts them
/// (28 and 26 a parameter) per second of a thread (wall clock), the mean
/// over the threads, the best of `reps` runs; 0 when a call fails.
double measureOptimizerUpdate(int64_t n, int reps, unsigned threads,
                              bool sixteenBit);

/// The update's rates for a machine file (cluster.optimizer_bandwidth and
/// _alone, or the _f16 pair): {every one of `clusters` clusters updating at
/// once, one alone}, together capped at alone (a shared host can measure
/// the two out of order); {0, 0} when a call fails.
std::pair<double, double> measureOptimizerBandwidths(int64_t n, int reps,
                                                     unsigned clusters,
                                                     bool sixteenBit);

/// RMSNorm forward of [t, h]; bytes/s per core.
double measureRmsNorm(int64_t t, int64_t h, int reps);

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_HALIDEKERNELFIGURES_H
