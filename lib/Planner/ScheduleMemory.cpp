//===- ScheduleMemory.cpp - Per-rank DDR under any pipeline schedule ------===//
//
// What a rank holds at its peak under a schedule other than 1F1B: the model
// states of every chunk it owns, and the activations and deferred input
// gradients that schedule::scheduleMemory counts live at the rank's peak,
// weighted by each chunk's bytes per micro-batch. The formulas are in
// docs/planner.md ("Schedules").
//
//===----------------------------------------------------------------------===//

#include "ratrain/Planner/MemoryModel.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <functional>

using namespace ratrain;
using schedule::ScheduleKind;

llvm::Error ratrain::validateScheduleShape(ScheduleKind kind, int64_t pp,
                                           int64_t v, int64_t m) {
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "schedule " + schedule::stringifyScheduleKind(kind) + ": " + message);
  };
  switch (kind) {
  case ScheduleKind::OneFOneB:
  case ScheduleKind::ZBH1:
    if (v != 1)
      return fail(llvm::formatv("needs 1 virtual stage per rank, got {0}", v));
    break;
  case ScheduleKind::ZBV:
    if (v != 2)
      return fail(llvm::formatv("needs 2 virtual stages per rank, got {0}", v));
    break;
  case ScheduleKind::Interleaved1F1B:
    if (v < 2)
      return fail(llvm::formatv(
          "needs at least 2 virtual stages per rank, got {0}", v));
    if (m % pp != 0)
      return fail(llvm::formatv(
          "needs the {0} micro-batches to be a multiple of pp={1}", m, pp));
    break;
  case ScheduleKind::Custom:
    if (v < 1)
      return fail(llvm::formatv("needs at least 1 virtual stage, got {0}", v));
    break;
  }
  return llvm::Error::success();
}

int64_t ratrain::chunkRank(const ParallelConfig &config, int64_t stage) {
  int64_t p = config.pipelineStages;
  if (config.schedule == ScheduleKind::ZBV && stage >= p)
    return 2 * p - 1 - stage;
  return stage % p;
}

int64_t ratrain::layerDeferredBytes(const ModelConfig &model,
                                    int64_t microBatchSize,
                                    RecomputePolicy policy,
                                    const MemoryOptions &options) {
  // The deferred buffer of the split backward (decoderDeferredLayout).
  int64_t gradients = deferredBytes(model, microBatchSize, LayerRole::Decoder);
  if (policy != RecomputePolicy::Full)
    return gradients;
  // The I recomputed the layer; the recomputed activations stay live until
  // the W (the stored layer input is counted with the activations).
  return gradients +
         layerActivationBytes(model, microBatchSize, RecomputePolicy::Selective,
                              options) -
         layerActivationBytes(model, microBatchSize, RecomputePolicy::Full,
                              options);
}

void ratrain::scheduleWeights(const ModelConfig &model,
                              const ParallelConfig &config,
                              const MemoryOptions &options,
                              std::vector<double> &activationBytes,
                              std::vector<double> &deferredBytes) {
  int64_t n = config.numVirtualStages();
  int64_t b = config.microBatchSize;
  int64_t w = getDTypeBytes(model.dtype);
  int64_t sb = model.seqLen * b;
  activationBytes.assign(n, 0);
  deferredBytes.assign(n, 0);
  for (int64_t c = 0; c < n; ++c) {
    int64_t layers = config.stages[c].numLayers;
    RecomputePolicy policy = config.recompute[c];
    double act =
        double(layers) * layerActivationBytes(model, b, policy, options);
    double deferred =
        double(layers) * layerDeferredBytes(model, b, policy, options);
    if (c == 0) {
      act += 4.0 * sb; // token ids
      deferred +=
          double(ratrain::deferredBytes(model, b, LayerRole::Embedding));
    }
    if (c == n - 1) {
      act += 2.0 * w * sb * model.hidden + double(w + 4) * sb * model.vocab +
             4.0 * sb;
      // The final-norm output gradient; the logits' gradient stays in the
      // head's activations, live until the W.
      deferred += double(ratrain::deferredBytes(model, b, LayerRole::Head));
    }
    activationBytes[c] = act;
    deferredBytes[c] = deferred;
  }
}

