//===- Planner.h - Resource-aware training-plan search ----------*- C++ -*-===//
//
// Searches pipeline depth, data-parallel width, micro-batch size and count
// (the global batch fixed), ZeRO stage and sharding policy (partition levels,
// optionally quantized wire formats), optimizer-state offload, the stage
// layer split and the recompute policy of each stage; keeps only plans whose
// every stage fits the usable DDR of one cluster (and the offload tier),
// counted with the memory model of the requested lifecycle policy; ranks
// them by the predicted step time of the cost model (CostModel.h). Plain C++,
// LLVM Support only; the
// `--ratrain-plan` pass and the `ratrain-plan` CLI both call it.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_PLANNER_PLANNER_H
#define RATRAIN_PLANNER_PLANNER_H

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/ModelConfig.h"
#include "ratrain/Planner/CostModel.h"
#include "ratrain/Planner/MemoryModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ratrain {

/// What to plan for. Unset optionals are searched.
struct PlanRequest {
  int64_t clusters = 0;    ///< clusters to use: pp * dp == clusters
  int64_t globalBatch = 0; ///< sequences per iteration
  /// Sequence length; 0 keeps the model's seqLen.
  int64_t seqLen = 0;
  LifecyclePolicy policy = LifecyclePolicy::RATrain;
  std::optional<int64_t> pipelineStages;
  std::optional<int64_t> dataParallel;
  std::optional<int64_t> microBatchSize;
  std::optional<ZeroStage> zero;
  /// Forces a sharding policy (partition levels, wire formats); unset
  /// searches the policies the ZeRO stage and the machine's levels allow.
  std::optional<ShardingPolicy> sharding;
  /// Also search quantized wire formats (qwZ int8 weight gathers, qgZ int8
  /// or int4 gradient reduce-scatters) when `sharding` is unset. Off by
  /// default: quantized communication changes the numerics.
  bool allowQuantized = false;
  /// Forces the same recompute policy on every stage.
  std::optional<RecomputePolicy> recompute;
  /// Forces an offload policy; unset searches none, optimizer and master
  /// when the machine has an offload tier (none only otherwise).
  std::optional<OffloadPolicy> offload;
  /// The pipeline schedule; unset plans non-interleaved 1F1B.
  std::optional<schedule::ScheduleKind> schedule;
  /// Virtual stages per rank; unset: 2 and 4 for interleaved-1f1b, 2 for
  /// zbv, 1 otherwise.
  std::optional<int64_t> virtualStages;
  /// `auto`: search every schedule kind (1f1b, zb-h1, zbv, interleaved-1f1b
  /// with v in {2, 4}, or the given virtualStages >= 2) with the rest of the
  /// plan; `schedule` is ignored.
  bool searchSchedules = false;
  /// Global gradient-norm clipping (0: none), priced in every candidate's
  /// step time (ParallelConfig::maxGradNorm).
  double maxGradNorm = 0;
  /// How the pipeline's messages travel (ParallelConfig::transfers); every
  /// candidate gets it.
  TransferPolicy transfers = TransferPolicy::TwoSided;
  /// Partial synchronization (ParallelConfig::syncPeriod); every candidate
  /// gets it, and only ZeRO-0 candidates that keep the masters in DDR are
  /// searched.
  int64_t syncPeriod = 1;
  /// Activation offload (ParallelConfig::activationOffload). Search (the
  /// default): where the machine has an offload tier, every 1F1B candidate
  /// whose stages recompute is also tried with, per stage, the count of
  /// offloaded layers that predicts the shortest stage and fits DDR and the
  /// tier. None: never. All: every decoder layer of every stage.
  /// Counts: those per virtual stage (activationOffloadCounts).
  enum class ActivationOffloadMode { Search, None, All, Counts };
  ActivationOffloadMode activationOffload = ActivationOffloadMode::Search;
  std::vector<int64_t> activationOffloadCounts;
  /// Forces uneven data-parallel shares (HexiScale; docs/planner.md,
  /// "Heterogeneous clusters"): the micro-batches of each replica; dp is
  /// their count and b the global batch over their sum. Empty: even shares,
  /// or on a machine with classes of clusters the shares the planner picks.
  std::vector<int64_t> dpShares;
  /// On a machine with classes of clusters, the layouts searched: even
  /// (every rank the same work, as a planner blind to the classes would
  /// plan; the slowest class sets the pace), replicas (replica-major ranks,
  /// each replica inside one class, uneven micro-batch counts per replica),
  /// stages (stage-major ranks, each stage inside one class, uneven layer
  /// splits per stage). Search: all three.
  enum class ClassLayout { Search, Even, Replicas, Stages };
  ClassLayout classLayout = ClassLayout::Search;
  /// DDR cap per cluster in bytes; 0 uses machine.cluster.ddrBytes.
  int64_t memoryCapBytes = 0;
  /// How many plans to return, best first.
  int64_t topK = 5;
  /// Skip combinations whose memory lower bound exceeds the cap (off only
  /// to check that the bound never prunes a feasible plan).
  bool pruneByMemoryBound = true;
};

