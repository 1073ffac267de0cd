//===- Passes.td - RATrain passes --------------------------*- tablegen -*-===//
//
// The pipeline, in order:
//   --ratrain-plan                 choose pp/dp/micro-batching/recompute/ZeRO
//   --ratrain-expand-pipeline      per-rank programs of a pipeline schedule
//   (--ratrain-expand-1f1b          the non-interleaved 1F1B case)
//   --ratrain-schedule-lifecycle   place sync/update/view-prefetch/recompute
//   --ratrain-assign-buffers       DDR offsets under the capacity
//   --ratrain-verify-schedule      reject unsafe or deadlocking schedules
//   --ratrain-lower-to-mt3k        buffers, DMA, kernels, collectives
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TRANSFORMS_PASSES_TD
#define RATRAIN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RATrainPlan : Pass<"ratrain-plan", "mlir::ModuleOp"> {
  let summary = "Choose the fastest training configuration that fits DDR";
  let description = [{
    Runs the resource-aware planner on every `ratrain.model` of the module:
    searches pipeline depth, data-parallel width, micro-batch size and count,
    per-stage recompute policy, optimizer sharding and the stage layer split;
    keeps the plans whose peak memory per cluster fits the machine's usable
    DDR; attaches the fastest as the model's `plan`. An infeasible request is
    an error that says what is missing for the closest plan.
  }];
  let options = [
    Option<"machineFile", "machine", "std::string", "\"\"",
           "machine file (YAML); defaults to the module's ratrain.machine">,
    Option<"clusters", "clusters", "int64_t", "0",
           "compute clusters to use (0: all of the machine)">,
    Option<"globalBatch", "global-batch", "int64_t", "0",
           "sequences per step (required)">,
    Option<"policy", "policy", "std::string", "\"ratrain\"",
           "lifecycle policy the step time is predicted for: ratrain or "
           "gpu-style">,
    Option<"pipelineDepth", "pp", "int64_t", "0",
           "fix the pipeline depth (0: search)">,
    Option<"microBatchSize", "micro-batch-size", "int64_t", "0",
           "fix the micro-batch size (0: search)">,
    Option<"zero", "zero", "int64_t", "-1",
           "fix the ZeRO stage 0, 1, 2 or 3 (-1: search)">,
    Option<"offload", "offload", "std::string", "\"\"",
           "fix the offload policy: none, optimizer or master (empty: "
           "search when the machine has an offload tier)">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "pipeline schedule: 1f1b, interleaved-1f1b, zb-h1, zbv, or auto "
           "(search every kind with the rest of the plan)">,
    Option<"virtualStages", "virtual-stages", "int64_t", "0",
           "fix the virtual stages per rank (0: 2 and 4 for "
           "interleaved-1f1b, 2 for zbv, 1 otherwise)">,
    Option<"partition", "partition", "std::string", "\"\"",
           "fix the sharding preset: flat, zero++ or three-level "
           "(docs/schedule.md, \"Partitioning\"); weight-partition, "
           "grad-partition, weight-wire and grad-wire override its fields">,
    Option<"weightPartition", "weight-partition", "int64_t", "-2",
           "secondary weight partition level (ZeRO-3; -1: none)">,
    Option<"gradPartition", "grad-partition", "int64_t", "-2",
           "per-micro-batch gradient reduce-scatter level (ZeRO >= 2; -1: "
           "none)">,
    Option<"weightWire", "weight-wire", "std::string", "\"\"",
           "wire type of the weight all-gathers: native, int8 or int4 (qwZ)">,
    Option<"gradWire", "grad-wire", "std::string", "\"\"",
           "wire type of the gradient reduce-scatters: native, int8 or int4 "
           "(qgZ)">,
    Option<"allowQuantized", "allow-quantized", "bool", "false",
           "when no sharding option is given, also search int8/int4 wire "
           "formats (changes the numerics; off by default)">,
    Option<"maxGradNorm", "max-grad-norm", "double", "0.0",
           "clip the gradients to this global L2 norm before any update "
           "(0: no clipping; docs/schedule.md, \"Gradient clipping\")">,
    Option<"transfers", "transfers", "std::string", "\"two-sided\"",
           "how pipeline messages travel between ranks: two-sided (send and "
           "receive) or one-sided (a put into the receiver's reserved "
           "buffer; docs/schedule.md, \"One-sided transfers\")">,
    Option<"syncPeriod", "sync-period", "int64_t", "1",
           "partial synchronization (DreamDDP): replicas update with their "
           "own gradients and average each layer's masters once every N "
           "steps, the layers spread over the N phases (1: all-reduce every "
           "gradient every step; docs/schedule.md, \"Partial "
           "synchronization\")">,
    Option<"recompute", "recompute", "std::string", "\"\"",
           "fix every stage's recompute policy: none, selective or full "
           "(empty: search)">,
    Option<"actOffload", "act-offload", "std::string", "\"\"",
           "activation offload (GriNNder): none, all, or offloaded decoder "
           "layers per stage (\"2,0\"); empty: search where the machine has "
           "an offload tier (docs/schedule.md, \"Activation offload\")">,
    Option<"dpShares", "dp-shares", "std::string", "\"\"",
           "uneven data-parallel shares, micro-batches per replica "
           "(\"3,1\"); empty: even, or on a machine with classes of "
           "clusters the planner's (docs/planner.md, \"Heterogeneous "
           "clusters\")">,
    Option<"classLayout", "class-layout", "std::string", "\"search\"",
           "on a machine with classes of clusters: even, replicas, stages or "
           "search">,
    Option<"showTop", "show-top", "int64_t", "0",
           "print the best N plans as a remark on the model">
  ];
}

