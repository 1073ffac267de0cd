//===- AsyncHazards.cpp - mt3k asynchronous hazard analysis ---------------===//
//
// Hazards between asynchronous mt3k operations and later operations, derived
// from declared memory effects (see AsyncHazards.h).
//
//===----------------------------------------------------------------------===//

#include "ratrain/Analysis/AsyncHazards.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace ratrain::mt3k;

bool MemoryAccess::conflictsWith(const MemoryAccess &other) const {
  if (!writes && !other.writes)
    return false;
  if (range && other.range)
    return range->overlaps(*other.range);
  return storeSlot && storeSlot == other.storeSlot;
}

SmallVector<MemoryAccess> ratrain::mt3k::getMemoryAccesses(Operation *op) {
  SmallVector<MemoryAccess> accesses;
  auto addBuffer = [&](Value value, bool writes, Attribute parameters) {
    std::optional<MemoryRange> range = resolveMemoryRange(value);
    if (!range)
      return;
    if (auto core = llvm::dyn_cast_if_present<IntegerAttr>(parameters);
        core && range->space == MemorySpace::am)
      range->core = core.getInt();
    accesses.push_back({range, Attribute(), writes});
  };
  if (auto call = llvm::dyn_cast<func::CallOp>(op)) {
    // A call of an outlined layer body: each buffer argument is read
    // (written) when an operation of the body reads (writes) a view of it.
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (callee && !callee.isExternal()) {
      SmallVector<bool> reads(callee.getNumArguments()),
          writes(callee.getNumArguments());
      callee.walk([&](Operation *inner) {
        auto innerEffects = llvm::dyn_cast<MemoryEffectOpInterface>(inner);
        SmallVector<MemoryEffects::EffectInstance> instances;
        if (innerEffects)
          innerEffects.getEffects(instances);
        auto note = [&](Value value, bool isWrite) {
          while (auto view = value.getDefiningOp<ViewOp>())
            value = view.getSource();
          auto arg = llvm::dyn_cast<BlockArgument>(value);
          if (!arg || arg.getOwner()->getParentOp() != callee)
            return;
          (isWrite ? writes : reads)[arg.getArgNumber()] = true;
        };
        if (!innerEffects) {
          for (Value operand : inner->getOperands())
            note(operand, /*isWrite=*/true);
          return;
        }
        for (const MemoryEffects::EffectInstance &instance : instances)
          if (Value value = instance.getValue())
            note(value, llvm::isa<MemoryEffects::Write>(instance.getEffect()));
      });
      for (auto [index, operand] : llvm::enumerate(call.getOperands())) {
        if (writes[index])
          addBuffer(operand, /*writes=*/true, Attribute());
        else if (reads[index])
          addBuffer(operand, /*writes=*/false, Attribute());
      }
      return accesses;
    }
  }
  auto effects = llvm::dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects) {
    // Unknown effects: every buffer operand may be read and written.
    for (Value operand : op->getOperands())
      addBuffer(operand, /*writes=*/true, Attribute());
    return accesses;
  }
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  for (const MemoryEffects::EffectInstance &instance : instances) {
    bool writes = llvm::isa<MemoryEffects::Write>(instance.getEffect());
    SideEffects::Resource *resource = instance.getResource();
    if (llvm::isa<OffloadStoreResource>(resource)) {
      if (instance.getParameters())
        accesses.push_back({std::nullopt, instance.getParameters(), writes});
      continue;
    }
    if (!llvm::isa<SideEffects::DefaultResource>(resource))
      continue;
    if (Value value = instance.getValue())
      addBuffer(value, writes, instance.getParameters());
  }
  return accesses;
}

HazardKind AsyncHazard::getKind() const {
  if (!access.writes)
    return HazardKind::ReadAfterWrite;
  return pending.writes ? HazardKind::WriteAfterWrite
                        : HazardKind::WriteAfterRead;
}

StringRef ratrain::mt3k::stringifyHazardKind(HazardKind kind) {
  switch (kind) {
  case HazardKind::ReadAfterWrite:
    return "read-after-write";
  case HazardKind::WriteAfterRead:
    return "write-after-read";
  case HazardKind::WriteAfterWrite:
    return "write-after-write";
  }
  return "";
}

WaitOp AsyncHazardAnalysis::getWait(AsyncOpInterface asyncOp) {
  for (Operation *user : asyncOp.getAsyncToken().getUsers())
    if (auto wait = llvm::dyn_cast<WaitOp>(user))
      return wait;
  return {};
}

bool AsyncHazardAnalysis::isWaitedBefore(AsyncOpInterface asyncOp,
                                         Operation *op) {
  WaitOp wait = getWait(asyncOp);
  return wait && wait->getBlock() == op->getBlock() &&
         wait->isBeforeInBlock(op);
}

AsyncHazardAnalysis::AsyncHazardAnalysis(Operation *program) {
  if (program->getNumRegions() != 1 || program->getRegion(0).empty())
    return;
  // The asynchronous operations in flight, in program order, with their
  // accesses.
  llvm::MapVector<Operation *, SmallVector<MemoryAccess>> inFlight;
  for (Operation &op : program->getRegion(0).front()) {
    if (auto wait = llvm::dyn_cast<WaitOp>(op)) {
      for (Value token : wait.getTokens())
        if (Operation *started = token.getDefiningOp())
          inFlight.erase(started);
      continue;
    }
    SmallVector<MemoryAccess> accesses = getMemoryAccesses(&op);
    // An asynchronous operation has at most one hazard: a wait right before
    // its first conflicting operation covers the later ones.
    SmallVector<Operation *> conflicting;
    for (auto &entry : inFlight) {
      // Named copies: a lambda may not capture structured bindings before
      // C++20 (clang rejects it; the sanitizer build uses clang).
      Operation *started = entry.first;
      const auto &pending = entry.second;
      auto match = [&]() -> std::optional<AsyncHazard> {
        for (const MemoryAccess &access : accesses)
          for (const MemoryAccess &other : pending)
            if (access.conflictsWith(other))
              return AsyncHazard{llvm::cast<AsyncOpInterface>(started), &op,
                                 access, other};
        return std::nullopt;
      }();
      if (!match)
        continue;
      hazards.push_back(*match);
      conflicting.push_back(started);
    }
    for (Operation *started : conflicting)
      inFlight.erase(started);
    if (auto asyncOp = llvm::dyn_cast<AsyncOpInterface>(op)) {
      if (!getWait(asyncOp))
        unwaited.push_back(asyncOp);
      inFlight.insert({&op, std::move(accesses)});
    }
  }
}
