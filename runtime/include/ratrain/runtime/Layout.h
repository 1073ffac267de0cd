//===- Layout.h - Ranks, pipeline stages and data-parallel groups -*- C++ -*-=//
//
// One MPI rank per compute cluster. A job of pp x dp ranks is laid out
// stage-major by default: rank = stage * dp + dpIndex, so the dp replicas of a
// stage are adjacent ranks (and, with a block rank mapping, usually share a
// node: the gradient all-reduce, the heaviest collective, then stays
// node-local as far as possible; Megatron-LM orders ranks the same way).
// Replica-major (rank = dpIndex * pp + stage, the convention the mt3k design
// notes suggest) keeps a replica's stages together instead.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_LAYOUT_H
#define RATRAIN_RUNTIME_LAYOUT_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace ratrain::rt {

/// The communicators a program names.
enum class Group : unsigned char {
  World,         ///< All ranks.
  Pipeline,      ///< The pp stages of one data-parallel replica; rank = stage.
  Data,          ///< The dp replicas of one stage; rank = dp index.
  DataNodeLocal, ///< The part of the Data group on this node.
  DataCrossNode, ///< Data-group ranks with the same node-local index: one per
                 ///< node (the second level of a hierarchical all-reduce).
  NodeLocal,     ///< All ranks on this node (MPI_Comm_split_type SHARED).
  /// Hierarchical partitioning (docs/runtime.md, "Partition groups"): the
  /// Data-group members that share this rank's network-level-L group
  /// (DataInsideL) and those with this rank's index inside their level-L
  /// groups (DataAcrossL), ranks in the digit-reversed order
  /// (Runtime::partitionIndex) under which an all-gather across and then
  /// inside a level, or a reduce-scatter inside and then across, is the
  /// collective of the whole Data group.
  DataInside0,
  DataInside1,
  DataInside2,
  DataInside3,
  DataAcross0,
  DataAcross1,
  DataAcross2,
  DataAcross3,
};
constexpr unsigned kNumGroups = 14;
/// The partition groups of level `level` (0 to 3).
inline Group dataInsideGroup(int level) {
  return Group(unsigned(Group::DataInside0) + unsigned(level));
}
inline Group dataAcrossGroup(int level) {
  return Group(unsigned(Group::DataAcross0) + unsigned(level));
}
/// Whether `group` is a DataInsideL or DataAcrossL group, and its level.
inline bool isPartitionGroup(Group group) {
  return unsigned(group) >= unsigned(Group::DataInside0);
}
inline int partitionGroupLevel(Group group) {
  return int(unsigned(group) - unsigned(Group::DataInside0)) % 4;
}
inline bool isInsideGroup(Group group) {
  return isPartitionGroup(group) &&
         unsigned(group) < unsigned(Group::DataAcross0);
}

/// "world", "pipeline", "data", "data.node", "data.cross", "node",
/// "data.inside0".."data.inside3", "data.across0".."data.across3".
llvm::StringRef stringifyGroup(Group group);
std::optional<Group> parseGroup(llvm::StringRef name);

/// How world ranks are assigned to (stage, dp index).
enum class RankOrder : unsigned char {
  StageMajor,   ///< rank = stage * dp + dpIndex.
  ReplicaMajor, ///< rank = dpIndex * pp + stage.
};
llvm::StringRef stringifyRankOrder(RankOrder order);
std::optional<RankOrder> parseRankOrder(llvm::StringRef name);

/// The pp x dp grid.
struct Layout {
  int pp = 1;
  int dp = 1;
  RankOrder order = RankOrder::StageMajor;

  int worldSize() const { return pp * dp; }
  int stageOf(int rank) const {
    return order == RankOrder::StageMajor ? rank / dp : rank % pp;
  }
  int dpIndexOf(int rank) const {
    return order == RankOrder::StageMajor ? rank % dp : rank / pp;
  }
  int rankOf(int stage, int dpIndex) const {
    return order == RankOrder::StageMajor ? stage * dp + dpIndex
                                          : dpIndex * pp + stage;
  }
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_LAYOUT_H
