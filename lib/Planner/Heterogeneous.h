//===- Heterogeneous.h - Plans for classes of clusters ----------*- C++ -*-===//
//
// The planner's entry for machines with classes of clusters (Grolar,
// HexiScale) and for forced uneven data-parallel shares; planTraining calls
// it. Private to lib/Planner.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_LIB_PLANNER_HETEROGENEOUS_H
#define RATRAIN_LIB_PLANNER_HETEROGENEOUS_H

#include "ratrain/Planner/Planner.h"

namespace ratrain::planner {

/// Whether planTraining hands `request` on `machine` to planHeterogeneous: a
/// machine with two or more classes, or forced dp shares.
inline bool needsHeterogeneousPlanning(const MachineModel &machine,
                                       const PlanRequest &request) {
  return machine.heterogeneous() || !request.dpShares.empty();
}

/// Plans on a machine with classes of clusters: the candidates of the even
/// layout, planned on the slowest class with the least DDR of any, each
/// also laid out by replicas (uneven micro-batch counts, replica-major) and
/// by stages (uneven layer splits, stage-major) where the class counts allow;
/// every layout priced per class with MachineModel::classMachine and checked
/// against each class's DDR. With forced dp shares on a homogeneous machine:
/// the plans of that dp and micro-batch size with those shares. Errors name
/// the class and the stage that do not fit.
llvm::Expected<PlanResult> planHeterogeneous(const ModelConfig &model,
                                             const MachineModel &machine,
                                             const PlanRequest &request);

} // namespace ratrain::planner

#endif // RATRAIN_LIB_PLANNER_HETEROGENEOUS_H
