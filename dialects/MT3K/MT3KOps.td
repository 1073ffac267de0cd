//===- MT3KOps.td - mt3k operations ------------------------*- tablegen -*-===//
//
// Operations of the mt3k target dialect: machine and process-group
// declarations, programs, buffers, DMA, kernels and communication.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_OPS_TD
#define RATRAIN_MT3K_OPS_TD

include "MT3K/MT3KDialect.td"
include "MT3K/MT3KAttrs.td"
include "MT3K/MT3KTypes.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class MT3K_Op<string mnemonic, list<Trait> traits = []>
    : Op<MT3K_Dialect, mnemonic, traits>;

/// An operation of a program's straight-line body.
class MT3K_InProgramOp<string mnemonic, list<Trait> traits = []>
    : MT3K_Op<mnemonic, !listconcat(traits, [HasParent<"ProgramOp">])>;

/// An asynchronous operation: its token result must be consumed by an
/// `mt3k.wait` (verified by ratrain::mt3k::AsyncOp).
def MT3K_AsyncOpTrait : NativeOpTrait<"AsyncOp"> {
  let cppNamespace = "::ratrain::mt3k";
}

/// Traits of an asynchronous operation: its only result is a token, which
/// builders infer (ODS generates inferReturnTypes for the buildable type).
defvar MT3K_AsyncOp = [MT3K_AsyncOpTrait,
                       DeclareOpInterfaceMethods<InferTypeOpInterface>];

/// The world outside the program's buffers: the network, the data loader
/// and the loss log. Operations that talk to it write it, so they are
/// neither erased nor merged.
def MT3K_RuntimeResource : Resource<"::ratrain::mt3k::RuntimeResource">;

include "MT3K/MT3KStructureOps.td"
include "MT3K/MT3KKernelOps.td"
include "MT3K/MT3KCommOps.td"

#endif // RATRAIN_MT3K_OPS_TD
