//===- RATrainAttrs.h - ratrain enums and attributes ------------*- C++ -*-===//

#ifndef RATRAIN_DIALECT_RATRAIN_RATRAINATTRS_H
#define RATRAIN_DIALECT_RATRAIN_RATRAINATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "ratrain/Model/ModelConfig.h"

#include "RATrain/RATrainEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "RATrain/RATrainAttrs.h.inc"

#endif // RATRAIN_DIALECT_RATRAIN_RATRAINATTRS_H
