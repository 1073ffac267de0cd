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

def RATrain_RopeScalingMethod : I32EnumAttr<"RopeScalingMethod",
    "how rotary frequencies are rescaled for a longer context", [
  I32EnumAttrCase<"Linear", 0, "linear">,
  I32EnumAttrCase<"Llama3", 1, "llama3">
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

def RATrain_PipelineScheduleKind : I32EnumAttr<"PipelineScheduleKind",
    "the order in which pipeline ranks run forwards and backwards", [
  I32EnumAttrCase<"OneFOneB", 0, "one_f_one_b">,
  I32EnumAttrCase<"Interleaved1F1B", 1, "interleaved_1f1b">,
  I32EnumAttrCase<"ZBH1", 2, "zb_h1">,
  I32EnumAttrCase<"ZBV", 3, "zbv">,
  I32EnumAttrCase<"Custom", 4, "custom">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    `one_f_one_b`: non-interleaved 1F1B; `interleaved_1f1b`: Megatron's
    virtual pipeline (virtual stage c on rank c mod pp); `zb_h1`: zero-bubble
    H1 (backward split into input and weight parts, weight parts deferred
    into the bubbles); `zbv`: zero-bubble V (two virtual stages per rank in a
    V, split backward); `custom`: an action list brought by the user (CSV).
    The action lists come from ratrain/Schedule/PipelineSchedule.h.
  }];
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

def RATrain_RankOrder : I32EnumAttr<"RankOrder",
    "how ranks map to (stage, replica)", [
  I32EnumAttrCase<"StageMajor", 0, "stage_major">,
  I32EnumAttrCase<"ReplicaMajor", 1, "replica_major">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    `stage_major`: rank = stage * dp + replica (a stage's replicas on
    consecutive clusters); `replica_major`: rank = replica * pp + stage (a
    replica's stages on consecutive clusters). On a machine with classes of
    clusters (consecutive in the machine file) the order decides which
    class each stage or replica runs on.
  }];
}

def RATrain_TransferMode : I32EnumAttr<"TransferMode",
    "how pipeline messages travel between ranks", [
  I32EnumAttrCase<"TwoSided", 0, "two_sided">,
  I32EnumAttrCase<"OneSided", 1, "one_sided">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    `two_sided`: a send is matched by a receive the peer posts (MPI
    send/recv; above the eager limit the data moves once both are posted);
    `one_sided`: the sender writes straight into the receiver's planned
    receive buffer and bumps a completion counter there (MPI_Put and an
    atomic add under a passive-target epoch); the receive only waits for the
    counter. The buffer assignment reserves the receive buffer from the
    earliest point the put can land (docs/schedule.md, "One-sided
    transfers").
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

def RATrain_SyncScope : I32EnumAttr<"SyncScope",
    "the part of the data-parallel group a sync runs on", [
  I32EnumAttrCase<"Inside", 0, "inside">,
  I32EnumAttrCase<"Across", 1, "across">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    Hierarchical partitioning (docs/schedule.md, "Partitioning"): `inside`
    level L runs on the data-parallel members that share this rank's
    network-level-L group; `across` level L on the members with this rank's
    index inside their level-L groups, one per group. A sync without a scope
    runs on the whole data-parallel group.
  }];
}

