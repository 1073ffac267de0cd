//===- LayerTiming.cpp - Predicted seconds of layer compute ops -----------===//

#include "ratrain/Analysis/LayerTiming.h"

using namespace mlir;
using namespace ratrain;

double ratrain::computeLayerOpSeconds(Operation *op, const CostModel &costs,
                                      ArrayRef<LayerKind> kinds,
                                      int64_t microBatchSize) {
  int64_t b = microBatchSize;
  if (auto forward = dyn_cast<ForwardOp>(op)) {
    switch (kinds[forward.getView().getType().getLayer()]) {
    case LayerKind::Embedding:
      return costs.embeddingForward(b);
    case LayerKind::Head:
      return costs.headForward(b);
    case LayerKind::Decoder:
      return costs.layerForward(b);
    }
  }
  if (isa<RecomputeOp>(op))
    return costs.layerRecompute(b, RecomputePolicy::Full);
  if (auto backward = dyn_cast<BackwardOp>(op)) {
    switch (kinds[backward.getView().getType().getLayer()]) {
    case LayerKind::Embedding:
      return costs.embeddingBackward(b);
    case LayerKind::Head:
      return costs.headBackward(b);
    case LayerKind::Decoder: {
      double seconds = costs.layerBackward(b);
      // A selective backward recomputes its attention core itself.
      if (backward.getActivation().getType().getKind() ==
          ActivationKind::Selective)
        seconds += costs.layerRecompute(b, RecomputePolicy::Selective);
      return seconds;
    }
    }
  }
  if (auto input = dyn_cast<BackwardInputOp>(op)) {
    switch (kinds[input.getView().getType().getLayer()]) {
    case LayerKind::Embedding:
      return costs.embeddingBackwardInput(b);
    case LayerKind::Head:
      return costs.headBackwardInput(b);
    case LayerKind::Decoder: {
      double seconds = costs.layerBackwardInput(b);
      // The input part needs the attention core (the weight part does not).
      if (input.getActivation().getType().getKind() ==
          ActivationKind::Selective)
        seconds += costs.layerRecompute(b, RecomputePolicy::Selective);
      return seconds;
    }
    }
  }
  if (auto weight = dyn_cast<BackwardWeightOp>(op)) {
    switch (kinds[weight.getView().getType().getLayer()]) {
    case LayerKind::Embedding:
      return costs.embeddingBackwardWeight(b);
    case LayerKind::Head:
      return costs.headBackwardWeight(b);
    case LayerKind::Decoder:
      return costs.layerBackwardWeight(b);
    }
  }
  return 0;
}
