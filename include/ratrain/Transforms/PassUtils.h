//===- PassUtils.h - Helpers shared by RATrain passes -----------*- C++ -*-===//

#ifndef RATRAIN_TRANSFORMS_PASSUTILS_H
#define RATRAIN_TRANSFORMS_PASSUTILS_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Planner/MemoryModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace ratrain {

/// Loads the machine a pass works for: `machineFile` when not empty, else the
/// module's `ratrain.machine` attribute (set by --import-hf-config
/// --machine). Emits an error on `module` and fails when there is none or
/// the file does not parse.
mlir::FailureOr<MachineModel> loadPassMachine(mlir::ModuleOp module,
                                              llvm::StringRef machineFile);

/// Converts between the planner's recompute policy and the dialect's.
Recompute toIRRecompute(RecomputePolicy policy);
RecomputePolicy fromIRRecompute(Recompute recompute);

/// Converts between the planner's offload policy and the dialect's.
Offload toIROffload(OffloadPolicy policy);
OffloadPolicy fromIROffload(Offload offload);

/// The planner's view of a `#ratrain.plan`: stage layer ranges over decoder
/// layers (the plan attribute counts model layers, embedding and head
/// included).
ParallelConfig toParallelConfig(PlanAttr plan);

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_PASSUTILS_H
