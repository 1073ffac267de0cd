//===- Timeline.cpp - Chrome trace and SVG timeline writers
//----------------===//

#include "ratrain/Simulator/Timeline.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <array>
#include <cmath>

using namespace ratrain;
using namespace ratrain::sim;

//===----------------------------------------------------------------------===//
// Chrome trace
//===----------------------------------------------------------------------===//

namespace {
/// Thread ids inside a stage's process.
enum TraceThread : int64_t {
  ComputeThread = 0,
  BlockedThread = 1,
  NetworkThread = 2,
  OffloadThread = 3,
  FirstDmaThread = 4
};
} // namespace

static int64_t threadOf(const TraceInterval &interval) {
  switch (interval.lane) {
  case Lane::Compute:
    return ComputeThread;
  case Lane::Blocked:
    return BlockedThread;
  case Lane::Network:
    return NetworkThread;
  case Lane::Dma:
    return FirstDmaThread + interval.channel;
  case Lane::Offload:
    return OffloadThread;
  }
  return ComputeThread;
}

static llvm::StringRef categoryOf(const TraceInterval &interval) {
  if (interval.lane == Lane::Compute)
    return stringifyComputeKind(static_cast<ComputeKind>(interval.kind));
  return stringifyCommKind(static_cast<CommKind>(interval.kind));
}

void sim::writeChromeTrace(const SimReport &report, const SimProgram &program,
                           llvm::raw_ostream &os) {
  llvm::json::OStream json(os);
  json.object([&] {
    json.attribute("displayTimeUnit", "ms");
    json.attributeObject("otherData", [&] {
      json.attribute("program", report.programName);
      json.attribute("machine", report.machineName);
      json.attribute("step_time_s", report.stepTime);
      json.attribute("tokens_per_s", report.tokensPerSecond);
    });
    json.attributeArray("traceEvents", [&] {
      auto metadata = [&](llvm::StringRef what, int64_t pid,
                          std::optional<int64_t> tid, llvm::StringRef name) {
        json.object([&] {
          json.attribute("name", what);
          json.attribute("ph", "M");
          json.attribute("pid", pid);
          if (tid)
            json.attribute("tid", *tid);
          json.attributeObject("args", [&] { json.attribute("name", name); });
        });
      };
      for (size_t s = 0; s < program.stages.size(); ++s) {
        int64_t pid = static_cast<int64_t>(s);
        std::string name = s < report.stageReports.size()
                               ? report.stageReports[s].name
                               : llvm::formatv("stage {0}", s).str();
        metadata("process_name", pid, std::nullopt, name);
        json.object([&] {
          json.attribute("name", "process_sort_index");
          json.attribute("ph", "M");
          json.attribute("pid", pid);
          json.attributeObject("args",
                               [&] { json.attribute("sort_index", pid); });
        });
        metadata("thread_name", pid, ComputeThread, "compute");
        metadata("thread_name", pid, BlockedThread,
                 "stream blocked (exposed comm)");
        metadata("thread_name", pid, NetworkThread, "network");
        metadata("thread_name", pid, OffloadThread, "offload tier");
        for (uint32_t c = 0; c < report.dmaChannels; ++c)
          metadata("thread_name", pid, FirstDmaThread + c,
                   llvm::formatv("dma {0}", c).str());
      }
      for (const TraceInterval &interval : report.trace) {
        const StageProgram &sp = program.stages[interval.stage];
        llvm::StringRef label = sp.getLabel(interval.task);
        json.object([&] {
          if (interval.lane == Lane::Blocked)
            json.attribute("name", ("wait " + categoryOf(interval) +
                                    (label.empty() ? "" : ": " + label))
                                       .str());
          else
            json.attribute("name",
                           label.empty() ? categoryOf(interval) : label);
          json.attribute("cat", categoryOf(interval));
          json.attribute("ph", "X");
          json.attribute("ts", interval.start * 1e6);
          json.attribute("dur", (interval.end - interval.start) * 1e6);
          json.attribute("pid", static_cast<int64_t>(interval.stage));
          json.attribute("tid", threadOf(interval));
          json.attributeObject("args", [&] {
            json.attribute("iteration",
                           static_cast<int64_t>(interval.iteration + 1));
            json.attribute("task", static_cast<int64_t>(interval.task));
          });
        });
      }
    });
  });
  os << "\n";
}

//===----------------------------------------------------------------------===//
// SVG timeline
//===----------------------------------------------------------------------===//

