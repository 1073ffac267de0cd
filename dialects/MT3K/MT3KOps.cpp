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
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

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

namespace {
/// A byte range of one memory space, resolved through views.
struct MemoryRange {
  MemorySpace space;
  /// For AM: the core whose AM is meant, or -1 for every core.
  int64_t core = -1;
  int64_t begin = 0, end = 0;
  /// The buffer the range belongs to (for messages).
  BufferOp buffer;

  bool overlaps(const MemoryRange &other) const {
    if (space != other.space || begin >= other.end || other.begin >= end)
      return false;
    return space != MemorySpace::am || core < 0 || other.core < 0 ||
           core == other.core;
  }
};

/// One buffer access of an operation.
struct MemoryAccess {
  MemoryRange range;
  bool writes;
};

/// An asynchronous operation whose token has not been waited on yet.
struct InFlight {
  Operation *op;
  SmallVector<MemoryAccess> accesses;
};
} // namespace

/// The absolute range `value` names, if it derives from an mt3k.buffer.
static std::optional<MemoryRange> resolveRange(Value value) {
  auto type = llvm::dyn_cast<BufferType>(value.getType());
  if (!type)
    return std::nullopt;
  int64_t offset = 0;
  Value root = value;
  while (auto view = root.getDefiningOp<ViewOp>()) {
    offset += view.getByteOffset();
    root = view.getSource();
  }
  auto buffer = root.getDefiningOp<BufferOp>();
  if (!buffer)
    return std::nullopt;
  offset += buffer.getOffset();
  return MemoryRange{type.getSpace(), -1, offset,
                     offset + type.getSizeInBytes(), buffer};
}

/// The buffer ranges `op` reads and writes, from its memory effects.
static SmallVector<MemoryAccess> getAccesses(Operation *op) {
  SmallVector<MemoryAccess> accesses;
  auto effects = llvm::dyn_cast<MemoryEffectOpInterface>(op);
  std::optional<int64_t> amCore;
  if (auto dma = llvm::dyn_cast<DmaOp>(op))
    if (std::optional<uint64_t> core = dma.getCore())
      amCore = static_cast<int64_t>(*core);
  auto add = [&](Value value, bool writes) {
    std::optional<MemoryRange> range = resolveRange(value);
    if (!range)
      return;
    if (range->space == MemorySpace::am && amCore)
      range->core = *amCore;
    accesses.push_back({*range, writes});
  };
  if (!effects) {
    // Unknown effects: every buffer operand may be read and written.
    for (Value operand : op->getOperands())
      add(operand, /*writes=*/true);
    return accesses;
  }
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  for (const MemoryEffects::EffectInstance &instance : instances)
    if (Value value = instance.getValue())
      add(value, llvm::isa<MemoryEffects::Write>(instance.getEffect()));
  return accesses;
}

/// The sends (or recvs) of `program` on pipeline groups, by (group, peer,
/// tag), in program order.
template <typename TransferOp>
static llvm::MapVector<std::tuple<StringRef, int64_t, int64_t>,
                       SmallVector<TransferOp>>
collectPipelineTransfers(ProgramOp program) {
  llvm::MapVector<std::tuple<StringRef, int64_t, int64_t>,
                  SmallVector<TransferOp>>
      transfers;
  for (auto op : program.getBodyBlock().getOps<TransferOp>()) {
    auto group = SymbolTable::lookupNearestSymbolFrom<GroupOp>(
        program, op.getGroupAttr());
    if (!group || group.getKind() != GroupKind::pipeline)
      continue;
    transfers[{op.getGroup(), static_cast<int64_t>(op.getPeer()),
               static_cast<int64_t>(op.getTag())}]
        .push_back(op);
  }
  return transfers;
}