StageMemory ratrain::computeRankMemory(const ModelConfig &model,
                                       const ParallelConfig &config,
                                       int64_t rank,
                                       const schedule::ScheduleMemory &counts,
                                       const MemoryOptions &options) {
  if (config.schedule == ScheduleKind::OneFOneB && config.virtualStages == 1)
    return computeStageMemory(model, config, rank, options);
  int64_t n = config.numVirtualStages();
  int64_t b = config.microBatchSize;
  MemoryOptions withPolicy = options;
  withPolicy.sharding = config.sharding;
  StageMemory total;
  total.stage = rank;
  bool any = false;
  // ZeRO-3: two gathered views are live on the rank, the largest two of
  // all its chunks' items (the chunks' own pairs are taken out below).
  int64_t w = getDTypeBytes(model.dtype);
  llvm::SmallVector<int64_t, 4> gathered;
  auto takeGathered = [&](StageMemory &chunk) {
    for (int64_t item : chunk.gatheredItems) {
      chunk.parameterViews -= w * item;
      gathered.push_back(item);
    }
  };
  for (int64_t c = 0; c < n; ++c) {
    if (chunkRank(config, c) != rank)
      continue;
    int64_t live = 0, deferred = 0;
    if (rank < int64_t(counts.peakActivations.size()) &&
        c < int64_t(counts.peakActivations[rank].size()))
      live = counts.peakActivations[rank][c];
    if (rank < int64_t(counts.peakDeferred.size()) &&
        c < int64_t(counts.peakDeferred[rank].size()))
      deferred = counts.peakDeferred[rank][c];
    StageMemory chunk = computeStageMemory(
        model, c, n, config.dataParallel, b, config.numMicroBatches,
        config.stages[c], config.recompute[c], config.zero, config.offload,
        live, withPolicy);
    applyActivationOffload(chunk, model, b, config.recompute[c],
                           config.offloadedLayers(c), live, options);
    chunk.activations +=
        config.stages[c].numLayers * deferred *
        layerDeferredBytes(model, b, config.recompute[c], options);
    if (c == 0)
      chunk.embeddingHeadActivations +=
          deferred * deferredBytes(model, b, LayerRole::Embedding);
    if (c == n - 1)
      chunk.embeddingHeadActivations +=
          deferred * deferredBytes(model, b, LayerRole::Head);
    takeGathered(chunk);
    if (!any) {
      total = chunk;
      total.stage = rank;
      any = true;
      continue;
    }
    // States, stored activations and outboxes add up over the chunks.
    total.params += chunk.params;
    total.parameterViews += chunk.parameterViews;
    total.masterWeights += chunk.masterWeights;
    total.optimizerStates += chunk.optimizerStates;
    total.gradients += chunk.gradients;
    total.activations += chunk.activations;
    total.embeddingHeadActivations += chunk.embeddingHeadActivations;
    total.optimizerWorkspace += chunk.optimizerWorkspace;
    total.outgoingMessages += chunk.outgoingMessages;
    total.zeroShards += chunk.zeroShards;
    total.offloadedBytes += chunk.offloadedBytes;
    total.offloadedActivations += chunk.offloadedActivations;
    // One kernel runs at a time: buffers, workspaces and the offload
    // window are the largest chunk's.
    total.recomputeBuffer =
        std::max(total.recomputeBuffer, chunk.recomputeBuffer);
    total.kernelWorkspace =
        std::max(total.kernelWorkspace, chunk.kernelWorkspace);
    total.communicationBuffers =
        std::max(total.communicationBuffers, chunk.communicationBuffers);
    total.offloadWindow = std::max(total.offloadWindow, chunk.offloadWindow);
    total.layerTemporaries =
        std::max(total.layerTemporaries, chunk.layerTemporaries);
  }
  llvm::sort(gathered, std::greater<int64_t>());
  for (size_t k = 0; k < std::min<size_t>(2, gathered.size()); ++k) {
    total.gatheredItems[k] = gathered[k];
    total.parameterViews += w * gathered[k];
  }
  return total;
}

/// The schedule's live counts for `config`, weighted by its chunks' bytes.
static schedule::ScheduleMemory countLive(const ModelConfig &model,
                                          const ParallelConfig &config,
                                          const MemoryOptions &options) {
  llvm::Expected<schedule::PipelineSchedule> generated =
      schedule::generateSchedule(config.schedule, config.pipelineStages,
                                 config.virtualStages, config.numMicroBatches);
  if (!generated) {
    llvm::consumeError(generated.takeError());
    return {};
  }
  std::vector<double> act, deferred;
  scheduleWeights(model, config, options, act, deferred);
  return schedule::scheduleMemory(*generated, act, deferred);
}

std::vector<StageMemory> ratrain::computeMemory(const ModelConfig &model,
                                                const ParallelConfig &config,
                                                const MemoryOptions &options) {
  std::vector<StageMemory> result;
  if (config.schedule == ScheduleKind::OneFOneB && config.virtualStages == 1) {
    for (int64_t i = 0; i < config.pipelineStages; ++i)
      result.push_back(computeStageMemory(model, config, i, options));
    return result;
  }
  schedule::ScheduleMemory counts = countLive(model, config, options);
  for (int64_t r = 0; r < config.pipelineStages; ++r)
    result.push_back(computeRankMemory(model, config, r, counts, options));
  return result;
}
