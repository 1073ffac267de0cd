//===- Passes.td - RATrain passes --------------------------*- tablegen -*-===//
//
// The pipeline, in order:
//   --ratrain-plan                 choose pp/dp/micro-batching/recompute/ZeRO
//   --ratrain-expand-1f1b          per-stage non-interleaved 1F1B programs
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
    Option<"showTop", "show-top", "int64_t", "0",
           "print the best N plans as a remark on the model">
  ];
}

#endif // RATRAIN_TRANSFORMS_PASSES_TD