/// On pipeline groups, where a rank's index is its program's stage, the
/// k-th send of this program to stage p with tag t is received by the k-th
/// recv from this stage with tag t in p's program, into as many bytes; and
/// every recv of this program has such a send. Stages without a program in
/// the module are not checked.
static LogicalResult verifyPipelineTraffic(ProgramOp program) {
  auto module = program->getParentOfType<ModuleOp>();
  auto findStage = [&](int64_t stage) -> ProgramOp {
    for (auto other : module.getOps<ProgramOp>())
      if (static_cast<int64_t>(other.getStage()) == stage)
        return other;
    return {};
  };
  int64_t self = program.getStage();
  // Each peer program is scanned once per direction.
  using Key = std::tuple<StringRef, int64_t, int64_t>;
  llvm::DenseMap<Operation *, llvm::MapVector<Key, SmallVector<RecvOp>>>
      peerRecvs;
  llvm::DenseMap<Operation *, llvm::MapVector<Key, SmallVector<SendOp>>>
      peerSends;
  for (auto &[key, sends] : collectPipelineTransfers<SendOp>(program)) {
    auto [group, peer, tag] = key;
    // A transfer to itself is reported by the op's own verifier.
    ProgramOp peerProgram = peer == self ? ProgramOp() : findStage(peer);
    if (!peerProgram)
      continue;
    auto [recvs, inserted] = peerRecvs.try_emplace(peerProgram);
    if (inserted)
      recvs->second = collectPipelineTransfers<RecvOp>(peerProgram);
    SmallVector<RecvOp> &matching = recvs->second[{group, self, tag}];
    for (auto [index, send] : llvm::enumerate(sends)) {
      if (index >= matching.size())
        return send.emitOpError("to stage ")
               << peer << " with tag " << tag << " on @" << group
               << " has no matching 'mt3k.recv' in program @"
               << peerProgram.getSymName();
      int64_t sent = send.getBuffer().getType().getSizeInBytes();
      int64_t received = matching[index].getBuffer().getType().getSizeInBytes();
      if (sent != received) {
        InFlightDiagnostic diag = send.emitOpError("sends ")
                                  << sent << " bytes, but the matching recv "
                                  << "receives " << received;
        diag.attachNote(matching[index].getLoc()) << "received here";
        return diag;
      }
    }
  }
  for (auto &[key, recvs] : collectPipelineTransfers<RecvOp>(program)) {
    auto [group, peer, tag] = key;
    // A transfer to itself is reported by the op's own verifier.
    ProgramOp peerProgram = peer == self ? ProgramOp() : findStage(peer);
    if (!peerProgram)
      continue;
    auto [sends, inserted] = peerSends.try_emplace(peerProgram);
    if (inserted)
      sends->second = collectPipelineTransfers<SendOp>(peerProgram);
    size_t sent = sends->second[{group, self, tag}].size();
    if (recvs.size() > sent)
      return recvs[sent].emitOpError("from stage ")
             << peer << " with tag " << tag << " on @" << group
             << " has no matching 'mt3k.send' in program @"
             << peerProgram.getSymName();
  }
  return success();
}

