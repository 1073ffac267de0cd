//===- Runtime.h - The API an emitted training program calls ----*- C++ -*-===//
//
// One Runtime object per rank. It initializes MPI, builds the pipeline,
// data-parallel and node-local communicators, maps the DDR/GSM/AM arenas of
// exactly the planned capacities, and issues asynchronous collectives,
// point-to-point transfers and DMAs that return Tokens. See docs/runtime.md
// for how each `mt3k` op maps onto these calls.
//
// Threading: all runtime calls are made from one thread (the program's main
// thread). With ProgressMode::Thread a progress thread owns every MPI call
// after start-up and drives outstanding requests while the main thread
// computes; with ProgressMode::Inline requests progress only inside
// runtime calls (test, wait, poll).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_RUNTIME_H
#define RATRAIN_RUNTIME_RUNTIME_H

#include "ratrain/runtime/Arena.h"
#include "ratrain/runtime/Checkpoint.h"
#include "ratrain/runtime/Dma.h"
#include "ratrain/runtime/ElemType.h"
#include "ratrain/runtime/Init.h"
#include "ratrain/runtime/Layout.h"
#include "ratrain/runtime/StepLog.h"
#include "ratrain/runtime/Token.h"
#include "ratrain/runtime/Trace.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ratrain::rt {

class CommEngine;
struct CollectiveShape;
class OffloadStore;
class QuantizedCollectives;
struct QuantizedSpec;

/// Avg is a sum divided by the group size after completion (on the progress
/// thread), in the element type.
enum class ReduceOp : unsigned char { Sum, Avg, Max, Min };
llvm::StringRef stringifyReduceOp(ReduceOp op);

/// The `algorithm` of an mt3k collective, run as the cost model and the
/// simulator count it (lib/Simulator/Collectives.cpp, planCollective):
///   Ring: k-1 rounds (reduce-scatter, all-gather) or 2(k-1) (all-reduce) of
///     n/k to the right neighbour, point-to-point on a private communicator.
///   Tree: binomial tree rooted at group rank 0: reduce + broadcast
///     (all-reduce), reduce + scatter (reduce-scatter), gather + broadcast
///     (all-gather).
///   Hierarchical (Data group): ring reduce-scatter inside the innermost
///     level's group, then inside the next level on the shard, ..., ring
///     all-reduce at the outermost level the group spans, then ring
///     all-gathers back out (reduce-scatter and all-gather: the matching
///     halves), each on the level's sub-communicator. On another group, or
///     when the Data group's members do not split evenly over the levels
///     (group rank = sum of level indices x strides), it runs as Auto.
///   Auto: MPI's own nonblocking collective (counted as a ring).
/// Ring, Tree and Hierarchical reduce in the element type (bf16 and f16
/// added in fp32 and rounded, as the MPI operations do).
enum class CollectiveAlgorithm : unsigned char {
  Auto,
  Ring,
  Tree,
  Hierarchical
};
inline constexpr unsigned kNumAlgorithms = 4;
/// "auto", "ring", "tree" or "hierarchical" (the machine file's names).
llvm::StringRef stringifyCollectiveAlgorithm(CollectiveAlgorithm algorithm);

/// The collectives whose traffic the runtime counts.
enum class CollectiveKind : unsigned char {
  AllReduce,
  ReduceScatter,
  AllGather
};
inline constexpr unsigned kNumCollectiveKinds = 3;
/// The most network levels (innermost first; the outermost joins the rest).
inline constexpr unsigned kMaxLevels = 4;

