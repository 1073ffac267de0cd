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

class AsyncHazardAnalysis;

/// What --mt3k-insert-waits does to one program: a wait right before the
/// first operation that conflicts with each asynchronous operation still in
/// flight (`analysis` of `program`), a wait at the end (of the prologue, for
/// a prologue offload) for each token never waited on, and every token
/// taken out of a wait that now comes too late. The lowering to mt3k places
/// its hazard waits with it.
void insertMissingWaits(ProgramOp program, const AsyncHazardAnalysis &analysis);

} // namespace ratrain::mt3k

#endif // RATRAIN_MT3K_PASSES_H