LogicalResult ProgramOp::verifyRegions() {
  // The prologue: buffers, views and parameter initialization, and the
  // offloads (with their waits) marked `mt3k.prologue` that put initialized
  // states into the offload tier before the first iteration.
  auto inPrologue = [](Operation &op) {
    return op.hasAttr("mt3k.prologue") && llvm::isa<OffloadOp, WaitOp>(op);
  };
  Operation *firstOfIteration = nullptr;
  for (Operation &op : getBody().front()) {
    if (llvm::isa<BufferOp, ViewOp>(op))
      continue;
    if (!llvm::isa<InitParamOp>(op) && !inPrologue(op)) {
      if (!firstOfIteration)
        firstOfIteration = &op;
      continue;
    }
    if (firstOfIteration) {
      InFlightDiagnostic diag =
          op.emitOpError("must precede the iteration: only mt3k.buffer, "
                         "mt3k.view and mt3k.init_param may come before it");
      diag.attachNote(firstOfIteration->getLoc())
          << "the iteration starts here";
      return diag;
    }
  }

  // Offloads by key: a key is offloaded once by the prologue and once per
  // iteration, and reloaded with its size.
  llvm::StringMap<OffloadOp> offloads, prologueOffloads;
  for (Operation &op : getBody().front()) {
    if (auto offload = llvm::dyn_cast<OffloadOp>(op)) {
      auto [it, inserted] = (inPrologue(op) ? prologueOffloads : offloads)
                                .try_emplace(offload.getKey(), offload);
      if (!inserted) {
        InFlightDiagnostic diag = offload.emitOpError("key '")
                                  << offload.getKey()
                                  << "' is offloaded more than once";
        diag.attachNote(it->second.getLoc()) << "first offloaded here";
        return diag;
      }
      continue;
    }
    auto reload = llvm::dyn_cast<ReloadOp>(op);
    if (!reload)
      continue;
    OffloadOp earlier = offloads.lookup(reload.getKey());
    if (!earlier)
      earlier = prologueOffloads.lookup(reload.getKey());
    if (!earlier || earlier.getTier() != reload.getTier())
      return reload.emitOpError("key '")
             << reload.getKey() << "' has no earlier offload to "
             << stringifyStorageTier(reload.getTier());
    int64_t stored = earlier.getSource().getType().getSizeInBytes();
    int64_t wanted = reload.getDest().getType().getSizeInBytes();
    if (stored != wanted)
      return reload.emitOpError("reloads ")
             << wanted << " bytes, but key '" << reload.getKey() << "' holds "
             << stored;
  }

  // Asynchronous operations in flight, keyed by their token.
  llvm::MapVector<Value, InFlight> inFlight;
  for (Operation &op : getBody().front()) {
    if (auto wait = llvm::dyn_cast<WaitOp>(op)) {
      for (Value token : wait.getTokens())
        inFlight.erase(token);
      continue;
    }
    if (auto reload = llvm::dyn_cast<ReloadOp>(op))
      for (auto &[token, pending] : inFlight)
        if (auto offload = llvm::dyn_cast<OffloadOp>(pending.op))
          if (offload.getKey() == reload.getKey()) {
            InFlightDiagnostic diag = reload.emitOpError("reloads key '")
                                      << reload.getKey()
                                      << "' before its offload is waited on";
            diag.attachNote(offload.getLoc()) << "offloaded here";
            return diag;
          }
    SmallVector<MemoryAccess> accesses = getAccesses(&op);
    for (auto &[token, pending] : inFlight)
      for (const MemoryAccess &access : accesses)
        for (const MemoryAccess &other : pending.accesses) {
          if (!access.range.overlaps(other.range) ||
              (!access.writes && !other.writes))
            continue;
          BufferOp buffer = access.range.buffer;
          InFlightDiagnostic diag =
              op.emitOpError()
              << (access.writes ? "writes" : "reads") << " "
              << stringifyMemorySpace(access.range.space) << " bytes ["
              << access.range.begin << ", " << access.range.end
              << ") of buffer '" << buffer.getName() << "' that an unfinished '"
              << pending.op->getName() << "' "
              << (other.writes ? "writes" : "reads")
              << "; wait on its token first";
          diag.attachNote(pending.op->getLoc())
              << "asynchronous operation started here";
          return diag;
        }
    if (op.hasTrait<AsyncOp>())
      inFlight.insert({op.getResult(0), InFlight{&op, std::move(accesses)}});
  }
  return verifyPipelineTraffic(*this);
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
           << ") exceeds its source of " << source.getSizeInBytes() << " bytes";
  return success();
}

//===----------------------------------------------------------------------===//
// Asynchronous operations
//===----------------------------------------------------------------------===//

