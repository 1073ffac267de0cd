//===- PipelineSchedule.h - Pipeline schedules as action lists --*- C++ -*-===//
//
// A pipeline schedule as data: for each rank (cluster of a pipeline) the
// ordered list of compute actions it runs in one training step, over the
// virtual stages (model chunks) it owns. The same representation as
// torch.distributed.pipelining's `_Action` lists: `F` forward, `B` full
// backward, `I` its input-gradient part, `W` its weight-gradient part, and
// the point-to-point actions `SEND_F`, `RECV_F`, `SEND_B`, `RECV_B`.
//
// The generators (1F1B, interleaved 1F1B, ZB-H1, ZBV), the CSV reader and
// writer, the checker (completeness, dependencies, deadlock freedom) and the
// timing simulation live here, in plain C++ (LLVM Support only), so that the
// `--ratrain-expand-pipeline` pass, the planner and the simulator all read the
// same schedule. Virtual stage `c` of `pp * v` holds a contiguous range of
// model layers; virtual stages are numbered in model order.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SCHEDULE_PIPELINESCHEDULE_H
#define RATRAIN_SCHEDULE_PIPELINESCHEDULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ratrain {
namespace schedule {

/// The schedule families the generators build.
enum class ScheduleKind {
  /// Non-interleaved 1F1B (PipeDream-Flush; Narayanan et al. 2021).
  OneFOneB,
  /// Interleaved 1F1B over `v` virtual stages per rank placed round robin
  /// (virtual stage c on rank c % pp; Megatron-LM's virtual pipeline).
  Interleaved1F1B,
  /// Zero-bubble H1 (Qi et al. 2024): 1F1B's memory, backward split into I
  /// and W, W parts deferred into the bubbles.
  ZBH1,
  /// Zero-bubble V (Qi et al. 2024): two virtual stages per rank placed in a
  /// V (rank r owns c = r and c = 2 pp - 1 - r), split backward.
  ZBV,
  /// Brought by the user (a CSV), not generated.
  Custom,
};

/// `1f1b`, `interleaved-1f1b`, `zb-h1`, `zbv`, `custom`.
llvm::StringRef stringifyScheduleKind(ScheduleKind kind);
std::optional<ScheduleKind> parseScheduleKind(llvm::StringRef name);

/// The compute kinds come first (code relies on it: BackwardWeight is the
/// last compute kind).
enum class ActionKind {
  Forward,        ///< F
  Backward,       ///< B: input and weight gradient together
  BackwardInput,  ///< I: the input gradient (and what W needs)
  BackwardWeight, ///< W: the weight gradient, accumulated
  SendForward,    ///< SEND_F: the activation to virtual stage + 1
  RecvForward,    ///< RECV_F: the activation from virtual stage - 1
  SendBackward,   ///< SEND_B: the input gradient to virtual stage - 1
  RecvBackward,   ///< RECV_B: the output gradient from virtual stage + 1
};

/// `F`, `B`, `I`, `W`, `SEND_F`, `RECV_F`, `SEND_B`, `RECV_B`.
llvm::StringRef stringifyActionKind(ActionKind kind);

/// One action of a rank: `kind` on virtual stage `stage` for micro-batch
/// `microBatch`. Printed as torch does: `<stage><kind><microBatch>`, e.g.
/// `3I12`, `0SEND_F1`.
struct Action {
  int64_t stage = 0;
  ActionKind kind = ActionKind::Forward;
  int64_t microBatch = 0;

  bool isCompute() const;
  std::string str() const;
  /// Parses `str()`'s format; an error names the text.
  static llvm::Expected<Action> parse(llvm::StringRef text);
  bool operator==(const Action &other) const {
    return stage == other.stage && kind == other.kind &&
           microBatch == other.microBatch;
  }
};

/// The whole schedule of one pipeline for one training step.
struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int64_t ranks = 1;         ///< pp
  int64_t virtualStages = 1; ///< per rank (v); pp * v stages in all
  int64_t microBatches = 1;  ///< m
  /// The rank that runs virtual stage c, for c in [0, pp * v).
  std::vector<int64_t> stageToRank;
  /// Per rank, its actions in program order. Generated schedules hold
  /// compute actions only (F, B, I, W): each transfer is implied by the
  /// data dependency, a send right after the producing action and a receive
  /// right before the consuming one, buffered; `withCommunication` makes them
  /// explicit.
  std::vector<std::vector<Action>> programs;

  int64_t numStages() const { return ranks * virtualStages; }
  /// The virtual stages of `rank` in ascending order.
  std::vector<int64_t> stagesOfRank(int64_t rank) const;
  /// True when some stage's backward is split into I and W.
  bool splitsBackward() const;
  /// True when the programs hold SEND/RECV actions (withCommunication, or a
  /// CSV that has them): then every transfer between two ranks is explicit.
  bool hasCommunication() const;
};

/// The rank of each virtual stage under `kind`'s placement: ZBV (v == 2)
/// places stages in a V (c on rank c for c < pp, else 2 pp - 1 - c), every
/// other kind round robin (c on rank c % pp).
std::vector<int64_t> stagePlacement(ScheduleKind kind, int64_t pp, int64_t v);

