//===- MeasuredTrace.cpp - Per-op times of a real run's trace -------------===//

#include "ratrain/Simulator/MeasuredTrace.h"
#include "ratrain/Model/JSON.h"
#include "ratrain/Simulator/Simulator.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <map>
#include <optional>

using namespace ratrain;
using namespace ratrain::sim;

namespace {
struct Interval {
  double start, end;
  unsigned
      kind; ///< ComputeKind of a span, CommKind (or kNumCommKinds) of a wait.
};

/// One rank's events of one step.
struct RankStep {
  double step = -1;
  double kernels = 0;
  std::vector<Interval> spans, waits;
};

std::optional<ComputeKind> parseComputeKind(llvm::StringRef text) {
  for (unsigned k = 0; k < kNumComputeKinds; ++k)
    if (stringifyComputeKind(ComputeKind(k)) == text)
      return ComputeKind(k);
  return std::nullopt;
}

/// The simulator's kind of a wait's category; kNumCommKinds for the kinds
/// it has none of.
unsigned commKindOf(llvm::StringRef text) {
  for (unsigned k = 0; k < kNumCommKinds; ++k)
    if (stringifyCommKind(CommKind(k)) == text)
      return k;
  return kNumCommKinds;
}

double overlap(const Interval &a, const Interval &b) {
  return std::max(0.0, std::min(a.end, b.end) - std::max(a.start, b.start));
}
} // namespace

llvm::Expected<MeasuredTrace>
sim::parseMeasuredTrace(llvm::StringRef text, llvm::StringRef fileName) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fileName + ": " + what);
  };
  llvm::Expected<llvm::json::Value> value = parseJSON(text);
  if (!value)
    return fail("not a JSON trace: " + llvm::toString(value.takeError()));
  const llvm::json::Object *root = value->getAsObject();
  const llvm::json::Array *events =
      root ? root->getArray("traceEvents") : nullptr;
  if (!events)
    return fail("expected a Chrome trace: an object with a \"traceEvents\" "
                "array");

  std::map<int64_t, int64_t> stageOfRank;
  std::map<std::pair<int64_t, int64_t>, RankStep> steps; // (pid, step)
  for (size_t i = 0; i < events->size(); ++i) {
    const llvm::json::Object *event = (*events)[i].getAsObject();
    if (!event)
      return fail(llvm::formatv("event {0} is not an object", i));
    std::optional<llvm::StringRef> ph = event->getString("ph");
    std::optional<int64_t> pid = event->getInteger("pid");
    if (!ph || !pid)
      return fail(llvm::formatv("event {0} has no \"ph\" or \"pid\"", i));
    const llvm::json::Object *args = event->getObject("args");
    if (*ph == "M") {
      if (event->getString("name") == llvm::StringRef("process_name") && args)
        if (std::optional<int64_t> stage = args->getInteger("stage"))
          stageOfRank[*pid] = *stage;
      continue;
    }
    if (*ph != "X")
      continue; // Asynchronous operations: in flight, not on the stream.
    std::optional<double> ts = event->getNumber("ts");
    std::optional<double> dur = event->getNumber("dur");
    std::optional<int64_t> tid = event->getInteger("tid");
    std::optional<llvm::StringRef> cat = event->getString("cat");
    std::optional<int64_t> step =
        args ? args->getInteger("step") : std::nullopt;
    if (!ts || !dur || !tid || !cat || !step)
      return fail(llvm::formatv("event {0} lacks \"ts\", \"dur\", \"tid\", "
                                "\"cat\" or \"args\".\"step\"",
                                i));
    RankStep &rankStep = steps[{*pid, *step}];
    Interval interval{*ts * 1e-6, (*ts + *dur) * 1e-6, 0};
    if (*cat == "step") {
      rankStep.step = *dur * 1e-6;
    } else if (*cat == "kernel") {
      rankStep.kernels += *dur * 1e-6;
    } else if (*tid == 1) { // The stream blocked: a wait.
      interval.kind = commKindOf(*cat);
      rankStep.waits.push_back(interval);
    } else if (std::optional<ComputeKind> kind = parseComputeKind(*cat)) {
      interval.kind = unsigned(*kind);
      rankStep.spans.push_back(interval);
    }
  }

  MeasuredTrace trace;
  std::map<int64_t, MeasuredStageTimes> byStage;
  std::map<int64_t, int64_t> stepsOfRank;
  std::map<int64_t, double> longestStep; // step -> the slowest rank's
  for (const auto &[key, rankStep] : steps) {
    const auto [pid, step] = key;
    if (rankStep.step < 0)
      return fail(llvm::formatv("rank {0} has events of step {1} but no "
                                "\"step\" span",
                                pid, step));
    auto stage = stageOfRank.find(pid);
    if (stage == stageOfRank.end())
      return fail(llvm::formatv("rank {0} has no process_name metadata with "
                                "its \"stage\"",
                                pid));
    MeasuredStageTimes &times = byStage[stage->second];
    times.stage = stage->second;
    double spansAndWaits = 0;
    for (const Interval &span : rankStep.spans) {
      double busy = span.end - span.start;
      for (const Interval &wait : rankStep.waits)
        busy -= overlap(span, wait);
      times.busy[span.kind] += std::max(0.0, busy);
      spansAndWaits += span.end - span.start;
    }
    for (const Interval &wait : rankStep.waits) {
      double seconds = wait.end - wait.start;
      if (wait.kind < kNumCommKinds)
        times.exposed[wait.kind] += seconds;
      else
        times.otherWaits += seconds;
      double inside = 0;
      for (const Interval &span : rankStep.spans)
        inside += overlap(span, wait);
      spansAndWaits += seconds - inside;
    }
    times.kernels += rankStep.kernels;
    times.outside += std::max(0.0, rankStep.step - spansAndWaits);
    times.step += rankStep.step;
    ++stepsOfRank[pid];
    double &longest = longestStep[step];
    longest = std::max(longest, rankStep.step);
    trace.firstStep =
        trace.firstStep ? std::min<uint64_t>(trace.firstStep, step) : step;
    trace.lastStep = std::max<uint64_t>(trace.lastStep, step);
  }
  if (steps.empty())
    return fail("the trace holds no traced step");
  // Per stage: the sums over its ranks' steps, as means per step and rank.
  std::map<int64_t, int64_t> samples;
  for (const auto &[pid, count] : stepsOfRank)
    samples[stageOfRank[pid]] += count;
  for (auto &[stage, times] : byStage) {
    double n = double(samples[stage]);
    for (double &t : times.busy)
      t /= n;
    for (double &t : times.exposed)
      t /= n;
    times.otherWaits /= n;
    times.kernels /= n;
    times.outside /= n;
    times.step /= n;
    for (const auto &[pid, s] : stageOfRank)
      if (s == stage && stepsOfRank.count(pid))
        ++times.ranks;
    trace.stages.push_back(times);
  }
  trace.ranks = int64_t(stepsOfRank.size());
  for (const auto &[step, seconds] : longestStep)
    trace.stepSeconds += seconds;
  trace.stepSeconds /= double(longestStep.size());
  return trace;
}

