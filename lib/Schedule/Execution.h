//===- Execution.h - Running a schedule's ranks together --------*- C++ -*-===//
//
// Private to lib/Schedule: the data dependencies of an action and an
// event-driven run of all ranks (each rank in program order, an action
// starting when its rank is free and its inputs have arrived, sends
// buffered), shared by the checker (deadlock freedom) and the timing
// simulation.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_LIB_SCHEDULE_EXECUTION_H
#define RATRAIN_LIB_SCHEDULE_EXECUTION_H

#include "ratrain/Schedule/PipelineSchedule.h"

#include <algorithm>
#include <limits>

namespace ratrain {
namespace schedule {
namespace detail {

/// What an action produces, per (stage, micro-batch): the index into the
/// completion table is (slot * stages + stage) * microBatches + microBatch.
enum Slot : int64_t {
  kForwardSlot = 0,
  kGradientSlot = 1, ///< B or I: the input gradient
  kWeightSlot = 2,
  kSendForwardSlot = 3,
  kRecvForwardSlot = 4,
  kSendBackwardSlot = 5,
  kRecvBackwardSlot = 6,
  kComputeSlots = 3,
  kAllSlots = 7,
};

/// An input of an action: what produces it, on which virtual stage.
struct Dependency {
  Slot slot;
  int64_t stage;
};

Slot slotOf(ActionKind kind);
/// The action kind that fills `slot` (for B/I slots: I if `split`, else B).
ActionKind kindOfSlot(Slot slot, bool split);

/// Checks what execution needs to index safely: pp, v, m within the limits,
/// one program per rank, a valid rank for each stage, each action's stage and
/// micro-batch in range and on its rank, and each transfer between two
/// stages of different ranks. The error names the action and its rank.
llvm::Error checkStructure(const PipelineSchedule &schedule);

/// The event-driven run of a schedule that passed checkStructure.
class Execution {
public:
  Execution(const PipelineSchedule &schedule);

  /// The inputs of `action` (at most two).
  int dependencies(const Action &action, Dependency deps[2]) const;

  int64_t key(Slot slot, int64_t stage, int64_t microBatch) const {
    return (slot * stages + stage) * microBatches + microBatch;
  }
  int64_t key(const Action &action) const {
    return key(slotOf(action.kind), action.stage, action.microBatch);
  }
  int64_t rankOf(int64_t stage) const { return schedule.stageToRank[stage]; }

  /// Runs all ranks as far as they go. `cost(action)` gives each action's
  /// duration, `visit(rank, action, start, end)` sees each action once it
  /// runs. Returns true when every rank reached its program's end.
  template <typename CostFn, typename VisitFn>
  bool run(double transfer, CostFn cost, VisitFn visit);

  /// The index of each rank's first action not run (its program's size when
  /// it finished).
  const std::vector<size_t> &positions() const { return position; }
  /// The completion time of `key`, infinity while it has not run.
  double endTime(int64_t key) const { return end[key]; }
  static constexpr double kNotRun = std::numeric_limits<double>::infinity();

private:
  const PipelineSchedule &schedule;
  int64_t stages, microBatches;
  bool explicitCommunication;
  std::vector<double> end;
  std::vector<size_t> position;
};

template <typename CostFn, typename VisitFn>
bool Execution::run(double transfer, CostFn cost, VisitFn visit) {
  int64_t ranks = schedule.ranks;
  std::vector<double> rankFree(ranks, 0.0);
  std::vector<char> queued(ranks, 1);
  std::vector<int64_t> work;
  work.reserve(ranks);
  for (int64_t r = ranks - 1; r >= 0; --r)
    work.push_back(r);
  auto wake = [&](int64_t stage, int64_t self) {
    if (stage < 0 || stage >= stages)
      return;
    int64_t q = rankOf(stage);
    if (q != self && !queued[q] && position[q] < schedule.programs[q].size()) {
      queued[q] = 1;
      work.push_back(q);
    }
  };
  while (!work.empty()) {
    int64_t r = work.back();
    work.pop_back();
    queued[r] = 0;
    const std::vector<Action> &program = schedule.programs[r];
    while (position[r] < program.size()) {
      const Action &action = program[position[r]];
      Dependency deps[2];
      int count = dependencies(action, deps);
      double start = rankFree[r];
      bool blocked = false;
      for (int i = 0; i < count; ++i) {
        double ready = end[key(deps[i].slot, deps[i].stage, action.microBatch)];
        if (ready == kNotRun) {
          blocked = true;
          break;
        }
        if (rankOf(deps[i].stage) != r)
          ready += transfer;
        start = std::max(start, ready);
      }
      if (blocked)
        break;
      double finish = start + cost(action);
      end[key(action)] = finish;
      rankFree[r] = finish;
      visit(r, action, start, finish);
      ++position[r];
      switch (action.kind) {
      case ActionKind::Forward:
      case ActionKind::SendForward:
        wake(action.stage + 1, r);
        break;
      case ActionKind::Backward:
      case ActionKind::BackwardInput:
      case ActionKind::SendBackward:
        wake(action.stage - 1, r);
        break;
      default:
        break;
      }
    }
  }
  for (int64_t r = 0; r < ranks; ++r)
    if (position[r] < schedule.programs[r].size())
      return false;
  return true;
}

} // namespace detail
} // namespace schedule
} // namespace ratrain

#endif // RATRAIN_LIB_SCHEDULE_EXECUTION_H
