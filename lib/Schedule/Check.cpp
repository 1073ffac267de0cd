//===- Check.cpp - Completeness and deadlock freedom of a schedule --------===//
//
// A schedule is accepted when its structure is sound (checkStructure), every
// (stage, micro-batch) has its F and its backward (one B, or one I and one W
// with the W after the I), every transfer between two ranks has its SEND and
// its RECV when the schedule holds explicit communication, and all ranks
// together run to the end with buffered sends. A deadlock is explained by the
// chain of waits from the first blocked rank until it closes.
//
//===----------------------------------------------------------------------===//

#include "Execution.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace ratrain;
using namespace ratrain::schedule;
using namespace ratrain::schedule::detail;

static llvm::Error checkError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {

/// How many times each action kind occurs per (stage, micro-batch), counted
/// up to 255.
class ActionCounts {
public:
  ActionCounts(const PipelineSchedule &schedule)
      : stages(schedule.numStages()), microBatches(schedule.microBatches),
        counts(8 * stages * microBatches, 0) {
    for (const std::vector<Action> &program : schedule.programs)
      for (const Action &action : program) {
        uint8_t &n = at(action.kind, action.stage, action.microBatch);
        if (n < 255)
          ++n;
      }
  }
  int count(ActionKind kind, int64_t stage, int64_t microBatch) const {
    return const_cast<ActionCounts *>(this)->at(kind, stage, microBatch);
  }

private:
  uint8_t &at(ActionKind kind, int64_t stage, int64_t microBatch) {
    return counts[(static_cast<int64_t>(kind) * stages + stage) * microBatches +
                  microBatch];
  }
  int64_t stages, microBatches;
  std::vector<uint8_t> counts;
};

} // namespace

/// Every (stage, micro-batch) has one F and one B or one I and one W; with
/// explicit communication, every transfer between ranks one SEND and one RECV.
static llvm::Error checkCompleteness(const PipelineSchedule &schedule) {
  ActionCounts counts(schedule);
  bool explicitCommunication = schedule.hasCommunication();
  int64_t stages = schedule.numStages();
  for (int64_t c = 0; c < stages; ++c) {
    for (int64_t k = 0; k < schedule.microBatches; ++k) {
      auto where = [&]() {
        return llvm::formatv("stage {0} micro-batch {1}", c, k).str();
      };
      auto exactlyOne = [&](ActionKind kind,
                            const llvm::Twine &why) -> llvm::Error {
        int n = counts.count(kind, c, k);
        llvm::StringRef name = stringifyActionKind(kind);
        if (n == 0)
          return checkError(where() + " has no " + name + why);
        if (n > 1)
          return checkError(llvm::formatv("{0} has {1} {2} actions{3}, "
                                          "expected one",
                                          where(), n, name, why.str()));
        return llvm::Error::success();
      };
      if (llvm::Error err = exactlyOne(ActionKind::Forward, ""))
        return err;
      int full = counts.count(ActionKind::Backward, c, k);
      int input = counts.count(ActionKind::BackwardInput, c, k);
      int weight = counts.count(ActionKind::BackwardWeight, c, k);
      if (full > 0 && (input > 0 || weight > 0))
        return checkError(where() + " has both a B and a split backward (I/W)");
      if (full > 0) {
        if (llvm::Error err = exactlyOne(ActionKind::Backward, ""))
          return err;
      } else if (input == 0 && weight == 0) {
        return checkError(where() + " has no backward (a B, or an I and a W)");
      } else {
        if (llvm::Error err = exactlyOne(ActionKind::BackwardInput, ""))
          return err;
        if (llvm::Error err = exactlyOne(ActionKind::BackwardWeight, ""))
          return err;
      }
      if (!explicitCommunication)
        continue;
      int64_t rank = schedule.stageToRank[c];
      if (c + 1 < stages && schedule.stageToRank[c + 1] != rank) {
        std::string toNext = llvm::formatv(" (stage {0} is on rank {1})", c + 1,
                                           schedule.stageToRank[c + 1])
                                 .str();
        if (llvm::Error err = exactlyOne(ActionKind::SendForward, toNext))
          return err;
        if (llvm::Error err = exactlyOne(ActionKind::RecvBackward, toNext))
          return err;
      }
      if (c > 0 && schedule.stageToRank[c - 1] != rank) {
        std::string fromPrevious =
            llvm::formatv(" (stage {0} is on rank {1})", c - 1,
                          schedule.stageToRank[c - 1])
                .str();
        if (llvm::Error err = exactlyOne(ActionKind::RecvForward, fromPrevious))
          return err;
        if (llvm::Error err =
                exactlyOne(ActionKind::SendBackward, fromPrevious))
          return err;
      }
    }
  }
  return llvm::Error::success();
}

