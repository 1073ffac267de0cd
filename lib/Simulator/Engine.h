//===- Engine.h - The simulator's discrete-event engine ---------*- C++ -*-===//
//
// Private to lib/Simulator: the engine's state and events. Engine.cpp runs
// the events; Simulator.cpp builds the report and prints it.
//
// State: per stage a program counter, the current iteration, and the
// completion time of every asynchronous task instance (iteration x task).
// Events (a binary heap ordered by time, then by insertion order, so runs are
// deterministic): a compute task ends, a transfer's latency elapses, a flow
// finishes. Flows carry bytes over one or two links at the rate min over
// their links of (link bandwidth / weight of the flows on the link) (weight 1
// on a cluster's own links; on a node's shared injection link a flow weighs
// as many as the symmetric clusters of the node that send the same way at the
// same time); whenever a flow starts or ends, the flows sharing its links are
// settled (bytes moved so far subtracted) and get new rates and completion
// events. Stale completion events are recognised by a version number.
// Compute tasks take their own seconds, unless the node's resources are
// shared (SharedResources.cpp): virtual clusters share the physical
// clusters' cores, and with ddr_bandwidth_alone the memory-bound tasks share
// the node's DDR with each other and with the flows that move through it;
// then every running compute task has a rate, recomputed whenever a compute
// task, a progress thread or a DDR flow starts or ends.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_LIB_SIMULATOR_ENGINE_H
#define RATRAIN_LIB_SIMULATOR_ENGINE_H

#include "ratrain/Simulator/Simulator.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <vector>

