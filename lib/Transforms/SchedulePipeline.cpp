//===- SchedulePipeline.cpp - --ratrain-schedule-pipeline -----------------===//
//
// expand-pipeline -> schedule-lifecycle -> assign-buffers -> verify-schedule as
// one registered pipeline, with the options they share.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Transforms/SchedulePipeline.h"
#include "ratrain/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace ratrain;

void ratrain::buildSchedulePipeline(OpPassManager &pm,
                                    const SchedulePipelineOptions &options) {
  RATrainExpandPipelineOptions expand;
  expand.scheduleName = options.schedule;
  expand.scheduleFile = options.scheduleFile;
  expand.splitBackward = options.splitBackward;
  pm.addPass(createRATrainExpandPipeline(expand));
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

void ratrain::registerSchedulePipeline() {
  PassPipelineRegistration<SchedulePipelineOptions>(
      "ratrain-schedule-pipeline",
      "expand-pipeline, schedule-lifecycle, assign-buffers, verify-schedule: "
      "the "
      "four schedule passes in order with the given options",
      buildSchedulePipeline);
}