namespace {

/// Rows of a stage lane and the kinds each shows.
enum Row { ComputeRow = 0, NetworkRow = 1, DmaRow = 2, NumRows = 3 };
/// Compute row kinds: compute kinds, then blocked (exposed) comm kinds.
constexpr unsigned kComputeRowKinds = kNumComputeKinds + kNumCommKinds;
constexpr unsigned kMaxRowKinds = kComputeRowKinds;

const char *computeColor(unsigned kind) {
  static const char *colors[kNumComputeKinds] = {
      "#4e79a7", // forward
      "#59a14f", // backward
      "#f28e2b", // recompute
      "#b07aa1", // update
      "#9c755f", // view-cast
      "#bab0ac", // other
  };
  return colors[kind];
}

const char *commColor(unsigned kind) {
  static const char *colors[kNumCommKinds] = {
      "#76b7b2", // dma
      "#edc948", // p2p
      "#e15759", // all-reduce
      "#ff9da7", // reduce-scatter
      "#8c564b", // all-gather
      "#17becf", // offload
  };
  return colors[kind];
}

std::string escapeXml(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// A "nice" tick spacing (1, 2 or 5 times a power of ten) giving about
/// `target` ticks over `span`.
double niceTick(double span, double target) {
  double raw = span / target;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw)
      return m * power;
  return 10 * power;
}

std::string formatSeconds(double seconds, double tick) {
  if (tick >= 1)
    return formatNumber(seconds) + " s";
  if (tick >= 1e-3)
    return formatNumber(seconds * 1e3) + " ms";
  return formatNumber(seconds * 1e6) + " us";
}

} // namespace

