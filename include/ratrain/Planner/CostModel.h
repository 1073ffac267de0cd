//===- CostModel.h - Seconds of compute and communication -------*- C++ -*-===//
//
// Analytic costs of the pieces of a training iteration on a MachineModel:
// per-layer forward/backward/recompute (roofline per GEMM with the machine's
// attainable efficiencies), embedding and LM head, the memory-bound optimizer
// update and 16-bit view cast, point-to-point transfers and alpha-beta
// collectives (ring, tree, hierarchical). The planner ranks plans with them,
// and the lifecycle scheduler and the simulator call the same functions so
// all three agree. Every function is a pure function of (model, machine,
// arguments).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_PLANNER_COSTMODEL_H
#define RATRAIN_PLANNER_COSTMODEL_H

#include "ratrain/Machine/Collectives.h"
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/ModelConfig.h"
#include "ratrain/Planner/GemmCalls.h"
#include "ratrain/Planner/MemoryModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace ratrain {

/// Whether a stage's data-parallel group (clusters stage*dp .. stage*dp +
/// dp - 1) spans more than one node of `clustersPerNode` clusters.
inline bool dataParallelGroupSpansNodes(int64_t stage, int64_t dataParallel,
                                        int64_t clustersPerNode) {
  if (clustersPerNode < 1)
    return false;
  int64_t first = stage * dataParallel;
  int64_t last = first + dataParallel - 1;
  return first / clustersPerNode != last / clustersPerNode;
}

// LifecyclePolicy, stringifyLifecyclePolicy and parseLifecyclePolicy are
// declared in MemoryModel.h (the memory model depends on the policy too).

/// Analytic costs in seconds for one model on one machine.
/// Bytes one decoder layer of `model` moves in its element-wise kernels for
/// a micro-batch, forward or `backward`, as the runtime calls them: forward
/// two RMSNorms (read x, write y), RoPE on q and k (read, write) and SwiGLU
/// (read gate and up, write the product); backward the two RMSNorms' (read
/// x and dy, write dx), RoPE's, SwiGLU's (read gate, up and dh, write both
/// gradients) and the two residual-gradient adds (read two, write one). The
/// forward's residual adds are fused into the projections' GEMMs (beta 1).
double layerElementwiseBytes(const ModelConfig &model, int64_t microBatchSize,
                             bool backward);

class CostModel {
public:
  CostModel(const ModelConfig &model, const MachineModel &machine);

  const ModelConfig &getModel() const { return model; }
  const MachineModel &getMachine() const { return machine; }

  //===--- compute (one cluster, one micro-batch of b sequences) ---------===//

  /// Seconds of a GEMM [m x k] * [k x n] with operands of the model's type,
  /// read as `form`. A call the machine file measured (`gemm_measured`, that
  /// type, form and shape): its measured seconds. Otherwise, with the
  /// machine's measured fit for that type (`gemm_fit`): FLOPs at peak * its
  /// efficiency, plus its per-element seconds times m k + k n + m n, plus its
  /// per-call seconds. Without: the roofline max of FLOPs at peak * gemm
  /// efficiency and operand/result bytes at DDR bandwidth * memory-bound
  /// efficiency.
  double gemmSeconds(double m, double n, double k,
                     GemmForm form = GemmForm::NT) const;
  /// The seconds of `calls` (each `count` times).
  double gemmSeconds(llvm::ArrayRef<GemmCall> calls) const;
  /// Seconds to stream `bytes` through DDR in a memory-bound kernel.
  double memoryBoundSeconds(double bytes) const;
  /// ratrain::layerElementwiseBytes of the model.
  double layerElementwiseBytes(int64_t microBatchSize, bool backward) const {
    return ratrain::layerElementwiseBytes(model, microBatchSize, backward);
  }
  /// Seconds of those kernels: their bytes at the machine's measured
  /// element-wise rate for the model's type (cluster.elementwise_bandwidth,
  /// _f16), else as memoryBoundSeconds.
  double layerElementwiseSeconds(int64_t microBatchSize, bool backward) const;

