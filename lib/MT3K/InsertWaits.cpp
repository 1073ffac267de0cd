//===- InsertWaits.cpp - --mt3k-insert-waits ------------------------------===//
//
// Places the mt3k.waits a program is missing: each hazard of the async-hazard
// analysis gets a wait right before its first conflicting operation, each
// token never waited on a wait at the end (of the prologue, for a prologue
// offload).
//
//===----------------------------------------------------------------------===//

#include "ratrain/Analysis/AsyncHazards.h"
#include "ratrain/MT3K/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace ratrain::mt3k {
#define GEN_PASS_DEF_MT3KINSERTWAITS
#include "ratrain/MT3K/Passes.h.inc"
} // namespace ratrain::mt3k

using namespace mlir;
using namespace ratrain::mt3k;

namespace {
/// Where a new wait goes: before an operation (at the end of the block when
/// null), and whether it belongs to the prologue (1) or not (0).
using WaitPoint = std::pair<Operation *, unsigned>;

struct InsertWaitsPass
    : public ratrain::mt3k::impl::MT3KInsertWaitsBase<InsertWaitsPass> {
  void runOnOperation() override;
};
} // namespace

void InsertWaitsPass::runOnOperation() {
  ProgramOp program = getOperation();
  const auto &analysis = getAnalysis<AsyncHazardAnalysis>();
  if (analysis.isHazardFree()) {
    markAllAnalysesPreserved();
    return;
  }
  insertMissingWaits(program, analysis);
}

void ratrain::mt3k::insertMissingWaits(ProgramOp program,
                                       const AsyncHazardAnalysis &analysis) {
  Block &body = program.getBodyBlock();
  Operation *firstOfIteration = nullptr;
  for (Operation &op : body)
    if (!isPrologueOp(&op)) {
      firstOfIteration = &op;
      break;
    }

  // The tokens to wait on at each point, in program order of their
  // operations (hazards come ordered by the conflicting operation).
  llvm::MapVector<WaitPoint, SmallVector<AsyncOpInterface>> points;
  auto waitAt = [&](AsyncOpInterface asyncOp, Operation *conflicting) {
    // A prologue operation is waited on within the prologue.
    bool prologue = isPrologueOp(asyncOp);
    Operation *before = conflicting;
    if (prologue && (!conflicting || !isPrologueOp(conflicting)))
      before = firstOfIteration;
    points[{before, prologue}].push_back(asyncOp);
  };
  llvm::SmallPtrSet<Operation *, 16> hazardous;
  for (const AsyncHazard &hazard : analysis.getHazards()) {
    waitAt(hazard.asyncOp, hazard.op);
    hazardous.insert(hazard.asyncOp);
  }
  for (AsyncOpInterface asyncOp : analysis.getUnwaitedOps())
    if (!hazardous.contains(asyncOp))
      waitAt(asyncOp, nullptr);

  // A token is waited on once: it leaves a wait that comes too late (after
  // the new waits are in place, so that no insertion point is erased).
  llvm::MapVector<Operation *, SmallVector<Value>> lateWaits;
  OpBuilder builder(program.getContext());
  for (auto &[point, asyncOps] : points) {
    auto [before, prologue] = point;
    llvm::sort(asyncOps, [](AsyncOpInterface a, AsyncOpInterface b) {
      return a->isBeforeInBlock(b);
    });
    SmallVector<Value> tokens;
    for (AsyncOpInterface asyncOp : asyncOps) {
      tokens.push_back(asyncOp.getAsyncToken());
      if (WaitOp late = AsyncHazardAnalysis::getWait(asyncOp))
        lateWaits[late].push_back(tokens.back());
    }
    if (before)
      builder.setInsertionPoint(before);
    else
      builder.setInsertionPointToEnd(&body);
    auto wait = WaitOp::create(builder, asyncOps.front()->getLoc(), tokens);
    if (prologue)
      wait->setAttr(kPrologueAttrName, builder.getUnitAttr());
  }
  for (auto &[late, moved] : lateWaits) {
    auto wait = llvm::cast<WaitOp>(late);
    SmallVector<Value> rest;
    for (Value token : wait.getTokens())
      if (!llvm::is_contained(moved, token))
        rest.push_back(token);
    if (rest.empty())
      wait.erase();
    else
      wait.getTokensMutable().assign(rest);
  }
}
