//===- Plan.cpp - --ratrain-plan ------------------------------------------===//
//
// Attaches the fastest training configuration that fits the machine's usable
// DDR to every ratrain.model, using the resource-aware planner
// (ratrain/Planner/Planner.h).
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Planner/Planner.h"
#include "ratrain/Transforms/PassUtils.h"
#include "ratrain/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace ratrain {
#define GEN_PASS_DEF_RATRAINPLAN
#include "ratrain/Transforms/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;

namespace {

/// The plan attribute for a planner result, or null after an error through
/// `emitError` when it fails the attribute's verifier. The attribute counts
/// model layers (embedding on stage 0, head on the last stage); the planner
/// counts decoder layers.
/// The plan's max_grad_norm field: absent (null) without clipping.
static FloatAttr maxGradNormAttr(MLIRContext *context, double maxGradNorm) {
  return maxGradNorm > 0
             ? FloatAttr::get(Float64Type::get(context), maxGradNorm)
             : FloatAttr();
}

PlanAttr buildPlanAttr(function_ref<InFlightDiagnostic()> emitError,
                       MLIRContext *context, const Plan &plan,
                       int64_t clusters) {
  const ParallelConfig &config = plan.config;
  SmallVector<int64_t> stageLayers;
  SmallVector<Recompute> recompute;
  for (int64_t stage = 0; stage < config.numVirtualStages(); ++stage) {
    int64_t layers = config.stages[stage].numLayers;
    if (config.isFirstStage(stage))
      ++layers;
    if (config.isLastStage(stage))
      ++layers;
    stageLayers.push_back(layers);
    recompute.push_back(toIRRecompute(config.recompute[stage]));
  }
  auto zero = static_cast<int64_t>(config.zero);
  auto stepMicros = static_cast<int64_t>(std::llround(plan.time.total * 1e6));
  Offload offload = toIROffload(config.offload);
  TransferMode transfers = config.transfers == TransferPolicy::OneSided
                               ? TransferMode::OneSided
                               : TransferMode::TwoSided;
  const ShardingPolicy &sharding = config.sharding;
  if (failed(PlanAttr::verify(
          emitError, clusters, config.pipelineStages, config.dataParallel,
          config.microBatchSize, config.numMicroBatches, zero, stageLayers,
          recompute, stepMicros, plan.peakBytes(), offload,
          toIRSchedule(config.schedule), config.virtualStages,
          sharding.weightLevel, sharding.gradLevel,
          toIRWire(sharding.weightWire), toIRWire(sharding.gradWire),
          maxGradNormAttr(context, config.maxGradNorm), transfers,
          config.syncPeriod, config.activationOffload,
          config.replicaMicroBatches,
          config.replicaMajor ? RankOrder::ReplicaMajor
                              : RankOrder::StageMajor)))
    return {};
  return PlanAttr::get(
      context, clusters, config.pipelineStages, config.dataParallel,
      config.microBatchSize, config.numMicroBatches, zero, stageLayers,
      recompute, stepMicros, plan.peakBytes(), offload,
      toIRSchedule(config.schedule), config.virtualStages, sharding.weightLevel,
      sharding.gradLevel, toIRWire(sharding.weightWire),
      toIRWire(sharding.gradWire), maxGradNormAttr(context, config.maxGradNorm),
      transfers, config.syncPeriod, config.activationOffload,
      config.replicaMicroBatches,
      config.replicaMajor ? RankOrder::ReplicaMajor : RankOrder::StageMajor);
}

struct PlanPass : public ratrain::impl::RATrainPlanBase<PlanPass> {
  using Base::Base;

