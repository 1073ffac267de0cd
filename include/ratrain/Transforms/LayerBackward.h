//===- LayerBackward.h - Building a layer's backward ops --------*- C++ -*-===//
//
// The ops of one layer's backward for one micro-batch, fused (`recompute` +
// `ratrain.backward`, B) or split (`recompute` + `ratrain.backward_input`, I,
// then later `ratrain.backward_weight`, W). Shared by the pipeline
// expansions: 1F1B runs each W right after its I; zero-bubble schedules
// move the W's into the bubbles.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TRANSFORMS_LAYERBACKWARD_H
#define RATRAIN_TRANSFORMS_LAYERBACKWARD_H

#include "RATrain/RATrainOps.h"

#include "mlir/IR/Builders.h"

namespace ratrain {

/// What an input part leaves for its weight part: the view and (recovered)
/// activations it used and its deferred value.
struct PendingWeight {
  mlir::Value view, activation, deferred;
  int64_t layer = -1, microBatch = -1;
};

/// The activations a backward of micro-batch `microBatch` uses: `stored`
/// itself, or (when the forward kept only the layer input) a
/// `ratrain.recompute` of it built at the builder's position.
mlir::Value buildRecoveredActivation(mlir::OpBuilder &builder,
                                     mlir::Location loc, mlir::Value view,
                                     mlir::Value stored, int64_t microBatch);

/// The fused backward (B): recovers the activations and builds a
/// `ratrain.backward` accumulating into `acc` (null for the first
/// micro-batch). Returns the new partial gradient.
mlir::Value buildBackward(mlir::OpBuilder &builder, mlir::Location loc,
                          mlir::Value view, mlir::Value stored, mlir::Value acc,
                          int64_t microBatch);

/// The input part (I): recovers the activations and builds a
/// `ratrain.backward_input`. The weight part is built later from the
/// result with buildBackwardWeight.
PendingWeight buildBackwardInput(mlir::OpBuilder &builder, mlir::Location loc,
                                 mlir::Value view, mlir::Value stored,
                                 int64_t microBatch);

/// The weight part (W) of `pending`, accumulating into `acc` (null for the
/// first micro-batch). Returns the new partial gradient.
mlir::Value buildBackwardWeight(mlir::OpBuilder &builder, mlir::Location loc,
                                const PendingWeight &pending, mlir::Value acc);

/// The micro-batch of a backward op (B, I or W); none for other ops.
std::optional<int64_t> getBackwardMicroBatch(mlir::Operation *op);

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_LAYERBACKWARD_H
