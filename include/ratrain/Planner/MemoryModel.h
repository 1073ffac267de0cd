//===- MemoryModel.h - Per-stage memory of a plan --------------*- C++ -*-===//
//
// How many bytes of one compute cluster's DDR a pipeline stage needs under
// non-interleaved 1F1B with data parallelism and optional ZeRO-1/2 sharding:
// the standard mixed-precision Adam accounting (16 bytes/param: 16-bit view
// 2, 16-bit gradient 2, FP32 master 4, Adam m 4, v 4; Rajbhandari et al.,
// arXiv 1910.02054) and the activation sizes of Korthikanti et al. (arXiv
// 2205.05198): per layer and micro-batch sbh(34 + 5as/h) bytes without
// recompute, 34sbh with selective recompute, 2sbh with full recompute; stage
// i of p holds min(p - i, m) micro-batches in flight (Narayanan et al., arXiv
// 2104.04473). The accounting is policy-aware (MemoryOptions::lifecycle:
// a GPU-style runtime keeps a whole-stage FP32 gradient buffer, 18
// bytes/param, and a whole-stage optimizer workspace) and knows optimizer-
// state offload to the machine's offload tier (ParallelConfig::offload).
// Plain C++ (LLVM Support only), shared by the planner, the
// lifecycle scheduler, the simulator and the runtime's arena sizing.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_PLANNER_MEMORYMODEL_H
#define RATRAIN_PLANNER_MEMORYMODEL_H

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/ModelConfig.h"
#include "ratrain/Schedule/PipelineSchedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ratrain {

/// What a stage keeps of a layer's forward activations for backward.
enum class RecomputePolicy {
  None,      ///< keep everything: sbh(34 + 5as/h) bytes per layer
  Selective, ///< recompute attention scores/softmax: 34sbh bytes per layer
  Full,      ///< keep only the layer input, recompute the layer: 2sbh bytes
};
llvm::StringRef stringifyRecomputePolicy(RecomputePolicy policy);
/// Parses "none", "selective", "full".
std::optional<RecomputePolicy> parseRecomputePolicy(llvm::StringRef name);

/// How optimizer state and gradients are sharded across the data-parallel
/// group of d clusters (ZeRO stages 1 to 3).
enum class ZeroStage {
  None = 0,      ///< replicated: 16 bytes/param
  Optimizer = 1, ///< master + Adam m, v sharded: 4 + 12/d bytes/param
  /// Also gradients sharded: 2 + 14/d bytes/param with one micro-batch;
  /// with m > 1 the full gradients accumulate until the last backward:
  /// 4 + 14/d (see StageMemory::gradients).
  Gradients = 2,
  /// Also the 16-bit parameter views sharded: w/d + 14/d bytes/param
  /// persistent (gradients as ZeRO-2), plus the transient full views of the
  /// two layers gathered at a time (one read by the running compute, the
  /// next one's being gathered).
  Parameters = 3,
};
/// "0", "1", "2", "3".
llvm::StringRef stringifyZeroStage(ZeroStage stage);
/// Parses "0".."3" (also "zero0".."zero3", "none").
std::optional<ZeroStage> parseZeroStage(llvm::StringRef name);

/// How a data-parallel collective encodes its data on the wire: native
/// elements, or ZeRO++'s block-wise int8 / int4 codes with one fp32 scale per
/// block (qwZ weight all-gathers, qgZ gradient reduce-scatters).
enum class WireFormat : uint8_t { Native, Int8, Int4 };
/// "native", "int8", "int4".
llvm::StringRef stringifyWireFormat(WireFormat wire);
std::optional<WireFormat> parseWireFormat(llvm::StringRef name);
/// Bytes one element costs on the wire with `block` elements per scale
/// (elemBytes for native elements).
double wireBytesPerElement(WireFormat wire, int64_t elemBytes,
                           int64_t block = 256);

