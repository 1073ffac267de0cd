//===- RATrainDialect.td - The ratrain dialect -------------*- tablegen -*-===//
//
// The `ratrain` dialect describes LLM training as training-state lifecycle
// scheduling: a model, the plan that parallelizes it, and per pipeline stage
// a straight-line program of layer compute and lifecycle operations.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_DIALECT_TD
#define RATRAIN_DIALECT_TD

include "mlir/IR/OpBase.td"

def RATrain_Dialect : Dialect {
  let name = "ratrain";
  let cppNamespace = "::ratrain";
  let summary = "Training-state lifecycle scheduling for dense LLMs";
  let description = [{
    A `ratrain` module describes one training step of a dense decoder-only
    LLM under non-interleaved 1F1B pipeline parallelism and data parallelism.

    * `ratrain.model` lists the model's layers with their sizes. Layer 0 is the
      token embedding, layers 1..N the decoder layers, layer N+1 the final
      norm and LM head (with the loss).
    * The `ratrain.plan` attribute on the model records the parallel
      configuration the planner chose.
    * `ratrain.pipeline` holds one `ratrain.stage` per pipeline stage. A stage
      is a step function: its block arguments are the training states it owns
      at the start of the step (the low-precision parameter views, FP32 master
      weights and optimizer states of its layers) and `ratrain.yield` returns
      their values for the next step.
    * Inside a stage, ops run in program order on the stage's compute stream;
      `ratrain.sync`, `ratrain.view_prefetch`, `ratrain.offload` and
      `ratrain.reload` are asynchronous and return `!ratrain.async<T>` values
      that `ratrain.wait` turns into `T`.

    States are typed by kind, layer and lifecycle phase, so a schedule that
    uses a state in the wrong phase (an update of a gradient that was never
    synchronized, a forward on a master weight, a backward on an activation
    that was not recovered) does not verify.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

#endif // RATRAIN_DIALECT_TD