  /// One decoder layer's forward for a micro-batch: q/k/v/o and MLP GEMMs,
  /// causal attention, norms, rotary, SwiGLU and residual adds.
  double layerForward(int64_t microBatchSize) const;
  /// One decoder layer's backward (data and weight gradients), without any
  /// recompute.
  double layerBackward(int64_t microBatchSize) const;
  /// The parts of a split backward, summing to layerBackward: the weight
  /// part (W) is the weight-gradient GEMMs dW = X^T dY, the input part (I)
  /// the rest (input-gradient GEMMs, attention backward, norms and
  /// elementwise kernels).
  double layerBackwardInput(int64_t microBatchSize) const;
  double layerBackwardWeight(int64_t microBatchSize) const;
  /// The recompute a layer's backward needs under `policy`: 0 for none, the
  /// attention core (scores, softmax, PV) for selective, the whole forward
  /// for full.
  double layerRecompute(int64_t microBatchSize, RecomputePolicy policy) const;
  /// Token embedding lookup (memory bound).
  double embeddingForward(int64_t microBatchSize) const;
  /// Embedding gradient scatter-add (memory bound).
  double embeddingBackward(int64_t microBatchSize) const;
  /// A split embedding backward: the input part only keeps the output
  /// gradient (0 here), the weight part is the scatter-add.
  double embeddingBackwardInput(int64_t microBatchSize) const { return 0; }
  double embeddingBackwardWeight(int64_t microBatchSize) const {
    return embeddingBackward(microBatchSize);
  }
  /// Final RMSNorm, LM-head GEMM, softmax cross-entropy.
  double headForward(int64_t microBatchSize) const;
  /// Their backward.
  double headBackward(int64_t microBatchSize) const;
  /// A split head backward, summing to headBackward: the weight part is the
  /// LM-head weight-gradient GEMM, the input part the rest.
  double headBackwardInput(int64_t microBatchSize) const;
  double headBackwardWeight(int64_t microBatchSize) const;

  /// Adam update of `params` parameters: read FP32 master, m, v and the
  /// 16-bit gradient, write master, m, v (26 bytes/param, memory bound).
  /// With `ownPart` the gradient arrives in two parts (a reduce-scatter that
  /// left its last reduction to the update, ratrain::averagesInUpdate): one
  /// more gradient read per parameter. (The reduction the reduce-scatter no
  /// longer makes is not priced either way: collectives cost their
  /// transfers.) At cluster.optimizer_bandwidth (_f16 for a 16-bit model)
  /// where the machine gives it, else at ddr_bandwidth x memory_bound.
  double optimizerUpdate(int64_t params, bool ownPart = false) const;
  /// Whether a gradient sync of a group that does or does not span nodes
  /// runs on a ring on this machine (syncAlgorithm).
  bool syncsOnRing(bool spansNodes) const;
  /// Whether the updates of stage `stage` of `config` read the own part of
  /// their gradients (ratrain::averagesInUpdate with the stage's syncs'
  /// algorithm, syncsOnRing).
  bool averagesInUpdate(const ParallelConfig &config, int64_t stage) const;
  /// FP32 master -> 16-bit view cast of `params` parameters (6 bytes/param).
  double viewCast(int64_t params) const;
  /// Gradient clipping: the sum of squares over `elements` synced gradient
  /// elements of the model's dtype (memory bound).
  double gradSquares(int64_t elements) const;
  /// Gradient clipping: the all-reduce of the global norm (one f32) over
  /// every one of `clusters` clusters, as a tree (latency bound).
  double globalNormAllReduce(int64_t clusters) const;

  /// Moving `bytes` between a cluster's DDR and the machine's offload tier:
  /// latency per chunk (offload.chunk_bytes; one chunk when 0) + bytes /
  /// bandwidth (0 for no bytes; infinite when the machine has no tier).
  double offloadTransfer(int64_t bytes) const;
  /// The same when a share `cached` (0 to 1) of the bytes is in the storage
  /// tier's host cache (OffloadTierSpec::hostCacheBytesPerNode): that share
  /// at host_cache_bandwidth, the rest as above.
  double offloadTransfer(int64_t bytes, double cached) const;
  /// Moving one decoder layer's full stored activations for a micro-batch
  /// (layerActivationBytes without recompute) to or from the offload tier,
  /// `cached` of them in its host cache.
  double activationTransfer(int64_t microBatchSize, double cached = 0) const;

  //===--- communication ------------------------------------------------===//

