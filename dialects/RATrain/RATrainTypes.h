//===- RATrainTypes.h - ratrain state types ---------------------*- C++ -*-===//

#ifndef RATRAIN_DIALECT_RATRAIN_RATRAINTYPES_H
#define RATRAIN_DIALECT_RATRAIN_RATRAINTYPES_H

#include "RATrain/RATrainAttrs.h"

#include "mlir/IR/Types.h"

#include <optional>

#define GET_TYPEDEF_CLASSES
#include "RATrain/RATrainTypes.h.inc"

namespace ratrain {

/// The model layer a state type belongs to: the `layer` parameter of view,
/// master, opt_state, grad, act and deferred types, looking through async and
/// offloaded wrappers. None for other types.
std::optional<int64_t> getStateLayer(mlir::Type type);

} // namespace ratrain

#endif // RATRAIN_DIALECT_RATRAIN_RATRAINTYPES_H
