//===- MT3KDialect.td - The mt3k target dialect ------------*- tablegen -*-===//
//
// The `mt3k` dialect: a low-level target IR for an MT-3000-like machine.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_DIALECT_TD
#define RATRAIN_MT3K_DIALECT_TD

include "mlir/IR/OpBase.td"

def MT3K_Dialect : Dialect {
  let name = "mt3k";
  let cppNamespace = "::ratrain::mt3k";
  // Outlined layer bodies are `func.func`s that programs `func.call`.
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let summary = "Target IR for an MT-3000-like cluster: explicit memories, "
                "DMA, kernels and communication";
  let description = [{
    `mt3k` is the target dialect of RATrain. A module describes one training
    iteration of a pipeline-parallel job on a machine whose compute clusters
    have an explicit memory hierarchy, as on the MT-3000:

    * **DDR**: the cluster's large off-chip memory (20 GB usable on MT-3000).
      Every training state (FP16 parameter views, FP32 master weights, Adam
      moments, gradients, stored activations, communication buffers) lives in
      one DDR arena per rank, at the offset the buffer-assignment pass chose.
    * **GSM**: the cluster's on-chip shared memory (6 MB on MT-3000).
    * **AM**: each core's private array memory (about 768 KB per core). An AM
      buffer names the same offset in the AM of every core of the cluster.

    A module holds, at its top level:

    * exactly one `mt3k.machine`, which records the capacities of the three
      memory spaces, the number of cores, the DMA channels and the required
      buffer alignment (all taken from the machine model);
    * one `mt3k.group` per process group (data-parallel, pipeline,
      node-local), a symbol that collectives and point-to-point transfers name;
    * one `mt3k.program` per rank role (pipeline stage): a straight-line list
      of operations that every rank of that stage executes once per
      iteration.

    Inside a program:

    * `mt3k.buffer` places a typed buffer (`!mt3k.buffer<space, shape x
      elem>`) at a static byte offset of its memory space; `mt3k.view`
      reinterprets a byte range of a buffer (tiles, reshapes, shards).
      Buffers are references: operations read and write the memory they name.
    * `mt3k.dma` starts an asynchronous copy between two different memory
      spaces and yields a `!mt3k.token`; `mt3k.wait` blocks until the given
      tokens have completed. Every token must be waited on, before any
      operation touches memory the asynchronous operation still reads or
      writes: asynchronous operations implement `AsyncOpInterface`, every
      operation declares its memory effects, and `--mt3k-verify` checks the
      waits that `--mt3k-insert-waits` places (docs/mt3k-passes.md).
    * Kernel calls (`mt3k.gemm`, `mt3k.attention_fwd`, `mt3k.attention_bwd`,
      `mt3k.rmsnorm_fwd`, `mt3k.rmsnorm_bwd`, `mt3k.elementwise`,
      `mt3k.adamw`, `mt3k.fill`) run synchronously on the whole cluster.
      Operands may live in any space: operands in GSM/AM have been staged by
      explicit DMA; operands in DDR are streamed by the kernel itself (as the
      MT-3000 library kernels do with their own double-buffered DMA).
    * Communication (`mt3k.all_reduce`, `mt3k.reduce_scatter`,
      `mt3k.all_gather`, `mt3k.broadcast`, `mt3k.send`, `mt3k.recv`) works
      on DDR buffers over a named group, is asynchronous, and yields a token.
    * `mt3k.offload` and `mt3k.reload` move a DDR buffer to and from the
      runtime's host-memory or storage tier, asynchronously.
    * `mt3k.load_batch` and `mt3k.report_loss` connect the program to the
      runtime's data loader and loss log; `mt3k.init_param` (only in the
      program's prologue, which runs once before the first iteration)
      initializes parameters and optimizer state deterministically.

    The emitter (`ratrain-translate`) turns each program into a C++ function
    that calls the runtime: buffers become pointers into the rank's arena,
    tokens become request handles.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // On the module: what the runtime needs besides the programs (the model's
  // sizes, the job's layout). Declared and typed, so a wrong or misspelled
  // one is a verifier error.
  let hasOperationAttrVerify = 1;
  let discardableAttrs = (ins
    "::ratrain::mt3k::ModelAttr":$model,
    "::ratrain::mt3k::JobAttr":$job
  );
  let extraClassDeclaration = [{
    /// Registers the types and attributes (defined in MT3KTypes.cpp).
    void registerTypesAndAttributes();
  }];
}

#endif // RATRAIN_MT3K_DIALECT_TD
