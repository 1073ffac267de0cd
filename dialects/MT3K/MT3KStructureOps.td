//===- MT3KStructureOps.td - machine, groups, programs, memory -*- tablegen -*-===//
//
// Module structure (machine, groups, programs), buffers and data movement.
// Included from MT3KOps.td.
//
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Module structure
//===----------------------------------------------------------------------===//

def MT3K_MachineOp : MT3K_Op<"machine", [HasParent<"::mlir::ModuleOp">]> {
  let summary = "the target machine: memory capacities, cores, DMA channels";
  let description = [{
    Declares the resources of one compute cluster (the unit that runs one
    rank), filled from the machine model. A module holds exactly one.

    * `ddr`: usable DDR bytes (the planner's hard cap, 20 GB on MT-3000);
    * `gsm`: on-chip shared memory bytes (6 MB);
    * `am`: array-memory bytes *per core* (an AM buffer occupies the same
      range in the AM of every core);
    * `cores`: accelerator cores of the cluster;
    * `dma_channels`: DMA channels (the valid `channel` numbers of
      `mt3k.dma`);
    * `alignment`: every buffer offset must be a multiple of it (bytes, a
      power of two);
    * `offload_host_cache` (optional): bytes of host memory per cluster that
      cache the storage tier's keys (the machine file's
      `offload.host_cache_bytes_per_node` / clusters per node).

    ```mlir
    mt3k.machine "mt3000" ddr 21474836480 gsm 6291456 am 786432 cores 24
        dma_channels 20 alignment 64
    ```
  }];
  let arguments = (ins StrAttr:$name,
                       ConfinedAttr<I64Attr, [IntPositive]>:$ddr,
                       ConfinedAttr<I64Attr, [IntPositive]>:$gsm,
                       ConfinedAttr<I64Attr, [IntPositive]>:$am,
                       ConfinedAttr<I64Attr, [IntPositive]>:$cores,
                       ConfinedAttr<I64Attr, [IntPositive]>:$dma_channels,
                       ConfinedAttr<I64Attr, [IntPowerOf2]>:$alignment,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$offload_host_cache);
  let assemblyFormat = [{
    $name `ddr` $ddr `gsm` $gsm `am` $am `cores` $cores
    `dma_channels` $dma_channels `alignment` $alignment attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The capacity of `space` in bytes (per core for AM).
    int64_t getCapacity(::ratrain::mt3k::MemorySpace space);
    /// The machine of the module that holds `op`, or null.
    static MachineOp lookup(::mlir::Operation *op);
  }];
}

