//===- StepLog.h - Measured step times of a real run ------------*- C++ -*-===//
//
// Reads the runtime's per-step JSON log (one object per line with "step",
// "step_s", "tokens", ...; runtime/src/StepLog.cpp) so that ratrain-sim can
// compare the simulated step time with a measured one (--measured-log).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_STEPLOG_H
#define RATRAIN_SIMULATOR_STEPLOG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace ratrain {
namespace sim {

struct MeasuredSteps {
  /// step_s of every logged step, in log order.
  std::vector<double> stepSeconds;
  /// Median step time without the first step (warm-up: allocation, first
  /// touches), or the only step's time.
  double medianStepSeconds = 0;
  /// The lower and upper quartiles of the same steps (linear interpolation
  /// between the nearest ranks): how far the host moved during the run. On a
  /// shared host the quartiles of one run can lie further apart than the
  /// simulator's error, which says how much of the error the run can show.
  double lowerQuartileStepSeconds = 0;
  double upperQuartileStepSeconds = 0;
  /// Seconds inside kernels of every logged step with "kernel_s" (the mean
  /// over the ranks), in log order; empty when the log has none.
  std::vector<double> kernelSeconds;
  /// Their median without the first step, as medianStepSeconds (0 when the
  /// log has no kernel times): with the simulated kernel time, how fast the
  /// host ran the kernels during the run against its calibration.
  double medianKernelSeconds = 0;
  /// CPU seconds the ranks' threads spent inside kernels ("kernel_cpu_s",
  /// the mean over the ranks) of every logged step, and their median without
  /// the first step (0 when the log has none): ranks that share the cores
  /// spend less CPU than wall time in their kernels, so this says how fast
  /// the kernels ran when the cores were shared.
  std::vector<double> kernelCpuSeconds;
  double medianKernelCpuSeconds = 0;
  /// CPU seconds of the ranks' progress threads ("progress_cpu_s", the mean
  /// over the ranks) of every logged step, and their median without the
  /// first step (0 when the log has none).
  std::vector<double> progressCpuSeconds;
  double medianProgressCpuSeconds = 0;
  /// Per world rank, the median without the first step of its "kernel_s"
  /// and of its "kernel_cpu_s" (empty unless every step lists the same
  /// number of ranks): replicas wait for the slowest of them.
  std::vector<double> rankMedianKernelSeconds, rankMedianKernelCpuSeconds;
  /// tokens of the last step.
  double tokensPerStep = 0;
  /// Largest peak_arena_bytes entry over all steps (0 when absent).
  int64_t peakArenaBytes = 0;
};

/// Parses the text of a step log; `fileName` is used in messages. Blank lines
/// are skipped; any other line must be a JSON object with a numeric
/// "step_s". Errors name the file and the line.
llvm::Expected<MeasuredSteps> parseStepLog(llvm::StringRef text,
                                           llvm::StringRef fileName);
/// Reads and parses a step log file.
llvm::Expected<MeasuredSteps> loadStepLog(llvm::StringRef path);

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_STEPLOG_H