namespace ratrain {
namespace sim {
namespace detail {

inline constexpr double kPending = std::numeric_limits<double>::quiet_NaN();
inline constexpr uint32_t kNone = ~0u;

/// Links of one stage's representative cluster: the DMA and offload links,
/// then four per network level (levelLink).
enum LinkSlot : uint32_t {
  DmaLink = 0,
  OffloadLink, ///< DDR <-> offload tier, reads and writes.
  FirstLevelLink
};

/// The links of one network level, after FirstLevelLink + 4 * level.
enum LevelLinkSlot : uint32_t {
  LevelTx = 0, ///< The cluster's own link of the level, outgoing.
  LevelRx,
  GroupTx, ///< The level group's shared injection into the levels above.
  GroupRx,
  NumLevelLinks
};

struct Link {
  double bandwidth = 0;
  double weight = 0; ///< Sum of the weights of the flows on the link.
  llvm::SmallVector<uint32_t, 4> flows;
};

/// The most links a flow crosses: its own link out and in, and the
/// injection links out of and into the groups of every level below.
inline constexpr unsigned kMaxFlowLinks = 2 * kMaxNetworkLevels;

/// The links a flow crosses, with its weight on each.
struct FlowLinks {
  uint32_t links[kMaxFlowLinks] = {kNone, kNone, kNone, kNone,
                                   kNone, kNone, kNone, kNone};
  double weights[kMaxFlowLinks] = {1, 1, 1, 1, 1, 1, 1, 1};
  unsigned count = 0;
  void add(uint32_t link, double weight) {
    if (link == kNone)
      return;
    links[count] = link;
    weights[count] = weight;
    ++count;
  }
};

struct Flow {
  double remaining = 0;
  double rate = 0;
  double last = 0;
  static constexpr unsigned kMaxLinks = kMaxFlowLinks;
  uint32_t links[kMaxLinks] = {kNone, kNone, kNone, kNone,
                               kNone, kNone, kNone, kNone};
  double weights[kMaxLinks] = {1, 1, 1, 1, 1, 1, 1, 1};
  uint32_t version = 0;
  uint32_t op = kNone;
  bool active = false;
  /// Shared DDR: the bytes of node DDR traffic per byte the flow moves,
  /// times the clusters of the node its stage stands for (0: none).
  double ddrShare = 0;
};

/// An asynchronous task instance in flight.
struct Op {
  uint32_t stage = 0;
  uint32_t iteration = 0;
  uint32_t task = 0;
  uint32_t plan = kNone; ///< Collectives: index into the plan table.
  uint32_t step = 0;
  uint32_t numSteps = 1;
  uint32_t flow = kNone;
  double start = 0; ///< When the first byte could move (after any queueing).
  /// A periodic collective outside its phase: completed at once, never on
  /// the communication stream.
  bool skipped = false;
};

enum class EventType : uint8_t { ComputeDone, LatencyDone, FlowDone, StepDone };

struct Event {
  double time;
  uint64_t seq;
  uint32_t id;
  uint32_t version;
  EventType type;
};

struct EventLater {
  bool operator()(const Event &a, const Event &b) const {
    if (a.time != b.time)
      return a.time > b.time;
    return a.seq > b.seq;
  }
};

struct IterationStats {
  std::array<double, kNumComputeKinds> busy{};
  std::array<double, kNumCommKinds> exposed{};
  double streamEnd = 0;
  double lastAsyncDone = 0;
  /// Shared cores: the CPU seconds the stage's progress thread asked for
  /// (Engine::progressShare while it polled).
  double progressCpu = 0;
  /// The seconds of the stage's compute stream its collectives' data took
  /// (network.core_copy_bandwidth), apart from `busy`.
  double coreCopy = 0;
};

struct StageState {
  uint32_t pc = 0;
  uint32_t iteration = 0;
  bool finished = false;
  // Blocking state.
  bool blocked = false;
  bool blockedOnRecv = false;
  uint32_t blockStage = 0, blockIteration = 0, blockTask = 0;
  CommKind blockKind = CommKind::P2P;
  double blockSince = 0;
  // Per (iteration, task): completion and issue time of async tasks; for a
  // recv, the issue time is when the stage reached it (posted it).
  std::vector<double> done;
  std::vector<double> issued;
  /// Recv task -> index of the matching send in the peer stage.
  std::vector<uint32_t> matchedSend;
  /// Send task -> index of the matching recv in the peer stage.
  std::vector<uint32_t> matchedRecv;
  /// Collective task -> plan index.
  std::vector<uint32_t> plan;
  std::vector<IterationStats> stats;
  int64_t memory = 0;
  int64_t peakMemory = 0;
  std::vector<std::deque<uint32_t>> dmaQueue;
  std::vector<bool> dmaBusy;
  /// Collectives queued on each communication stream, and whether one runs.
  std::vector<std::deque<uint32_t>> commQueue;
  std::vector<bool> commBusy;
  /// Offload-tier transfers queued on the cluster's offload stream.
  std::deque<uint32_t> offloadQueue;
  bool offloadBusy = false;
  /// The running compute task under shared cores (Engine::sharedCores > 0):
  /// its remaining work in seconds at the split rate, its current rate (1 =
  /// the split rate), when both were last settled, when it started, and a
  /// version that makes earlier completion events stale.
  bool computing = false;
  double computeRemaining = 0;
  double computeRate = 1;
  double computeLast = 0;
  double computeStart = 0;
  uint32_t computeVersion = 0;
  uint8_t computeKind = 0;
  /// The running task is memory bound (an update or a view cast): with
  /// shared DDR its rate follows the node's DDR.
  bool computeMemoryBound = false;
  /// The running task is an update priced at cluster.optimizer_bandwidth
  /// (Task::optimizerStream on a machine that gives it).
  bool computeOptimizer = false;
  size_t computeTrace = ~size_t(0);
  /// Core copies (network.core_copy_bandwidth): the seconds of the
  /// collectives issued since the last compute task, which the next one
  /// takes on top of its own, and that part of the running shared task.
  double coreCopyDebt = 0;
  double computeCoreCopy = 0, computeTotal = 0;
  /// Sends and collectives issued and not yet complete: while any is (or
  /// the stage waits in a recv), its progress thread polls (Engine::
  /// progressShare).
  uint32_t commOutstanding = 0;
  /// When the progress thread last started polling.
  double progressSince = 0;
  bool progressing() const {
    return commOutstanding > 0 || (blocked && blockedOnRecv);
  }
};

class Engine {
public:
  Engine(const SimProgram &program, const MachineModel &machine,
         const SimOptions &options)
      : program(program), machine(machine), options(options),
        codecRate(codecBandwidth(machine)) {}

