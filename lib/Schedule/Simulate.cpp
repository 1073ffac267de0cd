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
  StageCosts stageCosts = StageCosts::from(costs, schedule.numStages());
  if (keepActions) {
    size_t total = 0;
    for (const std::vector<Action> &program : schedule.programs)
      total += program.size();
    timing.actions.reserve(total);
  }
  Execution execution(schedule);
  bool finished =
      keepActions
          ? execution.run(costs.transfer, stageCosts,
                          [&](int64_t rank, const Action &action, double start,
                              double end) {
                            timing.actions.push_back(
                                TimedAction{action, rank, start, end});
                          })
          : execution.run(costs.transfer, stageCosts,
                          [](int64_t, const Action &, double, double) {});
  if (!finished) {
    timing.makespan = Execution::kNotRun;
    timing.bubbleFraction = 1;
    return timing;
  }
  double makespan = 0;
  for (int64_t r = 0; r < schedule.ranks; ++r) {
    makespan = std::max(makespan, execution.rankEnds()[r]);
    double busy = 0;
    for (const Action &action : schedule.programs[r]) {
      int64_t c = action.stage;
      switch (action.kind) {
      case ActionKind::Forward:
        busy += stageCosts.forward[c];
        break;
      case ActionKind::Backward:
        busy += stageCosts.input[c] + stageCosts.weight[c];
        break;
      case ActionKind::BackwardInput:
        busy += stageCosts.input[c];
        break;
      case ActionKind::BackwardWeight:
        busy += stageCosts.weight[c];
        break;
      default:
        break;
      }
    }
    timing.busy[r] = busy;
  }
  timing.makespan = makespan;
  double busy = 0;
  for (double b : timing.busy)
    busy += b;
  timing.bubbleFraction =
      makespan > 0 ? 1.0 - busy / (schedule.ranks * makespan) : 0.0;
  return timing;
}