/// One feasible plan.
struct Plan {
  ParallelConfig config;
  std::vector<StageMemory> memory; ///< one per rank (pipeline position)
  StepTime time;
  double tokensPerSecond = 0;
  /// On a machine with classes of clusters: the layout in words (which
  /// class runs which replicas or stages, their shares or layers, and each
  /// class's predicted step), the planner's reason for it; else empty.
  std::string layout;
  int64_t peakBytes() const; ///< max over stages of total()
  int64_t peakStage() const; ///< the stage with that maximum
  /// Max over stages of the bytes one cluster keeps in the offload tier.
  int64_t peakOffloadedBytes() const;
};

/// Search statistics and the best plans.
struct PlanResult {
  std::vector<Plan> plans; ///< best first, at most topK
  /// Full plans (split + per-stage policy) whose memory and step time were
  /// computed.
  int64_t candidatesEvaluated = 0;
  /// (pp, dp, b, zero) combinations visited, including pruned ones.
  int64_t combinationsVisited = 0;
  /// Combinations skipped by the memory lower bound before any split.
  int64_t combinationsPruned = 0;
  /// Single-stage memory/time evaluations done while choosing splits.
  int64_t stageEvaluations = 0;
  int64_t feasiblePlans = 0; ///< candidates that fit the cap
  int64_t memoryCapBytes = 0;
  /// Offload-tier bytes per cluster (0: the machine has no tier).
  int64_t offloadCapBytes = 0;
  LifecyclePolicy policy = LifecyclePolicy::RATrain; ///< what was planned for
};

/// Plans `model` on `machine`. Errors: a malformed request (clusters or
/// batch not positive, constraints that contradict each other), or no plan
/// fits; then the message names what is missing for the closest candidate,
/// e.g. "no plan fits 20.0 GB per cluster; closest: pp=8 dp=128 ...: stage 0
/// needs 23.4 GB of 20.0 GB: activations 14.1 GB, master weights 4.2 GB,
/// ...".
llvm::Expected<PlanResult> planTraining(const ModelConfig &model,
                                        const MachineModel &machine,
                                        const PlanRequest &request);

/// The sharding policies the planner searches for ZeRO stage `zero` with
/// `dataParallel` replicas on a machine whose levels group `levelClusters`
/// clusters (levelGroupClusters): the request's when fixed (none when the
/// stage does not allow it: a weight partition or wire needs ZeRO-3, a
/// gradient partition or wire ZeRO-2); else flat, zero++ and three-level
/// (shardingPreset) with the weight partition dropped below ZeRO-3 and the
/// gradient partition below ZeRO-2, leaving out levels the data-parallel
/// groups straddle and secondary groups of the whole group; with
/// request.allowQuantized each also with an int8 weight wire and an int8 or
/// int4 gradient wire where the stage allows; flat only for a gpu-style
/// request (its runtime syncs whole stages at the iteration boundary).
/// Without duplicates.
std::vector<ShardingPolicy>
searchedShardingPolicies(const PlanRequest &request, ZeroStage zero,
                         int64_t dataParallel,
                         llvm::ArrayRef<int64_t> levelClusters);

/// Evaluates one given config (memory per stage under `policy`'s memory
/// model, and step time); does not check the cap.
Plan evaluatePlan(const ModelConfig &model, const MachineModel &machine,
                  const ParallelConfig &config, LifecyclePolicy policy);
/// The same on the config's schedule, already generated.
Plan evaluatePlan(const ModelConfig &model, const MachineModel &machine,
                  const ParallelConfig &config, LifecyclePolicy policy,
                  const schedule::PipelineSchedule &schedule);

