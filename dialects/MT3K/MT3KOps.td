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
include "MT3K/MT3KInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class MT3K_Op<string mnemonic, list<Trait> traits = []>
    : Op<MT3K_Dialect, mnemonic, traits>;

/// An operation of a program's straight-line body.
class MT3K_InProgramOp<string mnemonic, list<Trait> traits = []>
    : MT3K_Op<mnemonic, !listconcat(traits, [HasParent<"ProgramOp">])>;

/// A synchronous operation on buffers (a kernel or a view): in a program's
/// body, or in the body of a `func.func` that several places of the programs
/// call with their buffers as arguments (an outlined layer; a kernel there
/// computes on views of the function's arguments).
class MT3K_ComputeOp<string mnemonic, list<Trait> traits = []>
    : MT3K_Op<mnemonic, !listconcat(traits,
        [ParentOneOf<["ProgramOp", "::mlir::func::FuncOp"]>])>;

/// Traits of an asynchronous operation: it implements the async op
/// interface, and its only result is a token, which builders infer (ODS
/// generates inferReturnTypes for the buildable type).
defvar MT3K_AsyncOp = [MT3K_AsyncOpInterface,
                       DeclareOpInterfaceMethods<InferTypeOpInterface>];

/// The world outside the program's buffers: the network, the data loader
/// and the loss log. Operations that talk to it write it, so they are
/// neither erased nor merged. The runtime orders these effects itself (MPI
/// requests, the loader's queue): they are not hazards between operations.
def MT3K_RuntimeResource : Resource<"::ratrain::mt3k::RuntimeResource">;

/// The offload tiers (host memory, storage): `mt3k.offload` writes and
/// `mt3k.reload` reads the bytes kept under one key of one tier; the effect's
/// parameters name them (`[tier, key]`, see OffloadOp::getEffects).
def MT3K_OffloadStoreResource
    : Resource<"::ratrain::mt3k::OffloadStoreResource">;

include "MT3K/MT3KStructureOps.td"
include "MT3K/MT3KKernelOps.td"
include "MT3K/MT3KCommOps.td"

#endif // RATRAIN_MT3K_OPS_TD
