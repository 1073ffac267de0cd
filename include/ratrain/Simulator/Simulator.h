//===- Simulator.h - Discrete-event simulation of a step ---*- C++ -*-===//
//
// Runs a SimProgram event by event on a MachineModel: one compute stream per
// stage, the cluster's DMA channels, and its intra- and inter-node network
// links whose bandwidth is shared fairly among the transfers using them at
// each instant. Collectives are decomposed into the steps of their algorithm
// (ring, tree, hierarchical). Deterministic: equal inputs give bit-identical
// results. See docs/simulator.md for the model and the report fields.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_SIMULATOR_H
#define RATRAIN_SIMULATOR_SIMULATOR_H

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Simulator/SimProgram.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ratrain {
namespace sim {

/// One step of a decomposed collective, as seen by one member: after the
/// link's latency, `bytes` leave on the member's outgoing link and as many
/// arrive on its incoming link of class `link`, concurrently.
struct CollectiveStep {
  double bytes = 0;
  LinkClass link = LinkClass::IntraNode;
  /// Clusters of one node that run this step's inter-node transfer at the
  /// same time (they share the node's injection bandwidth): the members per
  /// node in the inter-node phase of a hierarchical collective, 1 for flat
  /// rings and trees (one cluster per node talks to the next node at a time).
  int64_t streams = 1;
};

/// The steps of a collective (see docs/simulator.md for each algorithm):
/// - ring all-reduce: 2(k-1) steps of n/k; reduce-scatter, all-gather: k-1.
/// - tree all-reduce: binomial reduce then broadcast, 2*ceil(log2 k) steps of
///   n; reduce-scatter: reduce (ceil(log2 k) steps of n) then a binomial
///   scatter (steps of n/2, n/4, ..., n/2^L); all-gather: the mirror image.
/// - hierarchical: intra-node ring reduce-scatter over the c members of a
///   node, inter-node ring all-reduce of n/c over the k/c nodes, intra-node
///   ring all-gather (for reduce-scatter / all-gather, the matching halves).
/// Groups that span nodes use the inter-node link for ring and tree steps.
std::vector<CollectiveStep> planCollective(const CollectiveSpec &spec);

/// Closed-form time of a collective alone on idle links: the sum over its
/// steps of (link latency + bytes / bandwidth), the bandwidth of inter-node
/// steps being MachineModel::interNodeStreamBandwidth(step.streams).
double collectiveTime(const CollectiveSpec &spec, const MachineModel &machine);

struct SimOptions {
  /// Consecutive iterations to run (the program repeated). With two or more,
  /// the steady-state figures come from iterations 2..N.
  unsigned iterations = 3;
  /// Record every interval for the Chrome trace and the SVG timeline.
  bool recordTrace = false;
  /// Record only the last this-many iterations (0 = all).
  unsigned traceIterations = 0;
};

/// What a lane of the timeline shows.
enum class Lane : uint8_t { Compute, Blocked, Dma, Network, Offload };

/// One recorded interval of the run.
struct TraceInterval {
  uint32_t stage = 0;
  uint32_t task = 0;
  uint32_t iteration = 0;
  Lane lane = Lane::Compute;
  /// Lane::Compute: a ComputeKind; Lane::Blocked, Dma, Network: a CommKind.
  uint8_t kind = 0;
  uint32_t channel = 0; ///< DMA channel.
  double start = 0;
  double end = 0;
};

/// Per-stage results (steady state: averaged over the measured iterations).
struct StageReport {
  std::string name;
  /// Compute-stream busy seconds per iteration, by ComputeKind.
  std::array<double, kNumComputeKinds> busy{};
  /// Seconds per iteration the stream was blocked on a recv or wait, by the
  /// CommKind of what it waited for (exposed communication).
  std::array<double, kNumCommKinds> exposed{};
  /// Fraction of the step the compute stream was idle (pipeline bubble plus
  /// exposed communication): 1 - busy / step time.
  double idleFraction = 0;
  /// Idle time not explained by exposed communication, as a fraction of the
  /// step: the pipeline bubble.
  double bubbleFraction = 0;
  /// Peak DDR: resident bytes plus the highest running alloc total.
  int64_t peakDdrBytes = 0;
  int64_t assignedPeakBytes = 0;
  bool exceedsDdr = false;
  /// Time this stage finished each iteration (stream done and all of that
  /// iteration's async tasks complete).
  std::vector<double> iterationEnd;

  double totalBusy() const;
  double totalExposed() const;
};

struct SimReport {
  std::string programName;
  std::string machineName;
  unsigned iterations = 0;
  int64_t stages = 0;
  int64_t clusters = 0;
  size_t tasksPerIteration = 0;
  uint64_t events = 0;
  /// End of each iteration over all stages.
  std::vector<double> iterationEnd;
  /// Time of the first iteration (from t=0, including pipeline fill).
  double firstIterationTime = 0;
  /// Steady-state step time: (end of last - end of first) / (N - 1); the
  /// first iteration's time when N == 1.
  double stepTime = 0;
  double tokensPerIteration = 0;
  double tokensPerSecond = 0;
  double modelFlopsPerIteration = 0;
  /// Model FLOPs / (step time * clusters * peak FP16 FLOP/s).
  double mfu = 0;
  /// Mean over stages of the bubble fraction, and the largest.
  double meanBubbleFraction = 0;
  double maxBubbleFraction = 0;
  /// Exposed communication by kind: largest over stages (seconds/iteration).
  std::array<double, kNumCommKinds> maxExposed{};
  /// Mean over stages.
  std::array<double, kNumCommKinds> meanExposed{};
  int64_t maxPeakDdrBytes = 0;
  std::vector<StageReport> stageReports;
  /// Filled when SimOptions::recordTrace.
  std::vector<TraceInterval> trace;
  /// DMA channels per cluster (trace lanes).
  uint32_t dmaChannels = 1;

  /// Prints the summary as `key: value` lines (what the CLI and lit test see),
  /// then one line per stage.
  void print(llvm::raw_ostream &os) const;
};

/// Simulates `options.iterations` iterations of `program` on `machine`.
/// Errors: an invalid program (see SimProgram::verify), a machine without
/// the bandwidths the program needs, or a deadlock (naming each blocked stage,
/// its task and what it waits for).
llvm::Expected<SimReport> simulate(const SimProgram &program,
                                   const MachineModel &machine,
                                   const SimOptions &options = {});

/// `value` with up to 6 significant digits ("%.6g"), as the reports print it.
std::string formatNumber(double value);

/// Relative error of a simulated against a measured step time, in percent
/// ((simulated - measured) / measured * 100).
double stepTimeErrorPercent(double simulated, double measured);

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_SIMULATOR_H
