//===- RATrainDialect.h - The ratrain dialect -------------------*- C++ -*-===//

#ifndef RATRAIN_DIALECT_RATRAIN_RATRAINDIALECT_H
#define RATRAIN_DIALECT_RATRAIN_RATRAINDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "RATrain/RATrainDialect.h.inc"

#endif // RATRAIN_DIALECT_RATRAIN_RATRAINDIALECT_H
