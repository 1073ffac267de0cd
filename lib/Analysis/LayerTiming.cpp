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
  return 0;
}
