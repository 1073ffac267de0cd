//===- ScheduleSearch.cpp - Planner helpers for schedule kinds ------------===//

#include "ScheduleSearch.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::planner;

const schedule::PipelineSchedule *
ScheduleCache::get(schedule::ScheduleKind kind, int64_t pp, int64_t v,
                   int64_t m) {
  auto key = std::make_tuple(int(kind), pp, v, m);
  auto it = schedules.find(key);
  if (it != schedules.end())
    return it->second.get();
  std::unique_ptr<schedule::PipelineSchedule> built;
  if (llvm::Error err = validateScheduleShape(kind, pp, v, m)) {
    llvm::consumeError(std::move(err));
  } else if (llvm::Expected<schedule::PipelineSchedule> generated =
                 schedule::generateSchedule(kind, pp, v, m)) {
    built = std::make_unique<schedule::PipelineSchedule>(std::move(*generated));
  } else {
    llvm::consumeError(generated.takeError());
  }
  const schedule::PipelineSchedule *result = built.get();
  schedules.emplace(key, std::move(built));
  return result;
}

std::optional<ParallelConfig> planner::chunkSplit(const ParallelConfig &split,
                                                  schedule::ScheduleKind kind,
                                                  int64_t v,
                                                  RecomputePolicy recompute) {
  ParallelConfig config = split;
  config.schedule = kind;
  config.virtualStages = v;
  int64_t p = split.pipelineStages, n = p * v;
  // The j-th chunk of a rank (in model order) gets its share of the rank's
  // layers, the remainder to its first chunks.
  std::vector<int64_t> seen(p, 0);
  config.stages.assign(n, {});
  config.recompute.assign(n, recompute);
  int64_t next = 0;
  for (int64_t c = 0; c < n; ++c) {
    int64_t rank = chunkRank(config, c);
    int64_t total = split.stages[rank].numLayers;
    if (total < v)
      return std::nullopt;
    int64_t j = seen[rank]++;
    int64_t layers = total / v + (j < total % v ? 1 : 0);
    config.stages[c] = {next, layers};
    next += layers;
  }
  return config;
}

std::optional<ParallelConfig>
planner::fitRecompute(const ModelConfig &model, ParallelConfig config,
                      const std::vector<RecomputePolicy> &policies,
                      const schedule::PipelineSchedule &schedule,
                      const MemoryOptions &options, FitLimits limits,
                      int64_t &stageEvaluations) {
  int64_t n = config.numVirtualStages();
  auto level = [&](int64_t c) {
    auto it = llvm::find(policies, config.recompute[c]);
    return it == policies.end() ? policies.size()
                                : size_t(it - policies.begin());
  };
  std::vector<double> act, deferred;
  // Each round raises one chunk per over-cap rank; at most one round per
  // (chunk, policy step).
  for (int64_t round = 0; round <= n * int64_t(policies.size()); ++round) {
    scheduleWeights(model, config, options, act, deferred);
    schedule::ScheduleMemory counts =
        schedule::scheduleMemory(schedule, act, deferred);
    bool fits = true;
    for (int64_t r = 0; r < config.pipelineStages; ++r) {
      ++stageEvaluations;
      StageMemory mem = computeRankMemory(model, config, r, counts, options);
      if (mem.total() <= limits.cap && mem.offloadedBytes <= limits.tierCap)
        continue;
      fits = false;
      int64_t pick = -1;
      double most = -1;
      for (int64_t c = 0; c < n; ++c) {
        if (chunkRank(config, c) != r || level(c) + 1 >= policies.size())
          continue;
        double live = act[c] * double(counts.peakActivations[r][c]) +
                      deferred[c] * double(counts.peakDeferred[r][c]);
        if (live > most) {
          most = live;
          pick = c;
        }
      }
      if (pick < 0)
        return std::nullopt;
      config.recompute[pick] = policies[level(pick) + 1];
    }
    if (fits)
      return config;
  }
  return std::nullopt;
}

std::optional<ParallelConfig>
planner::searchActivationOffload(const ModelConfig &model,
                                 const CostModel &costs, ParallelConfig config,
                                 const MemoryOptions &options, int64_t cap,
                                 int64_t tierCap, int64_t &stageEvaluations) {
  int64_t p = config.pipelineStages, b = config.microBatchSize;
  double f = costs.layerForward(b), bw = costs.layerBackward(b);
  config.activationOffload.assign(p, 0);
  bool any = false;
  for (int64_t i = 0; i < p; ++i) {
    double r = costs.layerRecompute(b, config.recompute[i]);
    if (r <= 0)
      continue;
    int64_t n = config.stages[i].numLayers;
    auto stageSeconds = [&](int64_t k) {
      double compute = double(n) * (f + bw) + double(n - k) * r;
      config.activationOffload[i] = k;
      return compute + exposedActivationTransfer(costs, config, i, compute);
    };
    double none = stageSeconds(0);
    std::vector<std::pair<double, int64_t>> gains;
    for (int64_t k = 1; k <= n; ++k)
      if (double t = stageSeconds(k); t < none)
        gains.push_back({t, -k}); // faster first, then more layers
    llvm::sort(gains);
    config.activationOffload[i] = 0;
    for (auto [seconds, negK] : gains) {
      config.activationOffload[i] = -negK;
      ++stageEvaluations;
      StageMemory mem = computeStageMemory(model, config, i, options);
      if (mem.total() <= cap && mem.offloadedBytes <= tierCap)
        break;
      config.activationOffload[i] = 0;
    }
    any |= config.activationOffload[i] > 0;
  }
  if (!any)
    return std::nullopt;
  return config;
}
