//===- Collectives.cpp - Collective kinds and link classes ----------------===//

#include "ratrain/Machine/Collectives.h"

#include "llvm/Support/ErrorHandling.h"

using namespace ratrain;

llvm::StringRef ratrain::stringifyCollectiveKind(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all-reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce-scatter";
  case CollectiveKind::AllGather:
    return "all-gather";
  }
  llvm_unreachable("unknown collective kind");
}

llvm::StringRef ratrain::stringifyLinkClass(LinkClass link) {
  switch (link) {
  case LinkClass::IntraNode:
    return "intra-node";
  case LinkClass::InterNode:
    return "inter-node";
  }
  llvm_unreachable("unknown link class");
}
