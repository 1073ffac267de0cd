//===- Passes.h - RATrain conversion passes ---------------------*- C++ -*-===//
//
// Conversions out of the ratrain dialect: --ratrain-lower-to-mt3k.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CONVERSION_PASSES_H
#define RATRAIN_CONVERSION_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace ratrain {

#define GEN_PASS_DECL
#include "ratrain/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ratrain/Conversion/Passes.h.inc"

} // namespace ratrain

#endif // RATRAIN_CONVERSION_PASSES_H
