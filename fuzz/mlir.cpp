//===- mlir.cpp - fuzz the MLIR parser with the ratrain and mt3k verifiers ===//
//
// Input: MLIR text. It is parsed on a fresh context with the ratrain, mt3k
// and func dialects (as ratrain-opt registers them) and verified, which runs
// both dialects' custom parsers and verifiers; a module that verifies is
// printed (custom printers) in both forms.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"
#include "MT3K/MT3KDialect.h"
#include "RATrain/RATrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::DialectRegistry registry;
  registry.insert<ratrain::RATrainDialect, ratrain::mt3k::MT3KDialect,
                  mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // Errors are expected; keep them off stderr.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/true);
  // MLIR's lexer relies on a NUL after the buffer, as files read through
  // llvm::MemoryBuffer have; libFuzzer's input has none.
  std::string source(ratrain::fuzz::asText(data, size));
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, config);
  if (!module)
    return 0;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  module->print(os, mlir::OpPrintingFlags().printGenericOpForm());
  return 0;
}
