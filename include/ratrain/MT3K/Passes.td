//===- Passes.td - mt3k passes -----------------------------*- tablegen -*-===//
//
// Passes on mt3k programs. Both use the async-hazard analysis
// (ratrain/Analysis/AsyncHazards.h), so the waits one inserts are exactly
// those the other requires. The generated reference is docs/mt3k-passes.md.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_PASSES_TD
#define RATRAIN_MT3K_PASSES_TD

include "mlir/Pass/PassBase.td"

def MT3KInsertWaits
    : Pass<"mt3k-insert-waits", "::ratrain::mt3k::ProgramOp"> {
  let summary = "Wait on asynchronous operations where their effects demand it";
  let description = [{
    Places the `mt3k.wait`s that a program is missing, from the hazards the
    async-hazard analysis derives from the operations' declared memory
    effects (the hazard model: see `--mt3k-verify`).

    * An asynchronous operation that a later operation conflicts with before
      any wait on its token is waited on right before its first conflicting
      operation: the latest point that is still early enough. If the token
      already had a wait further down, the token leaves that wait (a wait
      left without tokens is erased): a token is waited on once.
    * An asynchronous operation whose token is never waited on and that
      nothing conflicts with is waited on at the end of the program.
    * An asynchronous operation of the prologue (an `mt3k.offload` marked
      `mt3k.prologue`) is waited on within the prologue: the new wait comes
      no later than the first operation of the iteration and is marked
      `mt3k.prologue` too.

    Tokens waited on at one point share one new `mt3k.wait`, in program
    order. Waits that are already early enough are left as they are, and a
    program without hazards is left unchanged, so the pass is idempotent.

    ```mlir
    %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
    mt3k.fill %a, 0.0 : !mt3k.buffer<ddr, 64xf32>   // overwrites the DMA's source
    mt3k.wait %t
    ```

    becomes

    ```mlir
    %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
    mt3k.wait %t
    mt3k.fill %a, 0.0 : !mt3k.buffer<ddr, 64xf32>
    ```
  }];
}

def MT3KVerify : Pass<"mt3k-verify", "::mlir::ModuleOp"> {
  let summary = "Check the waits, offload keys and pipeline traffic of mt3k programs";
  let description = [{
    The program-wide and cross-program checks of an mt3k module; the
    operation verifiers check only local structure (types, shapes, ranges,
    the prologue's position). Reports every violation and fails if there is
    one; the IR is not changed.

    **Hazards** (the async-hazard analysis,
    `include/ratrain/Analysis/AsyncHazards.h`). An asynchronous operation
    (`mt3k.dma`, the collectives, `mt3k.send`, `mt3k.recv`, `mt3k.offload`,
    `mt3k.reload`: the operations of the `AsyncOpInterface`) performs its
    memory effects at some time between the operation and the `mt3k.wait`
    that consumes its token. Every operation's accesses are read from its
    `MemoryEffectOpInterface`:

    * an effect on a buffer operand accesses the operand's bytes, resolved
      through `mt3k.view`s to an absolute byte range of its memory space
      (`ddr`, `gsm`, `am`); an AM effect whose parameter is a core (the AM
      side of an `mt3k.dma`) touches that core's AM only, any other AM
      effect every core's AM;
    * an effect on the offload store (`mt3k.offload` writes, `mt3k.reload`
      reads) accesses the slot `[tier, key]` named by its parameters;
    * effects on the runtime resource (network, data loader, loss log) are
      ordered by the runtime and never conflict;
    * an operation that declares no effects reads and writes every buffer
      operand.

    Two accesses conflict when they touch a common byte of one memory (or
    the same store slot) and at least one writes: read-after-write,
    write-after-read or write-after-write. A program is hazard-free when, for
    every asynchronous operation, each later operation that conflicts with
    it comes after the wait on its token (in a straight-line program, a wait
    dominates exactly the operations after it). Reported: the first
    conflicting operation per asynchronous operation, with a note at the
    asynchronous operation, and every token that is never waited on.

    **Offload keys.** A key is offloaded at most once by the prologue and
    once per iteration; a reload names a key offloaded earlier to the same
    tier, with the same byte size.

    **Pipeline traffic.** On `pipeline` groups, where a rank's index is its
    program's stage, the k-th `mt3k.send` of stage s to stage p with tag t
    is received by the k-th `mt3k.recv` of stage p from s with tag t, into
    as many bytes, and every recv has such a send. Every stage takes part in
    each collective and barrier on a pipeline group: all programs issue the
    same sequence of them (operation, reduction, algorithm, root, element
    type and count of each buffer). Stages without a program in the module
    are not checked.

    Meant to run on the result of `--ratrain-lower-to-mt3k`, after
    `--mt3k-insert-waits`.
  }];
}

#endif // RATRAIN_MT3K_PASSES_TD
