//===- ShardingLifecycle.h - Partition groups of a ZeRO plan ----*- C++ -*-===//
//
// Hierarchical partitioning of ZeRO state (docs/schedule.md, "Partitioning"):
// the data-parallel members of a stage that share a network-level-L group,
// checked against the plan's weight_partition and grad_partition, and the
// syncs --ratrain-schedule-lifecycle places for them (secondary weight
// gathers across and inside a level, gradient reduce-scatters inside and
// across a level).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TRANSFORMS_SHARDINGLIFECYCLE_H
#define RATRAIN_TRANSFORMS_SHARDINGLIFECYCLE_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Machine/MachineModel.h"

#include "mlir/IR/Builders.h"

namespace ratrain {

/// The data-parallel group of one stage over the machine's network levels.
struct PartitionGroups {
  int64_t dp = 1;
  /// inside[L]: the data-parallel members that share one level-L group
  /// (the outermost level's: dp).
  llvm::SmallVector<int64_t, 4> inside;
  int64_t weightLevel = -1, gradLevel = -1;
  std::optional<WireType> weightWire, gradWire;

  /// Whether the plan names a partition level: then every ZeRO collective
  /// runs on the partition groups (their digit-reversed shard layout).
  bool active() const { return weightLevel >= 0 || gradLevel >= 0; }
  int64_t outermost() const { return int64_t(inside.size()) - 1; }
  int64_t insideMembers(int64_t level) const { return inside[level]; }
  int64_t acrossMembers(int64_t level) const { return dp / inside[level]; }

  /// The groups of stage `stage` of `plan` on `machine` (ranks stage-major:
  /// the stage's dp ranks are consecutive clusters). Fails through
  /// `emitError` when the plan names a level the machine lacks or the
  /// data-parallel group does not split evenly over the levels.
  static mlir::FailureOr<PartitionGroups>
  get(PlanAttr plan, const MachineModel &machine, int64_t stage,
      llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

  /// A sync of `kind` over the part of the group `scope` names at `level`
  /// (no scope: the whole group), producing `result`, with `wire`.
  SyncOp createSync(mlir::OpBuilder &builder, mlir::Location loc,
                    mlir::Type result, SyncKind kind, mlir::Value state,
                    SyncHierarchy hierarchy, std::optional<SyncScope> scope,
                    int64_t level, std::optional<WireType> wire) const;
};

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_SHARDINGLIFECYCLE_H
