//===- MT3KDialect.h - The mt3k target dialect ------------------*- C++ -*-===//
//
// The `mt3k` dialect: target IR for an MT-3000-like machine (explicit DDR /
// GSM / AM memories, DMA with tokens, kernel calls, collectives).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_MT3KDIALECT_H
#define RATRAIN_MT3K_MT3KDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

// The declared discardable attributes (mt3k.model, mt3k.job) are of the
// dialect's own attribute classes.
#include "MT3K/MT3KAttrs.h"

#include "MT3K/MT3KDialect.h.inc"

#endif // RATRAIN_MT3K_MT3KDIALECT_H
