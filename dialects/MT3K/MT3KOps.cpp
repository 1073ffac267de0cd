//===- MT3KOps.cpp - mt3k operations --------------------------------------===//
//
// Builders and verifiers of the mt3k operations. Single-operand rules (ranks,
// element types, positive attributes) are ODS constraints; this file checks
// the rules that relate several operands, attributes or the machine.
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KOps.h"
#include "MT3K/MT3KDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace ratrain::mt3k;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// `[a, b, c]`
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

static BufferType bufferType(Value value) {
  return llvm::cast<BufferType>(value.getType());
}

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
  for (auto other : module.getOps<MachineOp>())
    if (other != *this)
      return other == *module.getOps<MachineOp>().begin()
                 ? emitOpError("duplicates the module's machine; a module "
                               "describes one machine")
                 : success();
  return success();
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state,
                      StringRef name, int64_t stage,
                      std::optional<int64_t> ddrArena) {
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

LogicalResult ProgramOp::verify() {
  MachineOp machine = MachineOp::lookup(*this);
  if (!machine)
    return emitOpError("needs an 'mt3k.machine' in the enclosing module");
  if (std::optional<uint64_t> arena = getDdrArena())
    if (static_cast<int64_t>(*arena) > machine.getDdr())
      return emitOpError("DDR arena of ")
             << *arena << " bytes exceeds the machine's DDR capacity of "
             << machine.getDdr() << " bytes";
  return success();
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
           << ") exceeds the " << stringifyMemorySpace(space)
           << " capacity of " << capacity << " bytes"
           << (space == MemorySpace::am ? " per core" : "");
  return success();
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

LogicalResult ViewOp::verify() {
  BufferType source = getSource().getType();
  BufferType result = getResult().getType();
  if (source.getSpace() != result.getSpace())
    return emitOpError("a view stays in its source's memory space, got ")
           << stringifyMemorySpace(source.getSpace()) << " -> "
           << stringifyMemorySpace(result.getSpace());
  int64_t offset = getByteOffset();
  if (offset % result.getElementSizeInBytes() != 0)
    return emitOpError("byte offset ")
           << offset << " is not a multiple of the element size of "
           << result.getElementSizeInBytes() << " bytes";
  if (offset > source.getSizeInBytes() - result.getSizeInBytes())
    return emitOpError("view [")
           << offset << ", " << offset + result.getSizeInBytes()
           << ") exceeds its source of " << source.getSizeInBytes()
           << " bytes";
  return success();
}

//===----------------------------------------------------------------------===//
// Asynchronous operations
//===----------------------------------------------------------------------===//

/// Every token must reach an mt3k.wait: an asynchronous operation that is
/// never waited on leaves its buffers in use forever.
static LogicalResult verifyTokenWaited(Operation *op, Value token) {
  if (token.use_empty())
    return op->emitOpError("token is never waited on");
  return success();
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
  return verifyTokenWaited(*this, getToken());
}

#define GET_OP_CLASSES
#include "MT3K/MT3KOps.cpp.inc"
