//===- SyncPhases.h - Which step averages which layer ----------*- C++ -*-===//
//
// Layer-wise partial synchronization (DreamDDP, docs/schedule.md, "Partial
// synchronization"): with a sync period of H steps, layer l's fp32 masters
// are averaged over the data-parallel replicas in the steps s with
// s mod H = phase(l). The phases spread a stage's layers so that every step
// averages about 1/H of its bytes. The lifecycle pass and the simulator's
// schedule programs take them from here; the synthetic 1F1B program's equal
// layers go round-robin, which is what this gives them.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_PLANNER_SYNCPHASES_H
#define RATRAIN_PLANNER_SYNCPHASES_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace ratrain {

/// The phase (0 .. period - 1) of each of a stage's layers, whose averaged
/// bytes are `bytes` (in the stage's order): the largest layer first, each
/// to the phase with the fewest bytes so far (the lowest phase on a tie).
/// Layers of equal size thus go round-robin. `period` must be >= 1.
std::vector<int64_t> assignSyncPhases(llvm::ArrayRef<int64_t> bytes,
                                      int64_t period);

} // namespace ratrain

#endif // RATRAIN_PLANNER_SYNCPHASES_H
