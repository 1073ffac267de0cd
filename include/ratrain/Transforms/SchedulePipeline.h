//===- SchedulePipeline.h - The schedule passes as one pipeline -*- C++ -*-===//

#ifndef RATRAIN_TRANSFORMS_SCHEDULEPIPELINE_H
#define RATRAIN_TRANSFORMS_SCHEDULEPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <cstdint>
#include <string>

namespace ratrain {

/// Options of --ratrain-schedule-pipeline (see the passes' options in
/// Passes.td).
struct SchedulePipelineOptions
    : public mlir::PassPipelineOptions<SchedulePipelineOptions> {
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("pipeline schedule: 1f1b, interleaved-1f1b, zb-h1 or zbv "
                     "(empty: the plan's)"),
      llvm::cl::init("")};
  Option<std::string> scheduleFile{
      *this, "schedule-file",
      llvm::cl::desc("a CSV action list to run instead (torch.distributed."
                     "pipelining's format)"),
      llvm::cl::init("")};
  Option<std::string> policy{*this, "policy",
                             llvm::cl::desc("lifecycle policy: ratrain or "
                                            "gpu-style"),
                             llvm::cl::init("ratrain")};
  Option<std::string> machineFile{
      *this, "machine",
      llvm::cl::desc("machine file (YAML); defaults to the module's "
                     "ratrain.machine"),
      llvm::cl::init("")};
  Option<int64_t> capacity{
      *this, "capacity",
      llvm::cl::desc("DDR bytes per cluster (0: the machine's usable DDR)"),
      llvm::cl::init(0)};
  Option<bool> splitBackward{
      *this, "split-backward",
      llvm::cl::desc("split each backward into its input part and its weight "
                     "part (expand-1f1b split-backward)"),
      llvm::cl::init(false)};
  Option<std::string> reportFile{
      *this, "report",
      llvm::cl::desc("memory-over-time CSV of assign-buffers (\"-\": stdout)"),
      llvm::cl::init("")};
};

/// Adds --ratrain-expand-pipeline, --ratrain-schedule-lifecycle,
/// --ratrain-assign-buffers and --ratrain-verify-schedule to `pm` (a
/// builtin.module pass manager).
void buildSchedulePipeline(mlir::OpPassManager &pm,
                           const SchedulePipelineOptions &options);

/// Registers the pipeline as --ratrain-schedule-pipeline.
void registerSchedulePipeline();

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_SCHEDULEPIPELINE_H