/// Traffic of this rank's all-reduces, reduce-scatters and all-gathers per
/// kind, algorithm (as run: a hierarchical request that runs as Auto counts
/// under Auto) and network level (the level index of the model's
/// CollectiveStep: the level whose link a round crosses; ring and tree
/// rounds count at the outermost level their group spans).
///  - bytes: per round, the larger of what this rank sends and receives: the
///    model's count of a step (planCollective). Equal to the model for ring
///    and hierarchical on every rank, for tree on the root (group rank 0),
///    whose rounds are the critical path the model charges; other tree
///    ranks count less.
///  - sent: the bytes this rank sent. Equal to `bytes` for ring and
///    hierarchical; for tree, summed over the group it is the tree's total
///    traffic.
/// Auto collectives (MPI's own algorithm) count a ring's traffic in both.
/// The e2e.runtime.collective-levels tests compare them with the model.
struct CollectiveCounters {
  uint64_t bytes[kNumCollectiveKinds][kNumAlgorithms][kMaxLevels] = {};
  uint64_t sent[kNumCollectiveKinds][kNumAlgorithms][kMaxLevels] = {};
  uint64_t get(CollectiveKind kind, CollectiveAlgorithm algorithm,
               unsigned level) const {
    return bytes[unsigned(kind)][unsigned(algorithm)][level];
  }
  uint64_t getSent(CollectiveKind kind, CollectiveAlgorithm algorithm,
                   unsigned level) const {
    return sent[unsigned(kind)][unsigned(algorithm)][level];
  }
};

/// How a reduce-scatter or all-gather encodes its data on the wire
/// (docs/runtime.md, "Quantized collectives"): native elements, or ZeRO++'s
/// block-wise int8 / int4 codes with one fp32 scale per block (qwZ
/// all-gathers, qgZ reduce-scatters).
enum class WireType : unsigned char { Native, Int8, Int4 };
llvm::StringRef stringifyWireType(WireType wire);

/// The most levels of a quantized collective's decomposition.
inline constexpr unsigned kMaxWireLevels = 4;
/// Bytes this rank sent in quantized collectives (codes + scales, no
/// padding), per collective kind, quantized wire type (0: int8, 1: int4) and
/// network level (as in CollectiveCounters: a hierarchical collective counts
/// each phase at its level, a flat one at the outermost level its group
/// spans). Quantized collectives are counted here only, not
/// in CollectiveCounters.
struct WireCounters {
  uint64_t bytes[kNumCollectiveKinds][2][kMaxWireLevels] = {};
  uint64_t get(CollectiveKind kind, WireType wire, unsigned level) const {
    if (wire == WireType::Native || level >= kMaxWireLevels)
      return 0;
    return bytes[unsigned(kind)][wire == WireType::Int4][level];
  }
};

/// Where mt3k.offload puts bytes: host memory outside the arenas, or files.
enum class StorageTier : unsigned char { Host, Storage };

/// How outstanding MPI requests make progress while the program computes.
enum class ProgressMode : unsigned char {
  /// A progress thread issues every MPI call and polls outstanding requests
  /// (MPI_Testsome) every `pollMicros` microseconds; it sleeps on a
  /// condition variable when nothing is outstanding.
  Thread,
  /// No helper thread: requests progress only inside test/wait/poll.
  Inline,
};

/// The progress thread's nice value where RuntimeOptions::progressNice is
/// automatic: 19 where the node's `nodeRanks` ranks have a CPU each (the
/// thread then takes its rank's CPU while the rank waits, and little of it
/// while the rank computes), 0 where ranks share CPUs (a waiting rank's
/// progress thread competes with the other ranks computing on its CPU; at a
/// lower priority its messages stall: 4 ranks on 2 CPUs ran 2-4% slower at
/// nice 10 than at 0 in the slower of two measurements, docs/runtime.md).
int automaticProgressNice(int nodeRanks, long nodeCpus);

