//===- MT3KOps.h - mt3k operations ------------------------------*- C++ -*-===//
//
// Operations of the mt3k target dialect.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_MT3KOPS_H
#define RATRAIN_MT3K_MT3KOPS_H

#include "MT3K/MT3KAttrs.h"
#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KTypes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "MT3K/MT3KOps.h.inc"

#endif // RATRAIN_MT3K_MT3KOPS_H
