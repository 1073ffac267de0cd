//===- Timeline.h - Chrome trace and SVG timeline --------*- C++ -*-===//
//
// Writers for a recorded simulation (SimOptions::recordTrace):
// - a Chrome trace / Perfetto JSON file (chrome://tracing, ui.perfetto.dev):
//   one process per stage, threads for the compute stream, the blocked
//   stream, each DMA channel and the network;
// - a standalone SVG timeline: one lane per stage (compute above, transfers
//   below), a colour per task kind, a legend and a time axis.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_TIMELINE_H
#define RATRAIN_SIMULATOR_TIMELINE_H

#include "ratrain/Simulator/SimProgram.h"
#include "ratrain/Simulator/Simulator.h"

#include "llvm/Support/raw_ostream.h"

namespace ratrain {
namespace sim {

/// Writes the Chrome trace JSON ("traceEvents", times in microseconds).
void writeChromeTrace(const SimReport &report, const SimProgram &program,
                      llvm::raw_ostream &os);

struct SvgOptions {
  /// Width of the plotting area in pixels.
  double width = 1600;
  /// Height of one stage lane in pixels.
  double laneHeight = 22;
  /// Title above the plot; empty uses the program name.
  std::string title;
};

/// Writes the SVG timeline. Intervals of one kind closer than a pixel are
/// merged so that large runs stay small and readable.
void writeSvgTimeline(const SimReport &report, const SimProgram &program,
                      llvm::raw_ostream &os, const SvgOptions &options = {});

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_TIMELINE_H