struct RuntimeOptions {
  int pp = 1;
  int dp = 1;
  /// Environment: RATRAIN_RANK_ORDER=stage-major|replica-major.
  RankOrder rankOrder = RankOrder::StageMajor;
  /// Planned arena capacities per rank, in bytes.
  uint64_t ddrBytes = 0;
  uint64_t gsmBytes = 0;
  uint64_t amBytes = 0; ///< Per core.
  int cores = 1;        ///< Accelerator cores (each has its own AM).
  int dmaChannels = 20; ///< Valid `channel` numbers of dma().
  /// Usable DDR of one cluster; a plan whose ddrBytes exceed it is rejected
  /// at start-up. 0 = unlimited. Environment: RATRAIN_DDR_LIMIT_BYTES.
  uint64_t ddrLimitBytes = 0;
  /// Arena alignment (a power of two).
  uint64_t arenaAlignment = 64;
  /// Environment: RATRAIN_PROGRESS=thread|inline.
  ProgressMode progress = ProgressMode::Thread;
  /// Polling interval of the progress thread. Env: RATRAIN_PROGRESS_POLL_US.
  unsigned pollMicros = 20;
  /// Nice value (0..19) of the progress thread; -1 = automatic
  /// (`automaticProgressNice`). At the compute thread's priority the progress
  /// thread, woken at every submission and every polling interval, preempts
  /// its rank's kernels on their shared CPU (docs/runtime.md, "Tokens,
  /// progress and overlap"). Environment: RATRAIN_PROGRESS_NICE.
  int progressNice = -1;
  /// Whether the compute thread runs progress passes between kernels while
  /// communication is outstanding (CommEngine::assist, thread mode): -1 =
  /// automatic (where the progress thread runs below its rank's priority,
  /// which gives it no CPU while the rank computes), 0 = never, 1 = always.
  /// Environment: RATRAIN_PROGRESS_ASSIST=auto|0|1.
  int progressAssist = -1;
  /// An operation outstanding longer than this is a fatal error (a peer is
  /// dead or hung). Environment: RATRAIN_COMM_TIMEOUT_S.
  double commTimeoutSeconds = 300;
  /// The watchdog limit of the collectives inside checkpoint save and load,
  /// which wait while other ranks write or read whole shards. Environment:
  /// RATRAIN_CHECKPOINT_TIMEOUT_S.
  double checkpointTimeoutSeconds = 3600;
  /// DMA helper threads; 0 = synchronous copies. Env: RATRAIN_DMA_THREADS.
  unsigned dmaThreads = 1;
  /// When > 0, "nodes" are blocks of this many consecutive world ranks
  /// instead of what MPI_Comm_split_type reports: lets one machine test the
  /// hierarchical paths. Environment: RATRAIN_RANKS_PER_NODE (the shorthand
  /// of levels = {ranksPerNode}).
  int ranksPerNode = 0;
  /// Emulated network levels: the group sizes of the inner levels, innermost
  /// first (level 0 groups levels[0] consecutive world ranks, level 1 groups
  /// levels[1] level-0 groups, ...); the outermost level is the rest, and the
  /// last inner level is the node. Empty: ranksPerNode, or else one inner
  /// level, the node MPI_Comm_split_type reports. At most kMaxLevels - 1.
  /// Environment: RATRAIN_LEVELS=2,2 (2 per chip, 2 chips per node).
  std::vector<int> levels;
  /// Elements per block (one scale each) of quantized collectives.
  /// Environment: RATRAIN_QUANT_BLOCK.
  uint64_t quantBlockSize = 256;
  /// Hierarchical partitioning (docs/runtime.md, "Partition groups"): this
  /// rank owns block shardIndex() = partitionIndex() of every ZeRO shard
  /// instead of block dpIndex(). Set by programs that use the DataInsideL /
  /// DataAcrossL groups.
  bool partitionedShards = false;
  /// One-sided pipeline transfers (docs/runtime.md, "One-sided transfers"):
  /// every rank's DDR arena is an MPI window over its pipeline group, next to
  /// a window of completion counters (one per tag), both under a passive-
  /// target epoch for the whole run; putToStage and arrivalFromStage use
  /// them. Set by programs whose sends are puts.
  bool oneSidedPipeline = false;
  /// Size of the token pool: the most operations outstanding at once.
  uint32_t maxOutstanding = 4096;
  /// Directory of the storage tier of offload(). Environment:
  /// RATRAIN_OFFLOAD_DIR. Default: $TMPDIR (or /tmp)/ratrain-offload-<pid>.
  std::string offloadDirectory;
  /// Bytes of host memory that cache storage-tier keys (whole keys, first
  /// come, first served; 0: none): the compiled machine's
  /// `offload.host_cache_bytes_per_node` / clusters per node, or
  /// RATRAIN_OFFLOAD_HOST_CACHE_BYTES.
  uint64_t offloadHostCacheBytes = 0;

