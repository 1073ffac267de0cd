//===- Simulate.cpp - Timing of a schedule --------------------------------===//
//
// Event-driven: each rank runs its actions in program order; an action starts
// when its rank is free and its inputs have arrived. A boundary tensor
// between two ranks arrives `transfer` seconds after its producer (or its
// SEND) ends, without occupying either rank; within a rank it is there at
// once. SEND and RECV actions take no rank time: a RECV ends when its tensor
// has arrived.
//
//===----------------------------------------------------------------------===//

#include "Execution.h"

#include <cmath>

using namespace ratrain;
using namespace ratrain::schedule;
using namespace ratrain::schedule::detail;

/// `values[stage]`, 0 past the end.
static double costAt(const std::vector<double> &values, int64_t stage) {
  return stage < static_cast<int64_t>(values.size()) ? values[stage] : 0.0;
}

ScheduleTiming schedule::simulateSchedule(const PipelineSchedule &schedule,
                                          const ActionCosts &costs,
                                          bool keepActions) {
  ScheduleTiming timing;
  timing.busy.assign(std::max<int64_t>(schedule.ranks, 0), 0.0);
  if (llvm::Error err = checkStructure(schedule)) {
    llvm::consumeError(std::move(err));
    timing.makespan = Execution::kNotRun;
    timing.bubbleFraction = 1;
    return timing;
  }
  auto cost = [&](const Action &action) -> double {
    switch (action.kind) {
    case ActionKind::Forward:
      return costAt(costs.forward, action.stage);
    case ActionKind::Backward:
      return costAt(costs.backwardInput, action.stage) +
             costAt(costs.backwardWeight, action.stage);
    case ActionKind::BackwardInput:
      return costAt(costs.backwardInput, action.stage);
    case ActionKind::BackwardWeight:
      return costAt(costs.backwardWeight, action.stage);
    default:
      return 0.0;
    }
  };
  if (keepActions) {
    size_t total = 0;
    for (const std::vector<Action> &program : schedule.programs)
      total += program.size();
    timing.actions.reserve(total);
  }
  double makespan = 0;
  Execution execution(schedule);
  bool finished = execution.run(
      costs.transfer, cost,
      [&](int64_t rank, const Action &action, double start, double end) {
        timing.busy[rank] += end - start;
        makespan = std::max(makespan, end);
        if (keepActions)
          timing.actions.push_back(TimedAction{action, rank, start, end});
      });
  if (!finished) {
    timing.makespan = Execution::kNotRun;
    timing.bubbleFraction = 1;
    return timing;
  }
  timing.makespan = makespan;
  double busy = 0;
  for (double b : timing.busy)
    busy += b;
  timing.bubbleFraction =
      makespan > 0 ? 1.0 - busy / (schedule.ranks * makespan) : 0.0;
  return timing;
}
