//===- MeasuredTrace.h - Per-op times of a real run's trace -----*- C++ -*-===//
//
// Reads the runtime's per-op trace (`--trace FILE` of an emitted program;
// runtime/include/ratrain/runtime/Trace.h) into the simulator's op classes,
// per pipeline stage and step, so that `ratrain-sim --measured-trace`
// prints simulated against measured time side by side:
//   - compute by kind: the spans of the schedule ops (category forward,
//     backward, recompute, update, view-cast, other) minus the waits inside
//     them, as the simulator's compute-stream busy time per ComputeKind;
//   - exposed communication by kind: the blocking waits, by the kind of what
//     they waited for (dma, p2p, all-reduce, ...);
//   - what neither covers: the runtime's time outside the spans and waits
//     (data loading, issuing transfers, logging), which the simulator does
//     not model.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_MEASUREDTRACE_H
#define RATRAIN_SIMULATOR_MEASUREDTRACE_H

#include "ratrain/Simulator/SimProgram.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ratrain {
namespace sim {

struct SimReport;

/// Mean seconds per step of one pipeline stage (over its ranks and the
/// traced steps).
struct MeasuredStageTimes {
  int64_t stage = 0;
  int64_t ranks = 0;
  /// Spans minus the waits inside them, by ComputeKind.
  std::array<double, kNumComputeKinds> busy{};
  /// Blocking waits by CommKind.
  std::array<double, kNumCommKinds> exposed{};
  /// Waits for operations without a simulator kind (barrier, broadcast).
  double otherWaits = 0;
  /// Inside kernel calls (within spans or not).
  double kernels = 0;
  /// The step minus the spans and the waits outside them.
  double outside = 0;
  double step = 0;
};

struct MeasuredTrace {
  /// By stage, in stage order; stages without a rank in the trace are absent.
  std::vector<MeasuredStageTimes> stages;
  int64_t ranks = 0;
  uint64_t firstStep = 0, lastStep = 0;
  /// Mean over the traced steps of the longest rank's step.
  double stepSeconds = 0;
};

/// Parses a trace file's text; `fileName` names it in errors (a trace with
/// no step, an event without its fields).
llvm::Expected<MeasuredTrace> parseMeasuredTrace(llvm::StringRef text,
                                                 llvm::StringRef fileName);
llvm::Expected<MeasuredTrace> loadMeasuredTrace(llvm::StringRef path);

/// Prints simulated against measured milliseconds per step, per stage and op
/// class, and the step time's error.
void printTraceComparison(const SimReport &report, const MeasuredTrace &trace,
                          llvm::raw_ostream &os);

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_MEASUREDTRACE_H