  /// Overrides fields from the RATRAIN_* environment variables above; a
  /// malformed value is fatal and names the variable.
  void applyEnvironment();
};

class Runtime {
public:
  /// Initializes MPI (MPI_THREAD_MULTIPLE requested; SERIALIZED is the least
  /// the progress thread needs), checks world size == pp * dp, builds the
  /// communicators (MPI_ERRORS_RETURN on all of them), maps the arenas and
  /// starts the progress and DMA threads. Any failure is fatal. Applies the
  /// environment to `options` first.
  Runtime(int &argc, char **&argv, RuntimeOptions options);
  /// Waits for nothing: fatal if operations are still outstanding, then stops
  /// the helper threads, frees the communicators and finalizes MPI.
  ~Runtime();
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  //===--- Layout ---------------------------------------------------------===//
  const Layout &layout() const { return grid; }
  int rank() const { return worldRank; }
  int worldSize() const { return grid.worldSize(); }
  int stage() const { return grid.stageOf(worldRank); }
  int dpIndex() const { return grid.dpIndexOf(worldRank); }
  int numStages() const { return grid.pp; }
  int dpSize() const { return grid.dp; }
  bool isFirstStage() const { return stage() == 0; }
  bool isLastStage() const { return stage() == grid.pp - 1; }
  int groupSize(Group group) const;
  int groupRank(Group group) const;
  const RuntimeOptions &options() const { return opts; }

  //===--- Memory ---------------------------------------------------------===//
  Arena &ddr() { return *ddrArena; }
  Arena &gsm() { return *gsmArena; }
  /// All cores' AM: core c's AM is [c * amBytes, (c + 1) * amBytes).
  Arena &am() { return *amArena; }
  /// `bytes` at `offset` of core `core`'s AM; fatal when outside that
  /// core's AM.
  Buffer amBuffer(int core, uint64_t offset, uint64_t bytes);
  Arena &arena(MemorySpace space);
  /// Bounds-checked view of an arena (capacity violations are fatal).
  Buffer buffer(MemorySpace space, uint64_t offset, uint64_t bytes) {
    return arena(space).buffer(offset, bytes);
  }

