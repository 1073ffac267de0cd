//===- ConcurrentPeaks.h - Every CPU's peak, alone and all at once -*- C++
//-*-===//
//
// `ratrain-calibrate --peaks`: the fp32 FMA and bf16 dot-product loops of
// Kernels.h on one thread pinned to each CPU, timed by the wall clock, twice:
// each CPU alone (the others idle), then all CPUs at the same time. On a
// shared host the two differ, and not the same way from one minute to the
// next: a guest's CPUs may sit on one physical core's two hardware threads
// for a while (each then runs the loops at about half its rate when the
// other runs them too), and a CPU whose host core is busy elsewhere runs
// slower for minutes. A benchmark that divides a multi-rank step by the
// host's peak (bench/training/compare-torch.py) measures both right before
// and after the run and divides by the larger: never by less than what the
// CPUs do one at a time.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_CONCURRENTPEAKS_H
#define RATRAIN_CALIBRATE_CONCURRENTPEAKS_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ratrain::calibrate {

/// Runs `f(thread)` on `threads` threads started together (unpinned);
/// returns the wall time until the last one ends.
double runConcurrently(unsigned threads,
                       const std::function<void(unsigned)> &f);

/// Bytes (or work) per second of a thread, the mean over `threads` threads
/// started together, each calling `call(thread, i)` for i < `inner` and
/// doing `work` per call (wall clock): the best of `reps` runs after one
/// warm-up run; 0 when a call returns non-zero.
double bestConcurrentRate(unsigned threads, int reps, int inner, double work,
                          const std::function<int(unsigned, int)> &call);

/// FLOP/s of the fp32 FMA loop and of the bf16 dot loop (0: none) on each
/// CPU the process may run on.
struct CpuRates {
  std::vector<double> fp32, bf16;

  double fp32Total() const;
  double bf16Total() const;
};

/// Every CPU measured alone and all at once.
struct ConcurrentPeaks {
  std::vector<int> cpus; ///< the CPU numbers, in order
  CpuRates alone;        ///< each CPU with the others idle
  CpuRates together;     ///< all CPUs busy at once
  double seconds = 0;    ///< wall time of the measurement
};

/// Runs `rounds` rounds of the fp32 loop and of the bf16 loop (`iterations`
/// each) on every CPU of the process's affinity mask, first one CPU at a
/// time, then on all at once (each round started together); a CPU's rate is
/// its best round's (wall clock). Returns false (and says why in `error`)
/// when a thread cannot be pinned.
bool measureConcurrentPeaks(int64_t iterations, int rounds,
                            ConcurrentPeaks &result, std::string &error);

/// One JSON object: {"cpus": [...], "alone": {"fp32_flops": [...],
/// "bf16_flops": [...], "fp32_total": x, "bf16_total": x}, "together":
/// {...}, "bf16_path": "dot"|"widen", "peak32_total": x, "peak16_total": x,
/// "seconds": x}. peak32_total is the larger of the two fp32 totals;
/// peak16_total the same for the loop the bf16 kernels run at: the dot
/// loop where they use vdpbf16ps, the fp32 loop where they widen
/// (`bf16Widened`), as peak_flops_f16 of a machine file.
void printConcurrentPeaksJson(const ConcurrentPeaks &peaks, bool bf16Widened,
                              llvm::raw_ostream &os);

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_CONCURRENTPEAKS_H
