//===- KernelTimeFit.h - A kernel's measured time model ---------*- C++ -*-===//
//
// A kernel's time on one cluster as a function of its shape, fitted to
// measurements (ratrain-calibrate times the Halide GEMM on a dozen shapes):
//
//   seconds = flops / (peak * efficiency) + elementSeconds * elements
//             + rowSeconds * rows + callSeconds
//
// `elements` counts what the kernel touches besides its arithmetic: for a
// GEMM [m x k] * [k x n], m k + k n + m n (the operands its packing copies
// and the result its epilogue writes); for the fused attention, the causal
// score entries (B Hq S^2 / 2: the softmax's exponentials). `rows` counts a
// kernel's independent rows where each has a fixed cost: the attention's
// query rows (B Hq S: the running max and sum, the lse, the output's
// normalization, the backward's delta); GEMMs have none (0). `callSeconds`
// is the fixed cost of a call (argument checks, waking the thread pool).
// Large calls run at the asymptotic efficiency; the small ones of a
// micro-batch of a small model, or an attention of narrow heads, spend a
// visible share of their time in the other terms, which one fraction of
// peak cannot say.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MACHINE_KERNELTIMEFIT_H
#define RATRAIN_MACHINE_KERNELTIMEFIT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace ratrain {

/// The fitted model above. Absent (efficiency 0): the kernel is priced by a
/// plain fraction of peak (KernelEfficiency).
struct KernelTimeFit {
  double efficiency = 0;     ///< asymptotic fraction of peak; 0: no fit
  double elementSeconds = 0; ///< seconds per operand or result element
  double callSeconds = 0;    ///< seconds per call
  double rowSeconds = 0;     ///< seconds per row (0: the kernel has none)
  bool present() const { return efficiency > 0; }
  /// The modelled seconds of one call at `peak` FLOP/s.
  double seconds(double flops, double elements, double peak,
                 double rows = 0) const {
    return flops / (peak * efficiency) + elementSeconds * elements +
           rowSeconds * rows + callSeconds;
  }
};

/// One measured call: its FLOPs, its elements, its rows (0 for a kernel
/// without them) and the seconds it took.
struct KernelTimeSample {
  double flops = 0;
  double elements = 0;
  double seconds = 0;
  double rows = 0;
};

/// Least-squares fit of the model to `samples` on a cluster of `peak`
/// FLOP/s, minimizing the sum of squared relative errors, with efficiency in
/// (0, 1] and the per-element, per-row and per-call terms non-negative (a
/// term the unconstrained fit makes negative is dropped, an efficiency above
/// 1 is held at 1; samples without rows fit no per-row term). Errors: fewer
/// samples than the model's unknowns (three, four with rows), a non-positive
/// or non-finite figure (rows: negative or non-finite), or samples that
/// determine no positive efficiency.
llvm::Expected<KernelTimeFit>
fitKernelTime(llvm::ArrayRef<KernelTimeSample> samples, double peak);

/// The largest relative error |model / measured - 1| of `fit` over `samples`.
double maxRelativeError(const KernelTimeFit &fit,
                        llvm::ArrayRef<KernelTimeSample> samples, double peak);

} // namespace ratrain

#endif // RATRAIN_MACHINE_KERNELTIMEFIT_H