  //===--- Collectives (all ranks of the group call them in the same order)
  //===//
  /// In-place all-reduce of `data` (count = bytes / element size).
  Token allReduce(Group group, Buffer data, ElemType type,
                  ReduceOp op = ReduceOp::Sum) {
    return allReduce(group, data, data, type, op);
  }
  /// All-reduce of `src` into `dst` (the same buffer: in place; otherwise of
  /// equal size).
  Token allReduce(Group group, Buffer src, Buffer dst, ElemType type,
                  ReduceOp op,
                  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto);
  /// Reduces `send` (groupSize x recv.bytes) and leaves block groupRank in
  /// `recv`. A quantized `wire` (f32 / bf16 / f16, sum or avg) runs ZeRO++'s
  /// qgZ: per level of `algorithm`'s decomposition, innermost first, the
  /// chunks are quantized, exchanged all-to-all, decoded and summed in fp32.
  /// With `leaveOwn` (a ring over more than one rank, native wire, sum or
  /// avg) the last reduction is left to the consumer: `recv` receives the
  /// sum of the other members' contributions to this rank's block,
  /// undivided, and this rank's own (its block of `send`) is not added; the
  /// update adds it and divides an average (kernels::adamwAveraged), so the
  /// shard is not read and written once more in between.
  Token reduceScatter(Group group, Buffer send, Buffer recv, ElemType type,
                      ReduceOp op = ReduceOp::Sum,
                      CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto,
                      WireType wire = WireType::Native, bool leaveOwn = false);
  /// Gathers every rank's `send` into `recv` (groupSize x send.bytes) in
  /// group-rank order.
  Token allGather(Group group, Buffer send, Buffer recv,
                  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto);
  /// The same of `type` elements; a quantized `wire` (f32 / bf16 / f16) runs
  /// ZeRO++'s qwZ: each rank's block is quantized once, the codes and
  /// scales are gathered over `algorithm`'s decomposition (outermost level
  /// first) and decoded into `recv`.
  Token allGather(Group group, Buffer send, Buffer recv, ElemType type,
                  CollectiveAlgorithm algorithm,
                  WireType wire = WireType::Native);
  /// Broadcasts `data` from group rank `root`.
  Token broadcast(Group group, Buffer data, int root);
  Token barrier(Group group);
  /// Traffic of this rank's all-reduces, reduce-scatters and all-gathers
  /// since start-up (or the last reset), per kind, algorithm and level (a
  /// snapshot; rounds of collectives still in flight may be in it).
  CollectiveCounters collectiveCounters() const;
  void resetCollectiveCounters();
  /// Bytes sent by this rank's quantized collectives (a snapshot; reset with
  /// resetCollectiveCounters()).
  WireCounters quantizedCounters() const;
  /// Whether `group`'s members lie on more than one node.
  bool groupSpansNodes(Group group) const;
  /// Network levels (inner levels plus the outermost one).
  int numLevels() const { return levelCount; }
  /// The outermost level `group` spans: its members lie in different groups
  /// of the level below it (0: inside one level-0 group).
  int groupOuterLevel(Group group) const;
  /// Members of the Data group per level: how many level-(l-1) groups of one
  /// level-l group it spans (1 on levels it does not span), and this rank's
  /// index among them. Their product is the Data group's size when
  /// dataLevelsRegular().
  int dataLevelMembers(int level) const;
  int dataLevelIndex(int level) const;
  /// Whether the Data group runs hierarchical collectives: every level
  /// splits it evenly and dp index = sum of level index x stride.
  bool dataLevelsRegular() const { return hierarchicalData; }
  /// This rank's digit-reversed position in the Data group: sum over the
  /// levels of its level index x the members of the levels above (the
  /// innermost digit most significant); its dp index without a regular
  /// hierarchy. The partition groups rank their members by it.
  int partitionIndex() const { return reversedIndex; }
  /// The block of every ZeRO shard this rank owns: partitionIndex() when
  /// RuntimeOptions::partitionedShards, else dpIndex().
  int shardIndex() const {
    return opts.partitionedShards ? reversedIndex : dpIndex();
  }

  //===--- Point-to-point
  //---------------------------------------------------===//
  /// Sends `data` to group rank `peer` with `tag` (0 <= tag < 32768).
  Token send(Group group, int peer, int tag, Buffer data);
  Token recv(Group group, int peer, int tag, Buffer data);
  /// Activations and gradients between pipeline stages of this replica.
  Token sendToStage(int peerStage, int tag, Buffer data) {
    return send(Group::Pipeline, peerStage, tag, data);
  }
  Token recvFromStage(int peerStage, int tag, Buffer data) {
    return recv(Group::Pipeline, peerStage, tag, data);
  }
  /// One-sided (RuntimeOptions::oneSidedPipeline): writes `data` into the DDR
  /// arena of pipeline stage `peerStage` at byte `targetOffset`, then adds 1
  /// to that stage's completion counter of `tag` (0 <= tag < 32768). Nothing
  /// waits for the peer; the token completes once both reached its memory.
  /// The compiler has proven that the peer no longer uses those bytes.
  Token putToStage(int peerStage, int tag, Buffer data, uint64_t targetOffset);
  /// Completes once a put of `peerStage` with `tag` has landed in `data` (a
  /// buffer of this rank's DDR arena); each call consumes one such put.
  Token arrivalFromStage(int peerStage, int tag, Buffer data);
  /// A synchronization token between ranks: a zero-byte message. signal()
  /// completes when sent, awaitSignal() when the peer's signal arrived.
  Token signal(Group group, int peer, int tag) {
    return send(group, peer, tag, Buffer{});
  }
  Token awaitSignal(Group group, int peer, int tag) {
    return recv(group, peer, tag, Buffer{});
  }