void sim::writeSvgTimeline(const SimReport &report, const SimProgram &program,
                           llvm::raw_ostream &os, const SvgOptions &options) {
  const size_t numStages = program.stages.size();
  const int columns = std::max(100, static_cast<int>(options.width));
  double t0 = 0, t1 = 0;
  bool first = true;
  for (const TraceInterval &interval : report.trace) {
    if (first || interval.start < t0)
      t0 = interval.start;
    if (first || interval.end > t1)
      t1 = interval.end;
    first = false;
  }
  if (!(t1 > t0))
    t1 = t0 + 1e-6;
  const double columnSeconds = (t1 - t0) / columns;

  // Coverage of each column by each kind, per stage and row.
  std::vector<double> coverage(numStages * NumRows * columns * kMaxRowKinds,
                               0.0);
  auto cell = [&](size_t stage, int row, int column,
                  unsigned kind) -> double & {
    return coverage[((stage * NumRows + row) * columns + column) *
                        kMaxRowKinds +
                    kind];
  };
  for (const TraceInterval &interval : report.trace) {
    int row = ComputeRow;
    unsigned kind = interval.kind;
    switch (interval.lane) {
    case Lane::Compute:
      break;
    case Lane::Blocked:
      kind = kNumComputeKinds + interval.kind;
      break;
    case Lane::Network:
      row = NetworkRow;
      break;
    case Lane::Dma:
    case Lane::Offload:
      row = DmaRow;
      break;
    }
    double a = (interval.start - t0) / columnSeconds;
    double b = (interval.end - t0) / columnSeconds;
    int ca = std::clamp(static_cast<int>(a), 0, columns - 1);
    int cb = std::clamp(static_cast<int>(b), 0, columns - 1);
    for (int c = ca; c <= cb; ++c) {
      double overlap = std::min(b, c + 1.0) - std::max(a, double(c));
      if (overlap > 0)
        cell(interval.stage, row, c, kind) += overlap;
    }
  }

  const double left = 150, right = 20, top = 92;
  const double laneGap = 8;
  const double rowHeights[NumRows] = {options.laneHeight * 0.6,
                                      options.laneHeight * 0.22,
                                      options.laneHeight * 0.18};
  const double laneHeight = options.laneHeight + laneGap;
  const double plotWidth = columns;
  const double width = left + plotWidth + right;
  const double height = top + numStages * laneHeight + 50;
  const double pxPerColumn = plotWidth / columns;

  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                      "font-family=\"Helvetica, Arial, sans-serif\" "
                      "font-size=\"12\">\n",
                      width, height);
  os << llvm::formatv("<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" "
                      "fill=\"white\"/>\n",
                      width, height);
  std::string title =
      options.title.empty() ? report.programName : options.title;
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{1}"
      "</text>\n",
      left, escapeXml(title));
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"38\">step {1} s, {2:f1} tokens/s, MFU "
      "{3:f1}%, bubble {4:f1}% (mean), {5} stages, {6} clusters</text>\n",
      left, formatNumber(report.stepTime), report.tokensPerSecond,
      report.mfu * 100, report.meanBubbleFraction * 100, report.stages,
      report.clusters);

  // Legend.
  double x = left;
  auto legend = [&](const char *color, double opacity, llvm::StringRef name) {
    os << llvm::formatv("<rect x=\"{0}\" y=\"50\" width=\"12\" height=\"12\" "
                        "fill=\"{1}\" fill-opacity=\"{2}\" stroke=\"#555\" "
                        "stroke-width=\"0.5\"/>\n",
                        x, color, opacity);
    os << llvm::formatv("<text x=\"{0}\" y=\"60\">{1}</text>\n", x + 16,
                        escapeXml(name));
    x += 24 + 7.0 * name.size();
  };
  for (unsigned k = 0; k < kNumComputeKinds; ++k)
    legend(computeColor(k), 1.0,
           stringifyComputeKind(static_cast<ComputeKind>(k)));
  for (unsigned k = 0; k < kNumCommKinds; ++k)
    legend(commColor(k), 1.0, stringifyCommKind(static_cast<CommKind>(k)));
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"78\" fill=\"#444\">each stage: compute stream "
      "(hatched = stream blocked on that communication), network "
      "transfers, DMA</text>\n",
      left);
  os << "<defs>\n";
  for (unsigned k = 0; k < kNumCommKinds; ++k)
    os << llvm::formatv(
        "<pattern id=\"blocked{0}\" width=\"4\" height=\"4\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"4\" height=\"4\" fill=\"white\"/>"
        "<rect width=\"2\" height=\"4\" fill=\"{1}\"/></pattern>\n",
        k, commColor(k));
  os << "</defs>\n";

  // Time axis and grid.
  double tick = niceTick(t1 - t0, 10);
  double axisY = top + numStages * laneHeight + 4;
  for (double t = std::ceil(t0 / tick) * tick; t <= t1 + 1e-12; t += tick) {
    double px = left + (t - t0) / (t1 - t0) * plotWidth;
    os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                        "stroke=\"#ddd\"/>\n",
                        px, top - 4, axisY);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
                        "{2}</text>\n",
                        px, axisY + 16, formatSeconds(t, tick));
  }
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"#333\"/>\n",
                      left, axisY, left + plotWidth);
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" "
                      "fill=\"#444\">time</text>\n",
                      left + plotWidth / 2, axisY + 34);
  // Iteration ends.
  for (size_t i = 0; i < report.iterationEnd.size(); ++i) {
    double t = report.iterationEnd[i];
    if (t < t0 || t > t1)
      continue;
    double px = left + (t - t0) / (t1 - t0) * plotWidth;
    os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                        "stroke=\"#000\" stroke-dasharray=\"4,3\"/>\n",
                        px, top - 8, axisY);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" "
                        "font-size=\"10\">end of iteration {2}</text>\n",
                        px - 2, top - 10, i + 1);
  }

  // Lanes: per row, each column shows the kind covering most of it (if it
  // covers at least a fifth); runs of equal columns become one rectangle.
  for (size_t s = 0; s < numStages; ++s) {
    double laneTop = top + s * laneHeight;
    std::string name = s < report.stageReports.size()
                           ? report.stageReports[s].name
                           : llvm::formatv("stage {0}", s).str();
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">{2}"
                        "</text>\n",
                        left - 8, laneTop + rowHeights[0] + 2, escapeXml(name));
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                        "height=\"{3}\" fill=\"#f7f7f7\"/>\n",
                        left, laneTop, plotWidth, options.laneHeight);
    double rowTop = laneTop;
    for (int row = 0; row < NumRows; ++row) {
      unsigned kinds = row == ComputeRow   ? kComputeRowKinds
                       : row == NetworkRow ? kNumCommKinds
                                           : kNumCommKinds;
      int runStart = 0;
      int runKind = -1;
      auto flush = [&](int end) {
        if (runKind < 0)
          return;
        std::string fill;
        if (row == ComputeRow && runKind >= static_cast<int>(kNumComputeKinds))
          fill = llvm::formatv("url(#blocked{0})",
                               runKind - static_cast<int>(kNumComputeKinds))
                     .str();
        else if (row == ComputeRow)
          fill = computeColor(runKind);
        else
          fill = commColor(runKind);
        os << llvm::formatv("<rect x=\"{0:f1}\" y=\"{1:f1}\" "
                            "width=\"{2:f1}\" height=\"{3:f1}\" "
                            "fill=\"{4}\"/>\n",
                            left + runStart * pxPerColumn, rowTop,
                            (end - runStart) * pxPerColumn, rowHeights[row],
                            fill);
      };
      for (int c = 0; c < columns; ++c) {
        int best = -1;
        double bestCover = 0.2;
        for (unsigned k = 0; k < kinds; ++k) {
          double cover = cell(s, row, c, k);
          if (cover > bestCover) {
            bestCover = cover;
            best = static_cast<int>(k);
          }
        }
        if (best != runKind) {
          flush(c);
          runStart = c;
          runKind = best;
        }
      }
      flush(columns);
      rowTop += rowHeights[row];
    }
  }
  os << "</svg>\n";
}
