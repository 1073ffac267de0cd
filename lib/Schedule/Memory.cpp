//===- Memory.cpp - What a schedule keeps live on each rank ---------------===//
//
// Walks each rank's program: an F makes its (stage, micro-batch) activations
// live until the B or the W that frees them; an I keeps its results (what the
// W needs besides the activations) until that W. The peak of a rank is its
// program point with the largest weighted sum.
//
//===----------------------------------------------------------------------===//

#include "Execution.h"

#include "ratrain/Model/Limits.h"

using namespace ratrain;
using namespace ratrain::schedule;

/// `weights[stage]`, 1 when `weights` is empty or too short.
static double weightAt(llvm::ArrayRef<double> weights, int64_t stage) {
  return stage < static_cast<int64_t>(weights.size()) ? weights[stage] : 1.0;
}

ScheduleMemory schedule::scheduleMemory(const PipelineSchedule &schedule,
                                        llvm::ArrayRef<double> activationBytes,
                                        llvm::ArrayRef<double> deferredBytes) {
  ScheduleMemory memory;
  if (llvm::Error err = detail::checkStructure(schedule)) {
    llvm::consumeError(std::move(err));
    return memory;
  }
  int64_t stages = schedule.numStages();
  // The result holds ranks x stages counts.
  if (schedule.ranks * stages > limits::kMaxScheduleSize)
    return memory;
  std::vector<std::vector<int64_t>> stagesOfRank(schedule.ranks);
  for (int64_t c = 0; c < stages; ++c)
    stagesOfRank[schedule.stageToRank[c]].push_back(c);
  memory.peakWeighted.assign(schedule.ranks, 0.0);
  memory.peakActivations.assign(schedule.ranks,
                                std::vector<int64_t>(stages, 0));
  memory.peakDeferred.assign(schedule.ranks, std::vector<int64_t>(stages, 0));
  std::vector<int64_t> live(stages, 0), deferred(stages, 0);
  for (int64_t r = 0; r < schedule.ranks; ++r) {
    const std::vector<Action> &program = schedule.programs[r];
    // Applies `action` to the counts; returns the change of the weighted sum.
    auto apply = [&](const Action &action) -> double {
      int64_t c = action.stage;
      double a = weightAt(activationBytes, c), d = weightAt(deferredBytes, c);
      switch (action.kind) {
      case ActionKind::Forward:
        ++live[c];
        return a;
      case ActionKind::Backward:
        --live[c];
        return -a;
      case ActionKind::BackwardInput:
        ++deferred[c];
        return d;
      case ActionKind::BackwardWeight:
        --live[c];
        --deferred[c];
        return -a - d;
      default:
        return 0.0;
      }
    };
    double sum = 0, peak = 0;
    size_t peakEnd = 0; // the peak is after the first peakEnd actions
    for (size_t i = 0; i < program.size(); ++i) {
      sum += apply(program[i]);
      if (sum > peak) {
        peak = sum;
        peakEnd = i + 1;
      }
    }
    for (int64_t c : stagesOfRank[r])
      live[c] = deferred[c] = 0;
    for (size_t i = 0; i < peakEnd; ++i)
      apply(program[i]);
    memory.peakWeighted[r] = peak;
    for (int64_t c : stagesOfRank[r]) {
      memory.peakActivations[r][c] = live[c];
      memory.peakDeferred[r][c] = deferred[c];
    }
  }
  return memory;
}
