//===- Verify.cpp - --mt3k-verify -----------------------------------------===//
//
// The program-wide and cross-program checks of an mt3k module: hazards and
// waits (from the async-hazard analysis), offload keys, and the traffic on
// pipeline groups (send/recv matching, the same collectives on every stage).
//
//===----------------------------------------------------------------------===//

#include "ratrain/Analysis/AsyncHazards.h"
#include "ratrain/MT3K/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace ratrain::mt3k {
#define GEN_PASS_DEF_MT3KVERIFY
#include "ratrain/MT3K/Passes.h.inc"
} // namespace ratrain::mt3k

using namespace mlir;
using namespace ratrain::mt3k;

//===----------------------------------------------------------------------===//
// Hazards and waits
//===----------------------------------------------------------------------===//

/// `%3`: the name the printer gives `value`.
static std::string getOperandName(Value value, AsmState &names) {
  std::string text;
  llvm::raw_string_ostream os(text);
  value.printAsOperand(os, names);
  return text;
}

/// `'k' of the host store`
static std::string describeSlot(Attribute slot) {
  auto parts = llvm::cast<ArrayAttr>(slot);
  auto tier = llvm::cast<StorageTierAttr>(parts[0]);
  auto key = llvm::cast<StringAttr>(parts[1]);
  return ("'" + key.getValue() + "' of the " +
          stringifyStorageTier(tier.getValue()) + " store")
      .str();
}

/// Reports `hazard` at its conflicting operation, with a note at the
/// asynchronous operation.
static void reportHazard(const AsyncHazard &hazard, AsmState &names) {
  Operation *op = hazard.op;
  const MemoryAccess &access = hazard.access, &pending = hazard.pending;
  // `(token %3, write-after-read)`
  std::string token = "(token " + getOperandName(hazard.getToken(), names) +
                      ", " + stringifyHazardKind(hazard.getKind()).str() + ")";
  if (pending.storeSlot) {
    auto key =
        llvm::cast<StringAttr>(llvm::cast<ArrayAttr>(pending.storeSlot)[1]);
    if (llvm::isa<ReloadOp>(op) && llvm::isa<OffloadOp>(hazard.asyncOp)) {
      InFlightDiagnostic diag =
          op->emitOpError("reloads key '")
          << key.getValue() << "' before its offload is waited on " << token;
      diag.attachNote(hazard.asyncOp->getLoc()) << "offloaded here";
      return;
    }
    InFlightDiagnostic diag = op->emitOpError()
                              << (access.writes ? "writes" : "reads") << " key "
                              << describeSlot(pending.storeSlot)
                              << " that an unfinished '"
                              << hazard.asyncOp->getName() << "' "
                              << (pending.writes ? "writes" : "reads")
                              << "; wait on its token first " << token;
    diag.attachNote(hazard.asyncOp->getLoc())
        << "asynchronous operation started here";
    return;
  }
  const MemoryRange &range = *access.range;
  InFlightDiagnostic diag =
      op->emitOpError() << (access.writes ? "writes" : "reads") << " "
                        << stringifyMemorySpace(range.space) << " bytes ["
                        << range.begin << ", " << range.end << ") of buffer '"
                        << BufferOp(range.buffer).getName()
                        << "' that an unfinished '" << hazard.asyncOp->getName()
                        << "' " << (pending.writes ? "writes" : "reads")
                        << "; wait on its token first " << token;
  diag.attachNote(hazard.asyncOp->getLoc())
      << "asynchronous operation started here";
}

/// Every token is waited on, before any operation that conflicts with its
/// asynchronous operation.
static LogicalResult verifyWaits(ProgramOp program,
                                 const AsyncHazardAnalysis &analysis) {
  if (analysis.isHazardFree())
    return success();
  // Value names as the printer numbers them in the program (computed once).
  AsmState names(program);
  for (const AsyncHazard &hazard : analysis.getHazards())
    reportHazard(hazard, names);
  for (AsyncOpInterface asyncOp : analysis.getUnwaitedOps())
    asyncOp->emitOpError("token is never waited on");
  return success(analysis.isHazardFree());
}

//===----------------------------------------------------------------------===//
// Offload keys
//===----------------------------------------------------------------------===//

