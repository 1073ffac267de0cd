//===- FromPlan.h - A simulator program from a training plan -*- C++ -*-===//
//
// Builds the 1F1B SimProgram of a ParallelConfig directly (without lowering
// through MLIR), with every duration from the planner's CostModel and every
// size from its MemoryModel, so the simulator, the planner and the lifecycle
// scheduler agree on the pieces and differ only in how they compose them:
// the simulator runs them event by event (contention on links, cross-stage
// and cross-iteration overlap) where the planner adds closed forms.
// Used for paper-scale evaluation (1024 clusters) and the benchmark.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_FROMPLAN_H
#define RATRAIN_SIMULATOR_FROMPLAN_H

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/ModelConfig.h"
#include "ratrain/Planner/CostModel.h"
#include "ratrain/Planner/MemoryModel.h"
#include "ratrain/Simulator/SimProgram.h"
#include "ratrain/Simulator/Synthetic1F1B.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace ratrain {
namespace sim {

struct PlanProgramOptions {
  LifecyclePolicy policy = LifecyclePolicy::RATrain;
  /// Gradient-sync algorithm; the machine file's default when unset.
  std::optional<CollectiveAlgorithm> algorithm;
};

/// The per-(virtual-)stage costs (Synthetic1F1BConfig) of `config`, one
/// entry per virtual stage; the I/W split of the backward from
/// CostModel::layerBackwardWeight and headBackwardWeight (the embedding
/// backward is all W) and what an I keeps from layerDeferredBytes; for a
/// schedule other than 1F1B, a rank's resident DDR (its memory-model total
/// minus stored activations) goes on its first virtual stage:
/// - forward/backward/recompute per layer and micro-batch from
///   CostModel::layerForward/layerBackward/layerRecompute, the embedding on
///   stage 0 and the head on the last stage as extra per-micro-batch time;
/// - update and view cast per layer from optimizerUpdate (on the 1/d shard
///   with ZeRO) and viewCast;
/// - gradient sync of 2 bytes/param per layer: all-reduce, or with ZeRO a
///   reduce-scatter followed by an all-gather of the updated 16-bit views;
/// - p2p messages of CostModel::pipelineMessageBytes over
///   CostModel::pipelineLink; DP groups of d contiguous clusters
///   (min(d, clusters per node) per node);
/// - resident DDR = the memory model's total (for the runtime of
///   `options.policy`) minus stored activations, which the program allocates
///   and frees per layer and micro-batch; the memory model's total is the
///   assigned peak;
/// - offloaded states (config.offload): offloadedBytesPerParam of each
///   layer's (shard of) parameters reloaded before and written back after its
///   update over the machine's offload tier.
/// The embedding and head parameters are folded into the first / last
/// layer's gradient sync and update.
llvm::Expected<Synthetic1F1BConfig>
planToSyntheticConfig(const ModelConfig &model, const MachineModel &machine,
                      const ParallelConfig &config,
                      const PlanProgramOptions &options = {});

/// buildSynthetic1F1B(planToSyntheticConfig(...)) for 1F1B, otherwise
/// buildSyntheticSchedule with the generated schedule of config.schedule;
/// named after the plan.
llvm::Expected<SimProgram>
buildProgramFromPlan(const ModelConfig &model, const MachineModel &machine,
                     const ParallelConfig &config,
                     const PlanProgramOptions &options = {});

/// One group of ranks of a plan that run the same program.
struct RankGroupProgram {
  /// "class 'half', replicas 16-31, 13 micro-batches"; empty for the plan's
  /// only group.
  std::string label;
  /// The machine to simulate it on (its class's, MachineModel::classMachine).
  MachineModel machine;
  SimProgram program;
};

/// The programs of `config`'s ranks on `machine`, which may have classes of
/// clusters (Grolar, HexiScale; docs/simulator.md, "Heterogeneous
/// clusters"): with uneven dp shares or replicas on different classes
/// (config.replicaMajor), one program per distinct (class, share) of the
/// replicas, each the 1F1B program of that share priced on its class; with
/// stages on different classes, one program whose stages are priced on
/// theirs (the links and collectives on the slowest class's machine);
/// otherwise the one buildProgramFromPlan program. The step is the largest
/// of their steps: a replica's gradient sync waits for the slowest replica.
llvm::Expected<std::vector<RankGroupProgram>>
buildRankGroupPrograms(const ModelConfig &model, const MachineModel &machine,
                       const ParallelConfig &config,
                       const PlanProgramOptions &options = {});

/// Model FLOPs of one iteration of `config`: 3x the forward FLOPs (matmuls,
/// causal attention and the LM head) per token times d * b * m * s tokens.
double modelFlopsPerIteration(const ModelConfig &model,
                              const ParallelConfig &config);

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_FROMPLAN_H