/// Checks the size of a pipeline against the bounds of
/// include/ratrain/Model/Limits.h: pp, v, m >= 1; pp * v virtual stages at
/// most limits::kMaxModelLayers (a stage holds a layer at least); m at most
/// limits::kMaxMicroBatches; stages x micro-batches at most
/// limits::kMaxScheduleSize. The error names the value and the limit.
llvm::Error checkScheduleShape(int64_t pp, int64_t v, int64_t m);

/// The most ranks of a schedule built by the unit-time list scheduler (ZB-H1,
/// and ZBV with m <= pp), whose time grows with pp * (m + pp).
inline constexpr int64_t kMaxListScheduledRanks = 4096;

/// Builds the schedule of `kind` (not Custom) for `pp` ranks, `v` virtual
/// stages per rank and `m` micro-batches. Errors name the limit broken
/// (1F1B and ZB-H1: v == 1; interleaved: v >= 2 and m a multiple of pp or
/// of max(1, m / pp); ZBV: v == 2; ZB-H1, and ZBV with m <= pp: pp at most
/// kMaxListScheduledRanks; all: checkScheduleShape).
llvm::Expected<PipelineSchedule> generateSchedule(ScheduleKind kind, int64_t pp,
                                                  int64_t v, int64_t m);

/// The same schedule with explicit SEND_F/RECV_F/SEND_B/RECV_B actions
/// (none between two stages of the same rank), placed as the implied
/// transfers are; transfers `schedule` already holds are placed anew.
PipelineSchedule withCommunication(const PipelineSchedule &schedule);

/// torch.distributed.pipelining's CSV: one row per rank, one action per
/// cell. Compute-only unless the schedule holds transfers.
std::string writeCSV(const PipelineSchedule &schedule);

/// Reads a CSV written by writeCSV, torch.distributed.pipelining or by hand
/// (empty cells and surrounding blanks ignored, `#` comment lines skipped).
/// The number of rows is pp; stages are mapped to the rank whose row holds
/// them; v = number of stages / pp. Errors name the row, the column and the
/// text. The result has kind Custom and is not yet checked.
llvm::Expected<PipelineSchedule> readCSV(llvm::StringRef text);

/// Checks that `schedule` is complete and runs: every (stage, micro-batch)
/// has one F and either one B or one I and one W, all on the stage's rank;
/// W after its I; every stage of a rank on that rank only; and that all ranks
/// together can run to the end with buffered sends (a rank blocks on an
/// action whose input is not produced yet: F on the previous stage's F, B/I
/// on its own F and on the next stage's B/I; W on its own I; explicit RECV
/// actions on their SEND). The error names the first failing action and its
/// rank, e.g. "rank 1 blocks forever at 2F3: ...".
llvm::Error checkSchedule(const PipelineSchedule &schedule);

/// Seconds of each action kind per virtual stage, and of one transfer.
struct ActionCosts {
  std::vector<double> forward;        ///< per virtual stage
  std::vector<double> backwardInput;  ///< per virtual stage
  std::vector<double> backwardWeight; ///< per virtual stage (B = I + W)
  double transfer = 0;                ///< one boundary tensor between two ranks
};

/// One simulated action.
struct TimedAction {
  Action action;
  int64_t rank = 0;
  double start = 0, end = 0;
};

/// The timing of a schedule run with `ActionCosts`: each rank runs its
/// actions in order, an action starts when the rank is free and its inputs
/// have arrived (a transfer between ranks takes `transfer` seconds and does
/// not occupy the rank; a transfer within a rank is free).
struct ScheduleTiming {
  double makespan = 0;
  std::vector<double> busy; ///< compute seconds per rank
  /// 1 - sum(busy) / (ranks * makespan).
  double bubbleFraction = 0;
  std::vector<TimedAction> actions;
};

/// Simulates a checked schedule. With `keepActions` false, `actions` stays
/// empty (the planner's fast path). A schedule whose structure the checker
/// refuses, or that deadlocks, gets an infinite makespan and bubble 1.
ScheduleTiming simulateSchedule(const PipelineSchedule &schedule,
                                const ActionCosts &costs,
                                bool keepActions = false);

/// What each rank holds at its peak, in micro-batch units per virtual stage:
/// activations stored by an F until its B or W, and the input-gradient
/// results an I keeps until its W.
struct ScheduleMemory {
  /// Per rank, the weighted sum at its peak.
  std::vector<double> peakWeighted;
  /// Per rank and virtual stage (indexed by global stage, 0 for stages of
  /// other ranks), the micro-batches whose activations are held at the
  /// rank's peak; a W (or B) frees one.
  std::vector<std::vector<int64_t>> peakActivations;
  /// Per rank and virtual stage, the micro-batches between I and W at the
  /// rank's peak (0 without split backward).
  std::vector<std::vector<int64_t>> peakDeferred;
};

/// Counts the schedule's live micro-batches at the peak of each rank, where
/// the peak is the program point of the largest weighted sum
/// `sum_c activationBytes[c] * live(c) + deferredBytes[c] * deferred(c)`
/// (the vectors indexed by virtual stage; empty or short weights count 1
/// each). Empty for a schedule whose structure the checker refuses or whose
/// ranks x stages exceed limits::kMaxScheduleSize.
ScheduleMemory scheduleMemory(const PipelineSchedule &schedule,
                              llvm::ArrayRef<double> activationBytes = {},
                              llvm::ArrayRef<double> deferredBytes = {});

} // namespace schedule
} // namespace ratrain

#endif // RATRAIN_SCHEDULE_PIPELINESCHEDULE_H