/// Each W comes after its I on the rank (both are on the stage's rank).
static llvm::Error checkWeightOrder(const PipelineSchedule &schedule) {
  int64_t m = schedule.microBatches;
  std::vector<char> inputSeen(schedule.numStages() * m, 0);
  for (int64_t r = 0; r < schedule.ranks; ++r) {
    for (const Action &action : schedule.programs[r]) {
      int64_t index = action.stage * m + action.microBatch;
      if (action.kind == ActionKind::BackwardInput)
        inputSeen[index] = 1;
      else if (action.kind == ActionKind::BackwardWeight && !inputSeen[index])
        return checkError(llvm::formatv(
            "rank {0} runs {1} before {2}: a W needs its I first", r,
            action.str(),
            Action{action.stage, ActionKind::BackwardInput, action.microBatch}
                .str()));
    }
  }
  return llvm::Error::success();
}

/// Explains why the ranks cannot all finish: from the first blocked rank,
/// what its next action waits for, where that is, and so on until the chain
/// returns to a rank already named.
static std::string explainDeadlock(const PipelineSchedule &schedule,
                                   const Execution &execution) {
  const std::vector<size_t> &position = execution.positions();
  // Where each produced (slot, stage, micro-batch) is in its rank's program.
  std::vector<int64_t> indexOf(
      detail::kAllSlots * schedule.numStages() * schedule.microBatches, -1);
  // Execution's keys use the same layout for the slots it tracks.
  for (int64_t r = 0; r < schedule.ranks; ++r)
    for (size_t i = 0; i < schedule.programs[r].size(); ++i)
      indexOf[execution.key(schedule.programs[r][i])] = static_cast<int64_t>(i);

  int64_t rank = 0;
  while (position[rank] >= schedule.programs[rank].size())
    ++rank;
  std::vector<char> named(schedule.ranks, 0);
  named[rank] = 1;
  const Action *head = &schedule.programs[rank][position[rank]];
  std::string text =
      llvm::formatv("rank {0} blocks forever at {1}: ", rank, head->str())
          .str();
  for (int64_t steps = 0; steps <= schedule.ranks; ++steps) {
    Dependency deps[2];
    int count = execution.dependencies(*head, deps);
    int64_t waitKey = -1, owner = -1;
    for (int i = 0; i < count; ++i) {
      int64_t key =
          execution.key(deps[i].slot, deps[i].stage, head->microBatch);
      if (execution.endTime(key) == Execution::kNotRun) {
        waitKey = key;
        owner = execution.rankOf(deps[i].stage);
        break;
      }
    }
    if (waitKey < 0 || indexOf[waitKey] < 0)
      return text + "waits for an input no rank produces";
    const Action &awaited = schedule.programs[owner][indexOf[waitKey]];
    text += llvm::formatv("waits for {0} (rank {1})", awaited.str(), owner);
    if (owner == rank)
      return text + ", which rank " + std::to_string(rank) + " runs later";
    const Action *ownerHead = &schedule.programs[owner][position[owner]];
    if (ownerHead != &awaited)
      text += llvm::formatv(", which rank {0} reaches only after {1}", owner,
                            ownerHead->str());
    if (named[owner])
      return text + " (a cycle)";
    named[owner] = 1;
    text += ", which ";
    rank = owner;
    head = ownerHead;
  }
  return text + "...";
}

llvm::Error schedule::checkSchedule(const PipelineSchedule &schedule) {
  if (llvm::Error err = checkStructure(schedule))
    return err;
  if (llvm::Error err = checkCompleteness(schedule))
    return err;
  if (llvm::Error err = checkWeightOrder(schedule))
    return err;
  Execution execution(schedule);
  if (!execution.run(0.0, StageCosts::unit(schedule.numStages()),
                     [](int64_t, const Action &, double, double) {}))
    return checkError(explainDeadlock(schedule, execution));
  return llvm::Error::success();
}
