//===- EmitCppInternal.h - Shared parts of the C++ emitter ------*- C++ -*-===//
//
// Private to lib/Target: what EmitCpp.cpp (the stage functions) and
// EmitCppMain.cpp (the program description and main) share.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_LIB_TARGET_EMITCPPINTERNAL_H
#define RATRAIN_LIB_TARGET_EMITCPPINTERNAL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace ratrain::emitc_cpp {

/// A C++ string literal of the bytes of `s`: printable ASCII as is (with `"`
/// and `\` escaped), every other byte (NUL, control characters, UTF-8
/// sequences) as a three-digit octal escape, which takes no more digits than
/// its own, so that the string has the same bytes at run time.
std::string cppString(llvm::StringRef s);

/// `s` for a `//` comment: non-printable bytes and `\` (a newline would end
/// the comment, a trailing `\` continue it) as `\xNN`.
std::string commentText(llvm::StringRef s);

/// Appends to the module at `b`'s insertion point the description of the
/// program of `source` (its mt3k.machine, groups, ratrain.model, ratrain.plan
/// and programs, whose stage functions are `ratrain_<program>`) as
/// `emitc.global`s, and `int main(int, char **)` calling
/// `ratrain::rt::emit::runProgram`.
mlir::LogicalResult emitProgramDescription(mlir::OpBuilder &b,
                                           mlir::ModuleOp source);

} // namespace ratrain::emitc_cpp

#endif // RATRAIN_LIB_TARGET_EMITCPPINTERNAL_H
