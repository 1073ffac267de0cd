//===- KernelTimeFit.h - A kernel's measured time model ---------*- C++ -*-===//
//
// A kernel's time on one cluster as a function of its shape, fitted to
// measurements (ratrain-calibrate times the Halide GEMM on a dozen shapes):
//
//   seconds = flops / (peak * efficiency) + elementSeconds * elements
//             + callSeconds
//
// `elements` counts what the kernel touches besides its arithmetic: for a
// GEMM [m x k] * [k x n], m k + k n + m n (the operands its packing copies
// and the result its epilogue writes); `callSeconds` is the fixed cost of a
// call (argument checks, waking the thread pool). Large GEMMs run at the
// asymptotic efficiency; the small ones of a micro-batch of a small model
// spend a visible share of their time in the other two terms, which one
// fraction of peak cannot say.
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
  bool present() const { return efficiency > 0; }
  /// The modelled seconds of one call at `peak` FLOP/s.
  double seconds(double flops, double elements, double peak) const {
    return flops / (peak * efficiency) + elementSeconds * elements +
           callSeconds;
  }
};

/// One measured call: its FLOPs, its elements and the seconds it took.
struct KernelTimeSample {
  double flops = 0;
  double elements = 0;
  double seconds = 0;
};

/// Least-squares fit of the model to `samples` on a cluster of `peak`
/// FLOP/s, minimizing the sum of squared relative errors, with efficiency in
/// (0, 1] and the per-element and per-call terms non-negative (a term the
/// unconstrained fit makes negative is dropped, an efficiency above 1 is held
/// at 1). Errors: fewer than three samples, a non-positive or non-finite
/// figure, or samples that determine no positive efficiency.
llvm::Expected<KernelTimeFit>
fitKernelTime(llvm::ArrayRef<KernelTimeSample> samples, double peak);

/// The largest relative error |model / measured - 1| of `fit` over `samples`.
double maxRelativeError(const KernelTimeFit &fit,
                        llvm::ArrayRef<KernelTimeSample> samples, double peak);

} // namespace ratrain

#endif // RATRAIN_MACHINE_KERNELTIMEFIT_H
