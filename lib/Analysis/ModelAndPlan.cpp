//===- ModelAndPlan.cpp - The planner's view of a model and plan ----------===//

#include "ratrain/Analysis/ModelAndPlan.h"

using namespace mlir;
using namespace ratrain;

ModelConfig ratrain::getModelConfig(ModelOp model) {
  SmallVector<LayerOp, 8> layers = model.getLayers();
  LayerOp decoder = layers[1];
  ModelConfig config;
  config.name = model.getSymName().str();
  config.family =
      parseModelFamily(model.getFamily()).value_or(ModelFamily::Llama);
  config.numLayers = layers.size() - 2;
  config.hidden = decoder.getHidden();
  config.numHeads = *decoder.getHeads();
  config.numKVHeads = *decoder.getKvHeads();
  config.headDimension = decoder.getHeadDim().value_or(0);
  config.ffnHidden = *decoder.getFfn();
  config.vocab = *layers.front().getVocab();
  config.seqLen = model.getSeqLen();
  config.maxPositions = model.getMaxPositions();
  config.dtype = toDType(model.getDtype());
  config.qkvBias = decoder.getQkvBias();
  config.positions = model.getPositions() == PositionEncodingKind::Alibi
                         ? PositionEncoding::Alibi
                         : PositionEncoding::Rope;
  config.tieEmbeddings = model.getTieEmbeddings();
  config.normHead = model.getNormHead();
  config.rmsNormEps = model.getRmsEps().convertToDouble();
  config.ropeTheta = model.getRopeTheta().convertToDouble();
  if (RopeScalingAttr scaling = model.getRopeScalingAttr())
    config.ropeScaling = scaling.getScaling();
  config.slidingWindow = model.getSlidingWindow().value_or(0);
  return config;
}

int64_t ratrain::getLayerParams(LayerOp layer) {
  int64_t hidden = layer.getHidden();
  switch (layer.getKind()) {
  case LayerKind::Embedding:
    return int64_t(*layer.getVocab()) * hidden;
  case LayerKind::Head: {
    auto model = layer->getParentOfType<ModelOp>();
    bool tied = model && model.getTieEmbeddings();
    return hidden + (tied ? 0 : int64_t(*layer.getVocab()) * hidden);
  }
  case LayerKind::Decoder: {
    ModelConfig config;
    config.hidden = hidden;
    config.numHeads = *layer.getHeads();
    config.numKVHeads = *layer.getKvHeads();
    config.headDimension = layer.getHeadDim().value_or(0);
    config.ffnHidden = *layer.getFfn();
    config.qkvBias = layer.getQkvBias();
    return config.paramsPerLayer();
  }
  }
  llvm_unreachable("unknown layer kind");
}

LayerRole ratrain::fromIRLayerKind(LayerKind kind) {
  switch (kind) {
  case LayerKind::Embedding:
    return LayerRole::Embedding;
  case LayerKind::Decoder:
    return LayerRole::Decoder;
  case LayerKind::Head:
    return LayerRole::Head;
  }
  llvm_unreachable("unknown layer kind");
}

Recompute ratrain::toIRRecompute(RecomputePolicy policy) {
  switch (policy) {
  case RecomputePolicy::None:
    return Recompute::None;
  case RecomputePolicy::Selective:
    return Recompute::Selective;
  case RecomputePolicy::Full:
    return Recompute::Full;
  }
  llvm_unreachable("unknown recompute policy");
}

RecomputePolicy ratrain::fromIRRecompute(Recompute recompute) {
  switch (recompute) {
  case Recompute::None:
    return RecomputePolicy::None;
  case Recompute::Selective:
    return RecomputePolicy::Selective;
  case Recompute::Full:
    return RecomputePolicy::Full;
  }
  llvm_unreachable("unknown recompute");
}

Offload ratrain::toIROffload(OffloadPolicy policy) {
  switch (policy) {
  case OffloadPolicy::None:
    return Offload::None;
  case OffloadPolicy::OptimizerStates:
    return Offload::Optimizer;
  case OffloadPolicy::MasterAndOptimizer:
    return Offload::Master;
  }
  llvm_unreachable("unknown offload policy");
}

OffloadPolicy ratrain::fromIROffload(Offload offload) {
  switch (offload) {
  case Offload::None:
    return OffloadPolicy::None;
  case Offload::Optimizer:
    return OffloadPolicy::OptimizerStates;
  case Offload::Master:
    return OffloadPolicy::MasterAndOptimizer;
  }
  llvm_unreachable("unknown offload");
}

