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
  // Attributes the schedule passes attach to ratrain ops (typed; the
  // dialect verifies the type of each one it finds).
  let discardableAttrs = (ins
    // On a value-producing op: `array<i64: id, offset, bytes, ...>`, one
    // triple per result (the DDR buffer the result lives in; bytes 0 for
    // results that are not in DDR). On `ratrain.send` / `ratrain.recv`: one
    // triple, the message buffer.
    "::mlir::DenseI64ArrayAttr":$buffers,
    // On a stage: `array<i64: id, offset, bytes, ...>`, one triple per block
    // argument.
    "::mlir::DenseI64ArrayAttr":$arg_buffers,
    // On a stage: a dictionary of buffers not tied to a value, each
    // `array<i64: id, offset, bytes>`: `workspace`, `sync_staging`,
    // `attention_scratch`.
    "::mlir::DictionaryAttr":$scratch_buffers,
    // On a stage: the largest sum of live bytes over its program positions.
    "::mlir::IntegerAttr":$peak_bytes,
    // On a stage: the first program position (-1: step start) at the peak.
    "::mlir::IntegerAttr":$peak_position,
    // On a stage: the arena size, max(offset + bytes) over its buffers.
    "::mlir::IntegerAttr":$arena_bytes,
    // On a pipeline: the DDR capacity per cluster the buffers were checked
    // against.
    "::mlir::IntegerAttr":$capacity_bytes,
    // On the module: the machine file given to --import-hf-config --machine.
    "::mlir::StringAttr":$machine
  );
  let hasOperationAttrVerify = 1;
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

#endif // RATRAIN_DIALECT_TD
