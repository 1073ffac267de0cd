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
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace ratrain::mt3k {
/// Implemented in MT3KOps.cpp: fails unless `token` is used by an mt3k.wait.
mlir::LogicalResult verifyTokenIsWaited(mlir::Operation *op, mlir::Value token);

/// The world outside the program's buffers (network, data loader, loss log).
struct RuntimeResource
    : public mlir::SideEffects::Resource::Base<RuntimeResource> {
  llvm::StringRef getName() final { return "mt3k.runtime"; }
};

/// Trait of asynchronous operations (DMA, communication): the first result
/// is a token that must be consumed by an `mt3k.wait`.
template <typename ConcreteType>
class AsyncOp : public mlir::OpTrait::TraitBase<ConcreteType, AsyncOp> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyTokenIsWaited(op, op->getResult(0));
  }
};
} // namespace ratrain::mt3k

#define GET_OP_CLASSES
#include "MT3K/MT3KOps.h.inc"

#endif // RATRAIN_MT3K_MT3KOPS_H
