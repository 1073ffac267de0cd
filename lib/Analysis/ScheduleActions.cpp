//===- ScheduleActions.cpp - A pipeline's programs as actions -------------===//

#include "ratrain/Analysis/ScheduleActions.h"
#include "ratrain/Analysis/ModelAndPlan.h"

using namespace mlir;
using namespace ratrain;
using schedule::Action;
using schedule::ActionKind;

/// The compute action `op` belongs to in `stage`, if any.
static std::optional<Action> getComputeAction(StageOp stage, Operation *op) {
  auto action = [&](ActionKind kind, Value view,
                    int64_t mb) -> std::optional<Action> {
    int64_t layer = cast<ViewType>(view.getType()).getLayer();
    return Action{stage.getChunkOfLayer(layer).getVirtualStage(), kind, mb};
  };
  if (auto forward = dyn_cast<ForwardOp>(op))
    return action(ActionKind::Forward, forward.getView(),
                  forward.getMicroBatch());
  if (auto backward = dyn_cast<BackwardOp>(op))
    return action(ActionKind::Backward, backward.getView(),
                  backward.getMicroBatch());
  if (auto input = dyn_cast<BackwardInputOp>(op))
    return action(ActionKind::BackwardInput, input.getView(),
                  input.getMicroBatch());
  if (auto weight = dyn_cast<BackwardWeightOp>(op))
    return action(ActionKind::BackwardWeight, weight.getView(),
                  weight.getMicroBatch());
  return std::nullopt;
}

FailureOr<schedule::PipelineSchedule>
ratrain::getPipelineActions(PipelineOp pipeline, bool withTransfers) {
  PlanAttr plan = pipeline.getPlan();
  schedule::PipelineSchedule result;
  result.kind = fromIRSchedule(plan.getSchedule());
  result.ranks = plan.getPp();
  result.virtualStages = plan.getVirtualStages();
  result.microBatches = plan.getMicroBatches();
  result.stageToRank.assign(plan.getNumVirtualStages(), 0);
  for (StageOp stage : pipeline.getStages()) {
    for (StageChunkAttr chunk : stage.getChunkList())
      result.stageToRank[chunk.getVirtualStage()] = stage.getStage();
    std::vector<Action> &program = result.programs.emplace_back();
    // The open compute action: consecutive ops of one (kind, chunk, mb).
    std::optional<Action> open;
    for (Operation &op : stage.getBody().front()) {
      if (std::optional<Action> action = getComputeAction(stage, &op)) {
        if (!open || !(*open == *action)) {
          program.push_back(*action);
          open = action;
        }
        continue;
      }
      auto transfer = dyn_cast<TransferOpInterface>(&op);
      if (!transfer)
        continue;
      // A compute action ends at a transfer; the next forward starts anew.
      open.reset();
      if (!withTransfers || transfer.getPeer() == stage.getStage())
        continue;
      bool send = isa<SendOp>(op);
      bool activation = transfer.getPayload() == Payload::Activation;
      ActionKind kind = send ? (activation ? ActionKind::SendForward
                                           : ActionKind::SendBackward)
                             : (activation ? ActionKind::RecvForward
                                           : ActionKind::RecvBackward);
      program.push_back(Action{transfer.getVirtualStage(), kind,
                               int64_t(transfer.getMicroBatch())});
    }
  }
  return result;
}

std::optional<Action> ratrain::getEnclosingAction(StageOp stage,
                                                  Operation *op) {
  for (Operation *at = op; at; at = at->getPrevNode())
    if (std::optional<Action> action = getComputeAction(stage, at))
      return action;
  return std::nullopt;
}
