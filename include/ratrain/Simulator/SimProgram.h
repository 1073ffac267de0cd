//===- SimProgram.h - One training iteration, per stage -----*- C++ -*-===//
//
// The simulator's input: for every pipeline stage, the ordered list of tasks
// that one representative cluster of that stage issues during one training
// iteration. Data-parallel replicas of a stage run the same program on
// symmetric hardware, so one cluster per stage stands for all of them; the
// pipeline stages and the dependencies between them are kept in full.
//
// Semantics, per stage (see docs/simulator.md):
// - Tasks are issued in program order by the stage's compute stream.
// - A compute task occupies the stream for its duration.
// - DMA, send and collective tasks are asynchronous: issuing them takes no
//   stream time and returns a Token; the transfer then proceeds on the DMA
//   channels / network links of the cluster. DMA transfers of one channel and
//   collectives of one communication stream run one at a time, in order.
// - A recv blocks the stream until the data of the matching send (same source
//   stage, destination stage and tag) has arrived. A two-sided send under the
//   rendezvous protocol moves its data only once the receiver has reached
//   that recv; a one-sided put (or an eager send) as soon as it is issued.
// - A wait blocks the stream until the awaited async task has completed. A
//   wait may name the *previous* iteration's instance of a task (a loop-carried
//   dependency, e.g. the next forward waiting for the last iteration's gradient
//   synchronization); in the first iteration such a wait is already satisfied.
// - Offload transfers (reload / write-back of offloaded states) are
//   asynchronous too, one at a time on the cluster's offload stream.
// - Alloc/free tasks change the stage's DDR footprint at their issue time.
//
// Plain C++ with LLVM Support; filled by tests, the synthetic 1F1B generator
// and the adapter from the scheduled `ratrain` MLIR module.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_SIMPROGRAM_H
#define RATRAIN_SIMULATOR_SIMPROGRAM_H