/// Sets `request`'s gradient clipping from a tool option: a finite number
/// >= 0 (0: no clipping). The error names the option and the value.
llvm::Error applyMaxGradNormOption(double maxGradNorm, PlanRequest &request);

/// Sets `request`'s transfer policy from a tool option: "two-sided" or
/// "one-sided". The error names the bad value and the choices.
llvm::Error applyTransfersOption(llvm::StringRef transfers,
                                 PlanRequest &request);

/// Sets `request`'s partial-synchronization period from a tool option:
/// 1 (every step) to limits::kMaxSyncPeriod. H > 1 conflicts with
/// gradient clipping (apply applyMaxGradNormOption first). The error names
/// the option, the value and the limit.
llvm::Error applySyncPeriodOption(int64_t syncPeriod, PlanRequest &request);

/// Sets `request`'s activation offload from a tool option: "" (search),
/// "none", "all" or comma-separated counts of offloaded decoder layers, one
/// per virtual stage ("2,0"). The error names the option ("act-offload:
/// ...").
llvm::Error applyActivationOffloadOption(llvm::StringRef value,
                                         PlanRequest &request);

/// Sets `request`'s uneven data-parallel shares from a tool option: ""
/// (none) or comma-separated micro-batch counts, one per replica ("3,1"),
/// each 1 to limits::kMaxMicroBatches. The error names the option
/// ("dp-shares: ...").
llvm::Error applyDpSharesOption(llvm::StringRef value, PlanRequest &request);

/// Sets `request`'s class layout from a tool option: "" or "search",
/// "even", "replicas", "stages". The error names the choices.
llvm::Error applyClassLayoutOption(llvm::StringRef value, PlanRequest &request);

/// Sets `request`'s schedule from a tool option: "1f1b", "interleaved-1f1b",
/// "zb-h1", "zbv" or "auto" (searchSchedules), and `virtualStages` when
/// positive. The error names the bad value and the choices.
llvm::Error applyScheduleOption(llvm::StringRef schedule, int64_t virtualStages,
                                PlanRequest &request);

//===--- formatting (shared by the CLI and the pass diagnostics) ---------===//

/// "23.4 GB" (decimal GB, 1e9 bytes; "512.0 MB" / "12.0 KB" below 1 GB).
std::string formatBytes(int64_t bytes);
/// "1.23 s", "45.6 ms", "7.8 us".
std::string formatSeconds(double seconds);
/// Compact layer split: runs of equal stages as AxN (A layers on each of N
/// stages), "7,8x2,9"; policies likewise, "fullx2,nonex6", or a single name
/// when all stages agree.
std::string formatLayerSplit(const ParallelConfig &config);
std::string formatRecompute(const ParallelConfig &config);
/// The activation-offloaded layers per stage, runs of equal counts as KxN:
/// "2x3,0x5" ("2" when uniform; "0" without offload).
std::string formatActivationOffload(const ParallelConfig &config);

/// The micro-batches per replica (ParallelConfig::replicaMicroBatches),
/// runs of equal shares as MxN: "13x64,3x64"; "m" with even shares.
std::string formatDpShares(const ParallelConfig &config);

/// "stage 0 needs 23.4 GB of 20.0 GB: activations 14.1 GB, master weights
/// 4.2 GB, ..." (fields largest first, zero fields left out).
std::string describeStageMemory(const StageMemory &memory, int64_t capBytes);

/// Table of the plans, one row each: rank, pp, dp, b, m, zero, offload,
/// layers, recompute, peak GB, bubble, exposed, step s, tokens/s, and the
/// schedule ("zbv v=2") when some plan is not 1F1B.
void printPlanTable(llvm::raw_ostream &os, llvm::ArrayRef<Plan> plans);
/// Per-rank breakdown table of one plan: one row per rank with every
/// StageMemory field and the total, against the cap (plus the offload-tier
/// bytes, which are not DDR).
void printStageBreakdown(llvm::raw_ostream &os, const Plan &plan,
                         int64_t capBytes);
/// JSON of a result (plans with configs, memory by field, times).
void printPlanJSON(llvm::raw_ostream &os, const PlanResult &result);

} // namespace ratrain

#endif // RATRAIN_PLANNER_PLANNER_H
