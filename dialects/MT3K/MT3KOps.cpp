//===- MT3KOps.cpp - mt3k operations --------------------------------------===//
//
// Builders and verifiers of the module structure, buffers and asynchronous
// data movement; the memory effects that are not declared in ODS; memory
// ranges. Kernels are verified in MT3KKernelOps.cpp, communication in
// MT3KCommOps.cpp. Verifiers check local structure; the program-wide checks
// (waits, hazards, offload keys, cross-program traffic) are `--mt3k-verify`
// (lib/MT3K).
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KOps.h"
#include "MT3K/MT3KDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace ratrain::mt3k;

//===----------------------------------------------------------------------===//
// MachineOp
//===----------------------------------------------------------------------===//

int64_t MachineOp::getCapacity(MemorySpace space) {
  switch (space) {
  case MemorySpace::ddr:
    return getDdr();
  case MemorySpace::gsm:
    return getGsm();
  case MemorySpace::am:
    return getAm();
  }
  return 0;
}

MachineOp MachineOp::lookup(Operation *op) {
  auto module = llvm::dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  for (auto machine : module.getOps<MachineOp>())
    return machine;
  return {};
}

LogicalResult MachineOp::verify() {
  auto module = (*this)->getParentOfType<ModuleOp>();
  if (*module.getOps<MachineOp>().begin() != *this)
    return emitOpError("duplicates the module's machine; a module describes "
                       "one machine");
  return success();
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                      int64_t stage, std::optional<int64_t> ddrArena) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getStageAttrName(state.name),
                     builder.getI64IntegerAttr(stage));
  if (ddrArena)
    state.addAttribute(getDdrArenaAttrName(state.name),
                       builder.getI64IntegerAttr(*ddrArena));
  Region *body = state.addRegion();
  body->emplaceBlock();
}

int64_t ProgramOp::getDdrLimit() {
  if (std::optional<uint64_t> arena = getDdrArena())
    return static_cast<int64_t>(*arena);
  if (MachineOp machine = MachineOp::lookup(*this))
    return machine.getDdr();
  return -1;
}

LogicalResult GroupOp::verify() {
  bool partition = getKind() == GroupKind::data_inside ||
                   getKind() == GroupKind::data_across;
  if (partition && !getLevel())
    return emitOpError("a ")
           << stringifyGroupKind(getKind())
           << " group names the network level it partitions the "
              "data-parallel group at ('level L')";
  if (!partition && getLevel())
    return emitOpError("only data_inside and data_across groups have a "
                       "level");
  if (getLevel() && *getLevel() >= 4)
    return emitOpError("level ")
           << *getLevel() << " exceeds the runtime's network levels (0 to 3)";
  return success();
}

LogicalResult ProgramOp::verify() {
  MachineOp machine = MachineOp::lookup(*this);
  if (!machine)
    return emitOpError("needs an 'mt3k.machine' in the enclosing module");
  if (std::optional<uint64_t> arena = getDdrArena())
    if (static_cast<int64_t>(*arena) > machine.getDdr())
      return emitOpError("DDR arena of ")
             << *arena << " bytes exceeds the machine's DDR capacity of "
             << machine.getDdr() << " bytes";
  auto module = (*this)->getParentOfType<ModuleOp>();
  for (auto other : module.getOps<ProgramOp>()) {
    if (other == *this)
      break;
    if (other.getStage() == getStage()) {
      InFlightDiagnostic diag = emitOpError("stage ")
                                << getStage() << " already has program @"
                                << other.getSymName();
      diag.attachNote(other.getLoc()) << "first program of the stage";
      return diag;
    }
  }
  return success();
}

bool ratrain::mt3k::isPrologueOp(Operation *op) {
  if (llvm::isa<BufferOp, ViewOp, GroupSlotOp, InitParamOp>(op))
    return true;
  return op->hasAttr(kPrologueAttrName) && llvm::isa<OffloadOp, WaitOp>(op);
}

