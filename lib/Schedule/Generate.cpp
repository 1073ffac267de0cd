//===- Generate.cpp - The generated schedule kinds ------------------------===//
//
// 1F1B (the order of the original --ratrain-expand-1f1b pass), Megatron's
// interleaved 1F1B, ZB-H1 (a unit-time list scheduler under 1F1B's
// per-rank activation cap) and ZB-V (torch.distributed.pipelining's
// ScheduleZBVZeroBubble order). Every generator emits, per stage, the B/I
// actions and the W actions in ascending micro-batch order, so gradients
// accumulate in the same order as under 1F1B.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Schedule/PipelineSchedule.h"

#include "ratrain/Model/Limits.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::schedule;

static llvm::Error scheduleError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::vector<int64_t> schedule::stagePlacement(ScheduleKind kind, int64_t pp,
                                              int64_t v) {
  std::vector<int64_t> stageToRank(static_cast<size_t>(pp * v));
  for (int64_t c = 0; c < pp * v; ++c) {
    if (kind == ScheduleKind::ZBV && v == 2)
      stageToRank[c] = c < pp ? c : 2 * pp - 1 - c;
    else
      stageToRank[c] = c % pp;
  }
  return stageToRank;
}

namespace {

/// Appends actions to one rank's program.
struct ProgramBuilder {
  std::vector<Action> &program;
  void add(int64_t stage, ActionKind kind, int64_t microBatch) {
    program.push_back(Action{stage, kind, microBatch});
  }
};

} // namespace

/// Non-interleaved 1F1B: stage s of p runs w = min(p - s - 1, m) warm-up
/// forwards, then m - w (forward, backward) pairs, then w backwards.
static void generate1F1B(PipelineSchedule &schedule) {
  int64_t p = schedule.ranks, m = schedule.microBatches;
  for (int64_t s = 0; s < p; ++s) {
    ProgramBuilder b{schedule.programs[s]};
    b.program.reserve(2 * m);
    int64_t warmup = std::min(p - s - 1, m);
    for (int64_t k = 0; k < warmup; ++k)
      b.add(s, ActionKind::Forward, k);
    for (int64_t k = 0; k < m - warmup; ++k) {
      b.add(s, ActionKind::Forward, warmup + k);
      b.add(s, ActionKind::Backward, k);
    }
    for (int64_t k = m - warmup; k < m; ++k)
      b.add(s, ActionKind::Backward, k);
  }
}

/// Megatron-LM's interleaved 1F1B (m a multiple of p): rank r walks its v
/// chunks round robin in groups of p micro-batches, forwards in chunk order
/// and backwards in reverse chunk order; (v - 1) p + 2 (p - r - 1) warm-up
/// forwards, then one forward and one backward at a time.
static void generateInterleaved(PipelineSchedule &schedule) {
  int64_t p = schedule.ranks, v = schedule.virtualStages,
          m = schedule.microBatches;
  int64_t total = m * v;
  for (int64_t r = 0; r < p; ++r) {
    ProgramBuilder b{schedule.programs[r]};
    b.program.reserve(2 * total);
    auto microBatch = [&](int64_t k) { return k / (p * v) * p + k % p; };
    auto forward = [&](int64_t k) {
      b.add((k / p % v) * p + r, ActionKind::Forward, microBatch(k));
    };
    auto backward = [&](int64_t k) {
      b.add((v - 1 - k / p % v) * p + r, ActionKind::Backward, microBatch(k));
    };
    int64_t warmup = std::min((v - 1) * p + 2 * (p - r - 1), total);
    for (int64_t k = 0; k < warmup; ++k)
      forward(k);
    for (int64_t k = 0; k < total - warmup; ++k) {
      forward(warmup + k);
      backward(k);
    }
    for (int64_t k = total - warmup; k < total; ++k)
      backward(k);
  }
}

