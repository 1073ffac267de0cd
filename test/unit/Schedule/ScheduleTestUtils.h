//===- ScheduleTestUtils.h - Helpers of the schedule tests ------*- C++ -*-===//

#ifndef RATRAIN_TEST_UNIT_SCHEDULE_SCHEDULETESTUTILS_H
#define RATRAIN_TEST_UNIT_SCHEDULE_SCHEDULETESTUTILS_H

#include "ratrain/Schedule/PipelineSchedule.h"

#include "gtest/gtest.h"

#include <vector>

namespace ratrain::schedule::test {

/// The generated schedule, or a test failure and an empty schedule.
inline PipelineSchedule generate(ScheduleKind kind, int64_t pp, int64_t v,
                                 int64_t m) {
  llvm::Expected<PipelineSchedule> s = generateSchedule(kind, pp, v, m);
  if (!s) {
    ADD_FAILURE() << stringifyScheduleKind(kind).str() << " pp=" << pp
                  << " v=" << v << " m=" << m << ": "
                  << llvm::toString(s.takeError());
    return {};
  }
  return std::move(*s);
}

/// The message of `err` ("" on success).
inline std::string errorText(llvm::Error err) {
  if (!err)
    return "";
  return llvm::toString(std::move(err));
}

/// Costs per virtual stage: F = I = W = `unit` (so B = 2 units), transfer
/// `transfer`.
inline ActionCosts uniformCosts(int64_t stages, double unit,
                                double transfer = 0) {
  ActionCosts costs;
  costs.forward.assign(stages, unit);
  costs.backwardInput.assign(stages, unit);
  costs.backwardWeight.assign(stages, unit);
  costs.transfer = transfer;
  return costs;
}

/// The virtual stages per rank of each generated kind.
inline int64_t defaultVirtualStages(ScheduleKind kind) {
  return kind == ScheduleKind::ZBV || kind == ScheduleKind::Interleaved1F1B ? 2
                                                                            : 1;
}

inline const ScheduleKind kGeneratedKinds[] = {
    ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B, ScheduleKind::ZBH1,
    ScheduleKind::ZBV};

} // namespace ratrain::schedule::test

#endif // RATRAIN_TEST_UNIT_SCHEDULE_SCHEDULETESTUTILS_H
