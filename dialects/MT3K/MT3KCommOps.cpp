//===- MT3KCommOps.cpp - mt3k communication verifiers ---------------------===//
//
// Verifiers of the collectives and point-to-point transfers
// (MT3KCommOps.td): groups, ranks and sizes. Matching transfers across
// programs is `--mt3k-verify`'s business (lib/MT3K/VerifyTraffic.cpp).
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KOps.h"
#include "ratrain/Model/Limits.h"

using namespace mlir;
using namespace ratrain::mt3k;

static BufferType bufferType(Value value) {
  return llvm::cast<BufferType>(value.getType());
}

/// Resolves `group` to an mt3k.group or reports that it names none.
static GroupOp lookupGroup(Operation *op, FlatSymbolRefAttr group,
                           SymbolTableCollection &symbolTable) {
  auto groupOp =
      symbolTable.lookupNearestSymbolFrom<GroupOp>(op, group.getAttr());
  if (!groupOp)
    op->emitOpError("'") << group << "' does not name an 'mt3k.group'";
  return groupOp;
}

/// Fails unless `rank` is an index of `group`; `what` names the index.
static LogicalResult verifyRankInGroup(Operation *op, StringRef what,
                                       int64_t rank, GroupOp group) {
  if (rank >= group.getSize())
    return op->emitOpError()
           << what << " " << rank << " is out of range: group @"
           << group.getSymName() << " has " << group.getSize() << " ranks";
  return success();
}

/// Fails unless `large` holds `factor` times the elements of `small`, with
/// the same element type.
static LogicalResult verifyGroupMultiple(Operation *op, Value large,
                                         StringRef largeName, Value small,
                                         StringRef smallName, GroupOp group) {
  BufferType largeType = bufferType(large), smallType = bufferType(small);
  if (largeType.getElementType() != smallType.getElementType())
    return op->emitOpError("source and destination element types differ: ")
           << bufferType(large).getElementType() << " vs "
           << bufferType(small).getElementType();
  if (largeType.getNumElements() !=
      group.getSize() * smallType.getNumElements())
    return op->emitOpError()
           << largeName << " has " << largeType.getNumElements()
           << " elements, expected " << group.getSize() << " (size of @"
           << group.getSymName() << ") x " << smallType.getNumElements() << " ("
           << smallName << ")";
  return success();
}

/// A point-to-point peer is in the group and, on the pipeline group, is not
/// the sending/receiving stage itself.
static LogicalResult verifyPeer(Operation *op, int64_t peer, GroupOp group) {
  if (failed(verifyRankInGroup(op, "peer", peer, group)))
    return failure();
  if (group.getKind() == GroupKind::pipeline)
    if (auto program = op->getParentOfType<ProgramOp>())
      if (static_cast<int64_t>(program.getStage()) == peer)
        return op->emitOpError("stage ")
               << peer << " cannot transfer to or from itself";
  return success();
}

/// A quantized wire encodes f32, bf16 or f16 elements.
static LogicalResult verifyWire(Operation *op, std::optional<WireType> wire,
                                Value source) {
  if (!wire)
    return success();
  Type element = bufferType(source).getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return op->emitOpError("a ")
           << stringifyWireType(*wire)
           << " wire quantizes f32, bf16 or f16 elements, not " << element;
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  if (getWire() && getReduce() != ReduceKind::sum &&
      getReduce() != ReduceKind::avg)
    return emitOpError("a ") << stringifyWireType(*getWire())
                             << " wire reduces by sum or avg, not "
                             << stringifyReduceKind(getReduce());
  // Its consumer, mt3k.adamw with `own`, completes an average.
  if (getLeaveOwn() &&
      (getWire() || getAlgorithm() != CollectiveAlgorithm::ring ||
       getReduce() != ReduceKind::avg))
    return emitOpError("leave_own needs a ring on a native wire reducing by "
                       "avg (its last round reduces the own block, and the "
                       "update completes the average)");
  return verifyWire(*this, getWire(), getSource());
}

