//===- KernelTimeFit.cpp - Least-squares fit of a kernel's time model -----===//
//
// The model is linear in its four unknowns x = (1 / efficiency,
// elementSeconds, rowSeconds, callSeconds): a call predicted at r . x with
// r = (flops / peak, elements, rows, 1). Minimizing the squared relative
// errors is ordinary least squares on the vectors r_i / t_i against 1. The
// bounds (efficiency <= 1, the others >= 0) are met by trying each choice of
// which unknowns sit on their bound (sixteen at most) and keeping the best
// feasible solution: with four unknowns that is the exact constrained
// optimum. Samples without rows leave rowSeconds undetermined, so only the
// choices that hold it at its bound (0) solve.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/KernelTimeFit.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <cmath>
#include <limits>
#include <optional>

using namespace ratrain;

namespace {

constexpr int kUnknowns = 4;
using Vector = std::array<double, kUnknowns>;

Vector rowOf(const KernelTimeSample &s, double peak) {
  return {s.flops / peak, s.elements, s.rows, 1.0};
}

/// Least squares over the unknowns marked free; the others keep `fixed`'s
/// value. nullopt when the free unknowns are not determined.
std::optional<Vector> solve(llvm::ArrayRef<KernelTimeSample> samples,
                            double peak, std::array<bool, kUnknowns> free,
                            const Vector &fixed) {
  int index[kUnknowns], n = 0;
  for (int j = 0; j < kUnknowns; ++j)
    if (free[j])
      index[n++] = j;
  double a[kUnknowns][kUnknowns + 1] = {};
  for (const KernelTimeSample &s : samples) {
    Vector r = rowOf(s, peak);
    double rest = 1.0;
    for (int j = 0; j < kUnknowns; ++j)
      if (!free[j])
        rest -= r[j] * fixed[j] / s.seconds;
    for (int p = 0; p < n; ++p) {
      double rp = r[index[p]] / s.seconds;
      for (int q = 0; q < n; ++q)
        a[p][q] += rp * r[index[q]] / s.seconds;
      a[p][n] += rp * rest;
    }
  }
  // Gaussian elimination with partial pivoting on the normal equations.
  for (int p = 0; p < n; ++p) {
    int pivot = p;
    for (int q = p + 1; q < n; ++q)
      if (std::fabs(a[q][p]) > std::fabs(a[pivot][p]))
        pivot = q;
    if (!(std::fabs(a[pivot][p]) > 1e-300))
      return std::nullopt;
    for (int q = 0; q <= n; ++q)
      std::swap(a[p][q], a[pivot][q]);
    for (int q = 0; q < n; ++q) {
      if (q == p)
        continue;
      double f = a[q][p] / a[p][p];
      for (int c = p; c <= n; ++c)
        a[q][c] -= f * a[p][c];
    }
  }
  Vector x = fixed;
  for (int p = 0; p < n; ++p)
    x[index[p]] = a[p][n] / a[p][p];
  for (double v : x)
    if (!std::isfinite(v))
      return std::nullopt;
  return x;
}

double sumSquaredRelativeErrors(llvm::ArrayRef<KernelTimeSample> samples,
                                double peak, const Vector &x) {
  double sum = 0;
  for (const KernelTimeSample &s : samples) {
    Vector r = rowOf(s, peak);
    double predicted = 0;
    for (int j = 0; j < kUnknowns; ++j)
      predicted += r[j] * x[j];
    double e = predicted / s.seconds - 1.0;
    sum += e * e;
  }
  return sum;
}

} // namespace

llvm::Expected<KernelTimeFit>
ratrain::fitKernelTime(llvm::ArrayRef<KernelTimeSample> samples, double peak) {
  auto fail = [](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "kernel time fit: " + what);
  };
  const bool withRows = llvm::any_of(
      samples, [](const KernelTimeSample &s) { return s.rows > 0; });
  const size_t unknowns = withRows ? kUnknowns : kUnknowns - 1;
  if (samples.size() < unknowns)
    return fail(llvm::formatv("needs at least {0} measurements, got {1}",
                              unknowns, samples.size()));
  if (!(peak > 0) || !std::isfinite(peak))
    return fail(llvm::formatv("the peak must be positive, got {0}", peak));
  for (size_t i = 0; i < samples.size(); ++i) {
    const KernelTimeSample &s = samples[i];
    if (!(s.flops > 0 && s.elements > 0 && s.seconds > 0) ||
        !std::isfinite(s.flops) || !std::isfinite(s.elements) ||
        !std::isfinite(s.seconds))
      return fail(llvm::formatv("measurement {0}: flops, elements and "
                                "seconds must be positive, got {1}, {2}, {3}",
                                i, s.flops, s.elements, s.seconds));
    if (!(s.rows >= 0) || !std::isfinite(s.rows))
      return fail(llvm::formatv("measurement {0}: rows must be non-negative, "
                                "got {1}",
                                i, s.rows));
  }
  // Bounds: 1 / efficiency >= 1, the per-element, per-row and per-call
  // seconds >= 0.
  const Vector bound = {1.0, 0.0, 0.0, 0.0};
  std::optional<Vector> best;
  double bestError = std::numeric_limits<double>::infinity();
  for (int mask = 0; mask < (1 << kUnknowns); ++mask) {
    std::array<bool, kUnknowns> free;
    for (int j = 0; j < kUnknowns; ++j)
      free[j] = (mask >> j) & 1;
    std::optional<Vector> x = solve(samples, peak, free, bound);
    if (!x || (*x)[0] < 1.0 - 1e-12 || (*x)[1] < 0 || (*x)[2] < 0 ||
        (*x)[3] < 0)
      continue;
    double error = sumSquaredRelativeErrors(samples, peak, *x);
    if (error < bestError) {
      bestError = error;
      best = x;
    }
  }
  if (!best)
    return fail("the measurements determine no efficiency in (0, 1]");
  KernelTimeFit fit;
  fit.efficiency = std::min(1.0, 1.0 / (*best)[0]);
  fit.elementSeconds = (*best)[1];
  fit.rowSeconds = (*best)[2];
  fit.callSeconds = (*best)[3];
  return fit;
}

double ratrain::maxRelativeError(const KernelTimeFit &fit,
                                 llvm::ArrayRef<KernelTimeSample> samples,
                                 double peak) {
  double worst = 0;
  for (const KernelTimeSample &s : samples)
    worst = std::max(
        worst,
        std::fabs(fit.seconds(s.flops, s.elements, peak, s.rows) / s.seconds -
                  1.0));
  return worst;
}