  //===--- DMA ------------------------------------------------------------===//
  /// `channel` (optional, < RuntimeOptions::dmaChannels) mirrors mt3k.dma's
  /// channel pinning; on the host every channel shares the helper threads.
  Token dma(Buffer dst, Buffer src, int channel = -1) {
    checkChannel(channel);
    return dmaEngine->copy(dst, src);
  }
  Token dma2d(Buffer dst, uint64_t dstPitch, Buffer src, uint64_t srcPitch,
              uint64_t rowBytes, uint64_t rows) {
    return dmaEngine->copy2d(dst, dstPitch, src, srcPitch, rowBytes, rows);
  }

  //===--- Offload (activation offloading to host memory or storage) -----===//
  /// Copies `src` out of the arenas under `key` (host memory, or a file in
  /// RuntimeOptions::offloadDirectory). The first offload of a key allocates
  /// its host copy; later ones reuse it (the size must stay the same). A
  /// host-tier key `<parent>@<byte offset>` (a piece of a state streamed in
  /// chunks) names those bytes of `<parent>`'s copy, which grows to hold
  /// them (grow it only while no copy of `<parent>` is in flight); reload()
  /// reads them back and offloadedCopy(`<parent>`) holds every piece.
  Token offload(Buffer src, StorageTier tier, llvm::StringRef key);
  /// Copies the bytes offloaded under `key` into `dst` (same size); fatal
  /// when nothing was offloaded under `key`.
  Token reload(Buffer dst, StorageTier tier, llvm::StringRef key);
  /// The host copy of the bytes offloaded under `key`, valid until the
  /// Runtime is destroyed: checkpoints of offloaded states read and write it
  /// between steps. For the storage tier a staging copy of the key's file
  /// (or of the files of its pieces `<key>@<offset>`), allocated on the first
  /// call: stageOffloadedStates fills it before a save, and
  /// unstageOffloadedStates writes it back after a load. Fatal for a key
  /// nothing was offloaded under.
  Buffer offloadedCopy(StorageTier tier, llvm::StringRef key);
  /// Storage-tier checkpoints: waits for the files' transfers, then reads
  /// every staged key's file(s) into its staging copy (before a save) or
  /// writes the staging copy into them (after a load). A key in the
  /// storage tier's host cache has no staging copy: its memory is the copy.
  void stageOffloadedStates();
  void unstageOffloadedStates();
  /// Waits for every storage-tier transfer (before the copies are written
  /// by a load).
  void waitOffloadedStates();

  //===--- Completion -----------------------------------------------------===//
  /// True when the operation finished (releases the token).
  bool test(Token token);
  /// Blocks until the operation finished. Waiting longer than the
  /// communication timeout is fatal and names the operation.
  void wait(Token token);
  void waitAll(llvm::ArrayRef<Token> tokens);
  void waitAll(std::initializer_list<Token> tokens) {
    waitAll(llvm::ArrayRef<Token>(tokens.begin(), tokens.size()));
  }
  /// Drives outstanding communication once; the emitted program's kernels
  /// call it after each call. With ProgressMode::Inline the only progress
  /// between waits; with the progress thread a pass on this thread where
  /// RuntimeOptions::progressAssist says so and communication is
  /// outstanding (its time counts with the waits), else a no-op.
  void poll();

