//===- ScheduleTime.cpp - Step time under any pipeline schedule -----------===//
//
// predictStepTime for schedules other than non-interleaved 1F1B: the
// pipeline time is schedule::simulateSchedule of the schedule's action lists
// with each virtual stage's F, I and W seconds; the lifecycle (gradient sync
// after each item's last W, then update, view cast and ZeRO all-gather; the
// offload reloads and write-backs) is placed per rank on the simulated
// timing as the 1F1B closed form places it (CostModel.h).
//
//===----------------------------------------------------------------------===//

#include "ratrain/Planner/CostModel.h"

#include <algorithm>
#include <limits>
#include <utility>

using namespace ratrain;
using schedule::ActionKind;

schedule::ActionCosts
ratrain::scheduleActionCosts(const CostModel &costs,
                             const ParallelConfig &config) {
  int64_t n = config.numVirtualStages(), b = config.microBatchSize;
  const ModelConfig &model = costs.getModel();
  // ZeRO-3: each compute waits for its item's gather, which overlaps the
  // compute before it.
  int64_t layerParams = model.paramsPerLayer();
  // A tied embedding is updated once, by the embedding (its owner).
  int64_t headParams = model.headParams();
  auto gathered = [&](double seconds, int64_t params) {
    return std::max(seconds,
                    itemCommunication(costs, config, params).gatherRepeat);
  };
  double f = gathered(costs.layerForward(b), layerParams),
         bi = costs.layerBackwardInput(b),
         bw = gathered(costs.layerBackwardWeight(b), layerParams);
  schedule::ActionCosts result;
  result.forward.resize(n);
  result.backwardInput.resize(n);
  result.backwardWeight.resize(n);
  for (int64_t c = 0; c < n; ++c) {
    double layers = double(config.stages[c].numLayers);
    double offloaded = double(config.offloadedLayers(c));
    double r = costs.layerRecompute(b, config.recompute[c]);
    result.forward[c] = layers * f;
    // Offloaded layers keep their full activations: no recompute.
    result.backwardInput[c] =
        (layers - offloaded) * gathered(bi + r, layerParams) +
        offloaded * gathered(bi, layerParams);
    result.backwardWeight[c] = layers * bw;
    if (c == 0) {
      result.forward[c] +=
          gathered(costs.embeddingForward(b), model.embeddingParams());
      result.backwardWeight[c] +=
          gathered(costs.embeddingBackward(b), model.embeddingParams());
    }
    if (c == n - 1) {
      result.forward[c] += gathered(costs.headForward(b), headParams);
      result.backwardInput[c] +=
          gathered(costs.headBackwardInput(b), headParams);
      result.backwardWeight[c] +=
          gathered(costs.headBackwardWeight(b), headParams);
    }
    // What the offload stream does not hide under the chunk's computes.
    result.backwardInput[c] += exposedActivationTransfer(
        costs, config, c,
        result.forward[c] + result.backwardInput[c] + result.backwardWeight[c]);
  }
  result.transfer = config.pipelineStages > 1
                        ? costs.pointToPoint(costs.pipelineMessageBytes(b),
                                             costs.pipelineLink(config))
                        : 0;
  return result;
}

namespace {
/// A unit of the lifecycle on one rank: a decoder layer, the embedding or the
/// head of one of its chunks.
struct Item {
  int64_t params;
  double ready;       ///< its gradient is complete (step-relative)
  double nextForward; ///< its first forward of the step (step-relative)
};
} // namespace

