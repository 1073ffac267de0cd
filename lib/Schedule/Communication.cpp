//===- Communication.cpp - Explicit SEND/RECV actions ---------------------===//
//
// Makes a schedule's transfers explicit where its compute-only form implies
// them: a send right after the action that produces a boundary tensor for a
// stage on another rank, a receive right before the action that consumes one.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Schedule/PipelineSchedule.h"

using namespace ratrain;
using namespace ratrain::schedule;

PipelineSchedule schedule::withCommunication(const PipelineSchedule &schedule) {
  PipelineSchedule result = schedule;
  int64_t stages = static_cast<int64_t>(schedule.stageToRank.size());
  auto rankOf = [&](int64_t stage) -> int64_t {
    return stage >= 0 && stage < stages ? schedule.stageToRank[stage] : -1;
  };
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    const std::vector<Action> &program = schedule.programs[r];
    std::vector<Action> &out = result.programs[r];
    out.clear();
    out.reserve(program.size() * 2);
    for (const Action &action : program) {
      if (!action.isCompute())
        continue; // placed again below
      int64_t c = action.stage, k = action.microBatch;
      int64_t self = rankOf(c);
      bool forward = action.kind == ActionKind::Forward;
      bool gradient = action.kind == ActionKind::Backward ||
                      action.kind == ActionKind::BackwardInput;
      auto remote = [&](int64_t stage) {
        int64_t peer = rankOf(stage);
        return peer >= 0 && peer != self;
      };
      if (forward && remote(c - 1))
        out.push_back(Action{c, ActionKind::RecvForward, k});
      if (gradient && remote(c + 1))
        out.push_back(Action{c, ActionKind::RecvBackward, k});
      out.push_back(action);
      if (forward && remote(c + 1))
        out.push_back(Action{c, ActionKind::SendForward, k});
      if (gradient && remote(c - 1))
        out.push_back(Action{c, ActionKind::SendBackward, k});
    }
  }
  return result;
}