/// ZB-H1: a list scheduler over unit-time F, I and W actions. Rank s keeps at
/// most min(p - s, m) micro-batches in flight (1F1B's peak; an activation is
/// freed by its W) and, when free, runs the first ready of: the next I (the
/// critical path), the next F (if under the cap), the oldest pending W. W
/// thus fills the warm-up and cool-down bubbles and the cool-down runs the
/// I's first.
static void generateZBH1(PipelineSchedule &schedule) {
  int64_t p = schedule.ranks, m = schedule.microBatches;
  // Tick at which F / I of (stage, micro-batch) completes; INT64_MAX if not.
  constexpr int64_t kNever = INT64_MAX;
  std::vector<int64_t> forwardDone(p * m, kNever), inputDone(p * m, kNever);
  std::vector<int64_t> nextF(p, 0), nextI(p, 0), nextW(p, 0);
  // Decisions of one tick, applied after all ranks chose (0 idle, 1 F, 2 I,
  // 3 W).
  std::vector<int8_t> choice(p);
  for (int64_t s = 0; s < p; ++s)
    schedule.programs[s].reserve(3 * m);
  int64_t finished = 0;
  for (int64_t tick = 0; finished < p; ++tick) {
    for (int64_t s = 0; s < p; ++s) {
      choice[s] = 0;
      if (nextW[s] == m)
        continue;
      int64_t cap = std::min(p - s, m);
      if (nextI[s] < nextF[s] &&
          (s == p - 1 || inputDone[(s + 1) * m + nextI[s]] <= tick))
        choice[s] = 2;
      else if (nextF[s] < m && nextF[s] - nextW[s] < cap &&
               (s == 0 || forwardDone[(s - 1) * m + nextF[s]] <= tick))
        choice[s] = 1;
      else if (nextW[s] < nextI[s])
        choice[s] = 3;
    }
    for (int64_t s = 0; s < p; ++s) {
      ProgramBuilder b{schedule.programs[s]};
      switch (choice[s]) {
      case 1:
        forwardDone[s * m + nextF[s]] = tick + 1;
        b.add(s, ActionKind::Forward, nextF[s]++);
        break;
      case 2:
        inputDone[s * m + nextI[s]] = tick + 1;
        b.add(s, ActionKind::BackwardInput, nextI[s]++);
        break;
      case 3:
        b.add(s, ActionKind::BackwardWeight, nextW[s]++);
        if (nextW[s] == m)
          ++finished;
        break;
      default:
        break;
      }
    }
  }
}

/// ZB-V in torch.distributed.pipelining's order (ScheduleZBVZeroBubble): rank
/// r owns chunk 0 = stage r and chunk 1 = stage 2p - 1 - r; 2(p - r) - 1
/// chunk-0 forwards, r (F1, F0) pairs, p - r (F1, I1, W1) triples, then
/// (F0, I0, W0, F1, I1, W1) rounds, a cool-down of I's with the W's after.
/// Built for max(m, 2p - 1) micro-batches; the actions of micro-batches past
/// m are dropped (they only depend on each other).
static void generateZBV(PipelineSchedule &schedule) {
  int64_t p = schedule.ranks, m = schedule.microBatches;
  int64_t n = std::max(m, 2 * p - 1);
  for (int64_t r = 0; r < p; ++r) {
    ProgramBuilder b{schedule.programs[r]};
    b.program.reserve(6 * m);
    int64_t chunk0 = r, chunk1 = 2 * p - 1 - r;
    int64_t f0 = 0, f1 = 0, i0 = 0, i1 = 0, w0 = 0, w1 = 0;
    auto add = [&](int64_t stage, ActionKind kind, int64_t &counter) {
      if (counter < m)
        b.add(stage, kind, counter);
      ++counter;
    };
    for (int64_t k = 0; k < 2 * (p - r) - 1; ++k)
      add(chunk0, ActionKind::Forward, f0);
    for (int64_t k = 0; k < r; ++k) {
      add(chunk1, ActionKind::Forward, f1);
      add(chunk0, ActionKind::Forward, f0);
    }
    for (int64_t k = 0; k < p - r; ++k) {
      add(chunk1, ActionKind::Forward, f1);
      add(chunk1, ActionKind::BackwardInput, i1);
      add(chunk1, ActionKind::BackwardWeight, w1);
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n)
        add(chunk0, ActionKind::Forward, f0);
      add(chunk0, ActionKind::BackwardInput, i0);
      add(chunk0, ActionKind::BackwardWeight, w0);
      add(chunk1, ActionKind::Forward, f1);
      add(chunk1, ActionKind::BackwardInput, i1);
      add(chunk1, ActionKind::BackwardWeight, w1);
    }
    for (int64_t k = 0; k < r; ++k) {
      add(chunk0, ActionKind::BackwardInput, i0);
      add(chunk1, ActionKind::BackwardInput, i1);
    }
    for (int64_t k = 0; k < p - r; ++k) {
      add(chunk0, ActionKind::BackwardInput, i0);
      add(chunk0, ActionKind::BackwardWeight, w0);
    }
    while (w1 < i1)
      add(chunk1, ActionKind::BackwardWeight, w1);
    while (w0 < i0)
      add(chunk0, ActionKind::BackwardWeight, w0);
  }
}

