//===- Passes.h - mt3k passes -----------------------------------*- C++ -*-===//
//
// Passes on the mt3k target dialect: --mt3k-insert-waits, --mt3k-verify.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_PASSES_H
#define RATRAIN_MT3K_PASSES_H

#include "MT3K/MT3KOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace ratrain::mt3k {

#define GEN_PASS_DECL
#include "ratrain/MT3K/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ratrain/MT3K/Passes.h.inc"

} // namespace ratrain::mt3k

#endif // RATRAIN_MT3K_PASSES_H
