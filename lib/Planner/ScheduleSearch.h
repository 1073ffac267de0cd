//===- ScheduleSearch.h - Planner helpers for schedule kinds ----*- C++ -*-===//
//
// Internal to the planner: a cache of generated schedules per (kind, pp, v,
// m), the recompute fitting of a config whose schedule is not 1F1B, and the
// activation-offload search of a 1F1B config.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_LIB_PLANNER_SCHEDULESEARCH_H
#define RATRAIN_LIB_PLANNER_SCHEDULESEARCH_H

#include "ratrain/Planner/CostModel.h"
#include "ratrain/Planner/MemoryModel.h"
#include "ratrain/Schedule/PipelineSchedule.h"

#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

namespace ratrain {
namespace planner {

/// Generated schedules, built once per (kind, pp, v, m); nullptr when the
/// shape is not valid for the kind.
class ScheduleCache {
public:
  const schedule::PipelineSchedule *get(schedule::ScheduleKind kind, int64_t pp,
                                        int64_t v, int64_t m);

private:
  std::map<std::tuple<int, int64_t, int64_t, int64_t>,
           std::unique_ptr<schedule::PipelineSchedule>>
      schedules;
};

/// `split` (a 1F1B config, one stage per rank) with each rank's layers
/// shared out as evenly as possible over its `v` virtual stages of `kind`,
/// every chunk under `recompute`; nullopt when a rank has fewer than `v`
/// layers.
std::optional<ParallelConfig> chunkSplit(const ParallelConfig &split,
                                         schedule::ScheduleKind kind, int64_t v,
                                         RecomputePolicy recompute);

/// Limits a fitted config must meet.
struct FitLimits {
  int64_t cap = 0;     ///< DDR bytes per cluster
  int64_t tierCap = 0; ///< offload-tier bytes per cluster
};

/// Raises the recompute of `config`'s virtual stages, one policy step at a
/// time on each rank over its cap (the chunk holding the most live bytes
/// first), until every rank fits; `policies` is ordered least recompute
/// first and holds every chunk's policy. nullopt when a rank fits under no
/// policy.
std::optional<ParallelConfig>
fitRecompute(const ModelConfig &model, ParallelConfig config,
             const std::vector<RecomputePolicy> &policies,
             const schedule::PipelineSchedule &schedule,
             const MemoryOptions &options, FitLimits limits,
             int64_t &stageEvaluations);

/// Activation offload of a 1F1B `config` (ParallelConfig::
/// activationOffload): per stage that recomputes, the count of its first
/// layers whose full activations go to the offload tier that predicts the
/// shortest stage (no recompute for them, the transfers hidden under the
/// stage's computes up to exposedActivationTransfer) and keeps the stage
/// within `cap` and `tierCap`. Nullopt when no stage gains.
std::optional<ParallelConfig>
searchActivationOffload(const ModelConfig &model, const CostModel &costs,
                        ParallelConfig config, const MemoryOptions &options,
                        int64_t cap, int64_t tierCap,
                        int64_t &stageEvaluations);

} // namespace planner
} // namespace ratrain

#endif // RATRAIN_LIB_PLANNER_SCHEDULESEARCH_H