/// Hierarchical partitioning of ZeRO state over the machine's network levels
/// (docs/schedule.md, "Partitioning"; level 0 is the innermost).
///  - weightLevel (ZeRO-3): hpZ-style secondary weight partition: the
///    data-parallel members sharing a level-L group keep, for the step, the
///    layer's view partitioned over that group only; the first use gathers
///    the primary 1/dp shard across level-L groups into it, every use gathers
///    it inside the group. -1: every gather spans the whole group.
///  - gradLevel (ZeRO >= 2): after its last micro-batch a layer's gradient
///    is reduce-scattered inside the level-L group into a partition of 1/g_L,
///    which is then reduce-scattered across the level-L groups into the 1/dp
///    shard (as the lowering places them). -1: one reduce-scatter over the
///    whole group.
///  - weightWire / gradWire: the wire format of the weight all-gathers and
///    of the gradient reduce-scatters.
struct ShardingPolicy {
  int64_t weightLevel = -1;
  int64_t gradLevel = -1;
  WireFormat weightWire = WireFormat::Native;
  WireFormat gradWire = WireFormat::Native;
  bool operator==(const ShardingPolicy &other) const {
    return weightLevel == other.weightLevel && gradLevel == other.gradLevel &&
           weightWire == other.weightWire && gradWire == other.gradWire;
  }
  bool operator!=(const ShardingPolicy &other) const {
    return !(*this == other);
  }
  bool isDefault() const { return *this == ShardingPolicy(); }
  /// " weight-partition=L grad-partition=L weight-wire=W grad-wire=W", each
  /// only when not at its default; "" for the default policy.
  std::string describe() const;
};
/// The named policies on a machine with `levels` network levels (>= 1):
/// "flat" (the default), "zero++" (weights at the node level, the outermost
/// inner level, gradients over the whole group per micro-batch) and
/// "three-level" (seed 002: weights at level 0, gradients at the node
/// level). std::nullopt for an unknown name or a policy the levels cannot
/// express (zero++ and three-level need two levels).
std::optional<ShardingPolicy> shardingPreset(llvm::StringRef name,
                                             int64_t levels);

/// Clusters in one group of each of `machine`'s network levels, innermost
/// first (MachineModel::clustersPerGroup; the outermost is the whole
/// machine).
llvm::SmallVector<int64_t, 4> levelGroupClusters(const MachineModel &machine);

/// g_L: the data-parallel members of one stage's group (dataParallel
/// contiguous clusters from a multiple of dataParallel, as the placement
/// cluster id = stage * dp + replica gives) inside one level-`level` group
/// of clusters, with `levelClusters` as levelGroupClusters gives them.
/// dataParallel for level -1 (no partition), the outermost level or levels
/// the table does not know; the gcd of the level's group and the
/// data-parallel width when neither divides the other (the group straddles
/// the level; see isRegularPartitionLevel).
int64_t partitionGroupMembers(llvm::ArrayRef<int64_t> levelClusters,
                              int64_t dataParallel, int64_t level);
/// Whether the data-parallel groups of `dataParallel` clusters split evenly
/// over the level-`level` groups (one divides the other).
bool isRegularPartitionLevel(llvm::ArrayRef<int64_t> levelClusters,
                             int64_t dataParallel, int64_t level);

/// When gradient sync, update and view re-materialization run (the
/// scheduling policies RATrain compares; see CostModel.h). The memory model
/// depends on it too: a GPU-style runtime keeps whole-stage FP32 gradient
/// buffers and optimizer temporaries.
enum class LifecyclePolicy {
  /// Whole-model phases at the iteration boundary: all gradient syncs after
  /// the last backward, then all updates, then all view casts (and ZeRO
  /// all-gathers); nothing overlapped. Memory: FP32 gradient buffer of the
  /// whole stage (18 bytes/param) and a whole-stage optimizer workspace.
  GpuStyle,
  /// Layer-level lifecycle: a layer's sync is issued when its last backward
  /// finishes and overlaps the remaining backward; its update and view
  /// re-materialization follow as soon as the sync completes; only what is
  /// not hidden before the layer's next forward is exposed. Memory: 16
  /// bytes/param, gradient buffers of the in-flight layers only.
  RATrain,
};
llvm::StringRef stringifyLifecyclePolicy(LifecyclePolicy policy);
/// Parses "gpu-style" and "ratrain".
std::optional<LifecyclePolicy> parseLifecyclePolicy(llvm::StringRef name);

/// Which model states live in the machine's offload tier (host memory or
/// storage, `offload:` in the machine file) between updates. Offloaded
/// states leave DDR except a double-buffered streaming window of two
/// update items (a decoder layer, the embedding or the head); each
/// iteration reloads them for the update and writes them back.
enum class OffloadPolicy {
  None,
  OptimizerStates,    ///< Adam m and v (8 bytes/param, /d with ZeRO)
  MasterAndOptimizer, ///< also the FP32 master (12 bytes/param, /d)
};
/// "none", "optimizer", "master".
llvm::StringRef stringifyOffloadPolicy(OffloadPolicy policy);
/// Parses "none", "optimizer" (or "optimizer-states"), "master" (or
/// "master-and-optimizer").
std::optional<OffloadPolicy> parseOffloadPolicy(llvm::StringRef name);

