//===- FromPlan.cpp - A simulator program from a training plan ------------===//

#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/SyntheticSchedule.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>

using namespace ratrain;
using namespace ratrain::sim;

double sim::modelFlopsPerIteration(const ModelConfig &model,
                                   const ParallelConfig &config) {
  double forwardPerToken =
      static_cast<double>(model.numLayers) *
          (model.layerMatmulFlopsPerToken() + model.attentionFlopsPerToken()) +
      model.headFlopsPerToken();
  double tokens = static_cast<double>(config.globalBatch()) *
                  static_cast<double>(model.seqLen);
  return 3.0 * forwardPerToken * tokens;
}

llvm::Expected<Synthetic1F1BConfig> sim::planToSyntheticConfig(
    const ModelConfig &model, const MachineModel &machine,
    const ParallelConfig &config, const PlanProgramOptions &options) {
  if (llvm::Error error = config.validate(model))
    return std::move(error);
  CostModel costs(model, machine);
  // The buffers of the runtime that runs the placement (gpu-style keeps a
  // whole-stage FP32 gradient buffer and optimizer workspace).
  const MemoryOptions memoryOptions =
      MemoryOptions::forMachine(machine, options.policy);
  const int64_t p = config.numVirtualStages(), d = config.dataParallel;
  const bool plain1F1B = config.schedule == schedule::ScheduleKind::OneFOneB &&
                         config.virtualStages == 1;
  // Other schedules: the rank's memory (its chunks together) goes on its
  // first chunk.
  std::vector<StageMemory> rankMemory;
  std::vector<bool> rankSeen(config.pipelineStages, false);
  if (!plain1F1B)
    rankMemory = computeMemory(model, config, memoryOptions);
  const int64_t b = config.microBatchSize;
  const bool zero = config.zero != ZeroStage::None && d > 1;

  Synthetic1F1BConfig result;
  result.stages = p; // virtual stages
  result.microBatches = config.numMicroBatches;
  result.dataParallel = d;
  result.activationBytes = p > 1 ? costs.pipelineMessageBytes(b) : 0;
  result.pipelineLink =
      costs.pipelineLink(config) == ratrain::LinkClass::IntraNode
          ? LinkClass::IntraNode
          : LinkClass::InterNode;
  result.syncKind =
      zero ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
  result.syncAlgorithm = options.algorithm.value_or(machine.network.collective);
  const int64_t perNode = std::max<int64_t>(1, machine.clustersPerNode);
  result.dpMembersPerNode = (d % perNode == 0 || perNode % d == 0)
                                ? std::min(d, perNode)
                                : std::gcd(d, perNode);
  result.placement = options.policy == LifecyclePolicy::RATrain
                         ? LifecyclePlacement::PerLayer
                         : LifecyclePlacement::WholeModel;
  result.tokensPerIteration = static_cast<double>(config.globalBatch()) *
                              static_cast<double>(model.seqLen);
  result.modelFlopsPerIteration = modelFlopsPerIteration(model, config);

  const double tokensPerMicroBatch =
      static_cast<double>(b) * static_cast<double>(model.seqLen);
  const double layerForwardFlops =
      (model.layerMatmulFlopsPerToken() + model.attentionFlopsPerToken()) *
      tokensPerMicroBatch;
  for (int64_t i = 0; i < p; ++i) {
    const StageLayers &layers = config.stages[i];
    const RecomputePolicy recompute = config.recompute[i];
    SyntheticStage stage;
    stage.layers = layers.numLayers;
    stage.firstLayer = layers.firstLayer;
    stage.forwardSeconds = costs.layerForward(b);
    stage.backwardSeconds = costs.layerBackward(b);
    stage.backwardWeightSeconds = costs.layerBackwardWeight(b);
    stage.deferredBytesPerLayer =
        layerDeferredBytes(model, b, recompute, memoryOptions);
    stage.recomputeSeconds = costs.layerRecompute(b, recompute);
    stage.forwardFlops = layerForwardFlops;
    stage.backwardFlops = 2 * layerForwardFlops;
    double extraForward = 0, extraBackward = 0;
    double extraWeight = 0;
    if (i == 0) {
      extraForward += costs.embeddingForward(b);
      extraBackward += costs.embeddingBackward(b);
      extraWeight += costs.embeddingBackward(b);
    }
    if (i == p - 1) {
      extraForward += costs.headForward(b);
      extraBackward += costs.headBackward(b);
      extraWeight += costs.headBackwardWeight(b);
    }
    stage.extraForwardSeconds = extraForward;
    stage.extraBackwardSeconds = extraBackward;
    stage.extraBackwardWeightSeconds = extraWeight;

    // Lifecycle per layer; the stage's embedding/head parameters are spread
    // evenly over its layers.
    const int64_t params = stageParams(model, config, i);
    const int64_t paramsPerLayer =
        (params + layers.numLayers - 1) / layers.numLayers;
    const int64_t updated =
        zero ? (paramsPerLayer + d - 1) / d : paramsPerLayer;
    stage.updateSeconds = costs.optimizerUpdate(updated);
    stage.viewCastSeconds = costs.viewCast(updated);
    stage.gradientBytesPerLayer = 2 * paramsPerLayer;
    // ZeRO 1/2 gather the updated views once; ZeRO-3 before every use.
    const bool zero3 = zero && config.zero >= ZeroStage::Parameters;
    stage.gatherBytesPerLayer = zero && !zero3 ? 2 * paramsPerLayer : 0;
    stage.parameterGatherBytesPerLayer = zero3 ? 2 * paramsPerLayer : 0;
    stage.offloadBytesPerLayer =
        offloadedBytesPerParam(model, config.offload) * updated;

    stage.storedActivationBytesPerLayer =
        layerActivationBytes(model, b, recompute, memoryOptions);
    if (plain1F1B) {
      StageMemory memory = computeStageMemory(model, config, i, memoryOptions);
      stage.residentBytes = memory.total() - memory.activations;
      stage.assignedPeakBytes = memory.total();
    } else if (int64_t rank = chunkRank(config, i); !rankSeen[rank]) {
      rankSeen[rank] = true;
      const StageMemory &memory = rankMemory[rank];
      stage.residentBytes = memory.total() - memory.activations;
      stage.assignedPeakBytes = memory.total();
    }
    result.perStage.push_back(stage);
  }
  return result;
}

llvm::Expected<SimProgram>
sim::buildProgramFromPlan(const ModelConfig &model, const MachineModel &machine,
                          const ParallelConfig &config,
                          const PlanProgramOptions &options) {
  llvm::Expected<Synthetic1F1BConfig> synthetic =
      planToSyntheticConfig(model, machine, config, options);
  if (!synthetic)
    return synthetic.takeError();
  SimProgram program;
  if (config.schedule == schedule::ScheduleKind::OneFOneB &&
      config.virtualStages == 1) {
    program = buildSynthetic1F1B(*synthetic);
  } else {
    llvm::Expected<schedule::PipelineSchedule> generated =
        schedule::generateSchedule(config.schedule, config.pipelineStages,
                                   config.virtualStages,
                                   config.numMicroBatches);
    if (!generated)
      return generated.takeError();
    program = buildSyntheticSchedule(*synthetic, *generated);
  }
  program.name = llvm::formatv("{0} {1} ({2})", model.name, config.describe(),
                               stringifyLifecyclePolicy(options.policy))
                     .str();
  const int64_t perNode = std::max<int64_t>(1, machine.clustersPerNode);
  program.stageReplicasPerNode = std::min(config.dataParallel, perNode);
  return program;
}
