//===- MT3KInterfaces.h - mt3k op interfaces --------------------*- C++ -*-===//
//
// The async op interface of the mt3k dialect (MT3KInterfaces.td).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_MT3KINTERFACES_H
#define RATRAIN_MT3K_MT3KINTERFACES_H

#include "MT3K/MT3KTypes.h"
#include "mlir/IR/OpDefinition.h"

namespace ratrain::mt3k::detail {
/// The structural check of an asynchronous operation: its token is consumed
/// by at most one `mt3k.wait` (defined in MT3KOps.cpp).
mlir::LogicalResult verifyAsyncOpInterface(mlir::Operation *op);
} // namespace ratrain::mt3k::detail

#include "MT3K/MT3KInterfaces.h.inc"

#endif // RATRAIN_MT3K_MT3KINTERFACES_H