/// Every token reaches exactly one mt3k.wait: an asynchronous operation that
/// is never waited on leaves its buffers in use forever, and the runtime
/// handle behind a token is released by its wait.
LogicalResult ratrain::mt3k::verifyTokenIsWaited(Operation *op, Value token) {
  unsigned waits = 0;
  if (token)
    for (Operation *user : token.getUsers())
      if (llvm::isa<WaitOp>(user))
        ++waits;
  if (waits == 0)
    return op->emitOpError("token is never waited on");
  if (waits > 1)
    return op->emitOpError("token is waited on more than once");
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
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Fails unless `value` has the shape of `reference`.
namespace {
/// A named kernel operand, for the overlap check.
struct NamedOperand {
  Value value;
  StringRef name;
};
} // namespace

/// Kernels do not work in place unless documented: no output may overlap an
/// input (except the identical range, where `mayAlias` allows it) or another
/// output. Ranges are resolved through views to absolute offsets.
static LogicalResult verifyNoOverlap(Operation *op,
                                     ArrayRef<NamedOperand> outputs,
                                     ArrayRef<NamedOperand> inputs,
                                     bool mayAlias) {
  auto check = [&](const NamedOperand &output, const NamedOperand &other,
                   bool exactIsFine) -> LogicalResult {
    std::optional<MemoryRange> a = resolveRange(output.value);
    std::optional<MemoryRange> b = resolveRange(other.value);
    if (!a || !b || !a->overlaps(*b))
      return success();
    if (exactIsFine && a->begin == b->begin && a->end == b->end)
      return success();
    return op->emitOpError("'")
           << output.name << "' overlaps '" << other.name
           << "': " << stringifyMemorySpace(a->space) << " bytes [" << a->begin
           << ", " << a->end << ") and [" << b->begin << ", " << b->end << ")";
  };
  for (auto [index, output] : llvm::enumerate(outputs)) {
    for (const NamedOperand &input : inputs)
      if (failed(check(output, input, mayAlias)))
        return failure();
    for (const NamedOperand &other : outputs.drop_front(index + 1))
      if (failed(check(output, other, /*exactIsFine=*/false)))
        return failure();
  }
  return success();
}

static LogicalResult expectSameShape(Operation *op, Value value, StringRef name,
                                     Value reference, StringRef referenceName) {
  ArrayRef<int64_t> shape = bufferType(value).getShape();
  ArrayRef<int64_t> expected = bufferType(reference).getShape();
  if (shape != expected)
    return op->emitOpError("'")
           << name << "' must have the shape of '" << referenceName << "', got "
           << formatShape(shape) << " and " << formatShape(expected);
  return success();
}

/// Fails unless `value` has the type (shape and element type) of `reference`.
static LogicalResult expectSameType(Operation *op, Value value, StringRef name,
                                    Value reference, StringRef referenceName) {
  if (value.getType() != reference.getType())
    return op->emitOpError("'")
           << name << "' must have the type of '" << referenceName << "', got "
           << value.getType() << " and " << reference.getType();
  return success();
}

LogicalResult GemmOp::verify() {
  BufferType a = getA().getType(), b = getB().getType(), c = getC().getType();
  if (a.getElementType() != b.getElementType())
    return emitOpError("a and b must have the same element type, got ")
           << a.getElementType() << " and " << b.getElementType();
  if (!c.getElementType().isF32() && c.getElementType() != a.getElementType())
    return emitOpError("c must hold f32 or the element type of a and b, got ")
           << c.getElementType();
  int64_t m = a.getShape()[getTransposeA() ? 1 : 0];
  int64_t ka = a.getShape()[getTransposeA() ? 0 : 1];
  int64_t kb = b.getShape()[getTransposeB() ? 1 : 0];
  int64_t n = b.getShape()[getTransposeB() ? 0 : 1];
  if (ka != kb)
    return emitOpError("contraction dimensions disagree: op(a) is ")
           << m << "x" << ka << ", op(b) is " << kb << "x" << n;
  if (c.getShape()[0] != m || c.getShape()[1] != n)
    return emitOpError("c is ")
           << formatShape(c.getShape()) << ", expected " << formatShape({m, n});
  return verifyNoOverlap(*this, {{getC(), "c"}}, {{getA(), "a"}, {getB(), "b"}},
                         /*mayAlias=*/false);
}

/// Checks the operands shared by attention forward and backward.
static LogicalResult verifyAttention(Operation *op, Value qValue, Value kValue,
                                     Value vValue, Value oValue, Value lseValue,
                                     bool causal) {
  BufferType q = bufferType(qValue), k = bufferType(kValue),
             v = bufferType(vValue), o = bufferType(oValue),
             lse = bufferType(lseValue);
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType() ||
      o.getElementType() != q.getElementType())
    return op->emitOpError("q, k, v and o must share one element type");
  if (k.getShape() != v.getShape())
    return op->emitOpError("k and v must have the same shape, got ")
           << formatShape(k.getShape()) << " and " << formatShape(v.getShape());
  // [batch, seq, heads, head_dim]
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape();
  if (qs[0] != ks[0] || qs[3] != ks[3])
    return op->emitOpError("q and k disagree on batch size or head dim: q is ")
           << formatShape(qs) << ", k is " << formatShape(ks);
  if (qs[2] % ks[2] != 0)
    return op->emitOpError("query heads (")
           << qs[2] << ") must be a multiple of key/value heads (" << ks[2]
           << ")";
  if (causal && qs[1] != ks[1])
    return op->emitOpError(
               "causal attention needs equal query and key lengths, got ")
           << qs[1] << " and " << ks[1];
  if (failed(expectSameShape(op, oValue, "o", qValue, "q")))
    return failure();
  SmallVector<int64_t> lseShape = {qs[0], qs[2], qs[1]};
  if (lse.getShape() != ArrayRef<int64_t>(lseShape))
    return op->emitOpError("lse must be [batch, heads, seq] = ")
           << formatShape(lseShape) << ", got " << formatShape(lse.getShape());
  return success();
}