llvm::Error schedule::checkScheduleShape(int64_t pp, int64_t v, int64_t m) {
  if (pp < 1 || v < 1 || m < 1)
    return scheduleError(llvm::formatv(
        "pipeline of pp = {0}, v = {1}, m = {2}: each must be at least 1", pp,
        v, m));
  if (pp > limits::kMaxModelLayers || v > limits::kMaxModelLayers ||
      pp * v > limits::kMaxModelLayers)
    return scheduleError(llvm::formatv(
        "pipeline of pp = {0} ranks x v = {1} virtual stages: more than the "
        "limit of {2} stages",
        pp, v, limits::kMaxModelLayers));
  if (m > limits::kMaxMicroBatches)
    return scheduleError(
        llvm::formatv("{0} micro-batches: more than the limit of {1}", m,
                      limits::kMaxMicroBatches));
  if (pp * v * m > limits::kMaxScheduleSize)
    return scheduleError(llvm::formatv(
        "{0} stages x {1} micro-batches: more than the limit of {2} (stage, "
        "micro-batch) pairs",
        pp * v, m, limits::kMaxScheduleSize));
  return llvm::Error::success();
}

llvm::Expected<PipelineSchedule> schedule::generateSchedule(ScheduleKind kind,
                                                            int64_t pp,
                                                            int64_t v,
                                                            int64_t m) {
  llvm::StringRef name = stringifyScheduleKind(kind);
  if (kind == ScheduleKind::Custom)
    return scheduleError("a custom schedule is read from a CSV, not generated");
  if (llvm::Error err = checkScheduleShape(pp, v, m))
    return std::move(err);
  switch (kind) {
  case ScheduleKind::OneFOneB:
  case ScheduleKind::ZBH1:
    if (v != 1)
      return scheduleError(llvm::formatv(
          "{0} runs one stage per rank (v = 1), not v = {1}", name, v));
    break;
  case ScheduleKind::Interleaved1F1B:
    if (v < 2)
      return scheduleError(llvm::formatv(
          "interleaved-1f1b needs v >= 2 virtual stages per rank, not v = {0} "
          "(v = 1 is 1f1b)",
          v));
    if (m % pp != 0)
      return scheduleError(llvm::formatv(
          "interleaved-1f1b needs the micro-batches to be a multiple of pp: m "
          "= {0}, pp = {1}",
          m, pp));
    break;
  case ScheduleKind::ZBV:
    if (v != 2)
      return scheduleError(llvm::formatv(
          "zbv runs two stages per rank (v = 2), not v = {0}", v));
    break;
  case ScheduleKind::Custom:
    break;
  }

  PipelineSchedule schedule;
  schedule.kind = kind;
  schedule.ranks = pp;
  schedule.virtualStages = v;
  schedule.microBatches = m;
  schedule.stageToRank = stagePlacement(kind, pp, v);
  schedule.programs.resize(pp);
  switch (kind) {
  case ScheduleKind::OneFOneB:
    generate1F1B(schedule);
    break;
  case ScheduleKind::Interleaved1F1B:
    generateInterleaved(schedule);
    break;
  case ScheduleKind::ZBH1:
    generateZBH1(schedule);
    break;
  case ScheduleKind::ZBV:
    generateZBV(schedule);
    break;
  case ScheduleKind::Custom:
    break;
  }
  return schedule;
}
