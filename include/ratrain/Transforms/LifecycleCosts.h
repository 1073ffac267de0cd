//===- LifecycleCosts.h - Predicted seconds of a stage's ops -----*- C++
//-*-===//
//
// What --ratrain-schedule-lifecycle (ScheduleLifecycle.cpp) asks the cost
// model while it walks a stage: the seconds of its computes, updates, syncs,
// gathers, averagings and offload transfers, and the collective algorithm
// of its data-parallel group.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TRANSFORMS_LIFECYCLECOSTS_H
#define RATRAIN_TRANSFORMS_LIFECYCLECOSTS_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/BufferSizes.h"
#include "ratrain/Analysis/LayerTiming.h"
#include "ratrain/Analysis/ModelAndPlan.h"
#include "ratrain/Planner/CostModel.h"

namespace ratrain {

/// Predicted seconds of the ops of one stage (one cluster), from the cost
/// model.
class StageCosts {
public:
  StageCosts(const CostModel &costs, const BufferSizes &sizes, PlanAttr plan,
             llvm::ArrayRef<LayerKind> kinds, int64_t stage,
             int64_t clustersPerNode)
      : costs(costs), sizes(sizes), plan(plan), kinds(kinds),
        spansNodes(
            dataParallelGroupSpansNodes(stage, plan.getDp(), clustersPerNode)),
        ownPart(averagesInUpdate(plan, costs.getModel().dtype,
                                 costs.syncsOnRing(spansNodes))) {}

  /// Compute-stream seconds of `op` (0 for ops that only issue work).
  double computeSeconds(mlir::Operation *op) const {
    return computeLayerOpSeconds(op, costs, kinds, plan.getMicroBatchSize());
  }

  /// Seconds of the optimizer update of `layer` (its shard with ZeRO >= 1).
  double updateSeconds(int64_t layer) const {
    int64_t params = sizes.params(layer);
    if (plan.getZero() >= 1)
      params = (params + plan.getDp() - 1) / plan.getDp();
    return costs.optimizerUpdate(params, ownPart);
  }

  /// Seconds of the gradient sync of `layer` over the data-parallel group.
  double syncSeconds(int64_t layer) const {
    int64_t bytes = sizes.viewBytes(layer); // the full 16-bit gradient
    return costs.collective(syncKind() == SyncKind::ReduceScatter
                                ? CollectiveKind::ReduceScatter
                                : CollectiveKind::AllReduce,
                            bytes, plan.getDp());
  }

  /// Seconds of the averaging of `layer`'s fp32 masters over the
  /// data-parallel group (partial synchronization, in its phase's step).
  double averageSeconds(int64_t layer) const {
    return costs.collective(CollectiveKind::AllReduce, sizes.params(layer) * 4,
                            plan.getDp());
  }

  /// Seconds of one reload or write-back of `layer`'s offloaded states
  /// (the whole states, in chunks when the machine streams in chunks).
  double offloadSeconds(int64_t layer) const {
    int64_t bytes = 0;
    if (sizes.offloadsMaster())
      bytes += sizes.masterBytes(layer);
    if (sizes.offloadsOptState())
      bytes += sizes.optStateBytes(layer);
    return costs.offloadTransfer(bytes);
  }

  /// Seconds of moving one offloaded layer's activations for a micro-batch
  /// to or from the offload tier (activation offload).
  double activationTransferSeconds() const {
    return costs.activationTransfer(plan.getMicroBatchSize());
  }

  /// Seconds of the all-gather of `layer`'s full 16-bit view (ZeRO-3's
  /// parameter gathers, ZeRO-1/2's re-materialized views).
  double gatherSeconds(int64_t layer) const {
    return costs.collective(CollectiveKind::AllGather, sizes.viewBytes(layer),
                            plan.getDp());
  }

  SyncKind syncKind() const {
    return plan.getZero() >= 2 ? SyncKind::ReduceScatter : SyncKind::AllReduce;
  }
  SyncHierarchy hierarchy() const {
    return spansNodes ? SyncHierarchy::Hierarchical : SyncHierarchy::Flat;
  }

private:
  const CostModel &costs;
  const BufferSizes &sizes;
  PlanAttr plan;
  llvm::ArrayRef<LayerKind> kinds;
  bool spansNodes;
  /// The updates read the own part of their gradients (averagesInUpdate on
  /// the stage's syncs' algorithm, CostModel::syncsOnRing).
  bool ownPart;
};

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_LIFECYCLECOSTS_H
