//===- SchedulePipeline.cpp - --ratrain-schedule-pipeline -----------------===//
//
// expand-1f1b -> schedule-lifecycle -> assign-buffers -> verify-schedule as
// one pass, with the options they share.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Transforms/SchedulePipeline.h"
#include "ratrain/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace ratrain {
#define GEN_PASS_DEF_RATRAINSCHEDULEPIPELINE
#include "ratrain/Transforms/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;

void ratrain::buildSchedulePipeline(OpPassManager &pm,
                                    const SchedulePipelineOptions &options) {
  pm.addPass(createRATrainExpand1F1B());
  RATrainScheduleLifecycleOptions lifecycle;
  lifecycle.policy = options.policy;
  lifecycle.machineFile = options.machineFile;
  pm.addPass(createRATrainScheduleLifecycle(lifecycle));
  RATrainAssignBuffersOptions assign;
  assign.machineFile = options.machineFile;
  assign.capacity = options.capacity;
  assign.reportFile = options.reportFile;
  pm.addPass(createRATrainAssignBuffers(assign));
  pm.addPass(createRATrainVerifySchedule());
}

namespace {

struct SchedulePipelinePass
    : public ratrain::impl::RATrainSchedulePipelineBase<SchedulePipelinePass> {
  using Base::Base;

  void runOnOperation() override {
    OpPassManager pm(ModuleOp::getOperationName());
    SchedulePipelineOptions options;
    options.policy = policy;
    options.machineFile = machineFile;
    options.capacity = capacity;
    options.reportFile = reportFile;
    buildSchedulePipeline(pm, options);
    if (failed(runPipeline(pm, getOperation())))
      signalPassFailure();
  }
};

} // namespace