  llvm::Error run();
  SimReport makeReport() const;

private:
  llvm::Error prepare();
  void advance(uint32_t stage);
  void block(uint32_t stage, uint32_t onStage, uint32_t onIteration,
             uint32_t onTask, CommKind kind, bool isRecv);
  void resume(uint32_t stage);
  void issueAsync(uint32_t stage, const Task &task);
  void startDma(uint32_t opIndex);
  void startCollective(uint32_t opIndex);
  void startOffload(uint32_t opIndex);
  void startStep(uint32_t opIndex);
  void startFlow(uint32_t opIndex, double bytes, uint32_t linkA,
                 uint32_t linkB);
  void startFlow(uint32_t opIndex, double bytes, const FlowLinks &route);
  /// A transfer over level `level`'s links from `from`'s cluster to `to`'s;
  /// it also crosses the injection links of both clusters' groups of every
  /// inner level that has one, with weight streams[l].
  void startNetworkFlow(uint32_t opIndex, double bytes, uint32_t from,
                        uint32_t to, unsigned level,
                        const std::array<int64_t, kMaxNetworkLevels> &streams);
  void finishFlow(uint32_t flowIndex);
  void stepDone(uint32_t opIndex);
  void completeOp(uint32_t opIndex);
  void rerate(uint32_t link);
  /// In a recorded iteration, adds an interval of stage `stage`'s current
  /// task to the trace and returns its index (~0 when not recording).
  size_t recordStageInterval(uint32_t stage, Lane lane, uint8_t kind,
                             double start, double end);
  /// Whether compute tasks have rates that change while they run (shared
  /// cores or shared DDR); otherwise each takes its own seconds.
  bool dynamicCompute() const { return sharedCores > 0 || sharedDdr; }
  /// Shared cores or DDR: a compute task of `seconds` at the split rate
  /// starts / the running one of `stage` ends (ComputeDone).
  void startSharedCompute(uint32_t stage, const Task &task);
  void finishSharedCompute(uint32_t stage, uint32_t version);
  /// Shared cores or DDR: subtracts the work done since the last settlement
  /// from every running compute task, then gives each its share of the
  /// cores (and of the DDR, for a memory-bound task) and a new completion
  /// event.
  void settleCompute();
  void rerateCompute();
  /// Shared cores: stage `stage`'s progress thread started or stopped
  /// polling (`wasProgressing` before the change): the compute tasks get
  /// new shares.
  void progressChanged(uint32_t stage, bool wasProgressing);
  /// A send or collective of `stage` was issued (+1) or completed (-1).
  void addOutstanding(uint32_t stage, int delta);
  /// Shared DDR: Flow::ddrShare of a flow over `route`.
  double flowDdrShare(const FlowLinks &route) const;
  /// Shared DDR: the bytes/s of node DDR the running flows take.
  double ddrFlowLoad() const;
  /// Shared DDR: a flow started or ended; the memory-bound compute tasks
  /// get new rates.
  void ddrLoadChanged();
  void settle(Flow &flow);
  void schedule(double time, EventType type, uint32_t id, uint32_t version = 0);
  uint32_t linkIndex(uint32_t stage, uint32_t slot) const {
    return stage * slotsPerStage + slot;
  }
  uint32_t levelLink(uint32_t stage, unsigned level,
                     LevelLinkSlot which) const {
    return linkIndex(stage, FirstLevelLink + NumLevelLinks * level + which);
  }
  /// The network level of a point-to-point send's link class: the node's
  /// outermost inner level, or the level that joins nodes.
  unsigned levelOf(LinkClass cls) const {
    unsigned inside = machine.nodeLevels();
    unsigned last = static_cast<unsigned>(levels.size()) - 1;
    if (cls == LinkClass::IntraNode)
      return inside > 0 ? inside - 1 : 0;
    return std::min(inside, last);
  }
  double latency(unsigned level) const { return levels[level].link.latency; }
  /// A collective step's delay before its bytes move: the level's latency
  /// plus its quantize / dequantize time (memory bound, codecBandwidth).
  /// A step's latency (shortened by in-network collectives) and codec time.
  double stepDelay(const CollectiveStep &step) const {
    double codec =
        step.codecBytes > 0 && codecRate > 0 ? step.codecBytes / codecRate : 0;
    return latency(step.level) / inNetworkSpeedup(step, machine) + codec;
  }
  bool recording(uint32_t iteration) const {
    return options.recordTrace &&
           (options.traceIterations == 0 ||
            iteration + options.traceIterations >= options.iterations);
  }
  size_t slot(uint32_t stage, uint32_t iteration, uint32_t task) const {
    return static_cast<size_t>(iteration) * program.stages[stage].size() + task;
  }
  std::string describeBlock(uint32_t stage) const;

