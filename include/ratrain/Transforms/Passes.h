//===- Passes.h - RATrain passes --------------------------------*- C++ -*-===//

#ifndef RATRAIN_TRANSFORMS_PASSES_H
#define RATRAIN_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace ratrain {

#define GEN_PASS_DECL
#include "ratrain/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ratrain/Transforms/Passes.h.inc"

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_PASSES_H
