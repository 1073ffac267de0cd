//===- LayerTiming.h - Predicted seconds of layer compute ops ----*- C++
//-*-===//

#ifndef RATRAIN_ANALYSIS_LAYERTIMING_H
#define RATRAIN_ANALYSIS_LAYERTIMING_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Planner/CostModel.h"

#include "llvm/ADT/ArrayRef.h"

namespace ratrain {

/// Predicted compute-stream seconds of a layer's forward, recompute or
/// backward (fused, or its input or weight part) for one micro-batch of
/// `microBatchSize` sequences (a selective backward, or input part, also
/// recomputes its attention core); 0 for every other op.
/// `kinds[l]` is the kind of model layer `l`. The lifecycle scheduler and
/// the simulator time ops with this one function.
double computeLayerOpSeconds(mlir::Operation *op, const CostModel &costs,
                             llvm::ArrayRef<LayerKind> kinds,
                             int64_t microBatchSize);

} // namespace ratrain

#endif // RATRAIN_ANALYSIS_LAYERTIMING_H
