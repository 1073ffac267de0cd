//===- schedule-csv.cpp - fuzz the pipeline-schedule CSV reader -----------===//
//
// Input: a schedule CSV (torch.distributed.pipelining's action lists). readCSV
// must return a schedule or an error; an accepted schedule is checked,
// simulated and counted (none may crash, whatever the checker says), and
// written again it must read back to the same actions (the writer's
// documented round trip).
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"
#include "ratrain/Schedule/PipelineSchedule.h"

#include <cstdlib>

using namespace ratrain::schedule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<PipelineSchedule> schedule =
      readCSV(ratrain::fuzz::asText(data, size));
  if (!schedule) {
    llvm::consumeError(schedule.takeError());
    return 0;
  }
  std::string written = writeCSV(*schedule);
  llvm::Expected<PipelineSchedule> again = readCSV(written);
  if (!again) {
    llvm::errs() << "written schedule does not read again: "
                 << llvm::toString(again.takeError()) << "\n"
                 << written;
    std::abort();
  }
  if (again->programs != schedule->programs) {
    llvm::errs() << "written schedule reads back to other actions\n" << written;
    std::abort();
  }
  if (llvm::Error error = checkSchedule(*schedule)) {
    llvm::consumeError(std::move(error));
    return 0;
  }
  ActionCosts costs;
  int64_t stages = schedule->numStages();
  costs.forward.assign(stages, 1.0);
  costs.backwardInput.assign(stages, 1.0);
  costs.backwardWeight.assign(stages, 1.0);
  costs.transfer = 0.5;
  (void)simulateSchedule(*schedule, costs);
  (void)scheduleMemory(*schedule);
  return 0;
}