/// How pipeline messages travel between ranks (docs/schedule.md, "One-sided
/// transfers"): matched send and receive (the data moves once the receiver
/// has posted its receive), or a put straight into the receiver's reserved
/// receive buffer with a completion counter (the data moves when sent).
enum class TransferPolicy { TwoSided, OneSided };
/// "two-sided", "one-sided".
llvm::StringRef stringifyTransferPolicy(TransferPolicy policy);
/// Parses "two-sided" or "one-sided".
std::optional<TransferPolicy> parseTransferPolicy(llvm::StringRef name);

/// The decoder layers one pipeline stage owns: [firstLayer, firstLayer+count).
struct StageLayers {
  int64_t firstLayer = 0;
  int64_t numLayers = 0;
  int64_t endLayer() const { return firstLayer + numLayers; }
  bool operator==(const StageLayers &other) const {
    return firstLayer == other.firstLayer && numLayers == other.numLayers;
  }
};

/// A data-parallel x pipeline-parallel training configuration. Cluster
/// placement: cluster id = stage * dataParallel + replica, so a stage's DP
/// group is `dataParallel` contiguous clusters (replica * pipelineStages +
/// stage with replicaMajor). The token embedding lives on
/// stage 0, the final RMSNorm and the LM head on stage pipelineStages-1.
struct ParallelConfig {
  int64_t pipelineStages = 1;  ///< p
  int64_t dataParallel = 1;    ///< d
  int64_t microBatchSize = 1;  ///< b, sequences per micro-batch
  int64_t numMicroBatches = 1; ///< m, per iteration and pipeline
  /// One entry per stage, contiguous, covering all layers; uneven allowed.
  std::vector<StageLayers> stages;
  /// One entry per stage.
  std::vector<RecomputePolicy> recompute;
  ZeroStage zero = ZeroStage::None;
  /// Partition levels and wire formats of the ZeRO collectives.
  ShardingPolicy sharding;
  /// Model states kept in the machine's offload tier.
  OffloadPolicy offload = OffloadPolicy::None;
  /// The pipeline schedule and its virtual stages (model chunks) per rank.
  /// With virtualStages > 1, `stages` and `recompute` have one entry per
  /// virtual stage (p * v, in model order).
  schedule::ScheduleKind schedule = schedule::ScheduleKind::OneFOneB;
  int64_t virtualStages = 1;
  /// Global gradient-norm clipping (0: none): every update of the step
  /// waits for the norm over all stages and replicas (docs/schedule.md,
  /// "Gradient clipping").
  double maxGradNorm = 0;
  /// How the pipeline's messages travel between ranks.
  TransferPolicy transfers = TransferPolicy::TwoSided;
  /// Layer-wise partial synchronization (DreamDDP; docs/schedule.md,
  /// "Partial synchronization"): 1 all-reduces every gradient every step;
  /// H > 1 updates each replica with its own gradient and averages each
  /// layer's fp32 masters once every H steps, the layers spread over the H
  /// phases (assignSyncPhases). Needs ZeRO-0, no clipping and the masters in
  /// DDR (offload of the optimizer states only).
  int64_t syncPeriod = 1;
  /// Activation offload (GriNNder; docs/schedule.md, "Activation offload"):
  /// per virtual stage, how many of its first decoder layers keep their full
  /// activations in the machine's offload tier between forward and backward
  /// instead of following `recompute`. Empty: none.
  std::vector<int64_t> activationOffload;
  /// Uneven data-parallel shares (HexiScale; docs/schedule.md, "Uneven
  /// data-parallel shares"): the micro-batches each replica runs, one entry
  /// per replica, numMicroBatches their largest. Empty: every replica runs
  /// numMicroBatches.
  std::vector<int64_t> replicaMicroBatches;
  /// Ranks (and so clusters) replica-major, rank = replica * p + stage, so
  /// that a replica's stages share a class of a heterogeneous machine;
  /// false: stage-major, rank = stage * d + replica.
  bool replicaMajor = false;