LogicalResult AttentionFwdOp::verify() {
  if (failed(verifyAttention(*this, getQ(), getK(), getV(), getO(), getLse(),
                             getCausal())))
    return failure();
  return verifyNoOverlap(*this, {{getO(), "o"}, {getLse(), "lse"}},
                         {{getQ(), "q"}, {getK(), "k"}, {getV(), "v"}},
                         /*mayAlias=*/false);
}

LogicalResult AttentionBwdOp::verify() {
  if (failed(verifyAttention(*this, getQ(), getK(), getV(), getO(), getLse(),
                             getCausal())) ||
      failed(expectSameType(*this, getDO(), "d_o", getO(), "o")) ||
      failed(expectSameType(*this, getDq(), "dq", getQ(), "q")) ||
      failed(expectSameType(*this, getDk(), "dk", getK(), "k")) ||
      failed(expectSameType(*this, getDv(), "dv", getV(), "v")))
    return failure();
  return verifyNoOverlap(*this,
                         {{getDq(), "dq"}, {getDk(), "dk"}, {getDv(), "dv"}},
                         {{getQ(), "q"},
                          {getK(), "k"},
                          {getV(), "v"},
                          {getO(), "o"},
                          {getDO(), "d_o"},
                          {getLse(), "lse"}},
                         /*mayAlias=*/false);
}

/// Checks x [tokens, hidden], weight [hidden], rstd [tokens].
static LogicalResult verifyRMSNorm(Operation *op, Value xValue,
                                   Value weightValue, Value rstdValue) {
  ArrayRef<int64_t> x = bufferType(xValue).getShape();
  int64_t weight = bufferType(weightValue).getShape()[0];
  int64_t rstd = bufferType(rstdValue).getShape()[0];
  if (weight != x[1])
    return op->emitOpError("weight has ")
           << weight << " elements, expected the hidden size " << x[1]
           << " of x";
  if (rstd != x[0])
    return op->emitOpError("rstd has ")
           << rstd << " elements, expected the row count " << x[0] << " of x";
  return success();
}

LogicalResult RMSNormFwdOp::verify() {
  if (failed(verifyRMSNorm(*this, getX(), getWeight(), getRstd())) ||
      failed(expectSameShape(*this, getY(), "y", getX(), "x")))
    return failure();
  // Row-wise: y may be x itself; rstd is separate.
  if (failed(verifyNoOverlap(*this, {{getY(), "y"}}, {{getX(), "x"}},
                             /*mayAlias=*/true)))
    return failure();
  return verifyNoOverlap(*this, {{getY(), "y"}, {getRstd(), "rstd"}},
                         {{getWeight(), "weight"}}, /*mayAlias=*/false);
}

LogicalResult RMSNormBwdOp::verify() {
  if (failed(verifyRMSNorm(*this, getX(), getWeight(), getRstd())) ||
      failed(expectSameShape(*this, getDy(), "dy", getX(), "x")) ||
      failed(expectSameShape(*this, getDx(), "dx", getX(), "x")) ||
      failed(expectSameShape(*this, getDweight(), "dweight", getWeight(),
                             "weight")))
    return failure();
  // dx may be dy itself; nothing else overlaps.
  if (failed(verifyNoOverlap(*this, {{getDx(), "dx"}}, {{getDy(), "dy"}},
                             /*mayAlias=*/true)))
    return failure();
  return verifyNoOverlap(
      *this, {{getDx(), "dx"}, {getDweight(), "dweight"}},
      {{getX(), "x"}, {getWeight(), "weight"}, {getRstd(), "rstd"}},
      /*mayAlias=*/false);
}

namespace {
/// The operand counts of one elementwise kind.
struct ElementwiseArity {
  unsigned inputs, outputs;
};
} // namespace