  //===--- Small blocking helpers (control plane, not the step path) ------===//
  /// Minimum over the world of `value` (e.g. "did every rank succeed").
  int64_t allReduceMin(int64_t value);
  /// Gathers one double per rank, in world-rank order, on every rank.
  std::vector<double> allGatherDoubles(double value);
  /// Gathers two doubles per rank: result[2 * rank], result[2 * rank + 1].
  std::vector<double> allGatherDoublePairs(double first, double second);
  /// Gathers values.size() doubles per rank (the same count on every rank):
  /// result[values.size() * rank + i].
  std::vector<double> allGatherDoubleTuples(llvm::ArrayRef<double> values);

  //===--- Checkpoints and step logs (collective: every rank calls them)
  //---===//
  /// Saves a checkpoint of `state.step` under `root` (a directory all ranks
  /// see): rank 0 creates the staging directory; the dp-index-0 rank of every
  /// stage writes its stage's model and optimizer shards from `slots` (its
  /// own parameters); after all succeed rank 0 writes the indexes and
  /// trainer_state.json and renames the staging directory into place. Any
  /// failure on any rank removes the staging directory, leaves existing
  /// checkpoints untouched and returns an error on every rank.
  llvm::Error saveCheckpoint(llvm::StringRef root, const ModelConfig &model,
                             const StagePartition &partition,
                             const TrainerState &state,
                             llvm::ArrayRef<ParamSlot> slots);
  /// Loads this rank's `slots` from `path` (a step directory or a root with a
  /// `latest` file) after validating the model shape; fails on every rank if
  /// it fails on any. Returns the trainer state (step, data position, seed).
  llvm::Expected<TrainerState> loadCheckpoint(llvm::StringRef path,
                                              const ModelConfig &model,
                                              llvm::ArrayRef<ParamSlot> slots);
  /// Loads this rank's `slots` from the HuggingFace model directory
  /// `directory` (loadPretrained, HFDirectory.h); fails on every rank if it
  /// fails on any.
  llvm::Error loadPretrained(llvm::StringRef directory,
                             const ModelConfig &model,
                             llvm::ArrayRef<ParamSlot> slots);
  /// Logs one step: gathers every rank's peak DDR arena bytes and the loss
  /// (pass the loss on last-stage ranks, NaN elsewhere; rank 0 logs the mean
  /// over the last stage's replicas) and writes through `logger` on rank 0
  /// (`logger` may be null elsewhere). `tokens` counts the whole job's tokens
  /// of this step. With `times` (this rank's step time split; every rank
  /// passes it or none does) the same collective gathers every rank's split
  /// into the record. `lr` and `gradNorm` (the global gradient norm of a
  /// clipped step, the same on every rank) are logged when finite. Returns
  /// the logged loss on every rank.
  double logStep(StepLogger *logger, uint64_t step, uint64_t totalSteps,
                 double loss, double tokens, double seconds,
                 const StepTimeSplit *times = nullptr, double lr = NAN,
                 double gradNorm = NAN);

  /// This rank's kernel and wait time accumulators (StepLog.h), fed by the
  /// emitted program's helpers and taken once per step by Session::endStep.
  StepTimers &stepTimers() { return timers; }
  /// The CPU seconds this rank's progress thread used since the last call
  /// (or since start-up); 0 in inline progress mode.
  double takeProgressCpuSeconds();

  /// This rank's per-op trace recorder (Trace.h), fed by the emitted
  /// program's helpers, the token pool and the session.
  Tracer &tracer() { return traceRecorder; }
  /// Heterogeneous-machine emulation (--emulate-classes; docs/runtime.md,
  /// "Heterogeneous clusters"): the kernels of every span of work the
  /// emitted program brackets (traceBegin / traceEnd: one compute op of the
  /// schedule) take `slowdown` times as long, the rank sleeping (slowdown -
  /// 1) times the span's kernel time at its end (waits inside the span are
  /// not scaled). 1 (the default): no emulation.
  void setEmulatedSlowdown(double slowdown);
  double emulatedSlowdown() const { return slowdownFactor; }
  void beginEmulatedSpan() {
    if (slowdownFactor > 1)
      emulatedSpanKernel = stepTimers().kernelSoFar();
  }
  void endEmulatedSpan();
  /// The completion tokens of this rank's asynchronous operations.
  TokenPool &tokenPool() { return *pool; }
  /// Collective over the world: gathers every rank's recorded events and
  /// writes them to `path` as one Chrome/Perfetto trace (rank 0, atomically;
  /// fatal on failure). Timestamps count from the earliest rank's first
  /// traced step (steady_clock: one clock for the ranks of a host).
  void writeTrace(llvm::StringRef path, llvm::StringRef program);