  const SimProgram &program;
  const MachineModel &machine;
  const SimOptions &options;
  /// codecBandwidth(machine).
  double codecRate = 0;
  /// The machine's network levels, innermost first.
  std::vector<NetworkLevel> levels;
  /// A machine of virtual clusters (virtual_clusters_per_cluster K > 1): the
  /// physical clusters of a node the job's virtual clusters share (0: the
  /// clusters are physical) and K.
  double sharedCores = 0;
  double virtualPerCluster = 1;
  /// Shared cores: the share of a core a stage's progress thread takes while
  /// it has communication outstanding (network.progress_core_share).
  double progressShare = 0;
  /// Shared DDR (cluster.ddr_bandwidth_alone given): the node's DDR
  /// bandwidth (clusters_per_node x ddr_bandwidth) and what one physical
  /// cluster streaming alone gets (ddr_bandwidth_alone, times K on a split
  /// machine), bytes/s.
  bool sharedDdr = false;
  double ddrNode = 0;
  double ddrAlone = 0;
  /// Shared DDR on a machine that gives the optimizer's rates (for the
  /// program's gradients, ClusterSpec::optimizerBandwidths): the rate an
  /// update was priced at (optimizer_bandwidth), what one physical
  /// cluster's update gets alone (optimizer_bandwidth_alone, times K) and
  /// what its stream asks of the node's DDR in the triad's bytes
  /// (optimizerAlone x ddr_bandwidth / optimizer_bandwidth: with every
  /// cluster updating, the node's DDR gives each update its
  /// optimizer_bandwidth), bytes/s; 0 without them.
  double optimizerPriced = 0;
  double optimizerAlone = 0;
  double optimizerDemand = 0;
  /// Shared cores or DDR: per stage how many of its clusters one node
  /// holds.
  std::vector<double> stageWeight;
  uint32_t slotsPerStage = 0;

  std::vector<StageState> stages;
  std::vector<Link> links;
  std::vector<Flow> flows;
  std::vector<uint32_t> freeFlows;
  std::vector<Op> ops;
  std::vector<uint32_t> freeOps;
  /// Rendezvous sends issued before their receiver posted the recv, by the
  /// receiving stage and the recv's slot (iteration, task): the op to start
  /// then.
  std::map<std::pair<uint32_t, size_t>, uint32_t> rendezvousWaiting;
  /// Starts the latency of send op `opIndex` now.
  void startSend(uint32_t opIndex);
  std::vector<std::vector<CollectiveStep>> plans;
  std::priority_queue<Event, std::vector<Event>, EventLater> events;
  uint64_t nextSeq = 0;
  uint64_t processed = 0;
  double now = 0;
  std::vector<TraceInterval> trace;
};

} // namespace detail
} // namespace sim
} // namespace ratrain

#endif // RATRAIN_LIB_SIMULATOR_ENGINE_H
