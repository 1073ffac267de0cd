//===- Synthetic1F1B.h - Generated 1F1B programs ----------------*- C++ -*-===//
//
// Builds the SimProgram of a non-interleaved 1F1B iteration directly, without
// the compiler, from per-stage durations and sizes, with one of two
// placements of the training-state lifecycle (gradient sync, update,
// parameter-view cast, ZeRO parameter all-gather):
// - WholeModel ("gpu-style"): after the stage's last backward, one bucketed
//   collective for all of the stage's gradients, wait, update every layer
//   (with offload: reload it, wait, update, write it back), cast every
//   parameter view (then, with ZeRO, one all-gather of all views, wait), and
//   wait for the write-backs.
// - PerLayer ("ratrain"): each layer's gradient sync is issued as soon as the
//   last micro-batch's backward of that layer finishes, so it overlaps the
//   backward of the layers below; after the last backward, each layer (in the
//   order its sync completes) waits for its sync, is updated and cast while
//   the syncs of the other layers proceed (with offload, the reloads are
//   double-buffered: the first two are issued when the last backward sweep
//   starts, each update issues its write-back and the reload two layers
//   ahead), and with ZeRO issues the
//   all-gather of its view, which only the layer's first forward of the next
//   iteration waits for (a loop-carried wait: it overlaps the pipeline
//   drain and fill).
// Used by the unit tests, the simulator benchmark and the plan-level
// evaluation; the compiler's schedules come from expand-1f1b +
// schedule-lifecycle through the MLIR adapter.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_SYNTHETIC1F1B_H
#define RATRAIN_SIMULATOR_SYNTHETIC1F1B_H

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Simulator/SimProgram.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace ratrain {
namespace sim {

enum class LifecyclePlacement { WholeModel, PerLayer };

/// Durations and sizes of one stage. Seconds are per layer and micro-batch
/// unless stated otherwise.
struct SyntheticStage {
  int64_t layers = 1;
  /// Global index of the stage's first layer (labels only).
  int64_t firstLayer = 0;
  double forwardSeconds = 1;
  double backwardSeconds = 2;
  /// The weight-gradient part (W) of backwardSeconds, for schedules that
  /// split the backward into I and W (SyntheticSchedule.h); I is the rest.
  double backwardWeightSeconds = 0;
  /// Recomputation before each layer's backward (0 = activations stored).
  double recomputeSeconds = 0;
  /// Per micro-batch, outside the layers: the embedding on the first stage,
  /// the LM head and loss on the last.
  double extraForwardSeconds = 0;
  double extraBackwardSeconds = 0;
  /// The W part of extraBackwardSeconds.
  double extraBackwardWeightSeconds = 0;
  /// Per layer and iteration.
  double updateSeconds = 0;
  double viewCastSeconds = 0;
  /// FLOPs per layer and micro-batch (reported on the compute tasks).
  double forwardFlops = 0;
  double backwardFlops = 0;
  /// Gradient bytes per layer synchronized over the data-parallel group.
  int64_t gradientBytesPerLayer = 0;
  /// Partial synchronization (Synthetic1F1BConfig::syncPeriod): fp32 master
  /// bytes per layer averaged over the data-parallel group after the
  /// layer's update, in the iterations of its phase; 0 = none.
  int64_t averageBytesPerLayer = 0;
  /// 16-bit parameter bytes per layer all-gathered after the update (ZeRO
  /// 1 and 2); 0 = no all-gather.
  int64_t gatherBytesPerLayer = 0;
  /// ZeRO-3: 16-bit bytes of a layer's full view, all-gathered before each
  /// of its forwards, backwards (with their recompute) and weight parts,
  /// one layer ahead within a sweep (the first at the sweep's start); 0 =
  /// the views are not sharded.
  int64_t parameterGatherBytesPerLayer = 0;
  /// Secondary weight partition (hpZ, ShardingPolicy::weightLevel): bytes
  /// of the secondary shard that a layer's first use in the iteration
  /// all-gathers from the primary shards (over primaryGatherSpec) before
  /// the per-use gather; 0 = none.
  int64_t primaryGatherBytesPerLayer = 0;
  /// Gradient partition (ShardingPolicy::gradLevel): bytes of a layer's
  /// gradient reduce-scattered inside the level group (over
  /// partitionGradSpec) after its last micro-batch's backward, as the
  /// lowering places it; 0 = none. The sync across the level groups
  /// (gradientBytesPerLayer, 0 = none) follows it on the same stream.
  int64_t partitionGradientBytesPerLayer = 0;
  /// Offloaded optimizer state (and master) bytes per layer that each
  /// iteration reloads from the offload tier before the layer's update and
  /// writes back after it; 0 = nothing offloaded.
  int64_t offloadBytesPerLayer = 0;
  /// DDR accounting: resident bytes, activation bytes held per layer and
  /// micro-batch between its forward and backward, and the buffer
  /// assignment's peak if known.
  int64_t residentBytes = 0;
  int64_t storedActivationBytesPerLayer = 0;
  int64_t assignedPeakBytes = 0;
  /// Gradient clipping: seconds of the sum of squares over the stage's
  /// (shard of its) synced gradients, once per iteration.
  double gradSquaresSeconds = 0;
  /// Bytes an I keeps per layer and micro-batch until its W.
  int64_t deferredBytesPerLayer = 0;
  /// Activation offload: the stage's first `offloadedLayers` layers keep
  /// their full activations (no recompute), moved to the offload tier after
  /// each forward (`activationOffloadBytes` each way) and reloaded
  /// `activationPrefetch` backwards ahead of their own; on the last stage
  /// those read within that window stay in DDR.
  int64_t offloadedLayers = 0;
  int64_t activationOffloadBytes = 0;
  int64_t activationPrefetch = 2;
  /// The stage's offload-tier bandwidth (StageProgram::offloadBandwidth;
  /// 0: the machine's).
  double offloadBandwidth = 0;
};

struct Synthetic1F1BConfig {
  int64_t stages = 2;
  int64_t microBatches = 2;
  int64_t dataParallel = 1;

  /// Uniform stages: every stage gets these values (`stage.firstLayer` is
  /// computed) unless `perStage` is given.
  int64_t layersPerStage = 1;
  double forwardSeconds = 1;
  double backwardSeconds = 2;
  double recomputeSeconds = 0;
  double updateSeconds = 0;
  double viewCastSeconds = 0;
  double forwardFlops = 0;
  double backwardFlops = 0;
  int64_t gradientBytesPerLayer = 0;
  int64_t residentBytes = 0;
  int64_t storedActivationBytesPerLayer = 0;
  /// One entry per stage; overrides the uniform values above when not empty.
  std::vector<SyntheticStage> perStage;

  /// Activation bytes sent between stages per micro-batch (0 = only the
  /// latency of an empty message).
  int64_t activationBytes = 0;
  LinkClass pipelineLink = LinkClass::InterNode;
  /// The activation and gradient messages are two-sided under the rendezvous
  /// protocol (Task::rendezvous); false: one-sided puts, moving when sent.
  bool rendezvousMessages = false;
  /// Tied embeddings on several ranks: bytes of the shared [V, h] matrix,
  /// which the embedding's rank sends (the step's view) to the head's after
  /// its first embedding forward, and the head's rank sends back (the LM
  /// head's gradient) after its last head backward, before the embedding's
  /// gradient is complete (docs/lowering.md, "Tied embeddings"). 0: none.
  int64_t tiedEmbeddingBytes = 0;
  /// Gradient sync: all-reduce, or reduce-scatter (ZeRO, with the parameter
  /// all-gather of `gatherBytesPerLayer`).
  CollectiveKind syncKind = CollectiveKind::AllReduce;
  CollectiveAlgorithm syncAlgorithm = CollectiveAlgorithm::Ring;
  int64_t dpMembersPerNode = 1;
  LifecyclePlacement placement = LifecyclePlacement::WholeModel;
  /// Hierarchical partitioning and quantized wires: the group, levels,
  /// algorithm and wire of each ZeRO collective (the bytes are set per
  /// use); unset: the whole data-parallel group (dataParallelCollective).
  /// viewGatherSpec: the parameter gathers (ZeRO-3 per use, ZeRO-1/2 after
  /// the update); primaryGatherSpec: the first-use gather across secondary
  /// partitions; partitionGradSpec: the gradient's
  /// reduce-scatter inside the partition level; gradSyncSpec: the sync after
  /// the last micro-batch.
  std::optional<CollectiveSpec> viewGatherSpec, primaryGatherSpec,
      partitionGradSpec, gradSyncSpec;
  /// Communication stream of the gradient collectives (1 with ZeRO-3:
  /// reduce-scatters apart from the parameter gathers, as DeepSpeed's
  /// reduce stream; 0 shares the stream with the gathers).
  uint32_t gradientStream = 0;
  /// Partial synchronization (DreamDDP; docs/schedule.md, "Partial
  /// synchronization"): no gradient sync; local layer l of a stage averages
  /// its masters (averageBytesPerLayer) every syncPeriod iterations, in
  /// phase l mod syncPeriod (assignSyncPhases of equal layers; the schedule
  /// programs spread all of a rank's chunks with assignSyncPhases).
  /// The updates stay where the per-layer lifecycle puts them after the
  /// stage's last backward, so that a comparison with per-step sync isolates
  /// the communication (the lifecycle pass may place a first stage's updates
  /// earlier, right after each layer's last backward).
  int64_t syncPeriod = 1;
  /// Gradient clipping (docs/schedule.md, "Gradient clipping"): no update
  /// runs before the global norm over every rank's synced gradients
  /// (appendGlobalNorm).
  bool clipGradients = false;
  double tokensPerIteration = 0;
  double modelFlopsPerIteration = 0;

  /// The per-stage values in effect.
  std::vector<SyntheticStage> resolveStages() const;

  /// A collective of `kind` over `bytes` on the data-parallel group, with
  /// the config's algorithm and members per node.
  CollectiveSpec dataParallelCollective(CollectiveKind kind,
                                        int64_t bytes) const;
  /// `spec` (or, unset, the data-parallel group's) with `kind` and `bytes`.
  CollectiveSpec zeroCollective(const std::optional<CollectiveSpec> &spec,
                                CollectiveKind kind, int64_t bytes) const;
};

/// Gradient clipping: appends the global gradient norm to `program`, the
/// program of pipeline rank `rank` of `ranks` (each standing for its
/// data-parallel group): the sum of squares of its gradients
/// (`squaresSeconds`), the all-reduce of that f32 over the data-parallel
/// group (`dataParallel`, none when its group size is 1) and then over the
/// pipeline ranks as a binomial tree of point-to-point messages over `link`
/// (reduced into rank 0, broadcast back), so that no rank goes on before
/// every rank has contributed. Tags from 2^40 up, past every pipeline and
/// tied-embedding message's.
void appendGlobalNorm(StageProgram &program, int64_t rank, int64_t ranks,
                      const CollectiveSpec &dataParallel, double squaresSeconds,
                      LinkClass link);

/// Builds the program; stage i runs min(p-i-1, m) warm-up forwards, the
/// steady 1F1B pairs, then the cool-down backwards. Tags: forward activations
/// use 2*mb, backward gradients 2*mb+1.
SimProgram buildSynthetic1F1B(const Synthetic1F1BConfig &config);

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_SYNTHETIC1F1B_H