  /// alpha + bytes / bandwidth over one link.
  double pointToPoint(int64_t bytes, LinkClass link) const;
  /// `bytes` is the full buffer (the all-reduced buffer, the input of a
  /// reduce-scatter, the output of an all-gather) over a group of
  /// `groupSize` contiguous clusters (cluster ids g*k .. g*k+k-1).
  double collective(CollectiveKind kind, CollectiveAlgorithm algorithm,
                    int64_t bytes, int64_t groupSize) const;
  /// With the machine file's default algorithm.
  double collective(CollectiveKind kind, int64_t bytes,
                    int64_t groupSize) const {
    return collective(kind, machine.network.collective, bytes, groupSize);
  }
  /// A collective decomposed over the network levels, each level's part a
  /// ring over that level's links: a reduce-scatter from the innermost
  /// level out (each level's input is the previous level's output shard),
  /// an all-gather from the outermost level in, an all-reduce both.
  /// `members[l]` is how many level-(l-1) groups (clusters for l = 0) of
  /// one level-l group take part (1: the level is not crossed); `bytes` is
  /// the full native buffer (reduce-scatter input, all-gather output);
  /// `parallelGroups` instances run at once in every group of the innermost
  /// level taking part (hpZ's across-group gathers), sharing the levels'
  /// injection bandwidth with the collective's own members. Level l > 0
  /// runs at min(link, injection of level l-1 / concurrent senders of one
  /// level-(l-1) group). A quantized wire format moves
  /// wireBytesPerElement(wire) bytes per element and adds the codec's
  /// compute, memory bound on the cluster's DDR (the machine file gives no
  /// rate for it): an all-gather quantizes its input shard and dequantizes
  /// its output once; a reduce-scatter (qgZ) quantizes, dequantizes and
  /// reduces into FP32 at every level it crosses.
  double levelCollective(CollectiveKind kind, int64_t bytes,
                         llvm::ArrayRef<int64_t> members,
                         WireFormat wire = WireFormat::Native,
                         int64_t parallelGroups = 1) const;
  /// Members per network level of the data-parallel group of `dataParallel`
  /// contiguous clusters (partitionGroupMembers level by level); with
  /// `level` >= 0 only the levels up to `level` (the members inside one
  /// level-`level` group, `inside`) or only those above it (one member of
  /// each level-`level` group, `!inside`).
  llvm::SmallVector<int64_t, 4> dataParallelLevels(int64_t dataParallel,
                                                   int64_t level = -1,
                                                   bool inside = true) const;
  /// Clusters per group of each network level (levelGroupClusters).
  llvm::ArrayRef<int64_t> getLevelClusters() const { return levelClusters; }

  /// Link class between stage s and s+1 of a config (placement: cluster id =
  /// stage * dp + replica): intra-node only when the whole pipeline of a
  /// replica stays inside one node.
  LinkClass pipelineLink(const ParallelConfig &config) const;
  /// Activation (or activation gradient) bytes one micro-batch sends
  /// between stages: s * b * h * dtype bytes.
  int64_t pipelineMessageBytes(int64_t microBatchSize) const;

private:
  /// Seconds of one micro-batch's fused attention, forward or backward.
  /// With the machine's measured fit for the model's type
  /// (`attention_forward_fit` / `attention_backward_fit`): FLOPs at peak *
  /// its efficiency, plus its per-element seconds times the score entries,
  /// its per-row seconds times the query rows (heads x tokens) and its
  /// per-call seconds. Without: the roofline max of FLOPs at the
  /// attention efficiency and q, k, v, o (and gradient) bytes at DDR
  /// bandwidth.
  double attentionSeconds(int64_t microBatchSize, bool backward) const;
  double attentionForward(int64_t microBatchSize) const;
  double attentionBackward(int64_t microBatchSize) const;
  /// The factors by which in-network collectives (MachineModel's
  /// network.in_network) speed up the reduction and the multicast steps over
  /// the intra-node (`intraNode`) or inter-node links: the capable level
  /// inside a node counts as the intra-node view, the level that joins nodes
  /// as the inter-node one; {1, 1} elsewhere.
  InNetworkCollectives inNetworkOn(bool intraNode) const;
  /// Ring and binomial-tree collectives over links of latency `alpha` and
  /// `bandwidth`; the reduction steps take 1/in.reduceSpeedup of the time,
  /// the all-gather and broadcast steps 1/in.multicastSpeedup.
  double ringSeconds(CollectiveKind kind, double bytes, int64_t groupSize,
                     double alpha, double bandwidth,
                     const InNetworkCollectives &in = {}) const;
  double treeSeconds(CollectiveKind kind, double bytes, int64_t groupSize,
                     double alpha, double bandwidth,
                     const InNetworkCollectives &in = {}) const;