llvm::Expected<MeasuredTrace> sim::loadMeasuredTrace(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": cannot read: " + buffer.getError().message());
  return parseMeasuredTrace((*buffer)->getBuffer(), path);
}

void sim::printTraceComparison(const SimReport &report,
                               const MeasuredTrace &trace,
                               llvm::raw_ostream &os) {
  os << llvm::formatv("measured-trace: {0} ranks, steps {1}-{2}\n", trace.ranks,
                      trace.firstStep, trace.lastStep);
  os << llvm::formatv("{0,-7} {1,-22} {2,12} {3,12} {4,9}\n", "stage",
                      "op class", "simulated-ms", "measured-ms", "error-%");
  auto row = [&](int64_t stage, llvm::StringRef what,
                 std::optional<double> simulated, double measured) {
    if (measured == 0 && (!simulated || *simulated == 0))
      return;
    std::string error = "-";
    if (simulated && measured > 0)
      error =
          llvm::formatv("{0:f1}", stepTimeErrorPercent(*simulated, measured))
              .str();
    os << llvm::formatv("{0,-7} {1,-22} {2,12} {3,12:f3} {4,9}\n", stage, what,
                        simulated
                            ? llvm::formatv("{0:f3}", *simulated * 1e3).str()
                            : std::string("-"),
                        measured * 1e3, error);
  };
  for (const MeasuredStageTimes &times : trace.stages) {
    const StageReport *simulated =
        size_t(times.stage) < report.stageReports.size()
            ? &report.stageReports[size_t(times.stage)]
            : nullptr;
    for (unsigned k = 0; k < kNumComputeKinds; ++k)
      row(times.stage, stringifyComputeKind(ComputeKind(k)),
          simulated ? std::optional<double>(simulated->busy[k]) : std::nullopt,
          times.busy[k]);
    for (unsigned k = 0; k < kNumCommKinds; ++k)
      row(times.stage, ("exposed " + stringifyCommKind(CommKind(k))).str(),
          simulated ? std::optional<double>(simulated->exposed[k])
                    : std::nullopt,
          times.exposed[k]);
    row(times.stage, "exposed other", std::nullopt, times.otherWaits);
    // The simulator's exposed time is a transfer's own; waiting for a
    // message the peer has not sent yet is bubble. Together they are the
    // stream's idle time, which is what the waits measure.
    double waits = times.otherWaits;
    for (double t : times.exposed)
      waits += t;
    row(times.stage, "idle (bubble + waits)",
        simulated
            ? std::optional<double>(simulated->idleFraction * report.stepTime)
            : std::nullopt,
        waits);
    row(times.stage, "outside spans (runtime)", std::nullopt, times.outside);
    row(times.stage, "(kernels)", std::nullopt, times.kernels);
    row(times.stage, "step", report.stepTime, times.step);
  }
  os << "trace-step-s: " << formatNumber(trace.stepSeconds)
     << "\ntrace-error-percent: "
     << llvm::formatv("{0:f2}",
                      stepTimeErrorPercent(report.stepTime, trace.stepSeconds))
     << "\n";
}