LogicalResult AllGatherOp::verify() {
  return verifyWire(*this, getWire(), getSource());
}

LogicalResult AllReduceOp::verify() {
  if (getSource().getType() != getDest().getType())
    return emitOpError("source and destination types differ: ")
           << getSource().getType() << " vs " << getDest().getType();
  if (bool(getPeriod()) != bool(getPhase()))
    return emitOpError("'every' needs both a period and a phase");
  if (getPeriod() && *getPeriod() > uint64_t(limits::kMaxSyncPeriod))
    return emitOpError("period ") << *getPeriod() << " exceeds the limit of "
                                  << limits::kMaxSyncPeriod << " steps";
  if (getPeriod() && *getPhase() >= *getPeriod())
    return emitOpError("phase ")
           << *getPhase() << " must be below the period " << *getPeriod();
  return success();
}

LogicalResult
AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return success(lookupGroup(*this, getGroupAttr(), symbolTable) != nullptr);
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  GroupOp group = lookupGroup(*this, getGroupAttr(), symbolTable);
  if (!group)
    return failure();
  if (failed(verifyGroupMultiple(*this, getSource(), "source", getDest(),
                                 "destination", group)))
    return failure();
  if (!getLeaveOwn())
    return success();
  // The last round receives into the destination while the consumer still
  // needs the own block of the source (and the other blocks are being sent
  // from it): no overlap.
  std::optional<MemoryRange> source = resolveMemoryRange(getSource());
  std::optional<MemoryRange> dest = resolveMemoryRange(getDest());
  if (source && dest && source->overlaps(*dest))
    return emitOpError("leave_own needs a destination apart from the source "
                       "(the update reads the own block of the source): ")
           << stringifyMemorySpace(dest->space) << " bytes [" << source->begin
           << ", " << source->end << ") and [" << dest->begin << ", "
           << dest->end << ")";
  return success();
}

LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  GroupOp group = lookupGroup(*this, getGroupAttr(), symbolTable);
  if (!group)
    return failure();
  if (failed(verifyGroupMultiple(*this, getDest(), "destination", getSource(),
                                 "source", group)))
    return failure();
  // In place, the contribution is the rank's own block of the result: the
  // runtime passes MPI_IN_PLACE on every rank or on none, so any other
  // overlap (another group's slot, a view at a fixed offset) is an error.
  std::optional<MemoryRange> source = resolveMemoryRange(getSource());
  std::optional<MemoryRange> dest = resolveMemoryRange(getDest());
  if (!source || !dest || !source->overlaps(*dest))
    return success();
  auto slot = getSource().getDefiningOp<GroupSlotOp>();
  if (slot && slot.getSource() == getDest() &&
      slot.getGroupAttr() == getGroupAttr())
    return success();
  return emitOpError("source overlaps the destination: ")
         << stringifyMemorySpace(dest->space) << " bytes [" << source->begin
         << ", " << source->end << ") and [" << dest->begin << ", " << dest->end
         << "); in place, the source must be the destination's "
         << "'mt3k.group_slot' on " << getGroupAttr();
}

LogicalResult
BroadcastOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  GroupOp group = lookupGroup(*this, getGroupAttr(), symbolTable);
  if (!group)
    return failure();
  return verifyRankInGroup(*this, "root", getRoot(), group);
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  GroupOp group = lookupGroup(*this, getGroupAttr(), symbolTable);
  if (!group)
    return failure();
  return verifyPeer(*this, getPeer(), group);
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  GroupOp group = lookupGroup(*this, getGroupAttr(), symbolTable);
  if (!group)
    return failure();
  return verifyPeer(*this, getPeer(), group);
}

LogicalResult BarrierOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return success(lookupGroup(*this, getGroupAttr(), symbolTable) != nullptr);
}
