//===- SchedulePipeline.h - The schedule passes as one pipeline -*- C++ -*-===//

#ifndef RATRAIN_TRANSFORMS_SCHEDULEPIPELINE_H
#define RATRAIN_TRANSFORMS_SCHEDULEPIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <string>

namespace ratrain {

/// Options of the schedule pipeline (see the passes' options in
/// Passes.td).
struct SchedulePipelineOptions {
  /// "ratrain" or "gpu-style".
  std::string policy = "ratrain";
  /// Machine file; empty: the module's `ratrain.machine`.
  std::string machineFile;
  /// DDR bytes per cluster; 0: the machine's usable DDR.
  int64_t capacity = 0;
  /// Memory-over-time CSV ("-": stdout; empty: none).
  std::string reportFile;
};

/// Adds --ratrain-expand-1f1b, --ratrain-schedule-lifecycle,
/// --ratrain-assign-buffers and --ratrain-verify-schedule to `pm` (a
/// builtin.module pass manager).
void buildSchedulePipeline(mlir::OpPassManager &pm,
                           const SchedulePipelineOptions &options);

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_SCHEDULEPIPELINE_H
