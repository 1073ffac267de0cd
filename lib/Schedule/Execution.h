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

/// Seconds of F, I and W per virtual stage (B = I + W), one entry for each
/// stage of the schedule.
struct StageCosts {
  std::vector<double> forward, input, weight;
  /// `costs` with entries past the end of its vectors 0.
  static StageCosts from(const ActionCosts &costs, int64_t stages);
  /// 1 s each.
  static StageCosts unit(int64_t stages);
};

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

  /// Runs all ranks as far as they go, actions taking `costs` (transfers
  /// none); `visit(rank, action, start, end)` sees each action once it runs.
  /// Returns true when every rank reached its program's end.
  template <typename VisitFn>
  bool run(double transfer, const StageCosts &costs, VisitFn visit);

  /// When each rank finished its last action run.
  const std::vector<double> &rankEnds() const { return rankFree; }
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
  std::vector<double> rankFree;
};

inline int Execution::dependencies(const Action &action,
                                   Dependency deps[2]) const {
  int64_t c = action.stage;
  switch (action.kind) {
  case ActionKind::Forward:
    if (c == 0)
      return 0;
    if (explicitCommunication && rankOf(c - 1) != rankOf(c))
      deps[0] = {kRecvForwardSlot, c};
    else
      deps[0] = {kForwardSlot, c - 1};
    return 1;
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
    deps[0] = {kForwardSlot, c};
    if (c == stages - 1)
      return 1;
    if (explicitCommunication && rankOf(c + 1) != rankOf(c))
      deps[1] = {kRecvBackwardSlot, c};
    else
      deps[1] = {kGradientSlot, c + 1};
    return 2;
  case ActionKind::BackwardWeight:
    deps[0] = {kGradientSlot, c};
    return 1;
  case ActionKind::SendForward:
    deps[0] = {kForwardSlot, c};
    return 1;
  case ActionKind::RecvForward:
    deps[0] = {kSendForwardSlot, c - 1};
    return 1;
  case ActionKind::SendBackward:
    deps[0] = {kGradientSlot, c};
    return 1;
  case ActionKind::RecvBackward:
    deps[0] = {kSendBackwardSlot, c + 1};
    return 1;
  }
  return 0;
}

template <typename VisitFn>
bool Execution::run(double transfer, const StageCosts &costs, VisitFn visit) {
  int64_t ranks = schedule.ranks, m = microBatches;
  const int64_t *toRank = schedule.stageToRank.data();
  double *done = end.data();
  rankFree.assign(ranks, 0.0);
  std::vector<char> queued(ranks, 1);
  // The key each blocked rank waits for (its one producer wakes it).
  std::vector<int64_t> waitKey(ranks, -1);
  std::vector<int64_t> work;
  work.reserve(ranks);
  for (int64_t r = ranks - 1; r >= 0; --r)
    work.push_back(r);
  while (!work.empty()) {
    int64_t r = work.back();
    work.pop_back();
    queued[r] = 0;
    const std::vector<Action> &program = schedule.programs[r];
    size_t pos = position[r];
    double free = rankFree[r];
    while (pos < program.size()) {
      const Action &action = program[pos];
      int64_t c = action.stage, k = action.microBatch;
      double start = free, duration = 0;
      int64_t produced, wakeStage = -1;
      int64_t missing = -1;
      // Waits for (slot, stage); false when that has not run yet.
      auto need = [&](Slot slot, int64_t stage) {
        int64_t index = (slot * stages + stage) * m + k;
        double ready = done[index];
        if (ready == kNotRun) {
          missing = index;
          return false;
        }
        if (toRank[stage] != r)
          ready += transfer;
        start = std::max(start, ready);
        return true;
      };
      bool ready = true;
      switch (action.kind) {
      case ActionKind::Forward:
        if (c > 0)
          ready = explicitCommunication && toRank[c - 1] != r
                      ? need(kRecvForwardSlot, c)
                      : need(kForwardSlot, c - 1);
        duration = costs.forward[c];
        produced = kForwardSlot;
        wakeStage = c + 1;
        break;
      case ActionKind::Backward:
      case ActionKind::BackwardInput:
        ready = need(kForwardSlot, c);
        if (ready && c + 1 < stages)
          ready = explicitCommunication && toRank[c + 1] != r
                      ? need(kRecvBackwardSlot, c)
                      : need(kGradientSlot, c + 1);
        duration = costs.input[c];
        if (action.kind == ActionKind::Backward)
          duration += costs.weight[c];
        produced = kGradientSlot;
        wakeStage = c - 1;
        break;
      case ActionKind::BackwardWeight:
        ready = need(kGradientSlot, c);
        duration = costs.weight[c];
        produced = kWeightSlot;
        break;
      case ActionKind::SendForward:
        ready = need(kForwardSlot, c);
        produced = kSendForwardSlot;
        wakeStage = c + 1;
        break;
      case ActionKind::RecvForward:
        ready = need(kSendForwardSlot, c - 1);
        produced = kRecvForwardSlot;
        break;
      case ActionKind::SendBackward:
        ready = need(kGradientSlot, c);
        produced = kSendBackwardSlot;
        wakeStage = c - 1;
        break;
      case ActionKind::RecvBackward:
        ready = need(kSendBackwardSlot, c + 1);
        produced = kRecvBackwardSlot;
        break;
      }
      if (!ready) {
        waitKey[r] = missing;
        break;
      }
      free = start + duration;
      int64_t producedKey = (produced * stages + c) * m + k;
      done[producedKey] = free;
      visit(r, action, start, free);
      ++pos;
      if (wakeStage >= 0 && wakeStage < stages) {
        int64_t q = toRank[wakeStage];
        if (q != r && !queued[q] && waitKey[q] == producedKey) {
          queued[q] = 1;
          work.push_back(q);
        }
      }
    }
    position[r] = pos;
    rankFree[r] = free;
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