LogicalResult ProgramOp::verifyRegions() {
  // The prologue: buffers, views (and group slots) and parameter
  // initialization, and the offloads (with their waits) marked
  // `mt3k.prologue` that put initialized states into the offload tier before
  // the first iteration.
  Operation *firstOfIteration = nullptr;
  for (Operation &op : getBody().front()) {
    if (llvm::isa<BufferOp, ViewOp, GroupSlotOp>(op))
      continue;
    if (!isPrologueOp(&op)) {
      if (!firstOfIteration)
        firstOfIteration = &op;
      continue;
    }
    if (firstOfIteration) {
      InFlightDiagnostic diag =
          op.emitOpError("must precede the iteration: only mt3k.buffer, "
                         "mt3k.view, mt3k.group_slot and mt3k.init_param may "
                         "come before it");
      diag.attachNote(firstOfIteration->getLoc())
          << "the iteration starts here";
      return diag;
    }
  }
  // Trace markers pair up in order: begin, end, begin, end.
  TraceBeginOp open;
  for (Operation &op : getBody().front()) {
    if (auto begin = llvm::dyn_cast<TraceBeginOp>(op)) {
      if (open) {
        InFlightDiagnostic diag =
            begin.emitOpError("opens a trace span while '")
            << open.getLabel() << "' is still open (spans do not nest)";
        diag.attachNote(open.getLoc()) << "the open span";
        return diag;
      }
      open = begin;
    } else if (auto end = llvm::dyn_cast<TraceEndOp>(op)) {
      if (!open)
        return end.emitOpError("closes no trace span: no mt3k.trace_begin "
                               "is open");
      open = TraceBeginOp();
    }
  }
  if (open)
    return open.emitOpError("opens a trace span '")
           << open.getLabel() << "' that no mt3k.trace_end closes";
  return success();
}

//===----------------------------------------------------------------------===//
// Memory ranges
//===----------------------------------------------------------------------===//

std::optional<MemoryRange> ratrain::mt3k::resolveMemoryRange(Value value) {
  auto type = llvm::dyn_cast<BufferType>(value.getType());
  if (!type)
    return std::nullopt;
  int64_t offset = 0, size = type.getSizeInBytes();
  Operation *slotOp = nullptr;
  int64_t slotBegin = 0, slotEnd = 0;
  Value root = value;
  while (true) {
    if (auto view = root.getDefiningOp<ViewOp>()) {
      offset += view.getByteOffset();
      root = view.getSource();
    } else if (auto slot = root.getDefiningOp<GroupSlotOp>()) {
      // The rank's block is known at run time only: any block of the
      // source, so the whole of it; ranges in the innermost slot keep their
      // offsets relative to it (a slot of a slot: the whole outer source).
      if (!slotOp) {
        slotOp = slot;
        slotBegin = offset;
        slotEnd = offset + size;
      }
      offset = 0;
      root = slot.getSource();
      size = slot.getSource().getType().getSizeInBytes();
    } else {
      break;
    }
  }
  auto buffer = root.getDefiningOp<BufferOp>();
  if (!buffer)
    return std::nullopt;
  offset += buffer.getOffset();
  MemoryRange range{type.getSpace(), -1, offset, offset + size, buffer};
  range.slot = slotOp;
  range.slotBegin = slotBegin;
  range.slotEnd = slotEnd;
  return range;
}

//===----------------------------------------------------------------------===//
// BufferOp
//===----------------------------------------------------------------------===//

LogicalResult BufferOp::verify() {
  BufferType type = getResult().getType();
  int64_t offset = getOffset();
  int64_t size = type.getSizeInBytes();
  MachineOp machine = MachineOp::lookup(*this);
  if (!machine)
    return emitOpError("needs an 'mt3k.machine' in the enclosing module");
  if (offset % machine.getAlignment() != 0)
    return emitOpError("offset ")
           << offset << " of buffer '" << getName()
           << "' is not a multiple of the machine alignment of "
           << machine.getAlignment() << " bytes";
  MemorySpace space = type.getSpace();
  int64_t capacity = machine.getCapacity(space);
  auto program = (*this)->getParentOfType<ProgramOp>();
  if (space == MemorySpace::ddr && program.getDdrArena()) {
    int64_t arena = program.getDdrLimit();
    if (offset > arena - size)
      return emitOpError("buffer '")
             << getName() << "' [" << offset << ", " << offset + size
             << ") exceeds the DDR arena of " << arena << " bytes of program @"
             << program.getSymName();
    return success();
  }
  if (offset > capacity - size)
    return emitOpError("buffer '")
           << getName() << "' [" << offset << ", " << offset + size
           << ") exceeds the " << stringifyMemorySpace(space) << " capacity of "
           << capacity << " bytes"
           << (space == MemorySpace::am ? " per core" : "");
  return success();
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

/// A view or group slot (`what`) names bytes of its source's memory space.
static LogicalResult verifySourceSpace(Operation *op, StringRef what,
                                       BufferType source, BufferType result) {
  if (source.getSpace() == result.getSpace())
    return success();
  return op->emitOpError("a ")
         << what << " stays in its source's memory space, got "
         << stringifyMemorySpace(source.getSpace()) << " -> "
         << stringifyMemorySpace(result.getSpace());
}

LogicalResult ViewOp::verify() {
  BufferType source = getSource().getType();
  BufferType result = getResult().getType();
  if (failed(verifySourceSpace(*this, "view", source, result)))
    return failure();
  int64_t offset = getByteOffset();
  if (offset % result.getElementSizeInBytes() != 0)
    return emitOpError("byte offset ")
           << offset << " is not a multiple of the element size of "
           << result.getElementSizeInBytes() << " bytes";
  if (offset > source.getSizeInBytes() - result.getSizeInBytes())
    return emitOpError("view [")
           << offset << ", " << offset + result.getSizeInBytes()
           << ") exceeds its source of " << source.getSizeInBytes() << " bytes";
  return success();
}

LogicalResult GroupSlotOp::verify() {
  BufferType source = getSource().getType();
  BufferType result = getResult().getType();
  if (failed(verifySourceSpace(*this, "group slot", source, result)))
    return failure();
  if (source.getElementType() != result.getElementType())
    return emitOpError("slot of ")
           << result.getElementType() << " elements in a source of "
           << source.getElementType() << " elements (they must agree)";
  return success();
}

LogicalResult
GroupSlotOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto group = symbolTable.lookupNearestSymbolFrom<GroupOp>(
      *this, getGroupAttr().getAttr());
  if (!group)
    return emitOpError("'")
           << getGroupAttr() << "' does not name an 'mt3k.group'";
  int64_t block = getResult().getType().getSizeInBytes();
  int64_t whole = getSource().getType().getSizeInBytes();
  if (whole != int64_t(group.getSize()) * block)
    return emitOpError("source has ")
           << whole << " bytes, expected " << group.getSize() << " (size of @"
           << group.getSymName() << ") x " << block << " (the slot)";
  return success();
}

