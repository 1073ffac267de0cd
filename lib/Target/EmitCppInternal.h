//===- EmitCppInternal.h - Shared parts of the C++ emitter ------*- C++ -*-===//
//
// Private to lib/Target: what the mt3k -> emitc conversion
// (MT3KToEmitC.cpp: one pattern per op; EmitCppStage.cpp: the stage
// functions; EmitCppMain.cpp: the program description and main; EmitCpp.cpp:
// the pass and the translations) shares.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_LIB_TARGET_EMITCPPINTERNAL_H
#define RATRAIN_LIB_TARGET_EMITCPPINTERNAL_H

#include "MT3K/MT3KOps.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace ratrain::emitc_cpp {

/// The C++ types of mt3k values: a buffer or view, a token.
constexpr const char *kTensorType = "ratrain::rt::emit::Tensor";
constexpr const char *kTokenType = "ratrain::rt::Token";

/// A C++ string literal of the bytes of `s`: printable ASCII as is (with `"`
/// and `\` escaped), every other byte (NUL, control characters, UTF-8
/// sequences) as a three-digit octal escape, which takes no more digits than
/// its own, so that the string has the same bytes at run time.
std::string cppString(llvm::StringRef s);

/// `s` for a `//` comment: non-printable bytes and `\` (a newline would end
/// the comment, a trailing `\` continue it) as `\xNN`.
std::string commentText(llvm::StringRef s);

/// `ratrain::rt::StorageTier::Host` or `::Storage`.
llvm::StringRef tierName(mt3k::StorageTier tier);

/// One argument of a helper call: a value (an operand of the call) or a
/// constant printed as is.
struct Arg {
  mlir::Value value;
  mlir::Attribute attr;
  Arg(mlir::Value v) : value(v) {}
  Arg(mlir::Attribute a) : attr(a) {}
};

/// Emits `emitc.call_opaque callee(args...)` at `b`'s insertion point;
/// returns its result when `result` is set.
mlir::Value emitCall(mlir::OpBuilder &b, mlir::Location loc,
                     llvm::StringRef callee, mlir::Type result,
                     llvm::ArrayRef<Arg> args);

/// Replaces `program` by its stage function
/// `void ratrain_<program>(Runtime &, Session &)`: the program's ops moved
/// into it as they are (the patterns convert them), a comment, the
/// checkpoint registration of the prologue's parameters, and the step loop
/// around the ops after the prologue. Fails (with an error) when the
/// program's name is not usable in a C++ identifier.
mlir::FailureOr<mlir::emitc::FuncOp>
createStageFunction(mlir::OpBuilder &b, mt3k::ProgramOp program);

/// Drops what the C++ program would not use, so that it compiles without
/// unused-variable warnings: a variable for a call result nothing reads (the
/// call stays as a statement; an unused view goes) and unused parameters
/// (voided).
void dropUnusedResults(mlir::emitc::FuncOp func);

/// Appends to the module at `b`'s insertion point the description of the
/// program of `source` (its mt3k.machine, groups, ratrain.model, ratrain.plan
/// and programs, whose stage functions are `ratrain_<program>`) as
/// `emitc.global`s, and `int main(int, char **)` calling
/// `ratrain::rt::emit::runProgram`.
mlir::LogicalResult emitProgramDescription(mlir::OpBuilder &b,
                                           mlir::ModuleOp source);

/// The callee of the call that stands in for an op whose lowering reported
/// an error (the conversion completes, the pass then fails).
constexpr const char *kFailedCallee = "ratrain_emit_failed";

} // namespace ratrain::emitc_cpp

#endif // RATRAIN_LIB_TARGET_EMITCPPINTERNAL_H
