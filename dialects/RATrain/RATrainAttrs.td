//===- RATrainAttrs.td - ratrain enums and attributes ------*- tablegen -*-===//

#ifndef RATRAIN_ATTRS_TD
#define RATRAIN_ATTRS_TD

include "RATrain/RATrainDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def RATrain_LayerKind : I32EnumAttr<"LayerKind", "kind of a model layer", [
  I32EnumAttrCase<"Embedding", 0, "embedding">,
  I32EnumAttrCase<"Decoder", 1, "decoder">,
  I32EnumAttrCase<"Head", 2, "head">
]> {
  let cppNamespace = "::ratrain";
}

def RATrain_PositionEncoding : I32EnumAttr<"PositionEncodingKind",
    "how token positions enter attention", [
  I32EnumAttrCase<"Rope", 0, "rope">,
  I32EnumAttrCase<"Alibi", 1, "alibi">
]> {
  let cppNamespace = "::ratrain";
}

def RATrain_GradPhase : I32EnumAttr<"GradPhase",
    "lifecycle phase of a gradient", [
  I32EnumAttrCase<"Partial", 0, "partial">,
  I32EnumAttrCase<"Ready", 1, "ready">,
  I32EnumAttrCase<"Synced", 2, "synced">
]> {
  let cppNamespace = "::ratrain";
}

def RATrain_ActivationKind : I32EnumAttr<"ActivationKind",
    "what a stored activation holds", [
  I32EnumAttrCase<"Full", 0, "full">,
  I32EnumAttrCase<"Selective", 1, "selective">,
  I32EnumAttrCase<"Input", 2, "input">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    `full`: everything the backward needs; `selective`: all but the attention
    core (the backward recomputes attention scores itself, as
    FlashAttention-style kernels do); `input`: only the layer input, so the
    layer must be recomputed (`ratrain.recompute`) before its backward.
  }];
}

def RATrain_RecomputePolicy : I32EnumAttr<"Recompute",
    "activation recovery policy of a stage", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Selective", 1, "selective">,
  I32EnumAttrCase<"Full", 2, "full">
]> {
  let cppNamespace = "::ratrain";
}

def RATrain_Offload : I32EnumAttr<"Offload",
    "which states live in the offload tier between updates", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Optimizer", 1, "optimizer">,
  I32EnumAttrCase<"Master", 2, "master">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    `optimizer`: Adam m and v live in the machine's offload tier (host memory
    or storage) and are streamed through DDR for each layer's update;
    `master`: the FP32 master weights too.
  }];
}

def RATrain_SyncKind : I32EnumAttr<"SyncKind", "collective of a sync", [
  I32EnumAttrCase<"AllReduce", 0, "all_reduce">,
  I32EnumAttrCase<"ReduceScatter", 1, "reduce_scatter">,
  I32EnumAttrCase<"AllGather", 2, "all_gather">
]> {
  let cppNamespace = "::ratrain";
}

def RATrain_SyncHierarchy : I32EnumAttr<"SyncHierarchy",
    "how a collective spans the machine", [
  I32EnumAttrCase<"Flat", 0, "flat">,
  I32EnumAttrCase<"Hierarchical", 1, "hierarchical">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    `flat`: one collective over the whole group; `hierarchical`: intra-node
    reduce-scatter, inter-node collective, intra-node all-gather (the
    hierarchical ZeRO++ / Frontier partitioning).
  }];
}

def RATrain_Payload : I32EnumAttr<"Payload",
    "what a pipeline transfer carries", [
  I32EnumAttrCase<"Activation", 0, "activation">,
  I32EnumAttrCase<"Gradient", 1, "gradient">
]> {
  let cppNamespace = "::ratrain";
}

def RATrain_Optimizer : I32EnumAttr<"Optimizer", "optimizer", [
  I32EnumAttrCase<"AdamW", 0, "adamw">,
  I32EnumAttrCase<"SGD", 1, "sgd">
]> {
  let cppNamespace = "::ratrain";
}

def RATrain_StorageTier : I32EnumAttr<"StorageTier",
    "where an offloaded state lives", [
  I32EnumAttrCase<"Host", 0, "host">,
  I32EnumAttrCase<"Storage", 1, "storage">
]> {
  let cppNamespace = "::ratrain";
}

def RATrain_LifecyclePolicy : I32EnumAttr<"SchedulePolicy",
    "how lifecycle operations are placed", [
  I32EnumAttrCase<"RATrain", 0, "ratrain">,
  I32EnumAttrCase<"GpuStyle", 1, "gpu_style">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    `ratrain`: per layer, sync as soon as the gradient is ready, update when
    the sync completes, view re-materialized before the next forward.
    `gpu_style`: all syncs after the last backward, then all updates, then
    all view casts, at the iteration boundary.
  }];
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class RATrain_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<RATrain_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def RATrain_PlanAttr : RATrain_Attr<"Plan", "plan"> {
  let summary = "the parallel configuration of a training run";
  let description = [{
    Chosen by `--ratrain-plan`. `stage_layers[i]` is the number of model
    layers (embedding and head included) that stage `i` owns, in order;
    `recompute[i]` its activation recovery policy. `zero` is the optimizer
    sharding stage over the data-parallel group (0, 1 or 2); `offload`
    (omitted when `none`) which states live in the offload tier. `step_us` (the
    step time in microseconds) and `peak_bytes` (the largest per-cluster
    memory of any stage) are the planner's predictions.

    ```mlir
    #ratrain.plan<clusters = 8, pp = 2, dp = 4, micro_batch_size = 1,
                  micro_batches = 8, zero = 1, stage_layers = [3, 3],
                  recompute = [full, none], step_us = 1500000,
                  peak_bytes = 1000000>
    ```
  }];
  let parameters = (ins
    "int64_t":$clusters,
    "int64_t":$pp,
    "int64_t":$dp,
    "int64_t":$micro_batch_size,
    "int64_t":$micro_batches,
    "int64_t":$zero,
    ArrayRefParameter<"int64_t">:$stage_layers,
    ArrayRefParameter<"::ratrain::Recompute">:$recompute,
    "int64_t":$step_us,
    "int64_t":$peak_bytes,
    DefaultValuedParameter<"::ratrain::Offload", "::ratrain::Offload::None">:$offload
  );
  let assemblyFormat = [{
    `<` `clusters` `=` $clusters `,` `pp` `=` $pp `,` `dp` `=` $dp `,`
    `micro_batch_size` `=` $micro_batch_size `,`
    `micro_batches` `=` $micro_batches `,` `zero` `=` $zero `,`
    `stage_layers` `=` `[` $stage_layers `]` `,`
    `recompute` `=` `[` $recompute `]` `,` `step_us` `=` $step_us `,`
    `peak_bytes` `=` $peak_bytes (`,` `offload` `=` $offload^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// First model layer of stage `stage`.
    int64_t getFirstLayer(int64_t stage) const;
  }];
}

#endif // RATRAIN_ATTRS_TD