def RATrain_WireType : I32EnumAttr<"WireType",
    "how a sync encodes its data on the wire", [
  I32EnumAttrCase<"Int8", 0, "int8">,
  I32EnumAttrCase<"Int4", 1, "int4">
]> {
  let cppNamespace = "::ratrain";
  let description = [{
    ZeRO++'s block-wise symmetric quantization of communication: `int8`
    or `int4` codes with one fp32 scale per block of elements (qwZ for
    parameter all-gathers, qgZ for gradient reduce-scatters, an all-to-all
    per level with an fp32 reduction). A sync without a wire type sends
    native elements.
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

/// A double printed and parsed as a bare float (`4.000000e+00`); with a
/// default, omitted from a struct when it has the default value.
class RATrain_F64Parameter<string default = "">
    : APFloatParameter<"a double"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = "$_printer.printFloat($_self)";
  let defaultValue = default;
}

class RATrain_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<RATrain_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def RATrain_PlanAttr : RATrain_Attr<"Plan", "plan"> {
  let summary = "the parallel configuration of a training run";
  let description = [{
    Chosen by `--ratrain-plan`. The pipeline has `pp * virtual_stages`
    virtual stages (model chunks) in model order; `stage_layers[i]` is the
    number of model layers (embedding and head included) that virtual stage
    `i` owns, in order; `recompute[i]` its activation recovery policy.
    `schedule` (omitted when `one_f_one_b`) is the pipeline schedule the
    step runs, `virtual_stages` (omitted when 1) the chunks per rank. `zero` is the optimizer
    sharding stage over the data-parallel group (0, 1, 2 or 3: 3 also shards
    the parameter view, gathered before every compute that reads it); `offload`
    (omitted when `none`) which states live in the offload tier. `step_us` (the
    step time in microseconds) and `peak_bytes` (the largest per-cluster
    memory of any stage) are the planner's predictions.

    The sharding policy (docs/schedule.md, "Partitioning"; each omitted at
    its default): `weight_partition = L` (ZeRO-3) keeps an hpZ-style
    secondary partition of every view inside each network-level-L group
    (level 0 the innermost): the first use of a layer in a step gathers the
    primary shard across the level-L groups, every use gathers inside the
    group; `grad_partition = L` (ZeRO >= 2) reduce-scatters a layer's
    gradient, after its last micro-batch, inside the level-L group into a
    partition and then the partition across the level-L groups into the
    rank's shard (-1, the default of both: none).
    `weight_wire` (ZeRO >= 1, qwZ) and `grad_wire` (ZeRO >= 2, qgZ) are the
    wire types of the weight all-gathers and gradient reduce-scatters
    (default: native elements).

    `transfers` (omitted when `two_sided`) is how the pipeline's messages
    travel between ranks (`TransferMode`).

    `sync_period` (omitted when 1: every step) is DreamDDP's layer-wise
    partial synchronization: each data-parallel replica updates its layers
    with its own gradient, and each layer's fp32 masters are averaged over
    the replicas once every `sync_period` steps, in the step of the layer's
    phase (`ratrain.sync all_reduce` of a master `every H phase p`). Needs
    `zero = 0`, no clipping and the masters in DDR (`offload` none or
    `optimizer`).

    `act_offload = [k0, k1, ...]` (omitted when every entry is 0; one entry
    per virtual stage) is activation offload (GriNNder; docs/schedule.md,
    "Activation offload"): the first `k_i` decoder layers of virtual stage
    `i` keep their full activations (no recompute) but move them to the
    machine's offload tier between each forward and its backward
    (`ratrain.offload` / `ratrain.reload`); the stage's other layers follow
    `recompute[i]`.

    `dp_shares = [m0, m1, ...]` (omitted when every replica runs
    `micro_batches`; one entry per data-parallel replica) are uneven
    micro-batch counts per replica for heterogeneous machines (HexiScale;
    docs/schedule.md, "Uneven data-parallel shares"): replica `r` runs its
    first `m_r` micro-batches of the `micro_batches` the schedule is expanded
    for (the largest share), the step's global batch is `micro_batch_size *
    sum(m_r)`, and each micro-batch's gradient is weighted `dp / sum(m_r)`, so
    the replicas' average is the mean over the global batch. Needs
    `one_f_one_b` and `sync_period = 1`.

    `rank_order` (omitted when `stage_major`: rank = stage * dp + replica) is
    how ranks, and so clusters, map to (stage, replica): `replica_major`
    gives rank = replica * pp + stage, so that a replica's stages lie on
    consecutive clusters (one class of a heterogeneous machine).

    `max_grad_norm` (omitted when 0: no clipping) clips the step's
    gradients to that global L2 norm before any update, as PyTorch's
    `clip_grad_norm_`: the stages' updates wait for `ratrain.grad_norm`
    (docs/schedule.md, "Gradient clipping").

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
    DefaultValuedParameter<"::ratrain::Offload", "::ratrain::Offload::None">:$offload,
    DefaultValuedParameter<"::ratrain::PipelineScheduleKind",
                           "::ratrain::PipelineScheduleKind::OneFOneB">:$schedule,
    DefaultValuedParameter<"int64_t", "1">:$virtual_stages,
    DefaultValuedParameter<"int64_t", "-1">:$weight_partition,
    DefaultValuedParameter<"int64_t", "-1">:$grad_partition,
    DefaultValuedParameter<"std::optional<::ratrain::WireType>",
                           "std::nullopt">:$weight_wire,
    DefaultValuedParameter<"std::optional<::ratrain::WireType>",
                           "std::nullopt">:$grad_wire,
    DefaultValuedParameter<"::mlir::FloatAttr", "::mlir::FloatAttr()">:$max_grad_norm,
    DefaultValuedParameter<"::ratrain::TransferMode",
                           "::ratrain::TransferMode::TwoSided">:$transfers,
    DefaultValuedParameter<"int64_t", "1">:$sync_period,
    OptionalArrayRefParameter<"int64_t">:$act_offload,
    OptionalArrayRefParameter<"int64_t">:$dp_shares,
    DefaultValuedParameter<"::ratrain::RankOrder",
                           "::ratrain::RankOrder::StageMajor">:$rank_order
  );
  let assemblyFormat = [{
    `<` `clusters` `=` $clusters `,` `pp` `=` $pp `,` `dp` `=` $dp `,`
    `micro_batch_size` `=` $micro_batch_size `,`
    `micro_batches` `=` $micro_batches `,` `zero` `=` $zero `,`
    `stage_layers` `=` `[` $stage_layers `]` `,`
    `recompute` `=` `[` $recompute `]` `,` `step_us` `=` $step_us `,`
    `peak_bytes` `=` $peak_bytes
    `` custom<PlanExtras>($offload, $schedule, $virtual_stages,
                          $weight_partition, $grad_partition, $weight_wire,
                          $grad_wire, $max_grad_norm, $transfers,
                          $sync_period, $act_offload, $dp_shares,
                          $rank_order)
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// First model layer of virtual stage `stage`.
    int64_t getFirstLayer(int64_t stage) const;
    /// pp * virtual_stages.
    int64_t getNumVirtualStages() const { return getPp() * getVirtualStages(); }
    /// The virtual stage that owns model layer `layer`.
    int64_t getVirtualStageOfLayer(int64_t layer) const;
    /// The recompute policy of `layer`: none for a layer whose activations
    /// are offloaded, else that of the virtual stage owning it.
    ::ratrain::Recompute getLayerRecompute(int64_t layer) const {
      if (offloadsActivations(layer))
        return ::ratrain::Recompute::None;
      return getRecompute()[getVirtualStageOfLayer(layer)];
    }
    /// Decoder layers of virtual stage `stage` whose activations live in
    /// the offload tier between forward and backward (its first ones).
    int64_t getActOffloadLayers(int64_t stage) const {
      return getActOffload().empty() ? 0 : getActOffload()[stage];
    }
    /// Whether any stage offloads activations.
    bool offloadsAnyActivations() const {
      return llvm::any_of(getActOffload(), [](int64_t k) { return k > 0; });
    }
    /// Whether model layer `layer` (a decoder layer) is one of the first
    /// act_offload decoder layers of its virtual stage.
    bool offloadsActivations(int64_t layer) const;
    /// Micro-batches replica `replica` runs (its dp_shares entry, else
    /// micro_batches).
    int64_t getReplicaMicroBatches(int64_t replica) const {
      return getDpShares().empty() ? getMicroBatches()
                                   : getDpShares()[replica];
    }
    /// Micro-batches of one step over all replicas.
    int64_t getTotalMicroBatches() const;
    /// Whether some replica runs fewer than micro_batches micro-batches.
    bool hasUnevenShares() const {
      return llvm::any_of(getDpShares(),
                          [&](int64_t m) { return m != getMicroBatches(); });
    }
    /// The rank of (stage, replica) under rank_order.
    int64_t getRank(int64_t stage, int64_t replica) const {
      return getRankOrder() == ::ratrain::RankOrder::ReplicaMajor
                 ? replica * getPp() + stage
                 : stage * getDp() + replica;
    }
    /// Whether the step clips its gradients to a global norm.
    bool clipsGradients() const { return getMaxGradNormValue() > 0; }
    /// The clipping norm as a double (0: none).
    double getMaxGradNormValue() const {
      return getMaxGradNorm() ? getMaxGradNorm().getValueAsDouble() : 0.0;
    }
    /// Whether replicas update with their own gradients and average their
    /// masters layer by layer every sync_period steps (DreamDDP).
    bool syncsPartially() const { return getSyncPeriod() > 1; }
    /// Whether any sharding-policy field differs from its default.
    bool hasSharding() const {
      return getWeightPartition() >= 0 || getGradPartition() >= 0 ||
             getWeightWire() || getGradWire();
    }
    /// The highest network level the sharding policy names (-1: none).
    int64_t getHighestPartitionLevel() const {
      return std::max(getWeightPartition(), getGradPartition());
    }
  }];
}

def RATrain_RopeScalingAttr : RATrain_Attr<"RopeScaling", "rope_scaling"> {
  let summary = "a model's rotary-frequency scaling (HF rope_scaling)";
  let description = [{
    The rotary inverse frequency of pair `i` of a head of dimension `d` is
    `inv_freq_i = theta^(-2i/d)`, rescaled by `method`:
    `linear` divides every frequency by `factor` (positions interpolated);
    `llama3` (Llama 3.1/3.2) divides the low frequencies (wavelength
    `2 pi / inv_freq` above `original_max_positions / low_freq_factor`) by
    `factor`, keeps the high ones (wavelength below
    `original_max_positions / high_freq_factor`) and interpolates smoothly
    in between, as transformers' `_compute_llama3_parameters`.

    ```mlir
    #ratrain.rope_scaling<method = llama3, factor = 3.200000e+01,
      low_freq_factor = 1.000000e+00, high_freq_factor = 4.000000e+00,
      original_max_positions = 8192>
    #ratrain.rope_scaling<method = linear, factor = 4.000000e+00>
    ```
  }];
  let parameters = (ins
    EnumParameter<RATrain_RopeScalingMethod>:$method,
    RATrain_F64Parameter<>:$factor,
    RATrain_F64Parameter<"::llvm::APFloat(0.0)">:$low_freq_factor,
    RATrain_F64Parameter<"::llvm::APFloat(0.0)">:$high_freq_factor,
    DefaultValuedParameter<"int64_t", "0">:$original_max_positions
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The scaling as the model description (ratrain/Model) computes it.
    ::ratrain::RopeScaling getScaling() const;
  }];
}

def RATrain_StageChunkAttr : RATrain_Attr<"StageChunk", "chunk"> {
  let summary = "one virtual stage (model chunk) a pipeline rank runs";
  let description = [{
    Virtual stage `virtual_stage` of the pipeline owns model layers
    `[first_layer, first_layer + num_layers)`.
  }];
  let parameters = (ins "int64_t":$virtual_stage, "int64_t":$first_layer,
                        "int64_t":$num_layers);
  let assemblyFormat = [{
    `<` $virtual_stage `,` $first_layer `,` $num_layers `>`
  }];
  let extraClassDeclaration = [{
    int64_t getEndLayer() const { return getFirstLayer() + getNumLayers(); }
    bool contains(int64_t layer) const {
      return layer >= getFirstLayer() && layer < getEndLayer();
    }
  }];
}

def RATrain_StageChunkArrayAttr
    : TypedArrayAttrBase<RATrain_StageChunkAttr, "virtual stages of a rank">;

#endif // RATRAIN_ATTRS_TD