  const ModelConfig &model;
  const MachineModel &machine;
  std::vector<NetworkLevel> levels;
  llvm::SmallVector<int64_t, 4> levelClusters;
};

/// Per-stage costs of one micro-batch, the pieces of the step time.
struct StageTiming {
  double forward = 0;   ///< all layers (+ embedding / head) of the stage
  double backward = 0;  ///< including recompute
  double recompute = 0; ///< the recompute part of `backward`
  double p2p = 0;       ///< one pipeline message, 0 when p == 1
  /// Gradient sync + update + cast (+ ZeRO all-gather) of the whole stage
  /// if run back to back (what gpu-style exposes).
  double syncSeconds = 0;
  double updateSeconds = 0;
  double castSeconds = 0;
  double allGatherSeconds = 0;
  /// With offload: reload + write-back of the stage's offloaded states, one
  /// transfer each way per update item.
  double offloadSeconds = 0;
};

/// The predicted time of one training iteration and its parts.
struct StepTime {
  double total = 0;    ///< seconds per iteration
  double pipeline = 0; ///< forward/backward incl. bubble and p2p
  /// The part of `pipeline` that is bubble: (p-1)/(m+p-1) of it for equal
  /// stages under 1F1B; for the other schedules the pipeline time minus the
  /// busiest rank's compute.
  double bubble = 0;
  /// Gradient sync, update, cast, all-gather time not hidden by compute.
  double exposedLifecycle = 0;
  double recompute = 0; ///< recompute seconds on the slowest stage
  /// Offload-tier traffic (reload + write-back) per iteration of the stage
  /// with the most; what of it is not hidden is in exposedLifecycle.
  double offload = 0;
  /// Seconds of the busiest rank's core spent moving its data-parallel
  /// collectives' data (coreCopySeconds); part of `total`.
  double coreCopy = 0;
  std::vector<StageTiming> stages; ///< one per (virtual) stage
  double bubbleFraction() const { return pipeline > 0 ? bubble / pipeline : 0; }
};

/// Predicts the iteration time of `config` under `policy`:
///  - pipeline: sum_i (F_i + B_i + 2 c) + (m - 1) max_i (F_i + B_i + 2 c),
///    with F_i/B_i one micro-batch on stage i (B_i includes recompute) and
///    c the p2p message time; for equal stages (m + p - 1)(F + B + 2c), so
///    the bubble is (p-1)/(m+p-1);
///  - gpu-style: + max_i (sync_i + update_i + cast_i + allgather_i), all
///    whole-stage, at the iteration boundary;
///  - ratrain: per stage a communication stream and a compute stream; the
///    sync of each layer starts when its last backward finishes (during the
///    last micro-batch's backward sweep) and when the stream is free; its
///    update and cast run on the compute stream after the stage's backward;
///    then its ZeRO all-gather. A layer's view must be ready when its next
///    forward starts: iteration start + sum_{j<i}(F_j + c) + forward of the
///    stage's earlier layers. The iteration time is the largest of the
///    pipeline time and, over all layers, the ready time minus that offset.
///  - offload (config.offload): each update item's offloaded states are
///    reloaded before and written back after its update over the tier
///    (one stream per cluster). gpu-style adds all of it to the boundary
///    phase; ratrain double-buffers it in the lifecycle (reloads of items
///    k and k+1 in flight from the start of the last backward sweep,
///    write-back of item k then reload of item k+2), so only what delays
///    a view, or write-backs not done before the next sweep, is exposed.
/// Schedules other than non-interleaved 1F1B (config.schedule, v > 1): the
/// pipeline time is schedule::simulateSchedule of the generated schedule with
/// scheduleActionCosts; the lifecycle is placed per rank on that timing
/// (each item's sync after its last W, updates after the rank's last action,
/// views due by the item's first forward of the next step).
StepTime predictStepTime(const CostModel &costs, const ParallelConfig &config,
                         LifecyclePolicy policy);

/// The same on a schedule already generated for `config` (the planner
/// caches them per kind, pp, v and m).
StepTime predictStepTime(const CostModel &costs, const ParallelConfig &config,
                         LifecyclePolicy policy,
                         const schedule::PipelineSchedule &schedule);

