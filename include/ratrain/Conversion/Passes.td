//===- Passes.td - RATrain conversion passes ---------------*- tablegen -*-===//
//
// --ratrain-lower-to-mt3k: a scheduled, buffer-assigned ratrain pipeline to
// mt3k programs (one per pipeline stage). docs/lowering.md has the mapping.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CONVERSION_PASSES_TD
#define RATRAIN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def RATrainLowerToMT3K : Pass<"ratrain-lower-to-mt3k", "mlir::ModuleOp"> {
  let summary = "Lower a scheduled ratrain pipeline to mt3k programs";
  let description = [{
    Input: a module after `--ratrain-schedule-pipeline` (plan, expand-1f1b,
    schedule-lifecycle, assign-buffers, verify-schedule). Output: one
    `mt3k.machine` (capacities from the machine model), the `mt3k.group`s
    (`@dp` data-parallel, `@pp` pipeline, `@node` node-local when a sync is
    hierarchical) and one `mt3k.program @stage<s>` per pipeline stage. The
    ratrain model and pipeline are replaced.

    Per stage, every state lives at the DDR offset buffer assignment chose:
    the layer's parameter view, FP32 master (the view itself for FP32
    models), Adam m and v, the gradient, stored activations and pipeline
    messages, each carved into per-tensor `mt3k.view`s named after the
    HuggingFace LLaMA parameters. The prologue initializes parameters and
    optimizer state (`mt3k.init_param`). The iteration is the stage's
    schedule op by op: forward / backward / recompute become the kernel
    sequence of the layer, `sync` a collective on `@dp`, `update` AdamW
    through GSM staging with a DMA of the refreshed view into place (in place
    where the machine's DMA runs on its cores, `dma_on_cores`),
    `send` / `recv` point-to-point on `@pp` with tag `2 * mb + direction`.
    Temporaries of the layer kernels and the outgoing pipeline messages live
    in a lowering scratch area appended to the assigned arena (the
    program's `ddr_arena` is the assigned arena plus that area; it must fit
    the machine's DDR). Waits for asynchronous work are placed at the
    schedule's `ratrain.wait`s, and earlier where an operation would touch
    memory still in flight: those come from the async-hazard analysis of
    the ops' declared memory effects (what `--mt3k-insert-waits` does), so
    the programs pass `--mt3k-verify`. With `outline-layers` (the default) a
    decoder layer's forward, recompute and backward are one `func.func` per
    distinct kernel sequence, called with each layer's and micro-batch's
    buffers, so a program grows by a call, not a kernel sequence, per layer
    and micro-batch.
  }];
  let dependentDialects = ["::ratrain::mt3k::MT3KDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"machineFile", "machine", "std::string", "\"\"",
           "machine file (YAML); defaults to the module's ratrain.machine">,
    Option<"learningRate", "lr", "double", "3.0e-4", "AdamW learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.95", "AdamW beta2">,
    Option<"epsilon", "eps", "double", "1.0e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1",
           "AdamW decoupled weight decay">,
    Option<"weightDecayParams", "weight-decay-params", "std::string",
           "\"matrices\"",
           "which parameters weight decay applies to: matrices (every 2-D "
           "weight, embedding included; not the norm weights and biases), "
           "matrices-except-embeddings (nor the token embedding) or all">,
    Option<"initStd", "init-std", "double", "0.02",
           "standard deviation of the normal initialization of the "
           "embedding, projection and LM-head weights">,
    Option<"alignment", "alignment", "int64_t", "0",
           "buffer alignment in bytes recorded on mt3k.machine, checked "
           "against every assigned offset (0: the largest power of two up "
           "to 64 that divides all of them)">,
    Option<"outlineLayers", "outline-layers", "bool", "true",
           "emit each decoder layer's forward, recompute and backward as a "
           "call of a `func.func` shared by every layer and micro-batch "
           "with the same kernel sequence (its buffers are the arguments), "
           "instead of unrolling the kernels at every use">,
    Option<"traceSpans", "trace-spans", "bool", "true",
           "mark each forward, recompute, backward and update's work with "
           "`mt3k.trace_begin` / `mt3k.trace_end` under the simulator's name "
           "for it, for the runtime's per-op trace (--trace)">,
    Option<"averageInUpdate", "average-in-update", "bool", "true",
           "ZeRO-1 over a ring: each gradient reduce-scatter leaves its last "
           "reduction to the update (`leave_own`), which adds this rank's "
           "contribution and divides as the reduce-scatter would have "
           "(`mt3k.adamw` with `own`), saving a pass over each shard; fp32 "
           "and bf16 models without gradient clipping">
  ];
}

#endif // RATRAIN_CONVERSION_PASSES_TD
