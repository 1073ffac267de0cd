//===- AsyncHazards.h - mt3k asynchronous hazard analysis -------*- C++ -*-===//
//
// Which asynchronous mt3k operation (DMA, communication, offload, reload) a
// later operation races with because no `mt3k.wait` on its token comes in
// between. Derived only from the operations' declared memory effects
// (MemoryEffectOpInterface) and the async op interface
// (MT3K/MT3KInterfaces.td): the one hazard model that `--mt3k-verify`
// reports and `--mt3k-insert-waits` repairs. docs/mt3k-passes.md describes
// the model.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_ANALYSIS_ASYNCHAZARDS_H
#define RATRAIN_ANALYSIS_ASYNCHAZARDS_H

#include "MT3K/MT3KOps.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ratrain::mt3k {

/// One memory access of an operation, from one of its memory effects: bytes
/// of a buffer (resolved through views to an absolute range of a memory
/// space) or one slot (`[tier, key]`) of the runtime's offload store.
struct MemoryAccess {
  /// The bytes accessed, for an effect on a buffer value.
  std::optional<MemoryRange> range;
  /// The offload-store slot accessed, for an effect on the offload store.
  mlir::Attribute storeSlot;
  bool writes = false;

  /// Whether this access and `other` touch the same memory and at least one
  /// of them writes (two reads never conflict).
  bool conflictsWith(const MemoryAccess &other) const;
};

/// The accesses of `op`, from its MemoryEffectOpInterface: reads and writes
/// of buffer operands on the default resource (an AM effect whose parameter
/// is an integer addresses that core's AM only), and of offload-store slots.
/// Effects on other resources (`mt3k.runtime`: network, data loader, loss
/// log) are ordered by the runtime and are not accesses. An operation that
/// declares no effects reads and writes every buffer operand.
llvm::SmallVector<MemoryAccess> getMemoryAccesses(mlir::Operation *op);

/// The kind of a conflict between an asynchronous operation and a later one.
enum class HazardKind {
  /// The later operation reads what the asynchronous one writes.
  ReadAfterWrite,
  /// The later operation writes what the asynchronous one reads.
  WriteAfterRead,
  /// Both write.
  WriteAfterWrite,
};

/// `read-after-write`, `write-after-read` or `write-after-write`.
llvm::StringRef stringifyHazardKind(HazardKind kind);

/// A later operation that touches memory an asynchronous operation still
/// uses: no wait on the asynchronous operation's token comes before it.
struct AsyncHazard {
  /// The asynchronous operation still in flight.
  AsyncOpInterface asyncOp;
  /// The first later operation that conflicts with it.
  mlir::Operation *op;
  /// The access of `op` and the access of `asyncOp` that conflict.
  MemoryAccess access, pending;

  mlir::Value getToken() const {
    return AsyncOpInterface(asyncOp).getAsyncToken();
  }
  HazardKind getKind() const;
};

/// The asynchronous hazards of one `mt3k.program`. Programs are straight-line
/// single blocks, so a wait dominates an operation exactly when it comes
/// before it in the block; the analysis walks the block once, keeping the
/// asynchronous operations in flight (started, not yet waited on, no hazard
/// yet) with their accesses.
class AsyncHazardAnalysis {
public:
  /// Analyzes `program`, an mt3k.program (the constructor shape
  /// `Pass::getAnalysis` needs).
  explicit AsyncHazardAnalysis(mlir::Operation *program);

  /// For every asynchronous operation that a later operation conflicts with
  /// before a wait on its token: the first such operation (a wait right
  /// before it covers every later one). Ordered by the conflicting operation,
  /// then by the asynchronous one.
  llvm::ArrayRef<AsyncHazard> getHazards() const { return hazards; }

  /// The asynchronous operations whose token no `mt3k.wait` consumes, in
  /// program order.
  llvm::ArrayRef<AsyncOpInterface> getUnwaitedOps() const { return unwaited; }

  /// Whether every token is waited on before any conflicting operation.
  bool isHazardFree() const { return hazards.empty() && unwaited.empty(); }

  /// The `mt3k.wait` that consumes the token of `asyncOp`, or null.
  static WaitOp getWait(AsyncOpInterface asyncOp);

  /// Whether a wait on the token of `asyncOp` comes before (dominates) `op`.
  static bool isWaitedBefore(AsyncOpInterface asyncOp, mlir::Operation *op);

private:
  llvm::SmallVector<AsyncHazard> hazards;
  llvm::SmallVector<AsyncOpInterface> unwaited;
};

} // namespace ratrain::mt3k

#endif // RATRAIN_ANALYSIS_ASYNCHAZARDS_H
