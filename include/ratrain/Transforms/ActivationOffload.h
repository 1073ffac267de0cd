//===- ActivationOffload.h - Offloaded activations of a stage ---*- C++ -*-===//
//
// Activation offload (GriNNder; docs/schedule.md, "Activation offload"): the
// layers a plan's act_offload names keep their full activations, which
// --ratrain-schedule-lifecycle moves to the machine's offload tier after
// each forward and brings back ahead of the first backward that reads them.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TRANSFORMS_ACTIVATIONOFFLOAD_H
#define RATRAIN_TRANSFORMS_ACTIVATIONOFFLOAD_H

#include "RATrain/RATrainOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace ratrain {

/// What placeActivationOffloads did on one stage.
struct ActivationOffloadSummary {
  /// Activations moved out and back (one per offloaded layer and
  /// micro-batch whose backward is far enough away).
  int64_t offloaded = 0;
  /// Activations of offloaded layers kept in DDR because their first
  /// backward reader follows within the prefetch window.
  int64_t kept = 0;
};

/// In `stage`, for every forward of a layer `plan` offloads
/// (PlanAttr::offloadsActivations):
///  - `ratrain.offload` of its activation to `tier` right after the forward,
///    waited for right before the compute after next (the offload overlaps
///    one compute);
///  - `ratrain.reload` of the offloaded copy issued before the compute d
///    computes ahead of the activation's first backward reader, waited for
///    right before that reader, whose readers then use the reloaded value.
/// d (the prefetch distance) is the fewest computes, up to
/// kMaxActivationPrefetch, whose predicted seconds (`computeSeconds`) cover
/// `reloadSeconds`, and fewer where a longer prefetch would make more than
/// kActivationOffloadResident offloaded layers' activations live in DDR
/// (counted from their write or reload to their last reader). The count is
/// what the memory model assumes, not a guarantee: the buffer assignment
/// checks the real peak against the DDR cap.
/// An activation whose reader follows within kMaxActivationPrefetch + 2
/// computes stays in DDR. Computes are forwards, recomputes and (split)
/// backwards.
ActivationOffloadSummary placeActivationOffloads(
    StageOp stage, PlanAttr plan, StorageTier tier,
    llvm::function_ref<double(mlir::Operation *)> computeSeconds,
    double reloadSeconds);

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_ACTIVATIONOFFLOAD_H
