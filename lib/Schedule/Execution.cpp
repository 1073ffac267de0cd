//===- Execution.cpp - Running a schedule's ranks together ----------------===//

#include "Execution.h"

#include "llvm/Support/FormatVariadic.h"

using namespace ratrain;
using namespace ratrain::schedule;
using namespace ratrain::schedule::detail;

Slot detail::slotOf(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
    return kForwardSlot;
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
    return kGradientSlot;
  case ActionKind::BackwardWeight:
    return kWeightSlot;
  case ActionKind::SendForward:
    return kSendForwardSlot;
  case ActionKind::RecvForward:
    return kRecvForwardSlot;
  case ActionKind::SendBackward:
    return kSendBackwardSlot;
  case ActionKind::RecvBackward:
    return kRecvBackwardSlot;
  }
  return kForwardSlot;
}

ActionKind detail::kindOfSlot(Slot slot, bool split) {
  switch (slot) {
  case kForwardSlot:
    return ActionKind::Forward;
  case kGradientSlot:
    return split ? ActionKind::BackwardInput : ActionKind::Backward;
  case kWeightSlot:
    return ActionKind::BackwardWeight;
  case kSendForwardSlot:
    return ActionKind::SendForward;
  case kRecvForwardSlot:
    return ActionKind::RecvForward;
  case kSendBackwardSlot:
    return ActionKind::SendBackward;
  case kRecvBackwardSlot:
    return ActionKind::RecvBackward;
  default:
    return ActionKind::Forward;
  }
}

bool PipelineSchedule::hasCommunication() const {
  for (const std::vector<Action> &program : programs)
    for (const Action &action : program)
      if (static_cast<int>(action.kind) >
          static_cast<int>(ActionKind::BackwardWeight))
        return true;
  return false;
}

static llvm::Error structureError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error detail::checkStructure(const PipelineSchedule &schedule) {
  if (llvm::Error err = checkScheduleShape(
          schedule.ranks, schedule.virtualStages, schedule.microBatches))
    return err;
  int64_t ranks = schedule.ranks, stages = schedule.numStages(),
          m = schedule.microBatches;
  if (static_cast<int64_t>(schedule.programs.size()) != ranks)
    return structureError(
        llvm::formatv("the schedule has {0} rank programs for pp = {1}",
                      schedule.programs.size(), ranks));
  if (static_cast<int64_t>(schedule.stageToRank.size()) != stages)
    return structureError(
        llvm::formatv("the schedule places {0} stages, expected pp * v = {1}",
                      schedule.stageToRank.size(), stages));
  for (int64_t c = 0; c < stages; ++c)
    if (schedule.stageToRank[c] < 0 || schedule.stageToRank[c] >= ranks)
      return structureError(
          llvm::formatv("stage {0} is placed on rank {1}, outside [0, {2})", c,
                        schedule.stageToRank[c], ranks));
  const int64_t *toRank = schedule.stageToRank.data();
  for (int64_t r = 0; r < ranks; ++r) {
    for (const Action &action : schedule.programs[r]) {
      // The common case in one test: a compute action of this rank's stage.
      if (static_cast<uint64_t>(action.stage) < static_cast<uint64_t>(stages) &&
          static_cast<uint64_t>(action.microBatch) < static_cast<uint64_t>(m) &&
          toRank[action.stage] == r &&
          static_cast<int>(action.kind) <=
              static_cast<int>(ActionKind::BackwardWeight))
        continue;
      auto text = [&action]() { return action.str(); };
      if (action.stage < 0 || action.stage >= stages)
        return structureError(llvm::formatv(
            "rank {0} runs {1}, but the schedule has stages [0, {2})", r,
            text(), stages));
      if (action.microBatch < 0 || action.microBatch >= m)
        return structureError(llvm::formatv(
            "rank {0} runs {1}, but the schedule has micro-batches [0, {2})", r,
            text(), m));
      if (schedule.stageToRank[action.stage] != r)
        return structureError(llvm::formatv(
            "rank {0} runs {1}, but stage {2} is on rank {3}", r, text(),
            action.stage, schedule.stageToRank[action.stage]));
      int64_t peer;
      switch (action.kind) {
      case ActionKind::SendForward:
      case ActionKind::RecvBackward:
        peer = action.stage + 1;
        break;
      case ActionKind::RecvForward:
      case ActionKind::SendBackward:
        peer = action.stage - 1;
        break;
      default:
        continue;
      }
      if (peer < 0 || peer >= stages)
        return structureError(llvm::formatv(
            "rank {0} runs {1}, but there is no stage {2} to exchange with", r,
            text(), peer));
      if (schedule.stageToRank[peer] == r)
        return structureError(llvm::formatv(
            "rank {0} runs {1}, but stages {2} and {3} are both on rank {0} "
            "(no transfer between them)",
            r, text(), action.stage, peer));
    }
  }
  return llvm::Error::success();
}

Execution::Execution(const PipelineSchedule &schedule)
    : schedule(schedule), stages(schedule.numStages()),
      microBatches(schedule.microBatches),
      explicitCommunication(schedule.hasCommunication()) {
  int64_t slots = explicitCommunication ? kAllSlots : kComputeSlots;
  end.assign(slots * stages * microBatches, kNotRun);
  position.assign(schedule.ranks, 0);
}

StageCosts StageCosts::from(const ActionCosts &costs, int64_t stages) {
  auto padded = [stages](const std::vector<double> &values) {
    std::vector<double> result(values.begin(),
                               values.begin() +
                                   std::min<int64_t>(values.size(), stages));
    result.resize(stages, 0.0);
    return result;
  };
  return {padded(costs.forward), padded(costs.backwardInput),
          padded(costs.backwardWeight)};
}

StageCosts StageCosts::unit(int64_t stages) {
  return {std::vector<double>(stages, 1.0), std::vector<double>(stages, 1.0),
          std::vector<double>(stages, 1.0)};
}