/// A key is offloaded once by the prologue and once per iteration, and
/// reloaded, after an offload to the same tier, with its size.
static LogicalResult verifyOffloadKeys(ProgramOp program) {
  bool ok = true;
  llvm::StringMap<OffloadOp> offloads, prologueOffloads;
  for (Operation &op : program.getBodyBlock()) {
    if (auto offload = llvm::dyn_cast<OffloadOp>(op)) {
      auto [it, inserted] = (isPrologueOp(&op) ? prologueOffloads : offloads)
                                .try_emplace(offload.getKey(), offload);
      if (!inserted) {
        InFlightDiagnostic diag = offload.emitOpError("key '")
                                  << offload.getKey()
                                  << "' is offloaded more than once";
        diag.attachNote(it->second.getLoc()) << "first offloaded here";
        ok = false;
      }
      continue;
    }
    auto reload = llvm::dyn_cast<ReloadOp>(op);
    if (!reload)
      continue;
    OffloadOp earlier = offloads.lookup(reload.getKey());
    if (!earlier)
      earlier = prologueOffloads.lookup(reload.getKey());
    if (!earlier || earlier.getTier() != reload.getTier()) {
      reload.emitOpError("key '")
          << reload.getKey() << "' has no earlier offload to "
          << stringifyStorageTier(reload.getTier());
      ok = false;
      continue;
    }
    int64_t stored = earlier.getSource().getType().getSizeInBytes();
    int64_t wanted = reload.getDest().getType().getSizeInBytes();
    if (stored != wanted) {
      reload.emitOpError("reloads ") << wanted << " bytes, but key '"
                                     << reload.getKey() << "' holds " << stored;
      ok = false;
    }
  }
  return success(ok);
}

//===----------------------------------------------------------------------===//
// Pipeline traffic
//===----------------------------------------------------------------------===//

namespace {
/// (group, peer, tag)
using TransferKey = std::tuple<StringRef, int64_t, int64_t>;

/// The sends and recvs of one program on pipeline groups, by (group, peer,
/// tag), in program order.
struct PipelineTransfers {
  llvm::MapVector<TransferKey, SmallVector<SendOp>> sends;
  llvm::MapVector<TransferKey, SmallVector<RecvOp>> recvs;
};
} // namespace

static bool isOneSided(SendOp send) { return bool(send.getPutOffset()); }
static bool isOneSided(RecvOp recv) { return recv.getOneSided(); }

/// Fails (with an error) on a one-sided transfer over another group.
template <typename TransferOp>
static LogicalResult
collect(ProgramOp program,
        llvm::MapVector<TransferKey, SmallVector<TransferOp>> &map,
        SymbolTableCollection &symbols) {
  bool ok = true;
  for (auto op : program.getBodyBlock().getOps<TransferOp>()) {
    auto group =
        symbols.lookupNearestSymbolFrom<GroupOp>(program, op.getGroupAttr());
    if (group && group.getKind() != GroupKind::pipeline && isOneSided(op)) {
      ok = false;
      op.emitOpError("is one-sided on @")
          << op.getGroup()
          << ", which is not a pipeline group (the runtime exposes the DDR "
             "arenas of pipeline groups only)";
    }
    if (!group || group.getKind() != GroupKind::pipeline)
      continue;
    map[{op.getGroup(), static_cast<int64_t>(op.getPeer()),
         static_cast<int64_t>(op.getTag())}]
        .push_back(op);
  }
  return success(ok);
}

/// The byte offset of `buffer` in its memory space, when it is an
/// `mt3k.buffer` or a chain of views of one.
static std::optional<int64_t> getStaticOffset(Value buffer) {
  int64_t offset = 0;
  while (auto view = buffer.getDefiningOp<ViewOp>()) {
    offset += view.getByteOffset();
    buffer = view.getSource();
  }
  if (auto base = buffer.getDefiningOp<BufferOp>())
    return offset + int64_t(base.getOffset());
  return std::nullopt;
}