static ElementwiseArity getArity(ElementwiseKind kind) {
  switch (kind) {
  case ElementwiseKind::swiglu:
  case ElementwiseKind::residual_add:
  case ElementwiseKind::embedding:
  case ElementwiseKind::embedding_bwd:
  case ElementwiseKind::cross_entropy:
  case ElementwiseKind::cross_entropy_bwd:
    return {2, 1};
  case ElementwiseKind::swiglu_bwd:
    return {3, 2};
  case ElementwiseKind::rope:
  case ElementwiseKind::rope_bwd:
  case ElementwiseKind::cast:
  case ElementwiseKind::scale:
    return {1, 1};
  }
  return {0, 0};
}

/// Whether `value` is a rank-1 buffer of i32 (token ids or labels).
static bool isTokenIds(Value value) {
  BufferType type = bufferType(value);
  return type.getRank() == 1 && type.getElementType().isInteger(32);
}

LogicalResult ElementwiseOp::verifyKindRules() {
  ElementwiseKind kind = getKind();
  StringRef name = stringifyElementwiseKind(kind);
  ElementwiseArity arity = getArity(kind);
  if (getInputs().size() != arity.inputs ||
      getOutputs().size() != arity.outputs)
    return emitOpError("'")
           << name << "' takes " << arity.inputs << " inputs and "
           << arity.outputs << " outputs, got " << getInputs().size() << " and "
           << getOutputs().size();

  bool isRope =
      kind == ElementwiseKind::rope || kind == ElementwiseKind::rope_bwd;
  if (isRope && !getTheta())
    return emitOpError("'") << name << "' needs a 'theta'";
  if (!isRope && getTheta())
    return emitOpError("'theta' only applies to rope and rope_bwd");
  if (kind == ElementwiseKind::scale && !getScale())
    return emitOpError("'scale' needs a 'scale' factor");
  if (kind != ElementwiseKind::scale &&
      kind != ElementwiseKind::cross_entropy_bwd && getScale())
    return emitOpError("'scale' only applies to scale and cross_entropy_bwd");

  SmallVector<Value> operands(getInputs());
  llvm::append_range(operands, getOutputs());
  switch (kind) {
  case ElementwiseKind::swiglu:
  case ElementwiseKind::swiglu_bwd:
  case ElementwiseKind::residual_add:
  case ElementwiseKind::rope:
  case ElementwiseKind::rope_bwd:
  case ElementwiseKind::scale: {
    for (Value operand : operands)
      if (operand.getType() != operands.front().getType())
        return emitOpError("'")
               << name << "' operands must all have the same type, got "
               << operands.front().getType() << " and " << operand.getType();
    if (!llvm::isa<FloatType>(bufferType(operands.front()).getElementType()))
      return emitOpError("'") << name << "' needs floating-point buffers";
    if (isRope) {
      BufferType type = bufferType(operands.front());
      if (type.getRank() != 4 || type.getShape()[3] % 2 != 0)
        return emitOpError("'")
               << name
               << "' operates on [batch, seq, heads, head_dim] buffers with "
                  "an even head_dim, got "
               << formatShape(type.getShape());
    }
    return success();
  }
  case ElementwiseKind::cast:
    if (bufferType(operands[0]).getShape() !=
        bufferType(operands[1]).getShape())
      return emitOpError("'cast' input and output must have the same shape");
    return success();
  case ElementwiseKind::embedding:
  case ElementwiseKind::embedding_bwd: {
    bool forward = kind == ElementwiseKind::embedding;
    Value table = forward ? operands[0] : operands[2];
    Value ids = forward ? operands[1] : operands[0];
    Value activations = forward ? operands[2] : operands[1];
    if (!isTokenIds(ids))
      return emitOpError("'")
             << name << "' token ids must be a rank-1 i32 buffer";
    ArrayRef<int64_t> tableShape = bufferType(table).getShape();
    ArrayRef<int64_t> actShape = bufferType(activations).getShape();
    int64_t tokens = bufferType(ids).getShape()[0];
    if (tableShape.size() != 2 || actShape.size() != 2 ||
        actShape[0] != tokens || actShape[1] != tableShape[1])
      return emitOpError("'")
             << name
             << "' expects a table [vocab, hidden] and activations [tokens, "
                "hidden] for ids [tokens], got table "
             << formatShape(tableShape) << ", activations "
             << formatShape(actShape) << ", ids [" << tokens << "]";
    return success();
  }
  case ElementwiseKind::cross_entropy:
  case ElementwiseKind::cross_entropy_bwd: {
    Value logits = operands[0], labels = operands[1], result = operands[2];
    if (!isTokenIds(labels))
      return emitOpError("'")
             << name << "' token ids must be a rank-1 i32 buffer";
    ArrayRef<int64_t> logitsShape = bufferType(logits).getShape();
    int64_t tokens = bufferType(labels).getShape()[0];
    if (logitsShape.size() != 2 || logitsShape[0] != tokens)
      return emitOpError("'")
             << name << "' expects logits [tokens, vocab] for labels [tokens], "
             << "got logits " << formatShape(logitsShape) << ", labels ["
             << tokens << "]";
    if (kind == ElementwiseKind::cross_entropy) {
      BufferType loss = bufferType(result);
      if (loss.getRank() != 0 || !loss.getElementType().isF32())
        return emitOpError("'cross_entropy' loss must be a rank-0 f32 buffer");
      return success();
    }
    return expectSameShape(*this, result, "dlogits", logits, "logits");
  }
  }
  return success();
}

