//===- Expand1F1B.cpp - --ratrain-expand-1f1b -----------------------------===//
//
// Turns every planned ratrain.model into a ratrain.pipeline whose stages run
// the non-interleaved 1F1B order (Narayanan et al., arXiv 2104.04473): stage
// s of p runs min(p - s - 1, m) warm-up forwards, then m - w
// forward/backward pairs, then w cool-down backwards.
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Transforms/LayerBackward.h"
#include "ratrain/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace ratrain {
#define GEN_PASS_DEF_RATRAINEXPAND1F1B
#include "ratrain/Transforms/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;

namespace {

/// Builds the program of one stage.
class StageProgramBuilder {
public:
  StageProgramBuilder(StageOp stage, PlanAttr plan,
                      ArrayRef<LayerKind> layerKinds, bool splitBackward)
      : stage(stage), plan(plan), layerKinds(layerKinds),
        splitBackward(splitBackward),
        builder(&stage.getBody().front(), stage.getBody().front().end()) {}

  void build();

private:
  void forward(int64_t microBatch);
  void backward(int64_t microBatch);

  StageOp stage;
  PlanAttr plan;
  ArrayRef<LayerKind> layerKinds;
  /// Each backward as an input part immediately followed by its weight part.
  bool splitBackward;
  OpBuilder builder;
  /// Stored activations by (layer, micro-batch).
  DenseMap<std::pair<int64_t, int64_t>, Value> activations;
  /// The gradient accumulated so far, by layer.
  DenseMap<int64_t, Value> gradients;
};

} // namespace

void StageProgramBuilder::forward(int64_t microBatch) {
  MLIRContext *context = builder.getContext();
  Location loc = stage.getLoc();
  int64_t s = stage.getStage(), p = plan.getPp();
  Recompute recompute = plan.getRecompute()[s];
  if (s > 0)
    RecvOp::create(builder, loc, Payload::Activation, microBatch, s - 1);
  for (int64_t layer = stage.getFirstLayer(); layer < stage.getEndLayer();
       ++layer) {
    ActivationKind kind =
        ForwardOp::getStoredActivationKind(layerKinds[layer], recompute);
    auto type = ActivationType::get(context, layer, kind);
    activations[{layer, microBatch}] =
        ForwardOp::create(builder, loc, type, stage.getViewArg(layer),
                          microBatch)
            .getActivation();
  }
  if (s < p - 1)
    SendOp::create(builder, loc, Payload::Activation, microBatch, s + 1);
}

void StageProgramBuilder::backward(int64_t microBatch) {
  Location loc = stage.getLoc();
  int64_t s = stage.getStage(), p = plan.getPp();
  if (s < p - 1)
    RecvOp::create(builder, loc, Payload::Gradient, microBatch, s + 1);
  for (int64_t layer = stage.getEndLayer() - 1;
       layer >= int64_t(stage.getFirstLayer()); --layer) {
    Value view = stage.getViewArg(layer);
    Value stored = activations.lookup({layer, microBatch});
    Value acc = gradients.lookup(layer);
    if (!splitBackward) {
      gradients[layer] =
          buildBackward(builder, loc, view, stored, acc, microBatch);
      continue;
    }
    PendingWeight pending =
        buildBackwardInput(builder, loc, view, stored, microBatch);
    gradients[layer] = buildBackwardWeight(builder, loc, pending, acc);
  }
  if (s > 0)
    SendOp::create(builder, loc, Payload::Gradient, microBatch, s - 1);
}

void StageProgramBuilder::build() {
  int64_t s = stage.getStage(), p = plan.getPp(), m = plan.getMicroBatches();
  int64_t warmup = std::min(p - s - 1, m);
  for (int64_t k = 0; k < warmup; ++k)
    forward(k);
  for (int64_t k = 0; k < m - warmup; ++k) {
    forward(warmup + k);
    backward(k);
  }
  for (int64_t k = m - warmup; k < m; ++k)
    backward(k);
  YieldOp::create(builder, stage.getLoc(), stage.getBody().getArguments());
}

namespace {

struct Expand1F1BPass
    : public ratrain::impl::RATrainExpand1F1BBase<Expand1F1BPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Models that already have a pipeline are left alone.
    DenseSet<StringRef> expanded;
    for (PipelineOp pipeline : module.getOps<PipelineOp>())
      expanded.insert(pipeline.getModel());

    SymbolTable symbols(module);
    for (ModelOp model : llvm::to_vector(module.getOps<ModelOp>())) {
      std::optional<PlanAttr> plan = model.getPlan();
      if (!plan || expanded.contains(model.getSymName()))
        continue;
      SmallVector<LayerKind> kinds;
      for (LayerOp layer : model.getLayers())
        kinds.push_back(layer.getKind());

      OpBuilder builder(model);
      builder.setInsertionPointAfter(model);
      auto pipeline = PipelineOp::create(
          builder, model.getLoc(),
          builder.getStringAttr(model.getSymName() + "_step"),
          FlatSymbolRefAttr::get(model.getSymNameAttr()), *plan,
          /*policy=*/nullptr);
      // Renames on a clash with an existing symbol.
      symbols.insert(pipeline);
      Block *body = &pipeline.getBody().emplaceBlock();
      builder.setInsertionPointToEnd(body);
      for (int64_t s = 0; s < plan->getPp(); ++s) {
        auto stage =
            StageOp::create(builder, model.getLoc(), s, plan->getFirstLayer(s),
                            plan->getStageLayers()[s]);
        StageProgramBuilder(stage, *plan, kinds, splitBackward).build();
      }
    }
  }
};

} // namespace
