//===- TiedEmbeddings.cpp - The shared embedding / LM-head weight ---------===//
//
// A model with tied embeddings (HF tie_word_embeddings) has one [V, h]
// matrix that is both the embedding table and the LM head. Its owner is the
// embedding layer: the embedding's master, optimizer state, view and
// gradient are the only state of the matrix (the head layer's parameters are
// just model.norm.weight). The head reads and differentiates a replica:
//
//  - view: on the rank that runs the head, the LM-head GEMMs read the
//    embedding's view (same rank) or `scratch.tied_view`, which the owner
//    sends once per step right after the embedding's first forward (the view
//    of the step: every update happens at the step's end);
//  - gradient: the head's backwards write the LM-head gradient into
//    `scratch.tied_grad` (the first initializes it, later ones accumulate);
//    when the head's gradient is ready it goes to the owner, which adds it
//    to the embedding's gradient when that is ready, before its sync. Same
//    rank: the add reads the replica's buffer directly.
//
// The owner's update is the only update of the matrix, so the two uses
// never drift apart (Megatron keeps a second copy and all-reduces the two
// gradients instead). docs/lowering.md, "Tied embeddings".
//
//===----------------------------------------------------------------------===//

#include "StageLowering.h"

using namespace mlir;
using namespace ratrain;
using namespace ratrain::lowering;
namespace mt = ratrain::mt3k;

LogicalResult StageLowering::planTiedEmbeddings(SlotAllocator &area) {
  tied = model.getTieEmbeddings();
  if (!tied)
    return success();
  int64_t lastLayer = int64_t(layers.size()) - 1;
  for (StageOp other : pipeline.getStages())
    for (int64_t layer : other.getLayers()) {
      if (layer == 0)
        embeddingRank = other.getStage();
      if (layer == lastLayer)
        headRank = other.getStage();
    }
  int64_t tableBytes = dims.vocab * dims.hidden * elemBytes();
  bool hasEmbedding = stageIndex == embeddingRank;
  bool hasHead = stageIndex == headRank;
  // The head's LM-head gradient; on the owner of another rank, the buffer
  // the replica's gradient arrives in.
  if (hasHead || hasEmbedding)
    tiedGradOff = region(area, "scratch.tied_grad", tableBytes);
  if (hasHead && !hasEmbedding)
    tiedViewOff = region(area, "scratch.tied_view", tableBytes);

  // On one rank the head's gradient must be complete before the
  // embedding's is: its grad_ready comes first.
  if (hasHead && hasEmbedding) {
    bool headReady = false;
    for (Operation &op : stage.getBody().front()) {
      auto ready = dyn_cast<GradReadyOp>(op);
      if (!ready)
        continue;
      int64_t layer = ready.getGrad().getType().getLayer();
      if (layer == lastLayer)
        headReady = true;
      else if (layer == 0 && !headReady)
        return ready.emitOpError("cannot be lowered: the tied embedding's "
                                 "gradient is ready before the LM head's, "
                                 "which adds to it");
    }
  }
  return success();
}

int64_t StageLowering::tiedTag(bool gradient) const {
  // Past every pipeline message's tag (lowerTransfer: below 2 * (m + 1) *
  // virtual stages).
  int64_t base = 2 * (plan_.getMicroBatches() + 1) * numStages;
  return base + (gradient ? 1 : 0);
}

void StageLowering::addTiedHead(LayerWeights &w, LayerWeights *g) {
  int64_t V = dims.vocab, h = dims.hidden;
  Value view = stageIndex == embeddingRank
                   ? tiedEmbeddingView
                   : scratch("scratch.tied_view", tiedViewOff, {V, h}, elem);
  assert(view && "the embedding's forward precedes the head's on one rank");
  w.views.emplace_back("lm_head.weight", view);
  if (g)
    g->views.emplace_back("lm_head.weight", scratch("scratch.tied_grad",
                                                    tiedGradOff, {V, h}, elem));
}

void StageLowering::lowerTiedEmbeddingForward(Value table) {
  if (!tied || tiedViewSent)
    return;
  tiedViewSent = true;
  tiedEmbeddingView = table;
  if (headRank == stageIndex)
    return;
  IntegerType i64 = IntegerType::get(ctx, 64);
  track(mt::SendOp::create(b, loc, table, IntegerAttr::get(i64, headRank),
                           FlatSymbolRefAttr::get(ctx, "pp"),
                           IntegerAttr::get(i64, tiedTag(false))));
}

void StageLowering::lowerTiedHeadForward() {
  if (!tied || tiedViewReceived || stageIndex == embeddingRank)
    return;
  tiedViewReceived = true;
  IntegerType i64 = IntegerType::get(ctx, 64);
  Value replica = scratch("scratch.tied_view", tiedViewOff,
                          {dims.vocab, dims.hidden}, elem);
  track(mt::RecvOp::create(b, loc, replica,
                           IntegerAttr::get(i64, embeddingRank),
                           FlatSymbolRefAttr::get(ctx, "pp"),
                           IntegerAttr::get(i64, tiedTag(false))));
}

void StageLowering::lowerTiedGradReady(GradReadyOp ready) {
  if (!tied)
    return;
  int64_t layer = ready.getGrad().getType().getLayer();
  int64_t lastLayer = int64_t(layers.size()) - 1;
  bool headReady = layer == lastLayer && stageIndex != embeddingRank;
  if (!headReady && layer != 0)
    return;
  IntegerType i64 = IntegerType::get(ctx, 64);
  auto pp = FlatSymbolRefAttr::get(ctx, "pp");
  Value tiedGrad = scratch("scratch.tied_grad", tiedGradOff,
                           {dims.vocab, dims.hidden}, elem);
  if (headReady) {
    // The replica's gradient is complete: to the owner.
    track(mt::SendOp::create(b, loc, tiedGrad,
                             IntegerAttr::get(i64, embeddingRank), pp,
                             IntegerAttr::get(i64, tiedTag(true))));
    return;
  }
  if (stageIndex != headRank)
    track(mt::RecvOp::create(b, loc, tiedGrad, IntegerAttr::get(i64, headRank),
                             pp, IntegerAttr::get(i64, tiedTag(true))));
  // The embedding's gradient gains the LM head's (the waits for the receive
  // come from the effects).
  Value table =
      weights(gradFlat(ready.getGrad(), 0), 0, elem).get("embed_tokens.weight");
  elementwise(mt::ElementwiseKind::residual_add, {table, tiedGrad}, {table});
}
