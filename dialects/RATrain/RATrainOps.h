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

#endif // RATRAIN_DIALECT_RATRAIN_RATRAINOPS_H
