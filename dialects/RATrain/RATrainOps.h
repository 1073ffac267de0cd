//===- RATrainOps.h - ratrain operations ------------------------*- C++ -*-===//

#ifndef RATRAIN_DIALECT_RATRAIN_RATRAINOPS_H
#define RATRAIN_DIALECT_RATRAIN_RATRAINOPS_H

#include "RATrain/RATrainDialect.h"
#include "RATrain/RATrainTypes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <string>

namespace ratrain {
namespace detail {
/// The default ScheduleOpInterface::describe().
std::string describeScheduleOp(mlir::Operation *op);
} // namespace detail
} // namespace ratrain

#include "RATrain/RATrainInterfaces.h.inc"

#define GET_OP_CLASSES
#include "RATrain/RATrainOps.h.inc"

namespace ratrain {
/// The name of a schedule op's work in traces: the simulator's timeline
/// (`fwd L3 mb1`, `bwd-W L2 mb0`, `recompute L1 mb2`, `update L5`,
/// `send act mb1`, `all-reduce L4`, `view-prefetch L2`, `wait L4`) and the
/// runtime's per-op trace, whose spans the lowering marks with the same
/// names (mt3k.trace_begin). Empty for ops without work of their own
/// (grad_ready, yield).
std::string getTraceLabel(mlir::Operation *op);

/// Partial synchronization: the averaging (a `ratrain.sync` with a period)
/// whose `ratrain.wait` produced `value`; null for any other value.
SyncOp getAveragingOf(mlir::Value value);
} // namespace ratrain

#endif // RATRAIN_DIALECT_RATRAIN_RATRAINOPS_H