#include "ratrain/Machine/Collectives.h"
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Planner/MemoryModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ratrain {
namespace sim {

/// What a compute task does; reports and timelines break busy time down by it.
enum class ComputeKind : uint8_t {
  Forward,
  Backward,
  Recompute,
  Update,
  ViewCast,
  Other
};
constexpr unsigned kNumComputeKinds = 6;
llvm::StringRef stringifyComputeKind(ComputeKind kind);

// Collective kinds and link classes are the machine's vocabulary, shared with
// the planner's cost model (ratrain/Machine/Collectives.h).
using ::ratrain::CollectiveKind;
using ::ratrain::LinkClass;
using ::ratrain::stringifyCollectiveKind;
using ::ratrain::stringifyLinkClass;

/// Kinds of communication the compute stream can be blocked on; exposed
/// (non-overlapped) communication is reported per kind.
enum class CommKind : uint8_t {
  Dma,
  P2P,
  AllReduce,
  ReduceScatter,
  AllGather,
  Offload ///< transfers to / from the offload tier
};
constexpr unsigned kNumCommKinds = 6;
llvm::StringRef stringifyCommKind(CommKind kind);
CommKind getCommKind(CollectiveKind kind);

/// Name of a collective algorithm ("ring", "tree", "hierarchical").
llvm::StringRef stringifyAlgorithm(CollectiveAlgorithm algorithm);

enum class TaskKind : uint8_t {
  Compute,
  Dma,
  Send,
  Recv,
  Collective,
  Wait,
  Alloc,
  Free,
  Offload ///< DDR <-> offload tier (reload or write-back), asynchronous
};
llvm::StringRef stringifyTaskKind(TaskKind kind);

/// Handle of an asynchronous task of one stage (its index in the stage's task
/// list). Only DMA, send and collective tasks produce tokens.
struct Token {
  static constexpr uint32_t kInvalid = ~0u;
  uint32_t task = kInvalid;
  bool isValid() const { return task != kInvalid; }
};

/// A collective over the data-parallel group of a stage.
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::AllReduce;
  /// Full buffer size n per member: the input of all-reduce and reduce-scatter,
  /// the output of all-gather.
  int64_t bytes = 0;
  /// Group size k.
  int64_t groupSize = 1;
  /// Two-level shorthand: members of the group that share a node: k when the
  /// group stays inside one node, 1 when every member is on its own node.
  /// Must divide k. Used when membersPerLevel is not given.
  int64_t membersPerNode = 1;
  /// Members per network level (MachineModel::networkLevels()), innermost
  /// first: membersPerLevel[l] is how many level-(l-1) groups (clusters for
  /// l = 0) of one level-l group the collective's group spans; their product
  /// is k. All zero: not given, the levels come from membersPerNode (the
  /// members of a node at the machine's node level, the rest above it; see
  /// resolveLevels).
  std::array<int64_t, kMaxNetworkLevels> membersPerLevel{};
  /// Copies of this collective that run at the same time inside one
  /// level-l group, on the other groups of a partitioned data-parallel
  /// group (e.g. the g cross-partition gathers of an hpZ secondary
  /// partition of g members): they share the level's injection bandwidth,
  /// so every step's streams[l] is multiplied by it. 0 or 1: none.
  std::array<int64_t, kMaxNetworkLevels> concurrentGroups{};
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  /// Wire format (ZeRO++ qwZ / qgZ): a quantized all-gather or
  /// reduce-scatter sends block-wise int8 / int4 codes with one fp32 scale
  /// per `wireBlock` elements of `elementBytes` bytes (planCollective). All
  /// -reduce has no quantized form and ignores it.
  WireFormat wire = WireFormat::Native;
  int64_t elementBytes = 2;
  int64_t wireBlock = 256;

  bool hasLevels() const { return membersPerLevel[0] > 0; }
  bool quantized() const {
    return wire != WireFormat::Native && kind != CollectiveKind::AllReduce;
  }
  bool spansNodes() const { return membersPerNode < groupSize; }
};

/// Members per level of a data-parallel group of `groupSize` clusters whose
/// ranks lie `stride` clusters apart (member r at r * stride from the
/// group's start; groups of groupSize * stride clusters one after the
/// other), on `machine`'s levels. Where the groups do not split evenly over
/// a level (or straddle its groups), the rest counts at the first level
/// whose groups hold whole groups (the outermost at worst).
std::array<int64_t, kMaxNetworkLevels>
groupLevels(const MachineModel &machine, int64_t groupSize, int64_t stride = 1);

/// `spec` with membersPerLevel filled for `machine` when it is not given:
/// the membersPerNode members of a node at the node's outermost inner level
/// (MachineModel::nodeLevels() - 1), the remaining k / membersPerNode nodes
/// at the level above.
CollectiveSpec resolveLevels(const CollectiveSpec &spec,
                             const MachineModel &machine);

/// One task of a stage program. Which fields are meaningful depends on `kind`.
struct Task {
  TaskKind kind = TaskKind::Compute;
  ComputeKind computeKind = ComputeKind::Other; ///< Compute
  LinkClass link = LinkClass::IntraNode;        ///< Send
  bool previousIteration = false;               ///< Wait
  /// Dma: DMA channel of the cluster; Collective: communication stream.
  uint32_t channel = 0;
  uint32_t peer = 0; ///< Send: destination stage; Recv: source stage.
  uint32_t waitTask = Token::kInvalid; ///< Wait: awaited task index.
  double seconds = 0;                  ///< Compute: duration.
  double flops = 0;          ///< Compute: FLOPs performed (informational).
  int64_t bytes = 0;         ///< Dma, Send, Recv, Alloc, Free.
  uint64_t tag = 0;          ///< Send/Recv matching tag.
  CollectiveSpec collective; ///< Collective
  /// Send: a two-sided message under MPI's rendezvous protocol (above the
  /// eager limit): its data starts moving only once the receiver has reached
  /// the matching recv. Otherwise (a one-sided put, or an eager message) the
  /// data moves as soon as it is sent.
  bool rendezvous = false;
  /// Compute (an update): priced by CostModel::optimizerUpdate, so at
  /// cluster.optimizer_bandwidth (SimProgram::sixteenBitGradients: _f16)
  /// where the machine gives it; the engine then rates it by the
  /// optimizer's own rates alone and together (docs/simulator.md, "Shared
  /// DDR"). Other memory-bound tasks (view casts, view writes) are priced at
  /// ddr_bandwidth x memory_bound.
  bool optimizerStream = false;
  /// Collective: runs only in the iterations i with (i + 1) mod period =
  /// phase (the runtime's steps s = i + 1 with s mod period = phase), and
  /// completes at once, without queueing, in the others. Partial
  /// synchronization (DreamDDP) averages each layer's masters so.
  uint32_t period = 1;
  uint32_t phase = 0;
  /// Whether the task runs in iteration `iteration` (0-based).
  bool runsIn(uint32_t iteration) const {
    return period <= 1 || (iteration + 1) % period == phase;
  }
};

/// The program of one pipeline stage.
class StageProgram {
public:
  StageProgram() = default;
  explicit StageProgram(std::string name) : name(std::move(name)) {}

  /// Display name ("stage 3").
  std::string name;
  /// DDR held for the whole iteration (parameters, gradients, optimizer
  /// state, workspace); alloc/free tasks add to and remove from it.
  int64_t residentBytes = 0;
  /// Peak DDR assigned by buffer assignment, if known (0 = not given);
  /// reported next to the peak the simulator tracks.
  int64_t assignedPeakBytes = 0;
  /// Bytes/s of this stage's offload-tier link when not the machine's
  /// offload.bandwidth (0): the blend of a storage tier and its host cache
  /// for the share of the stage's tier bytes the cache holds.
  double offloadBandwidth = 0;

  /// `optimizerStream`: Task::optimizerStream (an update priced by
  /// CostModel::optimizerUpdate).
  void addCompute(ComputeKind kind, double seconds, double flops,
                  llvm::StringRef label, bool optimizerStream = false);
  Token addDma(int64_t bytes, uint32_t channel, llvm::StringRef label);
  /// `rendezvous`: Task::rendezvous.
  Token addSend(uint32_t toStage, int64_t bytes, uint64_t tag, LinkClass link,
                llvm::StringRef label, bool rendezvous = false);
  void addRecv(uint32_t fromStage, int64_t bytes, uint64_t tag,
               llvm::StringRef label);
  /// Collectives of one stage run one at a time, in issue order, on their
  /// communication stream (as on one NCCL communicator / stream); different
  /// streams run concurrently and share the links.
  /// With `period` > 1 the collective runs only in the iterations of its
  /// `phase` (Task::period).
  Token addCollective(const CollectiveSpec &spec, llvm::StringRef label,
                      uint32_t stream = 0, uint32_t period = 1,
                      uint32_t phase = 0);
  /// Blocks until `token` completes; with `previousIteration`, until the
  /// previous iteration's instance of that task completes.
  void addWait(Token token, bool previousIteration = false,
               llvm::StringRef label = "");
  /// Moves `bytes` between DDR and the machine's offload tier (a reload or a
  /// write-back): FIFO on the cluster's one offload stream, a latency per
  /// chunk (offload.chunk_bytes), bandwidth offload.bandwidth.
  Token addOffloadTransfer(int64_t bytes, llvm::StringRef label);
  void addAlloc(int64_t bytes, llvm::StringRef label);
  void addFree(int64_t bytes, llvm::StringRef label);

  /// Appends a prepared task (the adapter's path); returns its token, valid
  /// only for asynchronous tasks.
  Token add(const Task &task, llvm::StringRef label);
  /// Re-targets the wait at `index` (for loop-carried waits whose producer is
  /// added after the wait).
  void setWaitTarget(size_t index, Token token, bool previousIteration);

  /// Multiplies every compute task's duration by `factor` (> 0): the
  /// program on a host whose kernels run 1 / factor times as fast.
  void scaleCompute(double factor);
  /// The summed duration of the compute tasks of one iteration: the stage's
  /// kernel time with its cluster to itself.
  double computeSeconds() const;
  llvm::ArrayRef<Task> getTasks() const { return tasks; }
  const Task &getTask(size_t index) const { return tasks[index]; }
  llvm::StringRef getLabel(size_t index) const { return labels[index]; }
  size_t size() const { return tasks.size(); }
  void reserve(size_t n) {
    tasks.reserve(n);
    labels.reserve(n);
  }

  /// "task 12 (recv 'act mb3')" for messages.
  std::string describeTask(size_t index) const;

private:
  std::vector<Task> tasks;
  std::vector<std::string> labels;
};

/// One training iteration of the whole job.
struct SimProgram {
  std::string name;
  std::vector<StageProgram> stages;
  /// Data-parallel replicas of the pipeline (each stage runs on this many
  /// clusters). Tensor parallelism, if any, is folded into a stage's cluster
  /// group by the producer; `clustersPerStage` says how many clusters one
  /// stage replica spans.
  int64_t dataParallel = 1;
  int64_t clustersPerStage = 1;
  /// The model's gradients are 16-bit: its updates (Task::optimizerStream)
  /// run at cluster.optimizer_bandwidth_f16 and _alone_f16 where the
  /// machine gives them (ClusterSpec::optimizerBandwidths).
  bool sixteenBitGradients = false;
  /// Clusters of one node that run the same stage (symmetric replicas): their
  /// inter-node sends happen together and share the node's injection
  /// bandwidth (MachineModel::interNodeStreamBandwidth).
  int64_t stageReplicasPerNode = 1;
  /// The job's world ranks replica-major (rank = replica * stages + stage);
  /// otherwise stage-major (rank = stage * dataParallel + replica).
  bool replicaMajor = false;
  /// Tokens (sequence positions) processed per iteration by the whole job.
  double tokensPerIteration = 0;
  /// Model FLOPs per iteration of the whole job (6N per token plus attention,
  /// without recomputation); the numerator of MFU.
  double modelFlopsPerIteration = 0;

  /// The stage world rank `rank` runs (one cluster per stage replica).
  int64_t stageOfRank(int64_t rank) const {
    int64_t numStages = static_cast<int64_t>(stages.size());
    return replicaMajor ? rank % numStages : rank / dataParallel;
  }

  int64_t totalClusters() const {
    return static_cast<int64_t>(stages.size()) * dataParallel *
           clustersPerStage;
  }
  size_t totalTasks() const;
  /// The longest period of a task (Task::period; 1 when every task runs
  /// every iteration): 1 + it iterations see every phase in the steady
  /// state.
  uint32_t longestPeriod() const;
  /// StageProgram::scaleCompute on every stage.
  void scaleCompute(double factor) {
    for (StageProgram &stage : stages)
      stage.scaleCompute(factor);
  }

  /// Checks the program: stage indices in range, each recv matches exactly one
  /// send (and its byte count), tags unique per stage pair, waits name an
  /// asynchronous task (earlier in the stage, or any with previousIteration),
  /// collective groups consistent. Errors name the stage and the task.
  llvm::Error verify() const;
};

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_SIMPROGRAM_H