//===----------------------------------------------------------------------===//
// Asynchronous operations
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KInterfaces.cpp.inc"

/// The runtime handle behind a token is released by its wait: a second wait
/// on it would wait on a released handle.
LogicalResult ratrain::mt3k::detail::verifyAsyncOpInterface(Operation *op) {
  Value token = llvm::cast<AsyncOpInterface>(op).getAsyncToken();
  unsigned waits = llvm::count_if(token.getUsers(), [](Operation *user) {
    return llvm::isa<WaitOp>(user);
  });
  if (waits > 1)
    return op->emitOpError("token is waited on more than once");
  return success();
}

void DmaOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // The AM side addresses the AM of one core: the effect carries the core.
  auto core = [&](Value buffer) -> Attribute {
    if (llvm::cast<BufferType>(buffer.getType()).getSpace() == MemorySpace::am)
      return getCoreAttr();
    return {};
  };
  effects.emplace_back(MemoryEffects::Read::get(), &getSourceMutable(),
                       core(getSource()));
  effects.emplace_back(MemoryEffects::Write::get(), &getDestMutable(),
                       core(getDest()));
}

/// The parameters of an effect on the offload store: `[tier, key]`.
static ArrayAttr storeSlot(Attribute tier, StringAttr key) {
  return ArrayAttr::get(key.getContext(), {tier, key});
}

void OffloadOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getSourceMutable());
  effects.emplace_back(MemoryEffects::Write::get(),
                       storeSlot(getTierAttr(), getKeyAttr()),
                       OffloadStoreResource::get());
}

void ReloadOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(),
                       storeSlot(getTierAttr(), getKeyAttr()),
                       OffloadStoreResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), &getDestMutable());
}

LogicalResult DmaOp::verify() {
  BufferType source = getSource().getType();
  BufferType dest = getDest().getType();
  MemorySpace from = source.getSpace(), to = dest.getSpace();
  if (from == to)
    return emitOpError("DMA between incompatible spaces: ")
           << stringifyMemorySpace(from) << " -> " << stringifyMemorySpace(to)
           << " (allowed: ddr <-> gsm, ddr <-> am, gsm <-> am)";
  if (source.getElementType() != dest.getElementType())
    return emitOpError("source and destination element types differ: ")
           << source.getElementType() << " vs " << dest.getElementType();
  if (source.getSizeInBytes() != dest.getSizeInBytes())
    return emitOpError("source and destination sizes differ: ")
           << source.getSizeInBytes() << " vs " << dest.getSizeInBytes()
           << " bytes";
  bool touchesAm = from == MemorySpace::am || to == MemorySpace::am;
  if (touchesAm && !getCore())
    return emitOpError("a DMA to or from am must name its 'core'");
  if (!touchesAm && getCore())
    return emitOpError("'core' only applies to a DMA to or from am");
  if (MachineOp machine = MachineOp::lookup(*this)) {
    if (getCore() && static_cast<int64_t>(*getCore()) >= machine.getCores())
      return emitOpError("core ")
             << *getCore() << " is out of range: the machine has "
             << machine.getCores() << " cores";
    if (getChannel() &&
        static_cast<int64_t>(*getChannel()) >= machine.getDmaChannels())
      return emitOpError("channel ")
             << *getChannel() << " is out of range: the machine has "
             << machine.getDmaChannels() << " DMA channels";
  }
  return success();
}

#define GET_OP_CLASSES
#include "MT3K/MT3KOps.cpp.inc"
