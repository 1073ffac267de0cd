//===- MT3KAttrs.h - mt3k enums and attributes ------------------*- C++ -*-===//
//
// Memory spaces, group kinds, collective algorithms, reduction and
// elementwise kinds, and their attributes.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_MT3KATTRS_H
#define RATRAIN_MT3K_MT3KATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "ratrain/Model/ModelConfig.h"

#include "MT3K/MT3KEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "MT3K/MT3KAttrs.h.inc"

#endif // RATRAIN_MT3K_MT3KATTRS_H
