//===- RATrainOps.td - ratrain operations ------------------*- tablegen -*-===//

#ifndef RATRAIN_OPS_TD
#define RATRAIN_OPS_TD

include "RATrain/RATrainInterfaces.td"
include "RATrain/RATrainTypes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class RATrain_Op<string mnemonic, list<Trait> traits = []>
    : Op<RATrain_Dialect, mnemonic, traits>;

/// Ops that make up a stage's program.
class RATrain_StageOp<string mnemonic, list<Trait> traits = []>
    : RATrain_Op<mnemonic, !listconcat(traits, [HasParent<"StageOp">,
                                                RATrain_ScheduleOpInterface])>;

//===----------------------------------------------------------------------===//
// Model description
//===----------------------------------------------------------------------===//

def RATrain_ModelOp : RATrain_Op<"model", [
    Symbol, NoTerminator, SingleBlock, IsolatedFromAbove]> {
  let summary = "a dense decoder-only LLM";
  let description = [{
    The model's layers, in order: one `embedding`, the `decoder` layers, one
    `head` (final RMSNorm, LM head and loss). Model-wide settings are
    attributes; `plan` is attached by `--ratrain-plan`. `norm_head` marks
    Baichuan2's NormHead: the LM head multiplies by its weight with every
    vocabulary row L2-normalized (`torch.nn.functional.normalize`, eps
    1e-12); the importer sets it for a Baichuan config with Baichuan2's
    vocabulary (125696) or `"norm_head": true`. `rope_scaling` rescales the
    rotary frequencies (`#ratrain.rope_scaling`, from the config's
    `rope_scaling`); `sliding_window` is Mistral's attention window, which
    training at `seq_len <= sliding_window` makes plain causal attention
    (the verifier refuses a longer sequence); `tie_embeddings` shares the
    embedding table with the LM head.

    ```mlir
    ratrain.model @tiny family("llama") dtype(f32) seq_len(128)
        max_positions(256) positions rope rms_eps(1.0e-05)
        rope_theta(1.0e+04) {
      ratrain.layer 0 embedding hidden(256) vocab(256)
      ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
      ratrain.layer 2 head hidden(256) vocab(256)
    }
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    StrAttr:$family,
    TypeAttrOf<AnyFloat>:$dtype,
    I64Attr:$seq_len,
    I64Attr:$max_positions,
    RATrain_PositionEncoding:$positions,
    F64Attr:$rms_eps,
    F64Attr:$rope_theta,
    UnitAttr:$tie_embeddings,
    OptionalAttr<RATrain_PlanAttr>:$plan,
    UnitAttr:$norm_head,
    OptionalAttr<RATrain_RopeScalingAttr>:$rope_scaling,
    OptionalAttr<I64Attr>:$sliding_window
  );
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `family` `(` $family `)` `dtype` `(` $dtype `)`
    `seq_len` `(` $seq_len `)` `max_positions` `(` $max_positions `)`
    `positions` $positions `rms_eps` `(` $rms_eps `)`
    `rope_theta` `(` $rope_theta `)` (`rope_scaling` qualified($rope_scaling)^)?
    (`sliding_window` `(` $sliding_window^ `)`)? (`tie_embeddings` $tie_embeddings^)?
    (`norm_head` $norm_head^)? (`plan` qualified($plan)^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The layers in order.
    ::llvm::SmallVector<LayerOp, 8> getLayers();
    /// Number of model layers, embedding and head included.
    int64_t getNumLayers();
  }];
}

def RATrain_LayerOp : RATrain_Op<"layer", [HasParent<"ModelOp">]> {
  let summary = "one layer of a model with its sizes";
  let description = [{
    `index` is the layer's position in the model (0 is the embedding).
    Decoder layers have `heads`, `kv_heads` (grouped-query attention when
    fewer than `heads`) and `ffn` (SwiGLU width), `head_dim` when the heads
    are not `hidden / heads` wide (the q, k, v projections then map `hidden`
    to `heads x head_dim` and o_proj back, as Mistral-NeMo), and `qkv_bias`
    when the q, k, v projections have biases; embedding and head layers have
    `vocab`.
  }];
  let arguments = (ins
    I64Attr:$index,
    RATrain_LayerKind:$kind,
    I64Attr:$hidden,
    OptionalAttr<I64Attr>:$heads,
    OptionalAttr<I64Attr>:$kv_heads,
    OptionalAttr<I64Attr>:$ffn,
    OptionalAttr<I64Attr>:$vocab,
    UnitAttr:$qkv_bias,
    OptionalAttr<I64Attr>:$head_dim
  );
  let assemblyFormat = [{
    $index $kind `hidden` `(` $hidden `)` (`heads` `(` $heads^ `)`)?
    (`kv_heads` `(` $kv_heads^ `)`)? (`head_dim` `(` $head_dim^ `)`)?
    (`ffn` `(` $ffn^ `)`)?
    (`vocab` `(` $vocab^ `)`)? (`qkv_bias` $qkv_bias^)? attr-dict
  }];
  let builders = [
    OpBuilder<(ins "int64_t":$index, "::ratrain::LayerKind":$kind,
                   "int64_t":$hidden, "::mlir::IntegerAttr":$heads,
                   "::mlir::IntegerAttr":$kvHeads, "::mlir::IntegerAttr":$ffn,
                   "::mlir::IntegerAttr":$vocab, "bool":$qkvBias), [{
      build($_builder, $_state, index, kind, hidden, heads, kvHeads, ffn,
            vocab, qkvBias, ::mlir::IntegerAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// A decoder layer's head width: head_dim, or hidden / heads.
    int64_t getHeadDimension() {
      return getHeadDim() ? int64_t(*getHeadDim())
                          : getHidden() / int64_t(*getHeads());
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pipeline structure
//===----------------------------------------------------------------------===//

def RATrain_PipelineOp : RATrain_Op<"pipeline", [
    Symbol, NoTerminator, SingleBlock, IsolatedFromAbove,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "one training step of a model under a plan";
  let description = [{
    Holds one `ratrain.stage` per pipeline stage, in order. Every stage runs
    on `dp` data-parallel replicas; `policy` records how the lifecycle
    operations were placed once `--ratrain-schedule-lifecycle` ran.
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    FlatSymbolRefAttr:$model,
    RATrain_PlanAttr:$plan,
    OptionalAttr<RATrain_LifecyclePolicy>:$policy
  );
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `for` $model `plan` qualified($plan) (`policy` $policy^)?
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::SmallVector<StageOp, 8> getStages();
    /// The model the pipeline refers to, or an error on the pipeline.
    ::mlir::FailureOr<ModelOp> lookupModel();
  }];
}

def RATrain_StageOp : RATrain_Op<"stage", [
    HasParent<"PipelineOp">, SingleBlockImplicitTerminator<"YieldOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "the program of one pipeline rank for one training step";
  let description = [{
    Runs the virtual stages (model chunks) in `chunks`, in ascending order,
    each owning a contiguous range of model layers; without interleaving a
    rank runs the one virtual stage with its own number. The block arguments
    are the states of the owned layers at the start of the step, for each
    layer in ascending order a `!ratrain.view`, a `!ratrain.master` and a
    `!ratrain.opt_state`; `ratrain.yield` returns their values at the end.

    ```mlir
    ratrain.stage 0 layers [0, 2) states(%view0: !ratrain.view<0>, ...) {
      ...
      ratrain.yield %new_view0, ... : !ratrain.view<0>, ...
    }
    // Rank 0 of an interleaved pipeline of 2 ranks, 2 chunks each.
    ratrain.stage 0 chunks [0: [0, 2), 2: [4, 6)] states(...) { ... }
    ```
  }];
  let arguments = (ins I64Attr:$stage, RATrain_StageChunkArrayAttr:$chunks);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    /// One chunk: virtual stage `stage`, layers [firstLayer, +numLayers).
    OpBuilder<(ins "int64_t":$stage, "int64_t":$firstLayer,
                   "int64_t":$numLayers)>,
    OpBuilder<(ins "int64_t":$stage,
                   "::llvm::ArrayRef<StageChunkAttr>":$chunks)>
  ];
  let extraClassDeclaration = [{
    /// The virtual stages, ascending.
    ::llvm::SmallVector<StageChunkAttr, 2> getChunkList();
    /// The owned model layers, ascending.
    ::llvm::SmallVector<int64_t> getLayers();
    /// The number of owned layers.
    int64_t getNumLayers();
    bool ownsLayer(int64_t layer);
    /// The chunk that owns `layer` (which the stage must own).
    StageChunkAttr getChunkOfLayer(int64_t layer);
    /// True when the stage runs more than one virtual stage, or a virtual
    /// stage whose number differs from the rank's.
    bool isInterleaved();
    /// The view, master and optimizer state of `layer` at step start.
    ::mlir::BlockArgument getViewArg(int64_t layer);
    ::mlir::BlockArgument getMasterArg(int64_t layer);
    ::mlir::BlockArgument getOptStateArg(int64_t layer);
    YieldOp getYield();
  }];
}

def RATrain_YieldOp : RATrain_Op<"yield", [
    Pure, Terminator, HasParent<"StageOp">, RATrain_ScheduleOpInterface]> {
  let summary = "the stage's states at the end of the step";
  let arguments = (ins Variadic<AnyType>:$states);
  let assemblyFormat = "attr-dict ($states^ `:` qualified(type($states)))?";
  let builders = [OpBuilder<(ins), "build($_builder, $_state, {});">];
}

//===----------------------------------------------------------------------===//
// Compute and pipeline transfers
//===----------------------------------------------------------------------===//

def RATrain_ForwardOp : RATrain_StageOp<"forward"> {
  let summary = "forward of one layer for one micro-batch";
  let description = [{
    Computes the layer's output for micro-batch `mb` from its input (the
    previous layer's output, or the received activation) using the
    parameter view, and stores what the backward will need: everything
    (`full`), all but the attention core (`selective`), or the layer input
    only (`input`, to be recomputed).
  }];
  let arguments = (ins RATrain_AnyView:$view, I64Attr:$micro_batch);
  let results = (outs RATrain_AnyActivation:$activation);
  let assemblyFormat = [{
    $view `mb` `(` $micro_batch `)` attr-dict `:` qualified(type($view)) `->`
    qualified(type($activation))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The activation kind the forward of a `layer` layer stores in a stage
    /// with recovery policy `recompute`: decoder layers store `full` (none),
    /// `selective` (selective) or `input` (full); the embedding and head
    /// always store `full` (as in the memory model, which never recomputes
    /// them).
    static ActivationKind getStoredActivationKind(LayerKind layer,
                                                  Recompute recompute);
  }];
}

def RATrain_RecomputeOp : RATrain_StageOp<"recompute"> {
  let summary = "activation recovery: re-run a layer's forward";
  let description = [{
    Recovers the activations of a layer whose forward kept only its input,
    so that its backward can run. Placed before the backward that needs it.
  }];
  let arguments = (ins RATrain_AnyView:$view, RATrain_InputActivation:$input,
                       I64Attr:$micro_batch);
  let results = (outs RATrain_RecoveredActivation:$activation);
  let assemblyFormat = [{
    $view `,` $input `mb` `(` $micro_batch `)` attr-dict `:` qualified(type($view)) `,`
    qualified(type($input)) `->` qualified(type($activation))
  }];
  let hasVerifier = 1;
}

defvar RATrain_PartialGradOfView =
    "::ratrain::GradType::get($_self.getContext(), "
    "::llvm::cast<::ratrain::ViewType>($_self).getLayer(), "
    "::ratrain::GradPhase::Partial)";

def RATrain_BackwardOp : RATrain_StageOp<"backward", [
    TypesMatchWith<"gradient is the view's layer's partial gradient",
      "view", "grad", RATrain_PartialGradOfView>,
    OptionalTypesMatchWith<"accumulator is the view's layer's partial "
      "gradient", "view", "acc", RATrain_PartialGradOfView>]> {
  let summary = "backward of one layer for one micro-batch";
  let description = [{
    Computes the input gradient and accumulates the parameter gradient of
    micro-batch `mb` into `acc` (the gradient of the previous micro-batches;
    absent for the first).
  }];
  let arguments = (ins RATrain_AnyView:$view,
                       RATrain_RecoveredActivation:$activation,
                       Optional<RATrain_PartialGrad>:$acc,
                       I64Attr:$micro_batch);
  let results = (outs RATrain_PartialGrad:$grad);
  let assemblyFormat = [{
    $view `,` $activation (`acc` `(` $acc^ `)`)? `mb` `(` $micro_batch `)`
    attr-dict `:` qualified(type($view)) `,` qualified(type($activation))
  }];
  let hasVerifier = 1;
}

defvar RATrain_DeferredOfView =
    "::ratrain::DeferredType::get($_self.getContext(), "
    "::llvm::cast<::ratrain::ViewType>($_self).getLayer())";

def RATrain_BackwardInputOp : RATrain_StageOp<"backward_input", [
    TypesMatchWith<"deferred value is the view's layer's", "view", "deferred",
      RATrain_DeferredOfView>]> {
  let summary = "input-gradient part of a layer's backward (I)";
  let description = [{
    The first part of a split backward of one layer for micro-batch `mb`:
    computes the layer's input gradient (what the layer below, or the
    stage's `send gradient`, needs) and keeps in `deferred` what the
    weight part needs. It computes no parameter gradient and sends nothing
    itself. Together with its `ratrain.backward_weight` it computes exactly
    what one `ratrain.backward` computes; the activations stay live until
    the weight part.

    ```mlir
    %d = ratrain.backward_input %view3, %a mb(2) : !ratrain.view<3>, !ratrain.act<3, full>
    ```
  }];
  let arguments = (ins RATrain_AnyView:$view,
                       RATrain_RecoveredActivation:$activation,
                       I64Attr:$micro_batch);
  let results = (outs RATrain_AnyDeferred:$deferred);
  let assemblyFormat = [{
    $view `,` $activation `mb` `(` $micro_batch `)`
    attr-dict `:` qualified(type($view)) `,` qualified(type($activation))
  }];
  let hasVerifier = 1;
}

def RATrain_BackwardWeightOp : RATrain_StageOp<"backward_weight", [
    TypesMatchWith<"deferred value is the view's layer's", "view", "deferred",
      RATrain_DeferredOfView>,
    TypesMatchWith<"gradient is the view's layer's partial gradient",
      "view", "grad", RATrain_PartialGradOfView>,
    OptionalTypesMatchWith<"accumulator is the view's layer's partial "
      "gradient", "view", "acc", RATrain_PartialGradOfView>]> {
  let summary = "weight-gradient part of a layer's backward (W)";
  let description = [{
    The second part of a split backward: from the activations and the
    `deferred` value of the `ratrain.backward_input` of the same layer and
    micro-batch, computes the parameter gradient of micro-batch `mb` and
    accumulates it into `acc` (as `ratrain.backward` does; absent for the
    first micro-batch). It may run any time after its input part, e.g. in
    a pipeline bubble; the layer's gradient is ready after the weight part
    of its last micro-batch.

    ```mlir
    %g = ratrain.backward_weight %view3, %a, %d acc(%g1) mb(2) : !ratrain.view<3>, !ratrain.act<3, full>
    ```
  }];
  let arguments = (ins RATrain_AnyView:$view,
                       RATrain_RecoveredActivation:$activation,
                       RATrain_AnyDeferred:$deferred,
                       Optional<RATrain_PartialGrad>:$acc,
                       I64Attr:$micro_batch);
  let results = (outs RATrain_PartialGrad:$grad);
  let assemblyFormat = [{
    $view `,` $activation `,` $deferred (`acc` `(` $acc^ `)`)? `mb` `(`
    $micro_batch `)` attr-dict `:` qualified(type($view)) `,`
    qualified(type($activation))
  }];
  let hasVerifier = 1;
}

def RATrain_SendOp : RATrain_StageOp<"send", [RATrain_TransferOpInterface]> {
  let summary = "send a micro-batch's boundary tensor to a neighbour stage";
  let description = [{
    `activation`: the output of a virtual stage's last layer, to virtual
    stage + 1; `gradient`: the gradient of its input, to virtual stage - 1.
    `peer` is the rank that runs that virtual stage; `chunk` the sending
    virtual stage (omitted when the rank runs only the virtual stage with its
    own number). A rank may send to itself (between two of its chunks).
    Sends are buffered: the stage goes on at once.

    `one_sided` (the plan's `transfers = one_sided`; never to itself): the
    tensor is put straight into the peer's receive buffer, which the
    matching `ratrain.recv`, also `one_sided`, only waits for.
  }];
  let arguments = (ins RATrain_Payload:$payload, I64Attr:$micro_batch,
                       I64Attr:$peer, OptionalAttr<I64Attr>:$chunk,
                       UnitAttr:$one_sided);
  let assemblyFormat = [{
    $payload `mb` `(` $micro_batch `)` `to` `(` $peer `)`
    (`chunk` `(` $chunk^ `)`)? (`one_sided` $one_sided^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The sending virtual stage.
    int64_t getVirtualStage();
    /// The virtual stage that receives the tensor.
    int64_t getPeerVirtualStage();
  }];
}

def RATrain_RecvOp : RATrain_StageOp<"recv", [RATrain_TransferOpInterface]> {
  let summary = "receive a micro-batch's boundary tensor from a neighbour";
  let description = [{
    Blocks the stage until the matching `ratrain.send` of rank `peer`
    arrives. `chunk` is the receiving virtual stage (omitted as for send).
    `one_sided`: the matching send puts the tensor into this receive's
    buffer whenever it is issued; the buffer is reserved from the earliest
    point that put can land (docs/schedule.md, "One-sided transfers").
  }];
  let arguments = (ins RATrain_Payload:$payload, I64Attr:$micro_batch,
                       I64Attr:$peer, OptionalAttr<I64Attr>:$chunk,
                       UnitAttr:$one_sided);
  let assemblyFormat = [{
    $payload `mb` `(` $micro_batch `)` `from` `(` $peer `)`
    (`chunk` `(` $chunk^ `)`)? (`one_sided` $one_sided^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The receiving virtual stage.
    int64_t getVirtualStage();
    /// The virtual stage that sends the tensor.
    int64_t getPeerVirtualStage();
  }];
}

//===----------------------------------------------------------------------===//
// Lifecycle
//===----------------------------------------------------------------------===//

def RATrain_GradReadyOp : RATrain_StageOp<"grad_ready", [
    TypesMatchWith<"result is the ready gradient of the same layer",
      "grad", "ready",
      "::ratrain::GradType::get($_self.getContext(), "
      "::llvm::cast<::ratrain::GradType>($_self).getLayer(), "
      "::ratrain::GradPhase::Ready)">]> {
  let summary = "mark a layer's gradient complete for this step";
  let description = [{
    The gradient is ready once the backward of the layer's last micro-batch
    has finished; it may now be synchronized.
  }];
  let arguments = (ins RATrain_PartialGrad:$grad);
  let results = (outs RATrain_ReadyGrad:$ready);
  let assemblyFormat = "$grad attr-dict `:` qualified(type($grad))";
}

def RATrain_SyncOp : RATrain_StageOp<"sync"> {
  let summary = "asynchronous collective over the data-parallel group";
  let description = [{
    `all_reduce` and `reduce_scatter` take a ready gradient and produce a
    synced one (`reduce_scatter` keeps this rank's shard, as in ZeRO-2);
    `all_gather` takes a parameter view and re-assembles it (ZeRO-1/2).
    Returns at once with an async value; `ratrain.wait` completes it.

    ```mlir
    %t = ratrain.sync all_reduce %g hierarchy flat
        : !ratrain.grad<3, ready> -> !ratrain.async<!ratrain.grad<3, synced>>
    ```

    An optional `wire` type quantizes the communication (ZeRO++): an
    `all_gather` of a view (qwZ) or a `reduce_scatter` of a gradient (qgZ)
    may send `int8` or `int4` block codes instead of native elements.

    ```mlir
    %t = ratrain.sync reduce_scatter %g hierarchy hierarchical wire int4
        : !ratrain.grad<3, ready> -> !ratrain.async<!ratrain.grad<3, synced>>
    ```

    Under a partitioning policy (the plan's `weight_partition` and
    `grad_partition`) a sync runs on part of the group: `inside` network
    level L (the members sharing this rank's level-L group) or `across` it
    (one member per level-L group); `members` is the size of that part.
    An `all_gather across` fills the
    secondary partition of a view, an `all_gather inside` the full view
    from it; a `reduce_scatter inside` whose result is still `ready` leaves
    the level-L partition of the gradient, which a `reduce_scatter across`
    reduces into this rank's shard.

    ```mlir
    %s = ratrain.sync all_gather %v hierarchy flat across level 0 members 4
        : !ratrain.view<3> -> !ratrain.async<!ratrain.view<3>>
    %p = ratrain.sync reduce_scatter %g hierarchy flat inside level 1 members 4
        : !ratrain.grad<3, ready> -> !ratrain.async<!ratrain.grad<3, ready>>
    ```

    Under partial synchronization (the plan's `sync_period`, DreamDDP) an
    `all_reduce` of a layer's updated master averages it over the group in
    the steps `s` with `s mod period = phase` and completes at once in the
    others (docs/schedule.md, "Partial synchronization"):

    ```mlir
    %a = ratrain.sync all_reduce %m hierarchy flat every 4 phase 1
        : !ratrain.master<3> -> !ratrain.async<!ratrain.master<3>>
    ```
  }];
  let arguments = (ins RATrain_SyncKind:$kind, RATrain_AnyState:$state,
                       RATrain_SyncHierarchy:$hierarchy,
                       OptionalAttr<RATrain_SyncScope>:$scope,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$level,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$members,
                       OptionalAttr<RATrain_WireType>:$wire,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$period,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$phase);
  let results = (outs RATrain_AnyAsync:$pending);
  let assemblyFormat = [{
    $kind $state `hierarchy` $hierarchy
    ($scope^ `level` $level `members` $members)?
    (`wire` $wire^)? (`every` $period^ `phase` $phase)? attr-dict `:`
    qualified(type($state)) `->` qualified(type($pending))
  }];
  let builders = [
    // A sync of native elements over the whole group.
    OpBuilder<(ins "::mlir::Type":$pending, "::ratrain::SyncKind":$kind,
                   "::mlir::Value":$state,
                   "::ratrain::SyncHierarchy":$hierarchy), [{
      build($_builder, $_state, pending, kind, state, hierarchy,
            ::ratrain::SyncScopeAttr(), ::mlir::IntegerAttr(),
            ::mlir::IntegerAttr(), ::ratrain::WireTypeAttr(),
            ::mlir::IntegerAttr(), ::mlir::IntegerAttr());
    }]>,
    // A sync over the whole group with an optional wire type.
    OpBuilder<(ins "::mlir::Type":$pending, "::ratrain::SyncKind":$kind,
                   "::mlir::Value":$state,
                   "::ratrain::SyncHierarchy":$hierarchy,
                   "::ratrain::WireTypeAttr":$wire), [{
      build($_builder, $_state, pending, kind, state, hierarchy,
            ::ratrain::SyncScopeAttr(), ::mlir::IntegerAttr(),
            ::mlir::IntegerAttr(), wire, ::mlir::IntegerAttr(),
            ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def RATrain_WaitOp : RATrain_StageOp<"wait", [
    TypesMatchWith<"result is the async value's type", "pending", "value",
      "::llvm::cast<::ratrain::AsyncType>($_self).getValue()">]> {
  let summary = "wait for an asynchronous operation and take its value";
  let arguments = (ins RATrain_AnyAsync:$pending);
  let results = (outs AnyType:$value);
  let assemblyFormat = "$pending attr-dict `:` qualified(type($pending))";
}

def RATrain_GradNormOp : RATrain_StageOp<"grad_norm"> {
  let summary = "the step's global gradient norm, for gradient clipping";
  let description = [{
    Sums the squares of this rank's part of each synced gradient (its shard
    after a reduce-scatter; a data-parallel replica's share of a gradient
    every replica holds whole after an all-reduce) and starts an all-reduce
    of the sum over every rank of the job. The wait yields the square of
    the global L2 norm, which the stage's `ratrain.update`s read: under
    exact clipping no update runs before every layer of every stage is
    synced (docs/schedule.md, "Gradient clipping").

    ```mlir
    %n = ratrain.grad_norm %g1, %g2
        : !ratrain.grad<1, synced>, !ratrain.grad<2, synced>
          -> !ratrain.async<!ratrain.grad_norm>
    ```
  }];
  let arguments = (ins Variadic<RATrain_SyncedGrad>:$grads);
  let results = (outs RATrain_AnyAsync:$pending);
  let assemblyFormat = [{
    $grads attr-dict `:` qualified(type($grads)) `->` qualified(type($pending))
  }];
  let hasVerifier = 1;
}

def RATrain_UpdateOp : RATrain_StageOp<"update", [
    AllTypesMatch<["master", "new_master"]>,
    AllTypesMatch<["opt_state", "new_opt_state"]>]> {
  let summary = "optimizer step of one layer";
  let description = [{
    Applies the synced gradient to the FP32 master weights and the optimizer
    state; the new master feeds `ratrain.view_prefetch`. Under partial
    synchronization (the plan's `sync_period`) it applies this replica's
    own `ready` gradient. With `clip` (the
    plan's `max_grad_norm` is set) the gradient is first multiplied by
    `min(1, max_grad_norm / (sqrt(clip) + 1e-6))`, PyTorch's
    `clip_grad_norm_`.

    ```mlir
    %m, %s = ratrain.update adamw %g, %master, %state clip %norm
        : !ratrain.grad<3, synced>, !ratrain.master<3>, !ratrain.opt_state<3>
    ```
  }];
  let arguments = (ins RATrain_Optimizer:$optimizer,
                       RATrain_UpdateGrad:$grad, RATrain_AnyMaster:$master,
                       RATrain_AnyOptState:$opt_state,
                       Optional<RATrain_AnyGradNorm>:$clip);
  let results = (outs RATrain_AnyMaster:$new_master,
                      RATrain_AnyOptState:$new_opt_state);
  let assemblyFormat = [{
    $optimizer $grad `,` $master `,` $opt_state (`clip` $clip^)? attr-dict `:`
    qualified(type($grad)) `,` qualified(type($master)) `,`
    qualified(type($opt_state))
  }];
  let builders = [
    // An update without gradient clipping.
    OpBuilder<(ins "::mlir::Type":$newMaster, "::mlir::Type":$newOptState,
                   "::ratrain::Optimizer":$optimizer, "::mlir::Value":$grad,
                   "::mlir::Value":$master, "::mlir::Value":$optState), [{
      build($_builder, $_state, newMaster, newOptState, optimizer, grad,
            master, optState, ::mlir::Value());
    }]>
  ];
  let hasVerifier = 1;
}

def RATrain_ViewPrefetchOp : RATrain_StageOp<"view_prefetch", [
    TypesMatchWith<"result is an async view of the same layer",
      "master", "pending",
      "::ratrain::AsyncType::get($_self.getContext(), "
      "::ratrain::ViewType::get($_self.getContext(), "
      "::llvm::cast<::ratrain::MasterType>($_self).getLayer()))">]> {
  let summary = "re-materialize a layer's parameter view and move it in place";
  let description = [{
    Casts the updated master weights to the low-precision view and moves it
    to where the layer's next forward reads it. Asynchronous.
  }];
  let arguments = (ins RATrain_AnyMaster:$master);
  let results = (outs RATrain_AnyAsync:$pending);
  let assemblyFormat = "$master attr-dict `:` qualified(type($master))";
}

def RATrain_OffloadOp : RATrain_StageOp<"offload", [
    TypesMatchWith<"result is the async offloaded state", "state", "pending",
      "::ratrain::AsyncType::get($_self.getContext(), "
      "::ratrain::OffloadedType::get($_self.getContext(), $_self))">]> {
  let summary = "move a state out of DDR";
  let description = [{
    Frees the state's DDR while it is not needed (storage offload as in
    GriNNder; host offload). `ratrain.reload` brings it back.
  }];
  let arguments = (ins RATrain_AnyState:$state, RATrain_StorageTier:$tier);
  let results = (outs RATrain_AnyAsync:$pending);
  let assemblyFormat = [{
    $state `to` $tier attr-dict `:` qualified(type($state))
  }];
}

def RATrain_ReloadOp : RATrain_StageOp<"reload", [
    TypesMatchWith<"result is the async reloaded state", "offloaded",
      "pending",
      "::ratrain::AsyncType::get($_self.getContext(), "
      "::llvm::isa<::ratrain::OffloadedType>($_self) ? "
      "::llvm::cast<::ratrain::OffloadedType>($_self).getState() : $_self)">]> {
  let summary = "bring an offloaded state back into DDR";
  let description = [{
    The operand is either an `!ratrain.offloaded<T>` (a state this step moved
    out with `ratrain.offload` and waited for), or a master or optimizer
    state block argument of the enclosing stage: a state the plan keeps in
    the offload tier between steps (`offload = optimizer|master`) is, at
    the step start, in the tier, and its block argument names that copy.
    The result is the state back in DDR once waited.

    ```mlir
    %r = ratrain.reload %o3 : !ratrain.opt_state<3>
    %o3r = ratrain.wait %r : !ratrain.async<!ratrain.opt_state<3>>
    ```
  }];
  let arguments = (ins AnyTypeOf<[RATrain_AnyOffloaded, RATrain_AnyMaster,
                                  RATrain_AnyOptState]>:$offloaded);
  let results = (outs RATrain_AnyAsync:$pending);
  let assemblyFormat = "$offloaded attr-dict `:` qualified(type($offloaded))";
  let hasVerifier = 1;
}

#endif // RATRAIN_OPS_TD
