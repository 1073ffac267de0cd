//===- MT3KTypes.h - mt3k types ---------------------------------*- C++ -*-===//
//
// !mt3k.buffer<space, shape x elem> and !mt3k.token.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_MT3KTYPES_H
#define RATRAIN_MT3K_MT3KTYPES_H

#include "MT3K/MT3KAttrs.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "MT3K/MT3KTypes.h.inc"

#endif // RATRAIN_MT3K_MT3KTYPES_H
