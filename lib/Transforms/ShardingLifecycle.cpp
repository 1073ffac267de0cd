//===- ShardingLifecycle.cpp - Partition groups of a ZeRO plan ------------===//

#include "ratrain/Transforms/ShardingLifecycle.h"

using namespace mlir;
using namespace ratrain;

FailureOr<PartitionGroups>
PartitionGroups::get(PlanAttr plan, const MachineModel &machine, int64_t stage,
                     function_ref<InFlightDiagnostic()> emitError) {
  PartitionGroups groups;
  groups.dp = plan.getDp();
  groups.weightLevel = plan.getWeightPartition();
  groups.gradLevel = plan.getGradPartition();
  groups.weightWire = plan.getWeightWire();
  groups.gradWire = plan.getGradWire();
  auto levels = int64_t(machine.networkLevels().size());
  for (auto [name, level] : {std::pair<const char *, int64_t>{
                                 "weight_partition", groups.weightLevel},
                             {"grad_partition", groups.gradLevel}})
    if (level >= levels) {
      emitError() << "plan " << name << " = " << level << " names a level of "
                  << levels << "-level machine '" << machine.name
                  << "' (levels 0 to " << levels - 1 << ")";
      return failure();
    }
  // The stage's dp consecutive clusters against each level's groups.
  int64_t first = stage * groups.dp;
  for (int64_t level = 0; level < levels; ++level) {
    int64_t clusters =
        level + 1 == levels
            ? std::max(machine.totalClusters(), first + groups.dp)
            : machine.clustersPerGroup(unsigned(level));
    int64_t members;
    if (clusters % groups.dp == 0 &&
        first / clusters == (first + groups.dp - 1) / clusters)
      members = groups.dp; // the whole group inside one level-L group
    else if (groups.dp % clusters == 0 && first % clusters == 0)
      members = clusters;
    else {
      if (groups.active()) {
        emitError() << "the data-parallel group of stage " << stage
                    << " (clusters " << first << " to " << first + groups.dp - 1
                    << ") does not split evenly over level " << level << " ('"
                    << machine.networkLevels()[level].name << "', groups of "
                    << clusters << " clusters) of machine '" << machine.name
                    << "'; partitioned ZeRO needs equal members per group";
        return failure();
      }
      members = groups.dp;
    }
    groups.inside.push_back(members);
  }
  return groups;
}

SyncOp PartitionGroups::createSync(OpBuilder &builder, Location loc,
                                   Type result, SyncKind kind, Value state,
                                   SyncHierarchy hierarchy,
                                   std::optional<SyncScope> scope,
                                   int64_t level,
                                   std::optional<WireType> wire) const {
  MLIRContext *context = builder.getContext();
  SyncScopeAttr scopeAttr;
  IntegerAttr levelAttr, membersAttr;
  if (scope) {
    scopeAttr = SyncScopeAttr::get(context, *scope);
    levelAttr = builder.getI64IntegerAttr(level);
    membersAttr = builder.getI64IntegerAttr(*scope == SyncScope::Inside
                                                ? insideMembers(level)
                                                : acrossMembers(level));
  }
  return SyncOp::create(builder, loc, AsyncType::get(context, result), kind,
                        state, hierarchy, scopeAttr, levelAttr, membersAttr,
                        wire ? WireTypeAttr::get(context, *wire)
                             : WireTypeAttr(),
                        IntegerAttr(), IntegerAttr());
}