  /// Fills request.sharding from partition=, weight-partition=,
  /// grad-partition=, weight-wire= and grad-wire= (docs/schedule.md,
  /// "Partitioning"); a policy that names a level beyond the machine's or
  /// needs a ZeRO stage the request rules out is an error. A policy that
  /// shards views or gradients fixes the ZeRO stage it needs when the
  /// request leaves it open.
  LogicalResult applyShardingOptions(ModuleOp module,
                                     const MachineModel &machine,
                                     PlanRequest &request) {
    bool any = !partition.empty() || weightPartition != -2 ||
               gradPartition != -2 || !weightWire.empty() || !gradWire.empty();
    if (!any)
      return success();
    auto levels = int64_t(machine.networkLevels().size());
    ShardingPolicy policy;
    if (!partition.empty()) {
      std::optional<ShardingPolicy> preset = shardingPreset(partition, levels);
      if (!preset)
        return module.emitError("--ratrain-plan: unknown partition '")
               << partition
               << "' (flat, zero++ or three-level; zero++ and three-level "
                  "need a machine of at least 2 network levels, '"
               << machine.name << "' has " << levels << ")";
      policy = *preset;
    }
    for (auto [name, option, level] :
         {std::tuple<const char *, int64_t, int64_t *>{
              "weight-partition", weightPartition, &policy.weightLevel},
          {"grad-partition", gradPartition, &policy.gradLevel}}) {
      if (option == -2)
        continue;
      if (option < -1 || option >= levels)
        return module.emitError("--ratrain-plan: ")
               << name << "=" << option
               << " must be -1 (none) or a network level of '" << machine.name
               << "', 0 to " << levels - 1;
      *level = option;
    }
    for (auto [name, option, wire] :
         {std::tuple<const char *, StringRef, WireFormat *>{
              "weight-wire", weightWire, &policy.weightWire},
          {"grad-wire", gradWire, &policy.gradWire}}) {
      if (option.empty())
        continue;
      std::optional<WireFormat> parsed = parseWireFormat(option);
      if (!parsed)
        return module.emitError("--ratrain-plan: unknown ")
               << name << " '" << option << "' (native, int8 or int4)";
      *wire = *parsed;
    }
    int64_t needed =
        policy.weightLevel >= 0                                          ? 3
        : policy.gradLevel >= 0 || policy.gradWire != WireFormat::Native ? 2
        : policy.weightWire != WireFormat::Native                        ? 1
                                                                         : 0;
    if (request.zero) {
      if (int64_t(*request.zero) < needed)
        return module.emitError("--ratrain-plan: the sharding policy")
               << policy.describe() << " needs zero >= " << needed
               << ", got zero=" << int64_t(*request.zero);
    } else if (needed > 0) {
      request.zero = static_cast<ZeroStage>(needed);
    }
    request.sharding = policy;
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto models = llvm::to_vector(module.getOps<ModelOp>());
    if (models.empty())
      return;
    FailureOr<MachineModel> machine = loadPassMachine(module, machineFile);
    if (failed(machine))
      return signalPassFailure();

    PlanRequest request;
    request.clusters =
        clusters > 0 ? int64_t(clusters) : machine->totalClusters();
    request.globalBatch = globalBatch;
    if (request.globalBatch < 1) {
      module.emitError("--ratrain-plan needs global-batch=<sequences>");
      return signalPassFailure();
    }
    std::optional<LifecyclePolicy> lifecycle = parseLifecyclePolicy(policy);
    if (!lifecycle) {
      module.emitError("--ratrain-plan: unknown policy '")
          << policy << "' (ratrain or gpu-style)";
      return signalPassFailure();
    }
    request.policy = *lifecycle;
    if (pipelineDepth > 0)
      request.pipelineStages = pipelineDepth;
    if (microBatchSize > 0)
      request.microBatchSize = microBatchSize;
    if (zero >= 0) {
      if (zero > 3) {
        module.emitError("--ratrain-plan: zero must be 0, 1, 2 or 3, got ")
            << int64_t(zero);
        return signalPassFailure();
      }
      request.zero = static_cast<ZeroStage>(int64_t(zero));
    }
    if (!offload.empty()) {
      std::optional<OffloadPolicy> forced = parseOffloadPolicy(offload);
      if (!forced) {
        module.emitError("--ratrain-plan: unknown offload policy '")
            << offload << "' (none, optimizer or master)";
        return signalPassFailure();
      }
      request.offload = *forced;
    }
    if (llvm::Error err =
            applyScheduleOption(schedule, virtualStages, request)) {
      module.emitError("--ratrain-plan: ") << llvm::toString(std::move(err));
      return signalPassFailure();
    }
    if (failed(applyShardingOptions(module, *machine, request)))
      return signalPassFailure();
    if (llvm::Error error = applyMaxGradNormOption(maxGradNorm, request)) {
      module.emitError("--ratrain-plan: ") << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    if (llvm::Error error = applyTransfersOption(transfers, request)) {
      module.emitError("--ratrain-plan: ") << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    if (llvm::Error error = applySyncPeriodOption(syncPeriod, request)) {
      module.emitError("--ratrain-plan: ") << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    if (!recompute.empty()) {
      std::optional<RecomputePolicy> forced = parseRecomputePolicy(recompute);
      if (!forced) {
        module.emitError("--ratrain-plan: unknown recompute policy '")
            << recompute << "' (none, selective or full)";
        return signalPassFailure();
      }
      request.recompute = *forced;
    }
    if (llvm::Error error = applyActivationOffloadOption(actOffload, request)) {
      module.emitError("--ratrain-plan: ") << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    if (llvm::Error error = applyDpSharesOption(dpShares, request)) {
      module.emitError("--ratrain-plan: ") << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    if (llvm::Error error = applyClassLayoutOption(classLayout, request)) {
      module.emitError("--ratrain-plan: ") << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    request.topK = std::max<int64_t>(1, showTop);
    request.allowQuantized = allowQuantized;

    for (ModelOp model : models) {
      ModelConfig config = getModelConfig(model);
      llvm::Expected<PlanResult> result =
          planTraining(config, *machine, request);
      if (!result) {
        model.emitError("no feasible plan for '")
            << model.getSymName() << "' on " << request.clusters
            << " clusters of '" << machine->name
            << "': " << llvm::toString(result.takeError());
        return signalPassFailure();
      }
      Plan best = result->plans.front();
      // The chosen policy travels with the plan (the planner searches it
      // only where the request leaves it open).
      if (request.sharding)
        best.config.sharding = *request.sharding;
      // The planner keeps within the schedule limits on average; an uneven
      // split may still exceed them on one stage (an error, not an assert).
      PlanAttr plan = buildPlanAttr([&] { return model.emitError(); },
                                    &getContext(), best, request.clusters);
      if (!plan)
        return signalPassFailure();
      model.setPlanAttr(plan);
      if (showTop > 0) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << result->candidatesEvaluated << " candidates evaluated, "
           << result->feasiblePlans << " fit "
           << formatBytes(result->memoryCapBytes) << " per cluster\n";
        printPlanTable(os, result->plans);
        os << "\n";
        printStageBreakdown(os, best, result->memoryCapBytes);
        // At the location only: the note with the whole op is noise here.
        emitRemark(model.getLoc()) << text;
      }
    }
  }
};

} // namespace