  /// Micro-batches replica `replica` runs.
  int64_t replicaShare(int64_t replica) const {
    return replicaMicroBatches.empty() ? numMicroBatches
                                       : replicaMicroBatches[replica];
  }
  /// Micro-batches of one step over all replicas.
  int64_t totalMicroBatches() const {
    if (replicaMicroBatches.empty())
      return numMicroBatches * dataParallel;
    int64_t total = 0;
    for (int64_t m : replicaMicroBatches)
      total += m;
    return total;
  }
  /// The cluster (rank) of (stage, replica) under the rank order.
  int64_t clusterOf(int64_t stage, int64_t replica) const {
    return replicaMajor ? replica * pipelineStages + stage
                        : stage * dataParallel + replica;
  }

  /// The offloaded decoder layers of virtual stage `stage`.
  int64_t offloadedLayers(int64_t stage) const {
    return activationOffload.empty() ? 0 : activationOffload[stage];
  }
  /// Whether any stage offloads activations.
  bool offloadsActivations() const {
    for (int64_t k : activationOffload)
      if (k > 0)
        return true;
    return false;
  }

  int64_t clusters() const { return pipelineStages * dataParallel; }
  /// Sequences per iteration: d * b * m (b * the sum of the shares).
  int64_t globalBatch() const { return microBatchSize * totalMicroBatches(); }
  /// p * v: the entries of `stages` and `recompute`.
  int64_t numVirtualStages() const { return pipelineStages * virtualStages; }
  bool isFirstStage(int64_t stage) const { return stage == 0; }
  bool isLastStage(int64_t stage) const {
    return stage == numVirtualStages() - 1;
  }

  /// A config with `numLayers` split as evenly as possible and the same
  /// recompute policy on every stage. When p does not divide the layers, the
  /// extra layers go to the middle stages: stage 0 holds the most
  /// activations and the embedding, the last stage the LM head.
  static ParallelConfig balanced(int64_t numLayers, int64_t pipelineStages,
                                 int64_t dataParallel, int64_t microBatchSize,
                                 int64_t numMicroBatches,
                                 RecomputePolicy recompute,
                                 ZeroStage zero = ZeroStage::None);

  /// Checks sizes, the schedule's shape (validateScheduleShape), that the
  /// stages are contiguous and cover the model's layers with at least one
  /// layer each, and that the vectors have one entry per virtual stage.
  llvm::Error validate(const ModelConfig &model) const;

  /// "pp=4 dp=256 mbs=1 m=4 zero=1 layers=7,8x2,9 recompute=fullx1,none"
  /// (runs of equal stages as AxN: A for N stages; see formatLayerSplit),
  /// followed by " offload=optimizer" when states are offloaded, by
  /// " schedule=zbv v=2" when the schedule is not 1F1B (v when not 1) and by
  /// the sharding policy when not the default (ShardingPolicy::describe),
  /// " clip=N" with clipping, " transfers=one-sided", " sync-period=H" and
  /// " act-offload=K" (runs of equal counts as KxN) with activation offload,
  /// " dp-shares=3,1" with uneven shares and " replica-major".
  std::string describe() const;
};

/// Kernel properties that change the accounting.
struct MemoryOptions {
  /// Flash-style attention: the 5as^2b bytes of scores, softmax and dropout
  /// mask of the standard formula are replaced by FP32 row statistics,
  /// 4asb bytes; the transient buffer of a recomputed layer holds no scores.
  bool fusedAttention = false;
  /// The runtime whose buffers are counted: RATrain's layer-level lifecycle
  /// (default) or a GPU-style runtime (whole-stage FP32 gradient buffer and
  /// optimizer workspace).
  LifecyclePolicy lifecycle = LifecyclePolicy::RATrain;
  /// Offload streaming chunk (machine file offload.chunk_bytes); 0: one
  /// whole update item per buffer of the double-buffered window.
  int64_t offloadChunkBytes = 0;
  /// Clusters per group of each network level, innermost first
  /// (levelGroupClusters); empty: a partition level counts as the whole
  /// data-parallel group.
  llvm::SmallVector<int64_t, 4> levelClusters;
  /// The sharding policy the overloads of computeStageMemory that take no
  /// ParallelConfig count (those that take one use config.sharding).
  ShardingPolicy sharding;

  /// The options a machine's kernels imply.
  static MemoryOptions forMachine(const MachineModel &machine) {
    MemoryOptions options;
    options.fusedAttention = machine.cluster.fusedAttention;
    options.offloadChunkBytes = machine.offload.chunkBytes;
    options.levelClusters = levelGroupClusters(machine);
    return options;
  }
  /// The same, for the runtime of `lifecycle`.
  static MemoryOptions forMachine(const MachineModel &machine,
                                  LifecyclePolicy lifecycle) {
    MemoryOptions options = forMachine(machine);
    options.lifecycle = lifecycle;
    return options;
  }
};