PipelineScheduleKind ratrain::toIRSchedule(schedule::ScheduleKind kind) {
  switch (kind) {
  case schedule::ScheduleKind::OneFOneB:
    return PipelineScheduleKind::OneFOneB;
  case schedule::ScheduleKind::Interleaved1F1B:
    return PipelineScheduleKind::Interleaved1F1B;
  case schedule::ScheduleKind::ZBH1:
    return PipelineScheduleKind::ZBH1;
  case schedule::ScheduleKind::ZBV:
    return PipelineScheduleKind::ZBV;
  case schedule::ScheduleKind::Custom:
    return PipelineScheduleKind::Custom;
  }
  llvm_unreachable("unknown schedule kind");
}

schedule::ScheduleKind ratrain::fromIRSchedule(PipelineScheduleKind kind) {
  switch (kind) {
  case PipelineScheduleKind::OneFOneB:
    return schedule::ScheduleKind::OneFOneB;
  case PipelineScheduleKind::Interleaved1F1B:
    return schedule::ScheduleKind::Interleaved1F1B;
  case PipelineScheduleKind::ZBH1:
    return schedule::ScheduleKind::ZBH1;
  case PipelineScheduleKind::ZBV:
    return schedule::ScheduleKind::ZBV;
  case PipelineScheduleKind::Custom:
    return schedule::ScheduleKind::Custom;
  }
  llvm_unreachable("unknown schedule kind");
}

std::optional<WireType> ratrain::toIRWire(WireFormat wire) {
  switch (wire) {
  case WireFormat::Native:
    return std::nullopt;
  case WireFormat::Int8:
    return WireType::Int8;
  case WireFormat::Int4:
    return WireType::Int4;
  }
  llvm_unreachable("unknown wire format");
}

WireFormat ratrain::fromIRWire(std::optional<WireType> wire) {
  if (!wire)
    return WireFormat::Native;
  return *wire == WireType::Int8 ? WireFormat::Int8 : WireFormat::Int4;
}

ShardingPolicy ratrain::getShardingPolicy(PlanAttr plan) {
  ShardingPolicy policy;
  policy.weightLevel = plan.getWeightPartition();
  policy.gradLevel = plan.getGradPartition();
  policy.weightWire = fromIRWire(plan.getWeightWire());
  policy.gradWire = fromIRWire(plan.getGradWire());
  return policy;
}

bool ratrain::updateWritesViewCopy(bool f32Model) { return !f32Model; }

DType ratrain::toDType(Type elementType) {
  return elementType.isF32()   ? DType::F32
         : elementType.isF16() ? DType::F16
                               : DType::BF16;
}

bool ratrain::averagesInUpdate(PlanAttr plan, DType dtype, bool ring) {
  return averagesInUpdate(toParallelConfig(plan), dtype, ring);
}

ParallelConfig ratrain::toParallelConfig(PlanAttr plan) {
  ParallelConfig config;
  config.pipelineStages = plan.getPp();
  config.dataParallel = plan.getDp();
  config.microBatchSize = plan.getMicroBatchSize();
  config.numMicroBatches = plan.getMicroBatches();
  config.zero = static_cast<ZeroStage>(plan.getZero());
  config.offload = fromIROffload(plan.getOffload());
  config.schedule = fromIRSchedule(plan.getSchedule());
  config.virtualStages = plan.getVirtualStages();
  config.sharding = getShardingPolicy(plan);
  config.maxGradNorm = plan.getMaxGradNormValue();
  config.transfers = plan.getTransfers() == TransferMode::OneSided
                         ? TransferPolicy::OneSided
                         : TransferPolicy::TwoSided;
  config.syncPeriod = plan.getSyncPeriod();
  config.replicaMicroBatches.assign(plan.getDpShares().begin(),
                                    plan.getDpShares().end());
  config.replicaMajor = plan.getRankOrder() == RankOrder::ReplicaMajor;
  int64_t firstDecoder = 0;
  int64_t numStages = plan.getNumVirtualStages();
  for (int64_t stage = 0; stage < numStages; ++stage) {
    // Model layer 0 (embedding) is on virtual stage 0, the head on the last.
    int64_t decoders = plan.getStageLayers()[stage];
    if (stage == 0)
      --decoders;
    if (stage == numStages - 1)
      --decoders;
    config.stages.push_back({firstDecoder, decoders});
    firstDecoder += decoders;
    config.recompute.push_back(fromIRRecompute(plan.getRecompute()[stage]));
  }
  if (plan.offloadsAnyActivations())
    config.activationOffload.assign(plan.getActOffload().begin(),
                                    plan.getActOffload().end());
  return config;
}

int64_t ratrain::stageDdrBytes(const MachineModel &machine, PlanAttr plan,
                               int64_t stage) {
  if (!machine.heterogeneous())
    return machine.cluster.ddrBytes;
  int64_t least = INT64_MAX;
  for (int64_t replica = 0; replica < plan.getDp(); ++replica) {
    int64_t cluster =
        std::min(plan.getRank(stage, replica), machine.totalClusters() - 1);
    least = std::min(
        least,
        machine.classes[machine.classOfCluster(cluster)].cluster.ddrBytes);
  }
  return least;
}
