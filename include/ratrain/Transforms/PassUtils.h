//===- PassUtils.h - Helpers shared by RATrain passes -----------*- C++ -*-===//

#ifndef RATRAIN_TRANSFORMS_PASSUTILS_H
#define RATRAIN_TRANSFORMS_PASSUTILS_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/ModelAndPlan.h"
#include "ratrain/Machine/MachineModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace ratrain {

/// Loads the machine a pass works for: `machineFile` when not empty, else the
/// module's `ratrain.machine` attribute (set by --import-hf-config
/// --machine). Emits an error on `module` and fails when there is none or
/// the file does not parse.
mlir::FailureOr<MachineModel> loadPassMachine(mlir::ModuleOp module,
                                              llvm::StringRef machineFile);

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_PASSUTILS_H
