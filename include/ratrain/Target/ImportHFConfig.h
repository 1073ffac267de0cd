//===- ImportHFConfig.h - config.json to a ratrain module -------*- C++ -*-===//

#ifndef RATRAIN_TARGET_IMPORTHFCONFIG_H
#define RATRAIN_TARGET_IMPORTHFCONFIG_H

#include "RATrain/RATrainAttrs.h"
#include "ratrain/Model/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace ratrain {

/// The `#ratrain.rope_scaling` of `scaling`.
RopeScalingAttr getRopeScalingAttr(mlir::MLIRContext *context,
                                   const RopeScaling &scaling);

/// Builds a module holding one `ratrain.model` for `config`: an embedding
/// layer, `config.numLayers` decoder layers and a head. When `machineFile` is
/// not empty it is recorded as the module's `ratrain.machine` attribute, the
/// default machine of later passes.
mlir::OwningOpRef<mlir::ModuleOp> buildModelModule(const ModelConfig &config,
                                                   mlir::MLIRContext *context,
                                                   llvm::StringRef machineFile);

/// Registers `--import-hf-config` with mlir-translate's registry, and its
/// options `--machine`, `--seq-len` and `--dtype`.
void registerImportHFConfigTranslation();

} // namespace ratrain

#endif // RATRAIN_TARGET_IMPORTHFCONFIG_H
