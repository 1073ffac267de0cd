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
/// level's link latency, `bytes` leave on the member's outgoing link of
/// network level `level` and as many arrive on its incoming link,
/// concurrently.
/// What a collective step does with the data it receives, for in-network
/// collectives (InNetworkCollectives): adds it into the result (a
/// reduce-scatter phase, a reduce to the root), forwards one copy to every
/// member (an all-gather phase, a broadcast), or neither (a binomial scatter
/// or gather, the all-to-all of a quantized collective).
enum class StepRole : uint8_t { Plain, Reduce, Multicast };

struct CollectiveStep {
  double bytes = 0;
  /// Index into MachineModel::networkLevels(): the level whose link joins
  /// the members of this step (two-level machines: 0 inside a node, 1
  /// between nodes).
  unsigned level = 0;
  /// streams[l] (l < level): the clusters of one level-l group that run this
  /// step at the same time, sharing the group's injection bandwidth: all the
  /// group's members in the later phases of a hierarchical collective, 1 for
  /// flat rings and trees (one member per group talks to the next group at a
  /// time).
  std::array<int64_t, kMaxNetworkLevels> streams{1, 1, 1, 1};
  /// Quantized collectives: bytes of device memory the member's quantize /
  /// dequantize kernels read and write before this step's transfer (the
  /// codec time is codecBytes / codecBandwidth(machine)); 0 otherwise.
  double codecBytes = 0;
  StepRole role = StepRole::Plain;
};

/// How much faster the network runs `step` (latency and bytes alike):
/// the machine's in-network reduction or multicast speedup for a step of
/// that role at the capable level, else 1.
double inNetworkSpeedup(const CollectiveStep &step,
                        const MachineModel &machine);

/// Bytes on the wire of `elements` elements in `wire` format with one fp32
/// scale per `block` elements: ceil(n / block) scales and n int8 codes or
/// ceil(n / 2) bytes of int4 codes (the runtime's payload); n * elementBytes
/// for native elements. Per element it tends to wireBytesPerElement.
double wirePayloadBytes(WireFormat wire, int64_t elements, int64_t elementBytes,
                        int64_t block);

/// Device-memory bandwidth of the quantize / dequantize kernels: the machine
/// file names no quantization rate, so they count as memory bound, DDR (HBM)
/// bandwidth times the memory-bound kernel efficiency.
double codecBandwidth(const MachineModel &machine);

/// The steps of a collective (see docs/simulator.md for each algorithm):
/// - ring all-reduce: 2(k-1) steps of n/k; reduce-scatter, all-gather: k-1.
/// - tree all-reduce: binomial reduce then broadcast, 2*ceil(log2 k) steps of
///   n; reduce-scatter: reduce (ceil(log2 k) steps of n) then a binomial
///   scatter (steps of n/2, n/4, ..., n/2^L); all-gather: the mirror image.
/// - hierarchical over levels with m_0, m_1, ... members: ring
///   reduce-scatter over the m_0 members of the innermost level, then over
///   the m_1 of the next level on the n/m_0 shard, ..., ring all-reduce at
///   the outermost level spanned on n/(m_0 ... m_{L-2}), then the ring
///   all-gathers back out (reduce-scatter, all-gather: the matching halves).
///   Levels with one member are skipped.
/// - quantized (spec.wire int8 / int4, all-gather and reduce-scatter), as the
///   runtime runs them (runtime/src/QuantizedCollectives.cpp): hierarchical
///   over the levels the group spans, otherwise one phase over the whole
///   group at its outermost level. qwZ all-gather: each member's shard
///   (n/k bytes) is quantized once; phase by phase from the outermost level
///   in, a level with k_l members sends k_l - 1 steps of the payloads
///   gathered so far (prod of the k_j outside it). qgZ reduce-scatter
///   (hierarchical all-to-all, fp32 sums): phase by phase from the innermost
///   level out, a level with k_l members sends k_l - 1 chunks, each chunk
///   (n/k times the prod of the k_j outside it, in elements) quantized on
///   its own. Step bytes are wirePayloadBytes; codecBytes the kernels'
///   memory traffic (quantize: read the elements, write the payload;
///   dequantize: read the payload, write or accumulate fp32 / elements).
/// Ring and tree steps use the outermost level the group spans. The levels
/// are the spec's membersPerLevel, or (not given) membersPerNode at level 0
/// and the rest at level 1.
std::vector<CollectiveStep> planCollective(const CollectiveSpec &spec);

/// Closed-form time of a collective alone on idle links: the sum over its
/// steps of (level latency + bytes / bandwidth), the bandwidth of a level-L
/// step being the minimum of the level's link and, for every inner level l
/// with an injection limit, injection / streams[l] (the spec resolved on
/// `machine` first, see resolveLevels).
double collectiveTime(const CollectiveSpec &spec, const MachineModel &machine);

/// Bandwidth of `step` on `machine`'s levels (see collectiveTime).
double stepBandwidth(const CollectiveStep &step,
                     llvm::ArrayRef<NetworkLevel> levels);

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
  /// On shared cores (a machine split into virtual clusters with a
  /// network.progress_core_share): the CPU seconds per iteration the stage's
  /// progress thread polled for, taken from the computing ranks.
  double progressCpu = 0;
  /// Seconds per iteration the stage's compute stream spent on its
  /// collectives' core copies (network.core_copy_bandwidth), apart from
  /// `busy`.
  double coreCopy = 0;
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