/// Bytes per parameter (before ZeRO sharding) that `offload` moves to the
/// offload tier: 0, 8 (Adam m, v) or 12 (+ FP32 master; 8 for FP32
/// training, whose master is the parameter itself and stays).
int64_t offloadedBytesPerParam(const ModelConfig &model, OffloadPolicy offload);

/// Micro-batches whose activations stage `stage` holds at its peak under
/// non-interleaved 1F1B: min(p - stage, m).
int64_t inFlightMicroBatches(const ParallelConfig &config, int64_t stage);

/// Whether each layer's gradient reduce-scatter leaves its last reduction to
/// the update (the lowering's default `average-in-update`; docs/lowering.md,
/// "The average in the update"): ZeRO-1 over more than one replica, the
/// default sharding policy (no partitions, native wires), no clipping (the
/// norm is taken of the averaged shards), no partial synchronization, fp32
/// or bf16 gradients, and a `ring` gradient collective. The update then
/// reads the rank's own contribution next to the others' sum. The lowering,
/// the simulator's adapters and the planner's update costs all follow it.
bool averagesInUpdate(const ParallelConfig &config, DType dtype, bool ring);

//===----------------------------------------------------------------------===//
// What the mt3k lowering materializes
//===----------------------------------------------------------------------===//
//
// --ratrain-lower-to-mt3k stores a decoder layer's activations in a layout of
// its own and appends a scratch area to the assigned arena (layer kernel
// temporaries, outgoing pipeline messages, ZeRO shards). The lowering sizes
// those regions with the functions below, and computeStageMemory counts them,
// so a plan the planner accepts fits once lowered.

/// The slot alignment of the lowering's own layouts and scratch regions
/// (its default; an explicit --ratrain-lower-to-mt3k alignment may differ).
constexpr int64_t kLoweringAlignment = 64;

