//===- MT3KOps.h - mt3k operations ------------------------------*- C++ -*-===//
//
// Operations of the mt3k target dialect.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_MT3KOPS_H
#define RATRAIN_MT3K_MT3KOPS_H

#include "MT3K/MT3KAttrs.h"
#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KInterfaces.h"
#include "MT3K/MT3KTypes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace ratrain::mt3k {
/// The world outside the program's buffers (network, data loader, loss log).
struct RuntimeResource
    : public mlir::SideEffects::Resource::Base<RuntimeResource> {
  llvm::StringRef getName() final { return "mt3k.runtime"; }
};

/// The runtime's offload tiers. Effects on it carry `[tier, key]` as their
/// parameters: the bytes kept under one key of one tier.
struct OffloadStoreResource
    : public mlir::SideEffects::Resource::Base<OffloadStoreResource> {
  llvm::StringRef getName() final { return "mt3k.offload_store"; }
};
} // namespace ratrain::mt3k

#define GET_OP_CLASSES
#include "MT3K/MT3KOps.h.inc"

namespace ratrain::mt3k {
/// The attribute that marks the offloads and waits of a program's prologue.
inline constexpr llvm::StringLiteral kPrologueAttrName = "mt3k.prologue";

/// The attribute (an i64) that marks an op of a micro-batch that replicas
/// with a smaller data-parallel share skip (plan `dp_shares`): the emitted
/// C++ runs it under `if (runsMicroBatch(session, mb))`, and a token it
/// produces is a completed one where it does not run.
inline constexpr llvm::StringLiteral kMicroBatchGuard = "mt3k.micro_batch";

/// Whether `op` belongs to its program's prologue: buffers, views,
/// group slots, parameter initialization, and offloads and waits marked
/// `mt3k.prologue`.
bool isPrologueOp(mlir::Operation *op);

/// A byte range of one memory space, resolved through views.
struct MemoryRange {
  MemorySpace space;
  /// For AM: the core whose AM is meant, or -1 for every core.
  int64_t core = -1;
  int64_t begin = 0, end = 0;
  /// The buffer the range belongs to (for messages).
  BufferOp buffer;
  /// A range inside an `mt3k.group_slot`, whose offset is known at run time
  /// only: [begin, end) is the whole of the slot's source (the slot may be
  /// any block of it), [slotBegin, slotEnd) the bytes relative to the slot,
  /// which ranges in the same slot compare.
  mlir::Operation *slot = nullptr;
  int64_t slotBegin = 0, slotEnd = 0;

  /// Whether the two ranges share a byte of one memory (for AM: of one
  /// core's AM).
  bool overlaps(const MemoryRange &other) const {
    if (space != other.space || begin >= other.end || other.begin >= end)
      return false;
    if (slot && slot == other.slot &&
        (slotBegin >= other.slotEnd || other.slotBegin >= slotEnd))
      return false;
    return space != MemorySpace::am || core < 0 || other.core < 0 ||
           core == other.core;
  }
  /// Whether the two ranges name the same bytes of one memory space.
  bool sameBytes(const MemoryRange &other) const {
    return space == other.space && begin == other.begin && end == other.end &&
           slot == other.slot && slotBegin == other.slotBegin &&
           slotEnd == other.slotEnd;
  }
};

/// The absolute range `value` names, if it is an mt3k buffer that derives
/// from an `mt3k.buffer` through `mt3k.view`s (every core's AM for AM).
std::optional<MemoryRange> resolveMemoryRange(mlir::Value value);
} // namespace ratrain::mt3k

#endif // RATRAIN_MT3K_MT3KOPS_H
