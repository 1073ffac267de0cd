//===- EmitCpp.h - mt3k programs to a C++ training program ------*- C++ -*-===//
//
// `ratrain-translate --mt3k-to-cpp`: a module of `mt3k.program`s (plus its
// `mt3k.machine` and `mt3k.group`s) becomes one C++ translation unit that
// links against the runtime (runtime/) and the Halide kernels
// (runtime/kernels). The mt3k ops are first converted to the `emitc`
// dialect (one `emitc.func` per program, `emitc.call_opaque` per op), which
// MLIR's C++ emitter prints. See docs/emitter.md.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TARGET_EMITCPP_H
#define RATRAIN_TARGET_EMITCPP_H

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <memory>

namespace mlir {
class Pass;
class RewritePatternSet;
class TypeConverter;
} // namespace mlir

namespace ratrain {

/// Converts the mt3k programs of `module` into a new module of `emitc` ops:
/// the include of ratrain/runtime/EmittedProgram.h, one `emitc.func` per
/// program, the program description (`emitc.global`s) and `main`, which
/// calls the runtime's entry point.
/// Emits diagnostics and returns failure on ops it cannot translate.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
convertMT3KToEmitC(mlir::ModuleOp module);

/// The type conversions of the mt3k -> emitc conversion: `!mt3k.buffer` ->
/// `ratrain::rt::emit::Tensor`, `!mt3k.token` -> `ratrain::rt::Token`, other
/// types as they are.
void populateMT3KToEmitCTypeConversions(mlir::TypeConverter &converter);

/// One pattern per mt3k op: the op, inside its stage function (an
/// `emitc.func` whose parameters are the `Runtime &` and the `Session &`),
/// becomes calls of the helpers of ratrain/runtime/EmittedProgram.h.
/// After the conversion: wraps each run of a stage function's ops marked
/// with mt3k.micro_batch = mb (consecutive, views moved before it) in
/// `if (ratrain::rt::emit::runsMicroBatch(session, mb)) { ... }`, so that a
/// replica whose data-parallel share is below mb + 1 skips them; tokens the
/// run defines become variables holding a completed token otherwise.
mlir::LogicalResult wrapMicroBatchGuards(mlir::emitc::FuncOp function);

void populateMT3KToEmitCPatterns(mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns);

/// The pass behind convertMT3KToEmitC (`convert-mt3k-to-emitc`): the stage
/// functions, the patterns, the program description and main().
std::unique_ptr<mlir::Pass> createConvertMT3KToEmitCPass();

/// convertMT3KToEmitC followed by mlir::emitc::translateToCpp.
mlir::LogicalResult translateMT3KToCpp(mlir::ModuleOp module,
                                       llvm::raw_ostream &os);

/// Registers `--mt3k-to-cpp` (C++ source) and `--mt3k-to-emitc` (the
/// intermediate emitc module, for inspection) with mlir-translate.
void registerMT3KToCppTranslation();

} // namespace ratrain

#endif // RATRAIN_TARGET_EMITCPP_H