LogicalResult ElementwiseOp::verify() {
  if (failed(verifyKindRules()))
    return failure();
  // Pointwise kinds may write an output over an input of the same range.
  ElementwiseKind kind = getKind();
  bool pointwise = kind != ElementwiseKind::embedding &&
                   kind != ElementwiseKind::embedding_bwd &&
                   kind != ElementwiseKind::cross_entropy;
  SmallVector<std::string> names;
  for (unsigned i = 0, e = getInputs().size(); i < e; ++i)
    names.push_back("input #" + std::to_string(i));
  for (unsigned i = 0, e = getOutputs().size(); i < e; ++i)
    names.push_back("output #" + std::to_string(i));
  SmallVector<NamedOperand> inputs, outputs;
  for (auto [index, value] : llvm::enumerate(getInputs()))
    inputs.push_back({value, names[index]});
  for (auto [index, value] : llvm::enumerate(getOutputs()))
    outputs.push_back({value, names[getInputs().size() + index]});
  return verifyNoOverlap(*this, outputs, inputs, pointwise);
}

LogicalResult AdamWOp::verify() {
  int64_t elements = getGrad().getType().getNumElements();
  for (auto [value, name] :
       llvm::zip_equal(ValueRange{getMaster(), getM(), getV(), getView()},
                       ArrayRef<StringRef>{"master", "m", "v", "view"})) {
    int64_t count = bufferType(value).getNumElements();
    if (count != elements)
      return emitOpError("'")
             << name << "' has " << count << " elements, expected " << elements
             << " like 'grad'";
  }
  double lr = getLr().convertToDouble(), beta1 = getBeta1().convertToDouble(),
         beta2 = getBeta2().convertToDouble(), eps = getEps().convertToDouble(),
         decay = getWeightDecay().convertToDouble();
  if (!(lr >= 0 && beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 &&
        eps > 0 && decay >= 0))
    return emitOpError("hyper-parameters out of range: need lr >= 0, "
                       "0 <= beta1, beta2 < 1, eps > 0, weight_decay >= 0");
  return verifyNoOverlap(*this,
                         {{getMaster(), "master"},
                          {getM(), "m"},
                          {getV(), "v"},
                          {getView(), "view"}},
                         {{getGrad(), "grad"}}, /*mayAlias=*/false);
}

LogicalResult InitParamOp::verify() {
  bool normal = getKind() == InitKind::normal;
  if (normal && !getStd())
    return emitOpError("'normal' initialization needs a 'std'");
  if (!normal && getStd())
    return emitOpError("'std' only applies to normal initialization");
  if (getStd() && !(getStd()->convertToDouble() > 0))
    return emitOpError("'std' must be positive");
  return success();
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

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

LogicalResult AllReduceOp::verify() {
  if (getSource().getType() != getDest().getType())
    return emitOpError("source and destination types differ: ")
           << getSource().getType() << " vs " << getDest().getType();
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
  return verifyGroupMultiple(*this, getSource(), "source", getDest(),
                             "destination", group);
}

LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  GroupOp group = lookupGroup(*this, getGroupAttr(), symbolTable);
  if (!group)
    return failure();
  return verifyGroupMultiple(*this, getDest(), "destination", getSource(),
                             "source", group);
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

#define GET_OP_CLASSES
#include "MT3K/MT3KOps.cpp.inc"
