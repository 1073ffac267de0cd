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

/// Megatron-LM's interleaved 1F1B: rank r walks its v chunks round robin in
/// groups of g micro-batches (g = pp when m is a multiple of pp; else, as
/// torch.distributed.pipelining does, m split into max(1, m / pp) equal
/// rounds), forwards in chunk order and backwards in reverse chunk order;
/// (v - 1) g + 2 (p - r - 1) warm-up forwards, then one forward and one
/// backward at a time.
static void generateInterleaved(PipelineSchedule &schedule, int64_t g) {
  int64_t p = schedule.ranks, v = schedule.virtualStages,
          m = schedule.microBatches;
  int64_t total = m * v;
  for (int64_t r = 0; r < p; ++r) {
    ProgramBuilder b{schedule.programs[r]};
    b.program.reserve(2 * total);
    auto microBatch = [&](int64_t k) { return k / (g * v) * g + k % g; };
    auto forward = [&](int64_t k) {
      b.add((k / g % v) * p + r, ActionKind::Forward, microBatch(k));
    };
    auto backward = [&](int64_t k) {
      b.add((v - 1 - k / g % v) * p + r, ActionKind::Backward, microBatch(k));
    };
    int64_t warmup = std::min((v - 1) * g + 2 * (p - r - 1), total);
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
/// m are dropped (they only depend on each other). Used for m > pp.
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

/// ZB-V by the unit-time list scheduler: rank r holds chunk 0 = stage r and
/// chunk 1 = stage 2p - 1 - r, at most 2p chunk activations in flight (1F1B's
/// first-rank peak; freed by W), chunk 0 at most 2p - 1 of them so chunk 1
/// always has room. A free rank runs the first ready of: an I (the older
/// micro-batch first, chunk 0 on a tie), an F (chunk 1 first), its oldest
/// pending W. Used for m <= pp, where it beats torch's order (pp = 32, m = 32:
/// bubble 0.14 against 0.24).
static void generateZBVGreedy(PipelineSchedule &schedule) {
  int64_t p = schedule.ranks, m = schedule.microBatches, stages = 2 * p;
  constexpr int64_t kNever = INT64_MAX;
  std::vector<int64_t> forwardDone(stages * m, kNever),
      inputDone(stages * m, kNever);
  struct RankState {
    int64_t nextF[2] = {0, 0}, nextI[2] = {0, 0}, nextW[2] = {0, 0};
    std::vector<int8_t> pendingW; // chunks of the I's not yet W'd, in order
    size_t pendingHead = 0;
  };
  std::vector<RankState> state(p);
  auto stageOf = [&](int64_t r, int chunk) {
    return chunk == 0 ? r : stages - 1 - r;
  };
  int64_t remaining = 6 * p * m;
  for (int64_t r = 0; r < p; ++r)
    schedule.programs[r].reserve(6 * m);
  for (int64_t tick = 0; remaining > 0; ++tick) {
    // Ranks decide in turn: what one completes this tick is done at tick + 1,
    // so no other rank sees it before the next tick.
    for (int64_t r = 0; r < p; ++r) {
      RankState &st = state[r];
      if (st.nextW[0] == m && st.nextW[1] == m)
        continue;
      // chunk * 3 + (0 F, 1 I, 2 W), or -1 idle.
      int choice = -1;
      auto inputReady = [&](int chunk) {
        int64_t k = st.nextI[chunk], c = stageOf(r, chunk);
        if (k >= st.nextF[chunk])
          return false;
        return c == stages - 1 || inputDone[(c + 1) * m + k] <= tick;
      };
      int64_t inFlight = st.nextF[0] - st.nextW[0] + st.nextF[1] - st.nextW[1];
      auto forwardReady = [&](int chunk) {
        int64_t k = st.nextF[chunk], c = stageOf(r, chunk);
        if (k >= m || inFlight >= 2 * p)
          return false;
        if (chunk == 0 && st.nextF[0] - st.nextW[0] >= 2 * p - 1)
          return false;
        return c == 0 || forwardDone[(c - 1) * m + k] <= tick;
      };
      bool i0 = inputReady(0), i1 = inputReady(1);
      if (i0 && i1) {
        int64_t k0 = st.nextI[0], k1 = st.nextI[1];
        choice = 3 * (k1 < k0 ? 1 : 0) + 1;
      } else if (i0 || i1) {
        choice = 3 * (i0 ? 0 : 1) + 1;
      } else if (forwardReady(1)) {
        choice = 3;
      } else if (forwardReady(0)) {
        choice = 0;
      } else if (st.pendingHead < st.pendingW.size()) {
        choice = 3 * st.pendingW[st.pendingHead] + 2;
      }
      if (choice < 0)
        continue;
      int chunk = choice / 3;
      int64_t c = stageOf(r, chunk);
      ProgramBuilder b{schedule.programs[r]};
      switch (choice % 3) {
      case 0:
        forwardDone[c * m + st.nextF[chunk]] = tick + 1;
        b.add(c, ActionKind::Forward, st.nextF[chunk]++);
        break;
      case 1:
        inputDone[c * m + st.nextI[chunk]] = tick + 1;
        st.pendingW.push_back(static_cast<int8_t>(chunk));
        b.add(c, ActionKind::BackwardInput, st.nextI[chunk]++);
        break;
      default:
        ++st.pendingHead;
        b.add(c, ActionKind::BackwardWeight, st.nextW[chunk]++);
        break;
      }
      --remaining;
    }
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
    if (m % std::max<int64_t>(1, m / pp) != 0)
      return scheduleError(llvm::formatv(
          "interleaved-1f1b splits the m = {0} micro-batches into max(1, m / "
          "pp) = {1} equal rounds (pp = {2}): m must be a multiple of {1}",
          m, std::max<int64_t>(1, m / pp), pp));
    break;
  case ScheduleKind::ZBV:
    if (v != 2)
      return scheduleError(llvm::formatv(
          "zbv runs two stages per rank (v = 2), not v = {0}", v));
    break;
  case ScheduleKind::Custom:
    break;
  }

  bool listScheduled =
      kind == ScheduleKind::ZBH1 || (kind == ScheduleKind::ZBV && m <= pp);
  if (listScheduled && pp > kMaxListScheduledRanks)
    return scheduleError(llvm::formatv(
        "{0} on pp = {1} ranks: the list scheduler takes time quadratic in pp "
        "and is limited to {2} ranks",
        name, pp, kMaxListScheduledRanks));

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
    generateInterleaved(schedule,
                        m % pp == 0 ? pp : m / std::max<int64_t>(1, m / pp));
    break;
  case ScheduleKind::ZBH1:
    generateZBH1(schedule);
    break;
  case ScheduleKind::ZBV:
    // torch's order leaves large bubbles when it drops micro-batches; the
    // list scheduler's are smaller up to m = pp, torch's smaller beyond.
    if (m <= pp)
      generateZBVGreedy(schedule);
    else
      generateZBV(schedule);
    break;
  case ScheduleKind::Custom:
    break;
  }
  return schedule;
}