/// Where a rank's own core moves its collectives' data (a host's ranks
/// exchanging through shared memory: MachineModel's
/// network.core_copy_bandwidth > 0), the seconds of a step that the busiest
/// rank's core spends on it: every collective of the rank's stages priced
/// as a flat ring over the data-parallel group, as the simulator charges
/// them (docs/simulator.md, "Core copies"): each step's bytes at
/// core_copy_bandwidth, and each reduction step's bytes read twice and
/// written once at ddr_bandwidth. The gradient synchronization (all-reduce
/// under ZeRO-0, reduce-scatter above; partial synchronization's master
/// all-reduce once per period), the refreshed views' all-gather (ZeRO-1/2)
/// and ZeRO-3's gathers before each forward and backward. 0 where hardware
/// moves the data (the key absent) or without data parallelism. The
/// predicted step adds it to the compute of the rank it delays
/// (predictStepTime: StepTime::coreCopy).
double coreCopySeconds(const CostModel &costs, const ParallelConfig &config);

/// `step` (a predictStepTime result before its core copies) with
/// StepTime::coreCopy = coreCopySeconds added to its total.
StepTime withCoreCopies(const CostModel &costs, const ParallelConfig &config,
                        StepTime step);

/// The data-parallel communication of one update item of `params`
/// parameters under `config`'s ZeRO stage and sharding policy (seconds).
struct ItemCommunication {
  /// ZeRO-3: the item's first gather of the step (with a secondary weight
  /// partition at level L: the primary shards across level-L groups into
  /// the secondary shard, then the secondary inside the group).
  double gatherFirst = 0;
  /// ZeRO-3: every later gather (the secondary shard inside the level-L
  /// group; without a partition the whole group each time).
  double gatherRepeat = 0;
  /// The item's synchronization after its last backward: all-reduce
  /// (ZeRO-0), reduce-scatter over the group (ZeRO-1/2/3), or, with a
  /// gradient partition at level L, the reduce-scatter inside the level-L
  /// group into the partition followed by the partition's reduce-scatter
  /// across the level-L groups (none when L holds the whole group), as the
  /// lowering places them (docs/schedule.md, "Partitioning"). Under partial
  /// synchronization (ParallelConfig::syncPeriod = H > 1): the all-reduce of
  /// the item's fp32 masters divided by H, its mean cost per step.
  double gradSync = 0;
};
ItemCommunication itemCommunication(const CostModel &costs,
                                    const ParallelConfig &config,
                                    int64_t params);

/// ZeRO-3: seconds of the all-gather of the full 16-bit view of an item of
/// `params` parameters over the data-parallel group, which every compute
/// reading the item's parameters waits for (0 below ZeRO-3). The gather of
/// the next item runs on the communication stream while the current one
/// computes, so an item's compute per micro-batch takes max(compute, gather).
/// With a sharding policy: ItemCommunication::gatherRepeat.
double parameterGatherSeconds(const CostModel &costs,
                              const ParallelConfig &config, int64_t params);

/// The shares of (virtual) stage `stage`'s offload-tier bytes that the
/// storage tier's host cache holds. The runtime caches keys first come,
/// first served up to a cluster's share of the cache: the optimizer states
/// and masters offloaded in the prologue fill it first, the activations
/// offloaded in the first step take what is left. {0, 0} without a cache.
struct TierCacheShares {
  double states = 0;
  double activations = 0;
};
TierCacheShares tierCacheShares(const CostModel &costs,
                                const ParallelConfig &config, int64_t stage);

/// Activation offload (ParallelConfig::activationOffload): seconds of
/// virtual stage `stage`'s offload stream per micro-batch (each offloaded
/// layer's activations written to the tier after its forward and read back
/// before its backward) that its `compute` seconds per micro-batch do not
/// hide: the stream runs beside the computes, so only the excess is
/// exposed (0 without offloaded layers).
double exposedActivationTransfer(const CostModel &costs,
                                 const ParallelConfig &config, int64_t stage,
                                 double compute);

/// Seconds of each virtual stage's actions for one micro-batch: F = its
/// layers' forward (+ embedding on the first, head on the last); I = their
/// input-gradient part with the recompute (+ the head's dX part); W = their
/// weight-gradient part (+ the embedding backward, the head's dW); transfer
/// = one pipeline message over CostModel::pipelineLink.
schedule::ActionCosts scheduleActionCosts(const CostModel &costs,
                                          const ParallelConfig &config);

} // namespace ratrain

#endif // RATRAIN_PLANNER_COSTMODEL_H