/// A one-sided send puts into the buffer of its matching receive, which is
/// one-sided too.
static LogicalResult verifyPut(SendOp send, RecvOp recv) {
  std::optional<uint64_t> put = send.getPutOffset();
  if (bool(put) != recv.getOneSided()) {
    InFlightDiagnostic diag =
        send.emitOpError()
        << (put ? "is a one-sided put, but its matching recv is two-sided"
                : "is two-sided, but its matching recv is one_sided");
    diag.attachNote(recv.getLoc()) << "received here";
    return diag;
  }
  if (!put)
    return success();
  std::optional<int64_t> at = getStaticOffset(recv.getBuffer());
  if (!at || *at != int64_t(*put)) {
    InFlightDiagnostic diag = send.emitOpError("puts at byte ")
                              << *put << " of the peer's arena, but the "
                              << "matching recv's buffer is ";
    if (at)
      diag << "at byte " << *at;
    else
      diag << "not at a static offset";
    diag.attachNote(recv.getLoc()) << "received here";
    return diag;
  }
  return success();
}

/// On pipeline groups, where a rank's index is its program's stage, the k-th
/// send of a program to stage p with tag t is received by the k-th recv from
/// its stage with tag t in p's program, into as many bytes; and every recv
/// has such a send. Stages without a program in the module are not checked.
/// Reports the first mismatch of each program.
static LogicalResult verifyPipelineTraffic(ModuleOp module) {
  SymbolTableCollection symbols;
  llvm::DenseMap<int64_t, ProgramOp> byStage;
  llvm::DenseMap<Operation *, PipelineTransfers> transfers;
  bool collected = true;
  for (auto program : module.getOps<ProgramOp>()) {
    byStage.try_emplace(program.getStage(), program);
    PipelineTransfers &own = transfers[program];
    collected &= succeeded(collect(program, own.sends, symbols));
    collected &= succeeded(collect(program, own.recvs, symbols));
  }
  auto verifyProgram = [&](ProgramOp program) -> LogicalResult {
    int64_t self = program.getStage();
    // A transfer to itself is reported by the op's own verifier.
    auto peerOf = [&](int64_t peer) {
      return peer == self ? ProgramOp() : byStage.lookup(peer);
    };
    for (auto &[key, sends] : transfers[program].sends) {
      auto [group, peer, tag] = key;
      ProgramOp peerProgram = peerOf(peer);
      if (!peerProgram)
        continue;
      auto &peerRecvs = transfers[peerProgram].recvs;
      auto matching = peerRecvs.find({group, self, tag});
      for (auto [index, send] : llvm::enumerate(sends)) {
        if (matching == peerRecvs.end() || index >= matching->second.size())
          return send.emitOpError("to stage ")
                 << peer << " with tag " << tag << " on @" << group
                 << " has no matching 'mt3k.recv' in program @"
                 << peerProgram.getSymName();
        RecvOp recv = matching->second[index];
        if (failed(verifyPut(send, recv)))
          return failure();
        int64_t sent = send.getBuffer().getType().getSizeInBytes();
        int64_t received = recv.getBuffer().getType().getSizeInBytes();
        if (sent != received) {
          InFlightDiagnostic diag =
              send.emitOpError("sends ")
              << sent << " bytes, but the matching recv receives " << received;
          diag.attachNote(recv.getLoc()) << "received here";
          return diag;
        }
      }
    }
    for (auto &[key, recvs] : transfers[program].recvs) {
      auto [group, peer, tag] = key;
      ProgramOp peerProgram = peerOf(peer);
      if (!peerProgram)
        continue;
      auto &peerSends = transfers[peerProgram].sends;
      auto matching = peerSends.find({group, self, tag});
      size_t sent = matching == peerSends.end() ? 0 : matching->second.size();
      if (recvs.size() > sent)
        return recvs[sent].emitOpError("from stage ")
               << peer << " with tag " << tag << " on @" << group
               << " has no matching 'mt3k.send' in program @"
               << peerProgram.getSymName();
    }
    return success();
  };
  bool ok = collected;
  for (auto program : module.getOps<ProgramOp>())
    ok &= succeeded(verifyProgram(program));
  return success(ok);
}

//===----------------------------------------------------------------------===//
// Pipeline collectives
//===----------------------------------------------------------------------===//