/// `value` rounded up to a multiple of `alignment` (> 0).
inline int64_t alignBytes(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// The sizes of one decoder layer's tensors for one micro-batch.
struct LayerShape {
  int64_t tokens = 1; ///< T = s * b
  int64_t hidden = 0, heads = 0, qDim = 0, kvDim = 0, ffn = 0;
  bool qkvBias = false;
  /// The shape of `model`'s decoder layer with `microBatchSize` sequences.
  static LayerShape of(const ModelConfig &model, int64_t microBatchSize);
};

/// Byte offsets of what a decoder layer's forward keeps for its backward,
/// inside its activation buffer (elements of `elemBytes` unless noted).
struct DecoderActivationLayout {
  int64_t x, xn1, q, k, v, o, x2, xn2, gate, up;
  int64_t hact = -1;         ///< -1: not stored, the backward recomputes SwiGLU
  int64_t rstd1, rstd2, lse; ///< f32
  int64_t bytes;             ///< with hact when stored
};

/// The layout the lowering stores a decoder layer's activations in, slots
/// aligned to `alignment`; the SwiGLU output `hact` is stored when the
/// layout with it fits in `available` bytes.
DecoderActivationLayout
decoderActivationLayout(const LayerShape &shape, int64_t elemBytes,
                        int64_t available,
                        int64_t alignment = kLoweringAlignment);

/// Byte offsets of what the input part of a split decoder-layer backward
/// keeps for its weight part (`!ratrain.deferred`), elements of `elemBytes`:
/// the layer's output gradient dy (down_proj's dW), the SwiGLU input
/// gradients dgate and dup, the gradient at the MLP norm's output dxn2,
/// the residual-stream gradient dres between the halves (o_proj's dW), the
/// pre-rotation q and k gradients and the v gradient, and the gradient at
/// the attention norm's output dxn1.
struct DecoderDeferredLayout {
  int64_t dy, dgate, dup, dxn2, dres, dq, dk, dv, dxn1;
  int64_t bytes;
};

/// The deferred layout of a decoder layer, slots aligned to `alignment`.
DecoderDeferredLayout
decoderDeferredLayout(const LayerShape &shape, int64_t elemBytes,
                      int64_t alignment = kLoweringAlignment);

/// The kind of a model layer, for the sizes that differ by kind.
enum class LayerRole { Embedding, Decoder, Head };

/// Bytes of the deferred buffer of one micro-batch of a split backward
/// (from its input part to its weight part): a decoder layer's
/// decoderDeferredLayout; the head's final-norm output gradient (T x h; the
/// logits gradient stays in the head's activations); the embedding's
/// output gradient (T x h), which its weight part scatter-adds.
int64_t deferredBytes(const ModelConfig &model, int64_t microBatchSize,
                      LayerRole role, int64_t alignment = kLoweringAlignment);
/// The same for a layer of `shape` at `elemBytes` per element (what the
/// lowering checks the assigned deferred buffers against).
int64_t deferredBytes(const LayerShape &shape, int64_t elemBytes,
                      LayerRole role, int64_t alignment = kLoweringAlignment);

/// Sizes of the lowering's per-layer kernel temporaries and message slots
/// (bytes, before alignment).
struct LoweringScratch {
  int64_t stream = 0; ///< scratch.stream: one T x h tensor
  int64_t ones = 0;   ///< scratch.ones: T ones for the q/k/v bias (0: none)
  /// scratch.r1: the largest of the T x ffn, T x (q + 2 kv) and T x h
  /// backward temporaries.
  int64_t r1 = 0;
  int64_t r2 = 0; ///< scratch.r2: one T x h tensor
  /// scratch.w: the MLP backward's gate/up gradients or the attention
  /// backward's dq/dk pre-rotation; the assigned kernel workspace holds it
  /// when it is at least this large.
  int64_t w = 0;
  int64_t message = 0; ///< one outgoing pipeline message slot (T x h)

  static LoweringScratch of(const LayerShape &shape, int64_t elemBytes);
};

/// Bytes of one layer's ZeRO shards in the lowering's area: its gradient
/// shard (reduce-scatter output, unless the buffer assignment gives it one)
/// and its view shard (AdamW output, all-gather input; an FP32 model's
/// persistent master shard, which AdamW updates in place).
struct ZeroShardSizes {
  int64_t gradShard = 0, viewShard = 0;
  /// The shards of a layer of `layerParams` over `dataParallel` ranks.
  static ZeroShardSizes of(int64_t layerParams, int64_t dataParallel,
                           int64_t elemBytes);
};

/// Outgoing message slots of one direction: one per send, reused
/// round-robin, at most two.
inline int64_t outboxSlots(int64_t sends) { return sends < 2 ? sends : 2; }

/// Bytes of stored activations of one decoder layer for one micro-batch of
/// `microBatchSize` sequences (16-bit activations; the Korthikanti formulas
/// with the model's s, h, a), and at least what the lowering stores
/// (decoderActivationLayout without hact) for `none` and `selective`: a
/// SwiGLU FFN much wider than 3h with narrow K/V stores more than 34sbh.
int64_t layerActivationBytes(const ModelConfig &model, int64_t microBatchSize,
                             RecomputePolicy policy,
                             const MemoryOptions &options = {});

/// Parameters a stage owns: its layers, plus the embedding on stage 0 and
/// the final norm + LM head on the last stage (with tied embeddings and
/// p > 1 the last stage keeps its own copy of the embedding matrix).
int64_t stageParams(const ModelConfig &model, const ParallelConfig &config,
                    int64_t stage);

/// The peak DDR of one cluster of one pipeline stage, by kind, in bytes.
struct StageMemory {
  int64_t stage = 0;
  int64_t params = 0; ///< parameters of the stage (count, not bytes)
  /// 16-bit views used by compute (2 B/param). ZeRO-3: this rank's shard
  /// (/d) plus the full views of the two largest update items, gathered
  /// at a time (`gatheredItems`: their parameters).
  /// With a secondary weight partition (sharding.weightLevel, g_L members
  /// per level-L group) also every owned item's secondary shard, 1/g_L of
  /// its view: all are live at the 1F1B peak (gathered by their first
  /// forward, used until their last backward).
  int64_t parameterViews = 0;
  int64_t gatheredItems[2] = {0, 0};
  int64_t masterWeights = 0;   ///< FP32 master copy (4 B/param, /d with ZeRO)
  int64_t optimizerStates = 0; ///< Adam m and v (8 B/param, /d with ZeRO)
  /// 16-bit gradients (2 B/param). ZeRO-2 shards them (/d) when each layer
  /// is reduce-scattered right after its backward (m = 1); with m > 1 every
  /// layer accumulates its full gradient until its reduce-scatter after the
  /// last micro-batch, so 2 B/param plus the shards. gpu-style: the FP32
  /// flat buffer of the whole stage (4 B/param, whatever the ZeRO stage).
  /// With a gradient partition (sharding.gradLevel, ZeRO >= 2, d > 1,
  /// g_L < d, ratrain lifecycle): the same plus the partitions (1/g_L) of
  /// the two largest items, held between the reduce-scatter inside the
  /// level-L group and the one across.
  int64_t gradients = 0;
  int64_t activations = 0; ///< stored layer activations, all in flight
  /// Transient activations of the layer being recomputed in backward (one
  /// layer, one micro-batch: its full activations for `full`, its attention
  /// scores for `selective`).
  int64_t recomputeBuffer = 0;
  /// Embedding output on stage 0; logits and cross-entropy buffers on the
  /// last stage (s * b * vocab * (2 + 4) bytes for one micro-batch).
  int64_t embeddingHeadActivations = 0;
  int64_t kernelWorkspace = 0;      ///< DDR scratch of the largest kernel
  int64_t communicationBuffers = 0; ///< p2p and gradient-sync buffers
  /// gpu-style only: the optimizer's FP32 temporaries materialized for the
  /// whole stage at once (4 B per updated parameter).
  int64_t optimizerWorkspace = 0;
  /// With offload: DDR window streaming the offloaded states of the two
  /// update items in flight (double-buffered reload / write-back).
  int64_t offloadWindow = 0;
  /// What the mt3k lowering appends to the assigned arena for the layer
  /// kernels (LoweringScratch: stream, ones, r1, r2, and w unless the
  /// kernel workspace holds it), the full-recompute forward layout
  /// (scratch.forward) and the arena's round-up to the alignment.
  int64_t layerTemporaries = 0;
  /// The lowering's outgoing pipeline message slots (outboxes: up to two
  /// per direction, T x h each).
  int64_t outgoingMessages = 0;
  /// With ZeRO: the lowering's per-layer gradient, view (and FP32 master)
  /// shards (ZeroShardSizes), 1/d of the stage's parameters each.
  int64_t zeroShards = 0;
  /// With offload: bytes this cluster keeps in the offload tier (not DDR,
  /// not part of total()); offloaded activations included.
  int64_t offloadedBytes = 0;
  /// With activation offload: the part of offloadedBytes that is
  /// activations (all offloaded layers' micro-batches in flight).
  int64_t offloadedActivations = 0;

  /// DDR bytes (everything but offloadedBytes).
  int64_t total() const {
    return parameterViews + masterWeights + optimizerStates + gradients +
           activations + recomputeBuffer + embeddingHeadActivations +
           kernelWorkspace + communicationBuffers + optimizerWorkspace +
           offloadWindow + layerTemporaries + outgoingMessages + zeroShards;
  }
  /// Model states only (views + master + optimizer + gradients).
  int64_t modelStates() const {
    return parameterViews + masterWeights + optimizerStates + gradients;
  }

  /// The DDR fields as (name, bytes) pairs in print order, for tables and
  /// diagnostics ("activations", "master weights", ...); they sum to
  /// total().
  std::vector<std::pair<llvm::StringRef, int64_t>> fields() const;
};

/// Peak DDR bytes per cluster of stage `stage` of `config`. The config must
/// have been validated against `model`.
StageMemory computeStageMemory(const ModelConfig &model,
                               const ParallelConfig &config, int64_t stage,
                               const MemoryOptions &options = {});

/// Full activations of offloaded layers (ParallelConfig::activationOffload)
/// that are in DDR at once at most: the one a forward writes and the one
/// still being offloaded, the reloads prefetched ahead of their backwards
/// (kMaxActivationPrefetch) and the one a backward reads. The lifecycle pass
/// keeps an activation whose backward follows within that window in DDR
/// instead of offloading it.
constexpr int64_t kMaxActivationPrefetch = 2;
constexpr int64_t kActivationOffloadResident = kMaxActivationPrefetch + 3;

/// Adjusts `mem` (a stage computed with `recompute` for all its layers and
/// `inFlight` micro-batches) for `offloadedLayers` of its decoder layers
/// keeping their full activations in the offload tier: their stored
/// activations leave `activations`, at most kActivationOffloadResident full
/// ones come back, and all of them count in `offloadedBytes` (the tier).
void applyActivationOffload(StageMemory &mem, const ModelConfig &model,
                            int64_t microBatchSize, RecomputePolicy recompute,
                            int64_t offloadedLayers, int64_t inFlight,
                            const MemoryOptions &options);

/// The peak DDR of every rank (pipeline position) of `config` under its
/// schedule: computeStageMemory for each stage of 1f1b, computeRankMemory
/// for the other schedules (the schedule generated from the config).
std::vector<StageMemory> computeMemory(const ModelConfig &model,
                                       const ParallelConfig &config,
                                       const MemoryOptions &options = {});

/// The same accounting for a stage described directly (used by the planner
/// to size a stage before the whole split is known).
StageMemory computeStageMemory(const ModelConfig &model, int64_t stage,
                               int64_t pipelineStages, int64_t dataParallel,
                               int64_t microBatchSize, int64_t numMicroBatches,
                               StageLayers layers, RecomputePolicy recompute,
                               ZeroStage zero,
                               const MemoryOptions &options = {});
/// The same with optimizer-state offload.
StageMemory computeStageMemory(const ModelConfig &model, int64_t stage,
                               int64_t pipelineStages, int64_t dataParallel,
                               int64_t microBatchSize, int64_t numMicroBatches,
                               StageLayers layers, RecomputePolicy recompute,
                               ZeroStage zero, OffloadPolicy offload,
                               const MemoryOptions &options = {});
/// The same with `inFlight` micro-batches' activations held (the stage's
/// or a virtual stage's count at its rank's peak) instead of 1F1B's
/// min(p - stage, m).
StageMemory computeStageMemory(const ModelConfig &model, int64_t stage,
                               int64_t pipelineStages, int64_t dataParallel,
                               int64_t microBatchSize, int64_t numMicroBatches,
                               StageLayers layers, RecomputePolicy recompute,
                               ZeroStage zero, OffloadPolicy offload,
                               int64_t inFlight,
                               const MemoryOptions &options = {});

//===----------------------------------------------------------------------===//
// Schedules other than 1F1B
//===----------------------------------------------------------------------===//
//
// A rank (cluster of one pipeline position) of a schedule with virtual stages
// owns several model chunks; an I (input-gradient) action keeps what its W
// (weight-gradient) action needs. The rank's peak is counted at the program
// point schedule::scheduleMemory finds, with each virtual stage's bytes per
// micro-batch as weights.

/// Checks the schedule's shape limits: 1f1b and zb-h1 need v == 1, zbv
/// v == 2, interleaved-1f1b v >= 2 with m a multiple of pp. The error names
/// the limit.
llvm::Error validateScheduleShape(schedule::ScheduleKind kind, int64_t pp,
                                  int64_t v, int64_t m);

/// The rank that runs virtual stage `stage` of `config`: round robin
/// (stage % pp), or a V for zbv (rank r owns r and 2 pp - 1 - r).
int64_t chunkRank(const ParallelConfig &config, int64_t stage);

/// Bytes an I keeps per decoder layer and micro-batch until its W: the
/// deferred buffer (deferredBytes of a decoder layer) and, under full
/// recompute, the recomputed activations, which stay live until the W.
int64_t layerDeferredBytes(const ModelConfig &model, int64_t microBatchSize,
                           RecomputePolicy policy,
                           const MemoryOptions &options = {});

/// Per virtual stage of `config`: bytes one micro-batch's activations hold
/// from its F to its B or W (layers, plus the token ids on the first and the
/// head's buffers on the last), and bytes an I keeps until its W (layers,
/// plus deferredBytes of the embedding and of the head); the weights of
/// schedule::scheduleMemory.
void scheduleWeights(const ModelConfig &model, const ParallelConfig &config,
                     const MemoryOptions &options,
                     std::vector<double> &activationBytes,
                     std::vector<double> &deferredBytes);

/// Peak DDR of one rank of `config` under its schedule, given the
/// schedule's live counts (scheduleMemory with scheduleWeights). For 1f1b
/// with v == 1 this is computeStageMemory(model, config, rank). Otherwise
/// the rank's chunks' parameters, gradients, optimizer states, shards and
/// outboxes are summed, activations and deferred input gradients counted
/// per chunk from `counts`, and workspaces, buffers and temporaries are
/// the largest chunk's. `stage` of the result is the rank.
StageMemory computeRankMemory(const ModelConfig &model,
                              const ParallelConfig &config, int64_t rank,
                              const schedule::ScheduleMemory &counts,
                              const MemoryOptions &options = {});

} // namespace ratrain

#endif // RATRAIN_PLANNER_MEMORYMODEL_H