def MT3K_GroupOp : MT3K_Op<"group", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a named process group";
  let description = [{
    Declares a process group that collectives and point-to-point transfers
    name by symbol. `kind` says what the group spans: the ranks holding the
    same pipeline stage of different replicas (`data_parallel`), the stages
    of one replica (`pipeline`; a rank's index in it is its program's
    `stage`), the ranks of one node (`node_local`), or every rank of the job
    (`world`: the global gradient norm). `size` is the number of ranks in
    the group.

    Hierarchical partitioning (docs/schedule.md, "Partitioning") runs ZeRO
    collectives on parts of the data-parallel group at network `level` L:
    `data_inside` the members that share this rank's level-L group,
    `data_across` the members with this rank's index inside their level-L
    groups (one per group). Their ranks are ordered so that the collectives
    compose: an all-gather across and then inside a level is the all-gather
    of the whole group, likewise a reduce-scatter inside and then across
    (docs/runtime.md, "Partition groups").

    ```mlir
    mt3k.group @dp data_parallel size 64
    mt3k.group @pp pipeline size 4
    mt3k.group @dp_inside0 data_inside size 2 level 0
    mt3k.group @dp_across0 data_across size 32 level 0
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       MT3K_GroupKindAttr:$kind,
                       ConfinedAttr<I64Attr, [IntPositive]>:$size,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$level);
  let assemblyFormat =
      "$sym_name `` $kind `size` $size (`level` $level^)? attr-dict";
  let hasVerifier = 1;
}

def MT3K_ProgramOp : MT3K_Op<"program", [
    Symbol, IsolatedFromAbove, SingleBlock, NoTerminator,
    HasParent<"::mlir::ModuleOp">]> {
  let summary = "the straight-line program of one rank role";
  let description = [{
    The operations that every rank running pipeline stage `stage` executes,
    in order. The body is a single block without terminator; it has no
    control flow. Its prologue (the leading `mt3k.buffer`, `mt3k.view` and
    `mt3k.init_param` operations, and the offloads and waits marked
    `mt3k.prologue`) runs once before the first iteration; the rest runs
    once per training iteration. Programs on a module have distinct stages.

    The verifier checks this structure only. What the program does over time
    is checked by `--mt3k-verify` (docs/mt3k-passes.md): every token is
    waited on, and before its wait no operation touches memory that the
    asynchronous operation still reads or writes (two readers may overlap; a
    writer overlaps nothing); offloaded keys are reloaded after their
    offload; point-to-point traffic and collectives on a `pipeline` group
    are matched across programs. `--mt3k-insert-waits` places the waits that are missing.

    `ddr_arena`, when present,
    is the size of the DDR arena the buffer-assignment pass planned for this
    stage: every DDR buffer of the program must lie inside it, and it must
    fit in the machine's DDR.

    ```mlir
    mt3k.program @stage0 stage 0 ddr_arena 17179869184 {
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$ddr_arena);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `stage` $stage (`ddr_arena` $ddr_arena^)? attr-dict-with-keyword
    $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "int64_t":$stage,
                   CArg<"std::optional<int64_t>", "std::nullopt">:$ddrArena)>
  ];
  let extraClassDeclaration = [{
    /// The capacity DDR buffers of this program must fit in: the planned
    /// arena if any, else the machine's DDR (-1 if neither is known).
    int64_t getDdrLimit();
    /// The program's only block.
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def MT3K_BufferOp : MT3K_InProgramOp<"buffer", [Pure]> {
  let summary = "a buffer at a static offset of its memory space";
  let description = [{
    Places a buffer of the result type at byte `offset` of its memory space
    (the DDR arena of the rank, the cluster's GSM, or every core's AM).
    `name` identifies the buffer in diagnostics and in emitted code.
    Buffers may overlap: the buffer-assignment pass reuses memory between
    values whose lifetimes do not intersect.

    Verified: `offset` is a multiple of the machine's `alignment`, and
    `[offset, offset + size)` fits in the space (the program's `ddr_arena`
    for DDR, else the machine's capacity).

    ```mlir
    %wq = mt3k.buffer "layers.0.wq" at 0 : !mt3k.buffer<ddr, 4096x4096xbf16>
    %tile = mt3k.buffer "gemm.a" at 0 : !mt3k.buffer<gsm, 128x4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs MT3K_AnyBuffer:$result);
  let assemblyFormat = "$name `at` $offset attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def MT3K_ViewOp : MT3K_ComputeOp<"view", [Pure]> {
  let summary = "a byte range of a buffer, reinterpreted";
  let description = [{
    The result names the bytes `[byte_offset, byte_offset + size(result))`
    of `source`, with the result's shape and element type: a row tile of a
    matrix, a reshape (`[b*s, h]` as `[b, s, heads, head_dim]`), a shard of
    a flat gradient. The result stays in the source's memory space, lies
    inside the source, and `byte_offset` is a multiple of the result's
    element size.

    ```mlir
    %rows = mt3k.view %wq[1048576] : !mt3k.buffer<ddr, 4096x4096xbf16>
                                     to !mt3k.buffer<ddr, 128x4096xbf16>
    ```
  }];
  let arguments = (ins MT3K_AnyBuffer:$source,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$byte_offset);
  let results = (outs MT3K_AnyBuffer:$result);
  let assemblyFormat = [{
    $source `[` $byte_offset `]` attr-dict `:` qualified(type($source)) `to` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def MT3K_GroupSlotOp : MT3K_InProgramOp<"group_slot", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this rank's block of a buffer split over a group";
  let description = [{
    `source` holds one block of the result's shape per rank of `group`, in
    rank order; the result names the block of the running rank: bytes
    `[r * size(result), (r + 1) * size(result))` for its index `r` in the
    group, which is known at run time only. The element types agree.

    ZeRO-1/2: AdamW writes the refreshed view shard straight into the
    rank's block of the layer's full view, and the all-gather from that
    block into the view fills the other blocks around it (in place, as
    `MPI_IN_PLACE`), with no view-shard buffer and no copy of the own
    block.

    ```mlir
    %own = mt3k.group_slot %view on @dp
        : !mt3k.buffer<ddr, 7079424xbf16> to !mt3k.buffer<ddr, 3539712xbf16>
    ```

    The analyses that resolve byte ranges (hazards, overlaps) see the whole
    of `source`: the slot may be any of its blocks.
  }];
  let arguments = (ins MT3K_AnyBuffer:$source, FlatSymbolRefAttr:$group);
  let results = (outs MT3K_AnyBuffer:$result);
  let assemblyFormat = [{
    $source `on` $group attr-dict `:` qualified(type($source)) `to` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Asynchronous data movement
//===----------------------------------------------------------------------===//

def MT3K_DmaOp : MT3K_InProgramOp<"dma", !listconcat(MT3K_AsyncOp,
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>])> {
  let summary = "asynchronous copy between two memory spaces";
  let description = [{
    Starts copying `source` into `dest` on a DMA engine and yields a token;
    until the token has been waited on, no operation may write `source` or
    touch `dest` (`--mt3k-verify` checks this). Effects: reads `source`,
    writes `dest`; the effect on the AM side carries the `core` as its
    parameter.
    Allowed directions: `ddr <-> gsm`, `ddr <-> am`, `gsm <-> am`; a copy
    within one space is not a DMA (use `mt3k.elementwise cast`). Both buffers
    hold the same number of bytes and the same element type (shapes may
    differ: a DMA is a contiguous byte copy).

    A DMA to or from AM names the `core` whose AM it addresses; other DMAs
    must not. `channel`, when present, pins the transfer to one of the
    machine's DMA channels (transfers on one channel complete in order).

    ```mlir
    %t0 = mt3k.dma %w -> %w_gsm : !mt3k.buffer<ddr, 128x4096xbf16>
                                 -> !mt3k.buffer<gsm, 128x4096xbf16>
    %t1 = mt3k.dma %tile -> %a core 3 channel 1
        : !mt3k.buffer<gsm, 64x64xbf16> -> !mt3k.buffer<am, 64x64xbf16>
    mt3k.wait %t0, %t1
    ```
  }];
  let arguments = (ins Arg<MT3K_AnyBuffer, "copied from (read)">:$source,
                       Arg<MT3K_AnyBuffer, "copied to (written)">:$dest,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$core,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$channel);
  let results = (outs MT3K_TokenType:$token);
  let assemblyFormat = [{
    $source `->` $dest (`core` $core^)? (`channel` $channel^)? attr-dict
    `:` qualified(type($source)) `->` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

def MT3K_OffloadOp : MT3K_InProgramOp<"offload", !listconcat(MT3K_AsyncOp,
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>])> {
  let summary = "asynchronously copy a DDR buffer out to host memory or storage";
  let description = [{
    Starts copying `source` into the runtime's `tier` store (host memory or
    storage, outside the DDR arena) under `key`, and yields a token. After
    the wait, the DDR range may be reused; a later `mt3k.reload` with the
    same key brings the bytes back (activation offloading, as in GriNNder).
    A key is offloaded at most once per iteration. Effects: reads `source`,
    writes the offload store at `[tier, key]`.

    ```mlir
    %t = mt3k.offload %act to host "act.layer3.mb2" : !mt3k.buffer<ddr, 4096x4096xbf16>
    ```
  }];
  let arguments = (ins Arg<MT3K_DdrBuffer, "offloaded (read)">:$source,
                       MT3K_StorageTierAttr:$tier, StrAttr:$key);
  let results = (outs MT3K_TokenType:$token);
  let assemblyFormat = [{
    $source `to` `` $tier $key attr-dict `:` qualified(type($source))
  }];
}

def MT3K_ReloadOp : MT3K_InProgramOp<"reload", !listconcat(MT3K_AsyncOp,
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>])> {
  let summary = "asynchronously copy offloaded bytes back into DDR";
  let description = [{
    Starts copying the bytes stored under `key` by an earlier `mt3k.offload`
    of the same program and tier into `dest` (same byte size, any DDR
    offset), and yields a token. The offload's token must have been waited
    on first. Effects: reads the offload store at `[tier, key]`, writes
    `dest`.

    ```mlir
    %t = mt3k.reload %act from host "act.layer3.mb2" : !mt3k.buffer<ddr, 4096x4096xbf16>
    ```
  }];
  let arguments = (ins Arg<MT3K_DdrBuffer, "reloaded (written)">:$dest,
                       MT3K_StorageTierAttr:$tier, StrAttr:$key);
  let results = (outs MT3K_TokenType:$token);
  let assemblyFormat = [{
    $dest `from` `` $tier $key attr-dict `:` qualified(type($dest))
  }];
}

def MT3K_WaitOp : MT3K_InProgramOp<"wait"> {
  let summary = "block until asynchronous operations complete";
  let description = [{
    Blocks the program until every operation that yielded one of `tokens`
    has completed; afterwards their buffers may be used again.

    ```mlir
    mt3k.wait %t0, %t1
    ```
  }];
  let arguments = (ins Variadic<MT3K_TokenType>:$tokens);
  let assemblyFormat = "$tokens attr-dict";
}

def MT3K_TraceBeginOp : MT3K_InProgramOp<"trace_begin",
    [MemoryEffects<[MemWrite<MT3K_RuntimeResource>]>]> {
  let summary = "start of the work of one schedule op, for the per-op trace";
  let description = [{
    Marks where the operations lowered from one `ratrain` schedule op start
    (a layer's forward, recompute, backward or update on one micro-batch);
    the next `mt3k.trace_end` marks where they end. `label` is the name the
    simulator gives the same work in its trace (`fwd L3 mb1`,
    `bwd-W L2 mb0`, `update L5`), and `phase` its compute kind. At run time,
    over the steps `--trace-steps` selects, the runtime records the span as
    one event of its Chrome/Perfetto trace, with the kernel calls inside it
    nested under it (docs/runtime.md, "Per-op trace"); otherwise the pair
    costs two predictable branches. Markers neither nest nor stay open at
    the end of a program's iteration.

    ```mlir
    mt3k.trace_begin "fwd L3 mb1" forward
    ...
    mt3k.trace_end
    ```
  }];
  let arguments = (ins StrAttr:$label, MT3K_TracePhaseAttr:$phase);
  let assemblyFormat = "$label `` $phase attr-dict";
}

def MT3K_TraceEndOp : MT3K_InProgramOp<"trace_end",
    [MemoryEffects<[MemWrite<MT3K_RuntimeResource>]>]> {
  let summary = "end of the work of the open `mt3k.trace_begin`";
  let description = [{
    Closes the span the last `mt3k.trace_begin` opened.

    ```mlir
    mt3k.trace_end
    ```
  }];
  let assemblyFormat = "attr-dict";
}
