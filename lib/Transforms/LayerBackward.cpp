//===- LayerBackward.cpp - Building a layer's backward ops ----------------===//

#include "ratrain/Transforms/LayerBackward.h"

using namespace mlir;
using namespace ratrain;

Value ratrain::buildRecoveredActivation(OpBuilder &builder, Location loc,
                                        Value view, Value stored,
                                        int64_t microBatch) {
  auto type = cast<ActivationType>(stored.getType());
  if (type.getKind() != ActivationKind::Input)
    return stored;
  return RecomputeOp::create(builder, loc,
                             ActivationType::get(builder.getContext(),
                                                 type.getLayer(),
                                                 ActivationKind::Full),
                             view, stored, microBatch)
      .getActivation();
}

Value ratrain::buildBackward(OpBuilder &builder, Location loc, Value view,
                             Value stored, Value acc, int64_t microBatch) {
  Value activation =
      buildRecoveredActivation(builder, loc, view, stored, microBatch);
  int64_t layer = cast<ViewType>(view.getType()).getLayer();
  auto gradType =
      GradType::get(builder.getContext(), layer, GradPhase::Partial);
  return BackwardOp::create(builder, loc, gradType, view, activation, acc,
                            microBatch)
      .getGrad();
}

PendingWeight ratrain::buildBackwardInput(OpBuilder &builder, Location loc,
                                          Value view, Value stored,
                                          int64_t microBatch) {
  PendingWeight pending;
  pending.view = view;
  pending.layer = cast<ViewType>(view.getType()).getLayer();
  pending.microBatch = microBatch;
  pending.activation =
      buildRecoveredActivation(builder, loc, view, stored, microBatch);
  pending.deferred =
      BackwardInputOp::create(
          builder, loc, DeferredType::get(builder.getContext(), pending.layer),
          view, pending.activation, microBatch)
          .getDeferred();
  return pending;
}

Value ratrain::buildBackwardWeight(OpBuilder &builder, Location loc,
                                   const PendingWeight &pending, Value acc) {
  auto gradType =
      GradType::get(builder.getContext(), pending.layer, GradPhase::Partial);
  return BackwardWeightOp::create(builder, loc, gradType, pending.view,
                                  pending.activation, pending.deferred, acc,
                                  pending.microBatch)
      .getGrad();
}

std::optional<int64_t> ratrain::getBackwardMicroBatch(Operation *op) {
  if (auto backward = dyn_cast<BackwardOp>(op))
    return backward.getMicroBatch();
  if (auto input = dyn_cast<BackwardInputOp>(op))
    return input.getMicroBatch();
  if (auto weight = dyn_cast<BackwardWeightOp>(op))
    return weight.getMicroBatch();
  return std::nullopt;
}
