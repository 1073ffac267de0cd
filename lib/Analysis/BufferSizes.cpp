//===- BufferSizes.cpp - DDR bytes of each kind of stage buffer -----------===//

#include "ratrain/Analysis/BufferSizes.h"
#include "ratrain/Analysis/ModelAndPlan.h"

#include <algorithm>

using namespace mlir;
using namespace ratrain;

static int64_t ceilDiv(int64_t x, int64_t y) { return (x + y - 1) / y; }

BufferSizes::BufferSizes(ModelOp model, PlanAttr plan,
                         const MemoryOptions &options)
    : plan(plan), config(getModelConfig(model)), options(options),
      offload(fromIROffload(plan.getOffload())) {
  for (LayerOp layer : model.getLayers()) {
    // A tied embedding matrix is the embedding's state only: the head's
    // replica of its view and gradient is lowering scratch (the memory
    // model's layerTemporaries).
    layerParams.push_back(getLayerParams(layer));
    layerKinds.push_back(layer.getKind());
  }
  ParallelConfig parallel = toParallelConfig(plan);
  // Per virtual stage (model chunk), as a pipeline of pp * v stages: the
  // scratch sizes depend on the chunk's layers only.
  for (int64_t stage = 0; stage < plan.getNumVirtualStages(); ++stage)
    stageMemory.push_back(
        computeStageMemory(config, stage, plan.getNumVirtualStages(),
                           parallel.dataParallel, parallel.microBatchSize,
                           parallel.numMicroBatches, parallel.stages[stage],
                           parallel.recompute[stage], parallel.zero, options));
}

int64_t BufferSizes::params(int64_t layer) const { return layerParams[layer]; }

int64_t BufferSizes::viewBytes(int64_t layer) const {
  return int64_t(getDTypeBytes(config.dtype)) * params(layer);
}

/// Parameters of `layer` this rank keeps of a state sharded from ZeRO stage
/// `from` on.
static int64_t shardedParams(int64_t params, PlanAttr plan, int64_t from) {
  return plan.getZero() >= from
             ? ceilDiv(params, std::max<int64_t>(plan.getDp(), 1))
             : params;
}

int64_t BufferSizes::residentViewBytes(int64_t layer) const {
  return int64_t(getDTypeBytes(config.dtype)) *
         shardedParams(params(layer), plan, 3);
}

int64_t BufferSizes::masterBytes(int64_t layer) const {
  if (getDTypeBytes(config.dtype) >= 4)
    return 0;
  return 4 * shardedParams(params(layer), plan, 1);
}

int64_t BufferSizes::optStateBytes(int64_t layer) const {
  return 8 * shardedParams(params(layer), plan, 1);
}

int64_t BufferSizes::gradBytes(int64_t layer) const {
  return int64_t(getDTypeBytes(config.dtype)) * params(layer);
}

int64_t BufferSizes::gradShardBytes(int64_t layer) const {
  if (plan.getZero() < 2)
    return 0;
  return int64_t(getDTypeBytes(config.dtype)) *
         shardedParams(params(layer), plan, 2);
}

bool BufferSizes::offloadsMaster() const {
  return offload == OffloadPolicy::MasterAndOptimizer &&
         getDTypeBytes(config.dtype) < 4;
}

bool BufferSizes::offloadsOptState() const {
  return offload != OffloadPolicy::None;
}

int64_t BufferSizes::residentMasterBytes(int64_t layer) const {
  return offloadsMaster() ? 0 : masterBytes(layer);
}

int64_t BufferSizes::residentOptStateBytes(int64_t layer) const {
  return offloadsOptState() ? 0 : optStateBytes(layer);
}

/// A state's share of one streaming chunk: `bytes` of a layer whose
/// offloaded states total `offloaded` bytes, `chunk` of which stream
/// through DDR at a time.
static int64_t chunkShare(int64_t bytes, int64_t offloaded, int64_t chunk) {
  if (chunk <= 0 || offloaded <= chunk || offloaded == 0)
    return bytes;
  // bytes * chunk / offloaded, rounded down, without overflow.
  return int64_t((__int128)bytes * chunk / offloaded);
}

int64_t BufferSizes::streamedMasterBytes(int64_t layer) const {
  int64_t offloaded = (offloadsMaster() ? masterBytes(layer) : 0) +
                      (offloadsOptState() ? optStateBytes(layer) : 0);
  return chunkShare(masterBytes(layer), offloaded, options.offloadChunkBytes);
}

int64_t BufferSizes::streamedOptStateBytes(int64_t layer) const {
  int64_t offloaded = (offloadsMaster() ? masterBytes(layer) : 0) +
                      (offloadsOptState() ? optStateBytes(layer) : 0);
  return chunkShare(optStateBytes(layer), offloaded, options.offloadChunkBytes);
}

int64_t BufferSizes::activationBytes(int64_t layer, ActivationKind kind) const {
  int64_t w = getDTypeBytes(config.dtype);
  int64_t sb = config.seqLen * plan.getMicroBatchSize();
  switch (layerKinds[layer]) {
  case LayerKind::Embedding:
    // Token ids (int32).
    return 4 * sb;
  case LayerKind::Head:
    // Final-norm input and output, logits, their FP32 softmax, labels.
    return 2 * w * sb * config.hidden + (w + 4) * sb * config.vocab + 4 * sb;
  case LayerKind::Decoder:
    break;
  }
  RecomputePolicy policy = kind == ActivationKind::Full ? RecomputePolicy::None
                           : kind == ActivationKind::Selective
                               ? RecomputePolicy::Selective
                               : RecomputePolicy::Full;
  return layerActivationBytes(config, plan.getMicroBatchSize(), policy,
                              options);
}

int64_t BufferSizes::deferredBytes(int64_t layer) const {
  return ratrain::deferredBytes(config, plan.getMicroBatchSize(),
                                fromIRLayerKind(layerKinds[layer]));
}

int64_t BufferSizes::boundaryBytes() const {
  return config.seqLen * plan.getMicroBatchSize() * config.hidden *
         int64_t(getDTypeBytes(config.dtype));
}

int64_t BufferSizes::workspaceBytes(int64_t stage) const {
  return stageMemory[stage].kernelWorkspace;
}

int64_t BufferSizes::syncStagingBytes(int64_t) const {
  // Syncs run in place on the accumulation buffers (see the header).
  return 0;
}

int64_t BufferSizes::attentionScratchBytes(int64_t stage) const {
  // Under full recompute the recompute buffer is the recomputed layer's
  // activations, a buffer of its own here.
  if (plan.getRecompute()[stage] != Recompute::Selective)
    return 0;
  return stageMemory[stage].recomputeBuffer;
}