def RATrainExpand1F1B : Pass<"ratrain-expand-1f1b", "mlir::ModuleOp"> {
  let summary = "Expand a planned model into per-stage 1F1B programs";
  let description = [{
    `--ratrain-expand-pipeline=schedule=1f1b`, kept under its old name.
    Stage `s` of `p` runs the non-interleaved 1F1B order over
    `m` micro-batches: `min(p - s - 1, m)` warm-up forwards, then
    one-forward-one-backward pairs, then the cool-down backwards (see
    `--ratrain-expand-pipeline` for the ops of each action). Decoder layers
    store `full` activations under recompute `none`, `selective` under
    `selective` and `input` under `full`; the embedding and head always
    store `full`. The stage yields its states unchanged: lifecycle
    operations are placed by `--ratrain-schedule-lifecycle`.

    With `split-backward`, each layer's backward is its input part
    (`ratrain.backward_input`) immediately followed by its weight part
    (`ratrain.backward_weight`), in the same 1F1B order: the same
    computation as the fused `ratrain.backward`, bit for bit once lowered.
  }];
  let options = [
    Option<"splitBackward", "split-backward", "bool", "false",
           "split each backward into its input part and its weight part">
  ];
}

def RATrainExpandPipeline : Pass<"ratrain-expand-pipeline", "mlir::ModuleOp"> {
  let summary = "Expand a planned model into the per-rank programs of a "
                "pipeline schedule";
  let description = [{
    For every `ratrain.model` with a `plan` (and no pipeline yet), creates
    `ratrain.pipeline @<model>_step` after it with one `ratrain.stage` per
    rank, running the virtual stages (model chunks) the schedule puts on it.
    The schedule is an action list (ratrain/Schedule/PipelineSchedule.h,
    docs/pipeline-schedules.md): the plan's `schedule` by default,
    `schedule=` one of `1f1b`, `interleaved-1f1b`, `zb-h1`, `zbv` (the
    plan's virtual stages must fit it), or `schedule-file=` a CSV action list
    in torch.distributed.pipelining's format (one row per rank). The schedule
    is checked first: a missing or duplicated action, or ranks that block
    each other forever, is an error naming the action and its rank.

    Each action becomes ops of its rank, in order: `F` (virtual stage c,
    micro-batch k) is `recv activation` (c > 0), a `ratrain.forward` per
    layer of the chunk in ascending order, `send activation` (c < last); `B`
    is `recv gradient` (c < last), per layer in descending order a
    `ratrain.recompute` (decoder layers under recompute `full`) and a
    `ratrain.backward` accumulating into the previous micro-batch's gradient,
    then `send gradient` (c > 0). Transfers between two chunks of the same
    rank are a send with its receive right after it. When a rank's actions
    hold `SEND_*`/`RECV_*` actions, the transfers are placed there instead.
    With interleaving, transfers name their chunk (`chunk(c)`). `I` is the
    same with a `ratrain.backward_input` per layer, and `W` the
    `ratrain.backward_weight` of each of the chunk's layers in the same
    order; with `split-backward`, a `B` is built as `I` immediately
    followed by `W`. The plan on the pipeline records the schedule kind
    used (`custom` for a file).
  }];
  let options = [
    Option<"scheduleName", "schedule", "std::string", "\"\"",
           "pipeline schedule: 1f1b, interleaved-1f1b, zb-h1 or zbv (empty: "
           "the plan's)">,
    Option<"scheduleFile", "schedule-file", "std::string", "\"\"",
           "a CSV action list (torch.distributed.pipelining format) to run">,
    Option<"splitBackward", "split-backward", "bool", "false",
           "run every fused backward (B) as its input part immediately "
           "followed by its weight part">
  ];
}

def RATrainScheduleLifecycle
    : Pass<"ratrain-schedule-lifecycle", "mlir::ModuleOp"> {
  let summary = "Place gradient sync, update, view re-materialization and "
                "recompute in each stage";
  let description = [{
    Inserts per layer `grad_ready`, an asynchronous `sync` (`all_reduce`;
    `reduce_scatter` with ZeRO >= 2; `hierarchical` when the stage's
    data-parallel group spans nodes), its `wait`, `update adamw`,
    `view_prefetch` and its `wait` (with ZeRO-1/2 an `all_gather` of the
    new view and its `wait`), and returns the new states from the yield.
    With ZeRO-3 the view stays this rank's shard and every compute that
    reads it (consecutive readers of one view together) reads an
    `all_gather` of it and its `wait`, the gather issued right before the
    compute before it.
    When the plan offloads states (`offload = optimizer|master`), each
    update is bracketed by a `reload` of the offloaded states (of the stage
    arguments, which name the copies in the tier) and their write-back
    `offload`, streamed through two buffers (a layer is reloaded once the
    layer two updates earlier has written back). With ZeRO-2 a
    reduce-scatter's `wait` comes where it is predicted complete, freeing
    the layer's full gradient (with m = 1 at most one is in flight when a
    backward starts).

    `policy=ratrain`: a layer's sync is issued right after its last backward;
    its wait + update are placed at the first point where the predicted
    compute issued since then (CostModel seconds) covers the predicted
    collective time on the stage's communication stream (else at the end),
    but never before the stage's last gradient send, which the upstream
    stages wait for;
    the view prefetch follows the update at once and is waited as late as
    possible (before the yield); under ZeRO-1/2 the view's `all_gather` is
    issued right after the next update (the last one's before the yield),
    counted on the communication stream, and waited before the yield.
    The recompute of the first `recompute-ahead` layers of a micro-batch's
    backward is hoisted above that micro-batch's `recv gradient` so it
    overlaps the wait for the downstream stage; the others stay just before
    their backward.

    `policy=gpu-style`: all grad_ready + syncs after the stage's last
    operation, then all waits, all updates, all view casts (and
    all-gathers): whole-model phases at the iteration boundary; each
    recompute immediately before its backward.

    Records the policy on the pipeline.
  }];
  let options = [
    Option<"policy", "policy", "std::string", "\"ratrain\"",
           "lifecycle policy: ratrain or gpu-style">,
    Option<"machineFile", "machine", "std::string", "\"\"",
           "machine file (YAML); defaults to the module's ratrain.machine">,
    Option<"recomputeAhead", "recompute-ahead", "int64_t", "1",
           "ratrain policy: layers whose recompute is hoisted above the "
           "micro-batch's recv gradient">
  ];
}

def RATrainAssignBuffers : Pass<"ratrain-assign-buffers", "mlir::ModuleOp"> {
  let summary = "Assign DDR offsets to every buffer of every stage";
  let description = [{
    Computes the live range (in program positions) of every buffer of each
    stage: parameter views, master weights and optimizer states (0 bytes
    when the plan keeps them in the offload tier; reloaded states in the
    streaming window), gradients (full-size accumulation buffers; the ZeRO-2
    shard from the reduce-scatter's wait on),
    stored activations per micro-batch, recomputed activations, pipeline
    send/receive buffers, and the stage's kernel workspace, gradient-sync
    staging and attention scratch. Sizes follow the planner's memory model.
    Persistent buffers are stacked at the bottom of the arena; the others
    are packed by a greedy-by-size, first-fit interval allocator. Records
    `ratrain.buffers` on ops, `ratrain.arg_buffers`, `ratrain.scratch_buffers`,
    `ratrain.peak_bytes`, `ratrain.peak_position` and `ratrain.arena_bytes`
    on stages (see docs/schedule.md). A stage whose arena exceeds the
    capacity (the machine's usable DDR per cluster) is an error naming the
    peak position and the largest live buffers.
  }];
  let options = [
    Option<"machineFile", "machine", "std::string", "\"\"",
           "machine file (YAML); defaults to the module's ratrain.machine">,
    Option<"capacity", "capacity", "int64_t", "0",
           "DDR bytes per cluster (0: the machine's usable DDR)">,
    Option<"reportFile", "report", "std::string", "\"\"",
           "write live bytes per program position of each stage as CSV to "
           "this file ('-' for stdout)">
  ];
}

def RATrainVerifySchedule
    : Pass<"ratrain-verify-schedule", "mlir::ModuleOp"> {
  let summary = "Reject unsafe or deadlocking stage programs";
  let description = [{
    Walks every stage in program order and rejects: a gradient marked ready
    before all micro-batches accumulated into it, or a sync never waited
    (use-before-ready); an update whose gradient is not the result of a
    completed sync; a forward, backward or recompute (or the yield) using a
    view that is not in place; a backward or recompute without the stored
    activations of its micro-batch; a state used after it was replaced
    (stale); buffers that overlap in time and address (when
    `--ratrain-assign-buffers` ran); an update on a state the plan keeps in
    the offload tier that was not reloaded, a yield of such a state not
    written back, a reload of a state the plan keeps in DDR; and a pipeline
    whose sends and receives cannot all complete (deadlock), found by
    running all stages' transfers together with buffered sends.
  }];
}

#endif // RATRAIN_TRANSFORMS_PASSES_TD
