//===- ScheduleActions.h - A pipeline's programs as actions -----*- C++ -*-===//
//
// Reads the action list (ratrain/Schedule/PipelineSchedule.h) back from an
// expanded `ratrain.pipeline`: each rank's run of forwards of one virtual
// stage and micro-batch is an F, of backwards a B (I, W for the split parts);
// recomputes belong to the backward they precede; transfers to another rank
// are SEND/RECV actions. `ratrain-translate --export-pipeline-schedule`
// prints it as torch.distributed.pipelining's CSV, which
// `--ratrain-expand-pipeline=schedule-file=` reads back.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_ANALYSIS_SCHEDULEACTIONS_H
#define RATRAIN_ANALYSIS_SCHEDULEACTIONS_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Schedule/PipelineSchedule.h"

#include "mlir/Support/LLVM.h"

namespace ratrain {

/// The pipeline's schedule as actions. With `withTransfers`, the programs
/// hold the SEND/RECV actions between ranks too. Errors go on the op that
/// does not fit an action.
mlir::FailureOr<schedule::PipelineSchedule>
getPipelineActions(PipelineOp pipeline, bool withTransfers);

/// The compute action that `op` of `stage` is part of: its own for a
/// forward or backward, else the last one before it (none before the first).
std::optional<schedule::Action> getEnclosingAction(StageOp stage,
                                                   mlir::Operation *op);

} // namespace ratrain

#endif // RATRAIN_ANALYSIS_SCHEDULEACTIONS_H
