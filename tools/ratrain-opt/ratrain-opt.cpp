//===- ratrain-opt.cpp - RATrain's optimizer driver -----------------------===//
//
// mlir-opt for RATrain: the ratrain and mt3k dialects, upstream
// canonicalize/cse, and every RATrain pass (import -> plan -> expand-1f1b ->
// schedule-lifecycle -> assign-buffers -> verify-schedule -> lower-to-mt3k).
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KDialect.h"
#include "RATrain/RATrainDialect.h"
#include "ratrain/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  ratrain::registerRATrainPasses();

  mlir::DialectRegistry registry;
  registry.insert<ratrain::RATrainDialect, ratrain::mt3k::MT3KDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "RATrain optimizer driver\n", registry));
}
