//===- ratrain-opt.cpp - RATrain's optimizer driver -----------------------===//
//
// mlir-opt for RATrain: the ratrain and mt3k dialects, upstream
// canonicalize/cse, and every RATrain pass (import -> plan -> expand-1f1b ->
// schedule-lifecycle -> assign-buffers -> verify-schedule -> lower-to-mt3k ->
// mt3k-insert-waits -> mt3k-verify).
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KDialect.h"
#include "RATrain/RATrainDialect.h"
#include "ratrain/Conversion/Passes.h"
#include "ratrain/MT3K/Passes.h"
#include "ratrain/Support/CrashReport.h"
#include "ratrain/Transforms/Passes.h"
#include "ratrain/Transforms/SchedulePipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"

#include <vector>

int main(int argc, char **argv) {
  ratrain::setBugReportMessage();
  // Diagnostics point at the source location; dumping the whole operation
  // (often a whole model or pipeline) after every message buries them. Pass
  // --mlir-print-op-on-diagnostic to get the dump back.
  std::vector<char *> args(argv, argv + argc);
  bool explicitPrintOp = llvm::any_of(args, [](const char *arg) {
    return llvm::StringRef(arg).contains("mlir-print-op-on-diagnostic");
  });
  static char quietDiagnostics[] = "--mlir-print-op-on-diagnostic=false";
  if (!explicitPrintOp)
    args.insert(args.begin() + 1, quietDiagnostics);
  argc = static_cast<int>(args.size());
  argv = args.data();

  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  ratrain::registerRATrainPasses();
  ratrain::registerSchedulePipeline();
  ratrain::registerRATrainConversionPasses();
  ratrain::mt3k::registerMT3KPasses();

  mlir::DialectRegistry registry;
  registry.insert<ratrain::RATrainDialect, ratrain::mt3k::MT3KDialect,
                  mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "RATrain optimizer driver\n", registry));
}