  /// The runtime in this process, or null.
  static Runtime *current();

private:
  void checkChannel(int channel) const;
  /// send (isSend) or recv: checks peer and tag, issues the transfer.
  Token pointToPoint(bool isSend, Group group, int peer, int tag, Buffer data);
  /// Fatal unless one-sided transfers are on and `peerStage` and `tag` are
  /// valid for one.
  void checkPutPeer(int peerStage, int tag, const char *what) const;
  /// Watchdog limit given to operations issued now (negative: default).
  double issueTimeout = -1;
  friend class ScopedIssueTimeout;

  RuntimeOptions opts;
  Layout grid;
  int worldRank = 0;
  /// Cached at start-up: with the progress thread, the main thread makes no
  /// MPI calls.
  int groupSizes[kNumGroups] = {};
  int groupRanks[kNumGroups] = {};
  bool groupSpans[kNumGroups] = {};
  int levelCount = 2;
  int groupOuterLevels[kNumGroups] = {};
  int dataMembers[kMaxLevels] = {1, 1, 1, 1};
  int dataIndex[kMaxLevels] = {};
  /// See dataLevelsRegular().
  bool hierarchicalData = false;
  /// See partitionIndex().
  int reversedIndex = 0;
  /// The Data levels (more than one member) a hierarchical collective on
  /// `group` runs over, innermost first: all of them on the Data group,
  /// levels 0..L inside level L, the levels above L across it.
  llvm::SmallVector<int, kMaxLevels> dataLevelsOf(Group group) const;
  /// Fatal when `group` is a partition group and the Data group's levels
  /// are irregular.
  void checkPartitionGroup(Group group, const char *what) const;
  /// Whether an all-gather's `send` is this rank's block of `recv` (in
  /// place); fatal when the two overlap otherwise.
  bool checkGatherOverlap(Group group, Buffer send, Buffer recv,
                          const char *what) const;
  /// Quantized collectives' wire bytes (counted when issued).
  WireCounters wireCounters;
  /// Issues a quantized collective (QuantizedCollectives.cpp).
  Token submitQuantized(const QuantizedSpec &spec, const char *what);
  std::unique_ptr<QuantizedCollectives> quantized;
  /// Per group: explicit collectives issued (the tag of the next one).
  uint32_t explicitIssued[kNumGroups] = {};
  /// Adds an Auto collective's ring traffic on `group` to the counters.
  void countFlat(CollectiveKind kind, Group group, uint64_t bytes);
  /// Fills `shape` to run `kind` with `algorithm` as point-to-point rounds
  /// on `group` (`count` elements of `elemBytes` per member block); false
  /// when it must run as Auto (see CollectiveAlgorithm).
  bool makeShape(CollectiveShape &shape, CollectiveKind kind, Group group,
                 CollectiveAlgorithm algorithm, uint64_t count,
                 unsigned elemBytes) const;
  std::unique_ptr<TokenPool> pool;
  std::unique_ptr<CommEngine> comm;
  std::unique_ptr<DmaEngine> dmaEngine;
  std::unique_ptr<Arena> ddrArena, gsmArena, amArena;
  std::optional<TokenPool::Clock::time_point> firstLogStart;
  StepTimers timers;
  /// The progress thread's CPU clock at the last takeProgressCpuSeconds().
  int64_t progressCpuTaken = 0;
  double slowdownFactor = 1;
  std::chrono::steady_clock::duration emulatedSpanKernel{};
  Tracer traceRecorder;
  std::unique_ptr<OffloadStore> offloads;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_RUNTIME_H
