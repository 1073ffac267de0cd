//===- RATrainTypes.td - ratrain state types ---------------*- tablegen -*-===//
//
// Training states are typed by kind and by the model layer they belong to.
// Gradients and activations also carry their lifecycle phase.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TYPES_TD
#define RATRAIN_TYPES_TD

include "RATrain/RATrainAttrs.td"
include "mlir/IR/AttrTypeBase.td"

class RATrain_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<RATrain_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def RATrain_ViewType : RATrain_Type<"View", "view"> {
  let summary = "low-precision parameter view of a layer";
  let description = [{
    The 16-bit copy of a layer's parameters that forward and backward compute
    with. It is re-materialized from the master weights after each update
    (`ratrain.view_prefetch`) and must be in place before the layer's next
    forward.
  }];
  let parameters = (ins "int64_t":$layer);
  let assemblyFormat = "`<` $layer `>`";
}

def RATrain_MasterType : RATrain_Type<"Master", "master"> {
  let summary = "FP32 master weights of a layer";
  let parameters = (ins "int64_t":$layer);
  let assemblyFormat = "`<` $layer `>`";
}

def RATrain_OptStateType : RATrain_Type<"OptState", "opt_state"> {
  let summary = "optimizer state of a layer (Adam moments m and v)";
  let parameters = (ins "int64_t":$layer);
  let assemblyFormat = "`<` $layer `>`";
}

def RATrain_GradType : RATrain_Type<"Grad", "grad"> {
  let summary = "gradient of a layer's parameters in a lifecycle phase";
  let description = [{
    `partial`: accumulating over micro-batches; `ready`: the last
    micro-batch's backward has finished; `synced`: reduced across the
    data-parallel group and usable by the optimizer.
  }];
  let parameters = (ins "int64_t":$layer, "::ratrain::GradPhase":$phase);
  let assemblyFormat = "`<` $layer `,` $phase `>`";
}

def RATrain_GradNormType : RATrain_Type<"GradNorm", "grad_norm"> {
  let summary = "the step's global gradient norm (gradient clipping)";
  let description = [{
    The sum of squares of every synced gradient element of the step, over
    all layers of all stages and data-parallel replicas: the square of the
    L2 norm that global gradient-norm clipping compares with the plan's
    `max_grad_norm`. Produced by `ratrain.grad_norm`, read by every
    `ratrain.update` of a clipped step.
  }];
}

def RATrain_ActivationType : RATrain_Type<"Activation", "act"> {
  let summary = "stored activations of a layer for one micro-batch";
  let parameters = (ins "int64_t":$layer,
                        "::ratrain::ActivationKind":$kind);
  let assemblyFormat = "`<` $layer `,` $kind `>`";
}

def RATrain_DeferredType : RATrain_Type<"Deferred", "deferred"> {
  let summary = "what a split backward's input part keeps for its weight part";
  let description = [{
    Produced by `ratrain.backward_input` for one layer and micro-batch and
    consumed by the `ratrain.backward_weight` of the same layer and
    micro-batch: the gradients of the layer's linear and norm outputs that
    the weight-gradient GEMMs and norm weight gradients need (decoder: the
    output gradient, the gate/up gradients, the gradients at both norms'
    outputs, the residual gradient and the pre-rotation q/k and v
    gradients; head: the final norm's output gradient; embedding: the
    output gradient).
  }];
  let parameters = (ins "int64_t":$layer);
  let assemblyFormat = "`<` $layer `>`";
}

def RATrain_OffloadedType : RATrain_Type<"Offloaded", "offloaded"> {
  let summary = "a state moved out of DDR (to host memory or storage)";
  let parameters = (ins "::mlir::Type":$state);
  let assemblyFormat = "`<` $state `>`";
  let genVerifyDecl = 1;
}