StepTime ratrain::predictStepTime(const CostModel &costs,
                                  const ParallelConfig &config,
                                  LifecyclePolicy policy,
                                  const schedule::PipelineSchedule &sched) {
  const ModelConfig &model = costs.getModel();
  int64_t p = config.pipelineStages, d = config.dataParallel,
          b = config.microBatchSize, n = config.numVirtualStages();
  int64_t w = getDTypeBytes(model.dtype);
  bool sharded = config.zero >= ZeroStage::Optimizer && d > 1;
  int64_t offloadPerParam = offloadedBytesPerParam(model, config.offload);
  auto updatedParams = [&](int64_t params) {
    return sharded ? (params + d - 1) / d : params;
  };
  // The updates read the own part of their gradients too where the syncs
  // leave the average to them (docs/lowering.md), per pipeline rank: the
  // rank's data-parallel group syncs hierarchically where it spans nodes.
  auto ownPart = [&](int64_t rank) {
    return costs.averagesInUpdate(config, rank);
  };
  auto offloaded = [&](int64_t params) {
    int64_t updated =
        config.zero >= ZeroStage::Optimizer ? (params + d - 1) / d : params;
    return offloadPerParam * updated;
  };
  // The all-gather of the updated view after the update (also under
  // ZeRO-3, as the 1F1B closed form counts it).
  bool regather = sharded;
  auto sync = [&](int64_t params) {
    return itemCommunication(costs, config, params).gradSync;
  };
  // A tied embedding is updated once, by the embedding (its owner).
  int64_t headParams = model.headParams();

  schedule::ActionCosts actionCosts = scheduleActionCosts(costs, config);
  schedule::ScheduleTiming timing =
      schedule::simulateSchedule(sched, actionCosts, /*keepActions=*/true);

  StepTime result;
  result.pipeline = timing.makespan;
  // A secondary weight partition's longer first gather of each item: the
  // first micro-batch's forward passes every chunk once with it.
  {
    auto extra = [](double compute, const ItemCommunication &comm) {
      return std::max(compute, comm.gatherFirst) -
             std::max(compute, comm.gatherRepeat);
    };
    ItemCommunication layerComm =
        itemCommunication(costs, config, model.paramsPerLayer());
    for (int64_t c = 0; c < n; ++c)
      result.pipeline += double(config.stages[c].numLayers) *
                         extra(costs.layerForward(b), layerComm);
  }
  // As for 1F1B: the idle time of the busiest rank (the others' extra idle
  // is imbalance, not bubble).
  double busiest = 0;
  for (double busy : timing.busy)
    busiest = std::max(busiest, busy);
  result.bubble = std::max(0.0, timing.makespan - busiest);
  result.stages.resize(n);
  double maxRecompute = 0;
  std::vector<double> rankRecompute(p, 0);
  for (int64_t c = 0; c < n; ++c) {
    StageTiming &t = result.stages[c];
    int64_t layers = config.stages[c].numLayers;
    t.forward = actionCosts.forward[c];
    t.backward = actionCosts.backwardInput[c] + actionCosts.backwardWeight[c];
    t.recompute = double(layers - config.offloadedLayers(c)) *
                  costs.layerRecompute(b, config.recompute[c]);
    t.p2p = actionCosts.transfer;
    int64_t params = stageParams(model, config, c);
    t.syncSeconds = sync(params);
    t.updateSeconds = costs.optimizerUpdate(updatedParams(params),
                                            ownPart(chunkRank(config, c)));
    t.castSeconds = costs.viewCast(updatedParams(params));
    t.allGatherSeconds =
        regather ? costs.collective(CollectiveKind::AllGather, params * w, d)
                 : 0;
    if (offloadPerParam > 0) {
      t.offloadSeconds =
          2 * layers * costs.offloadTransfer(offloaded(model.paramsPerLayer()));
      if (c == 0)
        t.offloadSeconds +=
            2 * costs.offloadTransfer(offloaded(model.embeddingParams()));
      if (c == n - 1)
        t.offloadSeconds += 2 * costs.offloadTransfer(offloaded(headParams));
    }
    int64_t rank = chunkRank(config, c);
    rankRecompute[rank] += double(config.numMicroBatches) * t.recompute;
  }
  for (int64_t r = 0; r < p; ++r)
    maxRecompute = std::max(maxRecompute, rankRecompute[r]);
  result.recompute = maxRecompute;

  // Per rank: the end of its last action, the first F of each chunk, the
  // last W (or B) of each chunk, the start of its last-sweep.
  std::vector<double> rankEnd(p, 0), rankOffload(p, 0);
  std::vector<double> firstForward(n, std::numeric_limits<double>::infinity());
  std::vector<const schedule::TimedAction *> lastWeight(n, nullptr);
  for (const schedule::TimedAction &a : timing.actions) {
    int64_t c = a.action.stage;
    if (c < 0 || c >= n)
      continue;
    rankEnd[a.rank] = std::max(rankEnd[a.rank], a.end);
    if (a.action.kind == ActionKind::Forward)
      firstForward[c] = std::min(firstForward[c], a.start);
    if (a.action.kind == ActionKind::BackwardWeight ||
        a.action.kind == ActionKind::Backward)
      if (!lastWeight[c] || a.end > lastWeight[c]->end)
        lastWeight[c] = &a;
  }
  for (int64_t c = 0; c < n; ++c)
    rankOffload[chunkRank(config, c)] += result.stages[c].offloadSeconds;
  for (int64_t r = 0; r < p; ++r)
    result.offload = std::max(result.offload, rankOffload[r]);

  if (policy == LifecyclePolicy::GpuStyle) {
    // Whole-rank phases after the rank's last action.
    double total = result.pipeline;
    std::vector<double> tail(p, 0), syncs(p, 0);
    std::vector<int64_t> params(p, 0);
    for (int64_t c = 0; c < n; ++c) {
      const StageTiming &t = result.stages[c];
      int64_t rank = chunkRank(config, c);
      tail[rank] += t.syncSeconds + t.updateSeconds + t.castSeconds +
                    t.allGatherSeconds + t.offloadSeconds;
      syncs[rank] += t.syncSeconds;
      params[rank] += updatedParams(stageParams(model, config, c));
    }
    if (config.maxGradNorm > 0) {
      // Every rank syncs, then the global norm, then every rank updates.
      double normReady = 0;
      for (int64_t r = 0; r < p; ++r)
        normReady = std::max(normReady, rankEnd[r] + syncs[r] +
                                            costs.gradSquares(params[r]));
      normReady += costs.globalNormAllReduce(config.clusters());
      for (int64_t r = 0; r < p; ++r)
        total = std::max(total, normReady + tail[r] - syncs[r]);
    }
    for (int64_t r = 0; r < p; ++r)
      total = std::max(total, rankEnd[r] + tail[r]);
    result.total = total;
    result.exposedLifecycle = total - result.pipeline;
    return withCoreCopies(costs, config, std::move(result));
  }

  // Layer-level lifecycle per rank, as in the 1F1B closed form: syncs on a
  // communication stream in readiness order, updates and casts on the
  // compute stream after the rank's last action, ZeRO all-gathers after
  // them, offload double-buffered from the start of the rank's last
  // weight-gradient sweep; a view must be ready by the item's forward of the
  // next step.
  double iteration = result.pipeline;
  double f = costs.layerForward(b), bwW = costs.layerBackwardWeight(b);
  double bwFull = costs.layerBackward(b);
  // Per rank: the items in readiness order and their syncs; then the
  // updates, which under gradient clipping wait for the global norm (every
  // rank's last sync, its sum of squares, the norm's all-reduce).
  std::vector<std::vector<Item>> rankItems(p);
  std::vector<std::vector<double>> rankSyncEnd(p);
  std::vector<double> rankSweepStart(p), rankCommFree(p);
  double normReady = 0;
  for (int64_t r = 0; r < p; ++r) {
    std::vector<Item> &items = rankItems[r];
    double sweepStart = rankEnd[r];
    for (int64_t c = 0; c < n; ++c) {
      if (chunkRank(config, c) != r || !lastWeight[c])
        continue;
      const schedule::TimedAction &last = *lastWeight[c];
      sweepStart = std::min(sweepStart, last.start);
      bool full = last.action.kind == ActionKind::Backward;
      int64_t layers = config.stages[c].numLayers;
      double layerW =
          full ? bwFull + costs.layerRecompute(b, config.recompute[c]) : bwW;
      double elapsed = last.start;
      double forwardStart =
          firstForward[c] + (c == 0 ? costs.embeddingForward(b) : 0);
      if (c == n - 1) {
        elapsed += full ? costs.headBackward(b) : costs.headBackwardWeight(b);
        items.push_back({headParams, elapsed, forwardStart + layers * f});
      }
      for (int64_t l = layers - 1; l >= 0; --l) {
        elapsed += layerW;
        items.push_back(
            {model.paramsPerLayer(), elapsed, forwardStart + l * f});
      }
      if (c == 0) {
        elapsed += costs.embeddingBackward(b);
        items.push_back({model.embeddingParams(), elapsed, firstForward[c]});
      }
    }
    std::stable_sort(
        items.begin(), items.end(),
        [](const Item &a, const Item &b) { return a.ready < b.ready; });
    std::vector<double> &syncEnd = rankSyncEnd[r];
    syncEnd.assign(items.size(), 0);
    double commFree = 0;
    int64_t squared = 0;
    for (size_t k = 0; k < items.size(); ++k) {
      commFree = std::max(items[k].ready, commFree) + sync(items[k].params);
      syncEnd[k] = commFree;
      squared += updatedParams(items[k].params);
    }
    rankSweepStart[r] = sweepStart;
    rankCommFree[r] = commFree;
    if (config.maxGradNorm > 0)
      normReady = std::max(normReady, std::max(commFree, rankEnd[r]) +
                                          costs.gradSquares(squared));
  }
  if (config.maxGradNorm > 0)
    normReady += costs.globalNormAllReduce(config.clusters());

  for (int64_t r = 0; r < p; ++r) {
    const std::vector<Item> &items = rankItems[r];
    const std::vector<double> &syncEnd = rankSyncEnd[r];
    double sweepStart = rankSweepStart[r];
    double commFree = rankCommFree[r];
    std::vector<double> reloadEnd(items.size(), sweepStart);
    double offloadFree = sweepStart;
    auto reload = [&](size_t k) {
      offloadFree += costs.offloadTransfer(offloaded(items[k].params));
      reloadEnd[k] = offloadFree;
    };
    if (offloadPerParam > 0)
      for (size_t k = 0; k < std::min<size_t>(2, items.size()); ++k)
        reload(k);
    double computeFree = std::max(rankEnd[r], normReady);
    for (size_t k = 0; k < items.size(); ++k) {
      int64_t updated = updatedParams(items[k].params);
      double start = std::max({syncEnd[k], computeFree, reloadEnd[k]});
      double updateEnd = start + costs.optimizerUpdate(updated, ownPart(r));
      computeFree = updateEnd + costs.viewCast(updated);
      if (offloadPerParam > 0) {
        offloadFree = std::max(offloadFree, updateEnd) +
                      costs.offloadTransfer(offloaded(items[k].params));
        if (k + 2 < items.size())
          reload(k + 2);
        iteration = std::max(iteration, offloadFree - sweepStart);
      }
      double viewReady = computeFree;
      if (regather) {
        double agStart = std::max(viewReady, commFree);
        commFree = agStart + costs.collective(CollectiveKind::AllGather,
                                              items[k].params * w, d);
        viewReady = commFree;
      }
      iteration = std::max(iteration, viewReady - items[k].nextForward);
    }
  }
  result.total = iteration;
  result.exposedLifecycle = iteration - result.pipeline;
  return withCoreCopies(costs, config, std::move(result));
}
