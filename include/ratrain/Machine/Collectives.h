//===- Collectives.h - Collective kinds and link classes --------*- C++ -*-===//
//
// The vocabulary the planner's cost model and the simulator share when they
// talk about communication: which collective a data-parallel group runs and
// which class of link (inside a node or between nodes) a transfer crosses.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MACHINE_COLLECTIVES_H
#define RATRAIN_MACHINE_COLLECTIVES_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace ratrain {

/// Collective operations of gradient synchronization and ZeRO.
enum class CollectiveKind : uint8_t { AllReduce, ReduceScatter, AllGather };
/// "all-reduce", "reduce-scatter", "all-gather".
llvm::StringRef stringifyCollectiveKind(CollectiveKind kind);

/// Which class of link joins two clusters.
enum class LinkClass : uint8_t { IntraNode, InterNode };
/// "intra-node", "inter-node".
llvm::StringRef stringifyLinkClass(LinkClass link);

} // namespace ratrain

#endif // RATRAIN_MACHINE_COLLECTIVES_H