def RATrain_AsyncType : RATrain_Type<"Async", "async"> {
  let summary = "the pending result of an asynchronous operation";
  let description = [{
    Produced by `ratrain.sync`, `ratrain.view_prefetch`, `ratrain.offload` and
    `ratrain.reload`; consumed by `ratrain.wait`, which yields the value.
  }];
  let parameters = (ins "::mlir::Type":$value);
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def RATrain_AnyView : Type<CPred<"::llvm::isa<::ratrain::ViewType>($_self)">,
    "parameter view", "::ratrain::ViewType">;
def RATrain_AnyMaster : Type<CPred<"::llvm::isa<::ratrain::MasterType>($_self)">,
    "master weights", "::ratrain::MasterType">;
def RATrain_AnyOptState
    : Type<CPred<"::llvm::isa<::ratrain::OptStateType>($_self)">,
           "optimizer state", "::ratrain::OptStateType">;
def RATrain_AnyGrad : Type<CPred<"::llvm::isa<::ratrain::GradType>($_self)">,
    "gradient", "::ratrain::GradType">;
def RATrain_AnyActivation
    : Type<CPred<"::llvm::isa<::ratrain::ActivationType>($_self)">,
           "activation", "::ratrain::ActivationType">;
def RATrain_AnyDeferred
    : Type<CPred<"::llvm::isa<::ratrain::DeferredType>($_self)">,
           "deferred weight-gradient inputs", "::ratrain::DeferredType">;
def RATrain_AnyAsync : Type<CPred<"::llvm::isa<::ratrain::AsyncType>($_self)">,
    "async value", "::ratrain::AsyncType">;
def RATrain_AnyGradNorm
    : Type<CPred<"::llvm::isa<::ratrain::GradNormType>($_self)">,
           "global gradient norm", "::ratrain::GradNormType">,
      BuildableType<"::ratrain::GradNormType::get($_builder.getContext())">;
def RATrain_AnyOffloaded
    : Type<CPred<"::llvm::isa<::ratrain::OffloadedType>($_self)">,
           "offloaded state", "::ratrain::OffloadedType">;

class RATrain_GradIn<string phase>
    : Type<And<[CPred<"::llvm::isa<::ratrain::GradType>($_self)">,
                CPred<"::llvm::cast<::ratrain::GradType>($_self).getPhase() == "
                      "::ratrain::GradPhase::" # phase>]>,
           "gradient in phase '" # !tolower(phase) # "'",
           "::ratrain::GradType">;
def RATrain_PartialGrad : RATrain_GradIn<"Partial">;
def RATrain_ReadyGrad : RATrain_GradIn<"Ready">;
def RATrain_SyncedGrad : RATrain_GradIn<"Synced">;
/// What an update applies: the synced gradient, or this replica's own ready
/// gradient under partial synchronization (the plan's sync_period).
def RATrain_UpdateGrad
    : Type<And<[CPred<"::llvm::isa<::ratrain::GradType>($_self)">,
                CPred<"::llvm::cast<::ratrain::GradType>($_self).getPhase() != "
                      "::ratrain::GradPhase::Partial">]>,
           "gradient in phase 'ready' or 'synced'", "::ratrain::GradType">;

def RATrain_RecoveredActivation
    : Type<And<[CPred<"::llvm::isa<::ratrain::ActivationType>($_self)">,
                CPred<"::llvm::cast<::ratrain::ActivationType>($_self).getKind()"
                      " != ::ratrain::ActivationKind::Input">]>,
           "activation usable by backward (full or selective)",
           "::ratrain::ActivationType">;
def RATrain_InputActivation
    : Type<And<[CPred<"::llvm::isa<::ratrain::ActivationType>($_self)">,
                CPred<"::llvm::cast<::ratrain::ActivationType>($_self).getKind()"
                      " == ::ratrain::ActivationKind::Input">]>,
           "layer-input activation", "::ratrain::ActivationType">;

/// Any training state that can be offloaded: a layer state.
def RATrain_AnyState : AnyTypeOf<[RATrain_AnyView, RATrain_AnyMaster,
    RATrain_AnyOptState, RATrain_AnyGrad, RATrain_AnyActivation]>;

#endif // RATRAIN_TYPES_TD
