//===- ScheduleKinds.cpp - Names of schedules and actions -----------------===//
//
// The text forms of schedule kinds and actions (torch.distributed.pipelining's
// `<stage><kind><micro-batch>`), and the small queries on a schedule.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Schedule/PipelineSchedule.h"

#include "ratrain/Model/Limits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace ratrain;
using namespace ratrain::schedule;

llvm::StringRef schedule::stringifyScheduleKind(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved1F1B:
    return "interleaved-1f1b";
  case ScheduleKind::ZBH1:
    return "zb-h1";
  case ScheduleKind::ZBV:
    return "zbv";
  case ScheduleKind::Custom:
    return "custom";
  }
  return "custom";
}

std::optional<ScheduleKind> schedule::parseScheduleKind(llvm::StringRef name) {
  for (ScheduleKind kind :
       {ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B,
        ScheduleKind::ZBH1, ScheduleKind::ZBV, ScheduleKind::Custom})
    if (name == stringifyScheduleKind(kind))
      return kind;
  return std::nullopt;
}

llvm::StringRef schedule::stringifyActionKind(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
    return "F";
  case ActionKind::Backward:
    return "B";
  case ActionKind::BackwardInput:
    return "I";
  case ActionKind::BackwardWeight:
    return "W";
  case ActionKind::SendForward:
    return "SEND_F";
  case ActionKind::RecvForward:
    return "RECV_F";
  case ActionKind::SendBackward:
    return "SEND_B";
  case ActionKind::RecvBackward:
    return "RECV_B";
  }
  return "?";
}

bool Action::isCompute() const {
  switch (kind) {
  case ActionKind::Forward:
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight:
    return true;
  default:
    return false;
  }
}

std::string Action::str() const {
  return std::to_string(stage) + stringifyActionKind(kind).str() +
         std::to_string(microBatch);
}

/// Parses the decimal number at the front of `text` (consumed) into `value`,
/// at most `limit`. Returns false when there is no digit or it is too large.
static bool consumeNumber(llvm::StringRef &text, int64_t limit, int64_t &value,
                          bool &tooLarge) {
  size_t digits = 0;
  value = 0;
  tooLarge = false;
  while (digits < text.size() && llvm::isDigit(text[digits])) {
    if (!tooLarge) {
      value = value * 10 + (text[digits] - '0');
      if (value > limit)
        tooLarge = true;
    }
    ++digits;
  }
  text = text.drop_front(digits);
  return digits > 0 && !tooLarge;
}

llvm::Expected<Action> Action::parse(llvm::StringRef text) {
  auto bad = [&](const llvm::Twine &why) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "bad action '" + text + "': " + why +
            " (expected <stage><F|I|W|B|SEND_F|RECV_F|SEND_B|RECV_B>"
            "<micro-batch>, e.g. 3I12)");
  };
  llvm::StringRef rest = text;
  Action action;
  bool tooLarge = false;
  if (!consumeNumber(rest, limits::kMaxModelLayers - 1, action.stage, tooLarge))
    return tooLarge ? bad(llvm::formatv("stage above the limit {0}",
                                        limits::kMaxModelLayers - 1))
                    : bad("no stage number");
  size_t kindEnd = 0;
  while (kindEnd < rest.size() && !llvm::isDigit(rest[kindEnd]))
    ++kindEnd;
  llvm::StringRef kindText = rest.take_front(kindEnd);
  rest = rest.drop_front(kindEnd);
  bool known = false;
  for (ActionKind kind : {ActionKind::Forward, ActionKind::Backward,
                          ActionKind::BackwardInput, ActionKind::BackwardWeight,
                          ActionKind::SendForward, ActionKind::RecvForward,
                          ActionKind::SendBackward, ActionKind::RecvBackward})
    if (kindText == stringifyActionKind(kind)) {
      action.kind = kind;
      known = true;
    }
  if (!known)
    return bad(kindText.empty()
                   ? std::string("no action kind")
                   : ("unknown action kind '" + kindText + "'").str());
  if (!consumeNumber(rest, limits::kMaxMicroBatches - 1, action.microBatch,
                     tooLarge))
    return tooLarge ? bad(llvm::formatv("micro-batch above the limit {0}",
                                        limits::kMaxMicroBatches - 1))
                    : bad("no micro-batch number");
  if (!rest.empty())
    return bad("trailing text '" + rest + "'");
  return action;
}

std::vector<int64_t> PipelineSchedule::stagesOfRank(int64_t rank) const {
  std::vector<int64_t> stages;
  for (size_t c = 0; c < stageToRank.size(); ++c)
    if (stageToRank[c] == rank)
      stages.push_back(static_cast<int64_t>(c));
  return stages;
}

bool PipelineSchedule::splitsBackward() const {
  for (const std::vector<Action> &program : programs)
    for (const Action &action : program)
      if (action.kind == ActionKind::BackwardInput ||
          action.kind == ActionKind::BackwardWeight)
        return true;
  return false;
}