/// Whether `a` and `b` are the same collective: operation, inherent
/// attributes (reduction, group, algorithm, root) and, per buffer operand,
/// element type and count.
static bool isSameCollective(Operation *a, Operation *b) {
  if (a->getName() != b->getName() ||
      a->getPropertiesAsAttribute() != b->getPropertiesAsAttribute() ||
      a->getNumOperands() != b->getNumOperands())
    return false;
  for (auto [x, y] : llvm::zip(a->getOperandTypes(), b->getOperandTypes())) {
    auto bx = llvm::cast<BufferType>(x), by = llvm::cast<BufferType>(y);
    if (bx.getElementType() != by.getElementType() ||
        bx.getNumElements() != by.getNumElements())
      return false;
  }
  return true;
}

/// Every rank of a pipeline group, i.e. every stage, takes part in each of
/// its collectives and barriers: the programs issue the same sequence of
/// them on the group. Each program is compared with the module's first;
/// reports the first difference of each program.
static LogicalResult verifyPipelineCollectives(ModuleOp module) {
  SymbolTableCollection symbols;
  // The collectives of each program by pipeline group, in program order.
  using Sequences = llvm::MapVector<StringRef, SmallVector<Operation *>>;
  SmallVector<std::pair<ProgramOp, Sequences>> programs;
  for (auto program : module.getOps<ProgramOp>()) {
    Sequences &sequences = programs.emplace_back(program, Sequences()).second;
    for (Operation &op : program.getBodyBlock()) {
      if (!llvm::isa<AllReduceOp, ReduceScatterOp, AllGatherOp, BroadcastOp,
                     BarrierOp>(op))
        continue;
      auto groupName = op.getAttrOfType<FlatSymbolRefAttr>("group");
      auto group = symbols.lookupNearestSymbolFrom<GroupOp>(program, groupName);
      if (group && group.getKind() == GroupKind::pipeline)
        sequences[groupName.getValue()].push_back(&op);
    }
  }
  if (programs.size() < 2)
    return success();
  auto sequenceOf = [](Sequences &sequences,
                       StringRef group) -> ArrayRef<Operation *> {
    auto it = sequences.find(group);
    return it == sequences.end() ? ArrayRef<Operation *>() : it->second;
  };
  auto &[first, reference] = programs.front();
  bool ok = true;
  for (auto &[program, sequences] : llvm::drop_begin(programs)) {
    // The groups either program uses, in order of first use.
    SmallVector<StringRef> groups;
    for (Sequences *each : {&reference, &sequences})
      for (auto &entry : *each)
        if (!llvm::is_contained(groups, entry.first))
          groups.push_back(entry.first);
    for (StringRef group : groups) {
      ArrayRef<Operation *> expected = sequenceOf(reference, group);
      ArrayRef<Operation *> actual = sequenceOf(sequences, group);
      size_t index = 0;
      while (index < expected.size() && index < actual.size() &&
             isSameCollective(expected[index], actual[index]))
        ++index;
      if (index == expected.size() && index == actual.size())
        continue;
      ok = false;
      if (index == actual.size()) {
        expected[index]->emitOpError("is collective #")
            << index << " on pipeline group @" << group << ", but program @"
            << program.getSymName() << " has no such collective";
      } else if (index == expected.size()) {
        actual[index]->emitOpError("is collective #")
            << index << " on pipeline group @" << group << ", but program @"
            << first.getSymName() << " has no such collective";
      } else {
        InFlightDiagnostic diag =
            actual[index]->emitOpError("is collective #")
            << index << " on pipeline group @" << group
            << ", but differs from that of program @" << first.getSymName()
            << ": every stage takes part in the same collectives";
        diag.attachNote(expected[index]->getLoc())
            << "collective #" << index << " of program @" << first.getSymName();
      }
      break;
    }
  }
  return success(ok);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct VerifyPass : public ratrain::mt3k::impl::MT3KVerifyBase<VerifyPass> {
  void runOnOperation() override {
    bool ok = true;
    for (auto program : getOperation().getOps<ProgramOp>()) {
      ok &= succeeded(verifyOffloadKeys(program));
      ok &= succeeded(
          verifyWaits(program, getChildAnalysis<AsyncHazardAnalysis>(program)));
    }
    ok &= succeeded(verifyPipelineTraffic(getOperation()));
    ok &= succeeded(verifyPipelineCollectives(getOperation()));
    if (!ok)
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
