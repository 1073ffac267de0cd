//===- ConcurrentPeaks.h - Every CPU's peak, measured at once ---*- C++ -*-===//
//
// `ratrain-calibrate --peaks`: the fp32 FMA and bf16 dot-product loops of
// Kernels.h run on one thread pinned to each CPU, all CPUs at the same time,
// timed by the wall clock. On a shared host the CPUs do not deliver the same
// rate at the same moment (a guest's CPU whose host core is also busy runs
// its loops slower for minutes); a single-CPU measurement times one CPU in
// its best moment, this one what the whole host delivers now, which a
// benchmark divides a multi-rank step by (bench/training/compare-torch.py).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_CONCURRENTPEAKS_H
#define RATRAIN_CALIBRATE_CONCURRENTPEAKS_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <vector>

namespace ratrain::calibrate {

/// FLOP/s of each CPU the process may run on, measured with every CPU busy.
struct ConcurrentPeaks {
  std::vector<int> cpus;    ///< the CPU numbers, in order
  std::vector<double> fp32; ///< fp32 FMA loop, FLOP/s per CPU
  std::vector<double> bf16; ///< bf16 dot loop, FLOP/s per CPU (0: none)
  double seconds = 0;       ///< wall time of the measurement

  double fp32Total() const;
  double bf16Total() const;
};

/// Runs `rounds` rounds of the fp32 loop and of the bf16 loop (`iterations`
/// each) on every CPU of the process's affinity mask at once, each round
/// started together; a CPU's rate is its best round's (wall clock).
/// Returns false (and says why in `error`) when a thread cannot be pinned.
bool measureConcurrentPeaks(int64_t iterations, int rounds,
                            ConcurrentPeaks &result, std::string &error);

/// One JSON object: {"cpus": [...], "fp32_flops": [...], "bf16_flops":
/// [...], "fp32_total": x, "bf16_total": x, "bf16_path": "dot"|"widen",
/// "peak16_total": x, "seconds": x}. peak16_total is what the bf16 kernels
/// run at: the dot loop's total where they use vdpbf16ps, the fp32 loop's
/// where they widen (`bf16Widened`), as peak_flops_f16 of a machine file.
void printConcurrentPeaksJson(const ConcurrentPeaks &peaks, bool bf16Widened,
                              llvm::raw_ostream &os);

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_CONCURRENTPEAKS_H
