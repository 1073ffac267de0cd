//===- MT3KCommOps.td - collectives and point-to-point -----*- tablegen -*-===//
//
// Communication over named process groups. Included from MT3KOps.td.
//
// All transfers are asynchronous: they start the operation and yield a token
// that an `mt3k.wait` must consume before the buffers are touched again.
// Buffers are in DDR (the network interface reaches only DDR). A group is
// named by the symbol of an `mt3k.group`; the group's `size` bounds ranks.
//
//===----------------------------------------------------------------------===//

class MT3K_CommOp<string mnemonic, list<Trait> traits = []>
    : MT3K_InProgramOp<mnemonic, !listconcat(traits, MT3K_AsyncOp, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        MemoryEffects<[MemWrite<MT3K_RuntimeResource>]>])> {
  let results = (outs MT3K_TokenType:$token);
  let extraClassDeclaration = [{
    /// The group this operation communicates over (null before verification
    /// has established that the symbol names a group).
    GroupOp getGroupOp();
  }];
  let extraClassDefinition = [{
    GroupOp $cppClass::getGroupOp() {
      return ::mlir::SymbolTable::lookupNearestSymbolFrom<GroupOp>(
          *this, getGroupAttr());
    }
  }];
}

def MT3K_AllReduceOp : MT3K_CommOp<"all_reduce"> {
  let summary = "asynchronous all-reduce over a group";
  let description = [{
    Every rank of `group` contributes `source`; every rank receives the
    reduction (`sum`, `avg`, `max`, `min`) in `dest`, of the same type
    (`dest` may be `source`: in place). `algorithm` selects ring, tree or
    hierarchical (intra-node then inter-node) execution.

    ```mlir
    %t = mt3k.all_reduce sum %g -> %g on @dp ring
        : !mt3k.buffer<ddr, 4096x4096xf32> -> !mt3k.buffer<ddr, 4096x4096xf32>
    ```

    With `every P phase Q` the all-reduce runs only in the training steps
    `s` (counted from 1) with `s mod P = Q`, and not in validation steps;
    in the others it completes at once and leaves `dest` alone. Partial
    synchronization (DreamDDP) averages a layer's masters this way.

    ```mlir
    %t = mt3k.all_reduce avg %m -> %m on @dp ring every 4 phase 1
        : !mt3k.buffer<ddr, 1024xf32> -> !mt3k.buffer<ddr, 1024xf32>
    ```
  }];
  let arguments = (ins MT3K_ReduceKindAttr:$reduce, Arg<MT3K_DdrBuffer, "contribution", [MemRead]>:$source,
                       Arg<MT3K_DdrBuffer, "result", [MemWrite]>:$dest,
                       FlatSymbolRefAttr:$group,
                       MT3K_CollectiveAlgorithmAttr:$algorithm,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$period,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$phase);
  let assemblyFormat = [{
    `` $reduce $source `->` $dest `on` $group `` $algorithm
    (`every` $period^ `phase` $phase)? attr-dict
    `:` qualified(type($source)) `->` qualified(type($dest))
  }];
  let builders = [
    // An all-reduce of every step.
    OpBuilder<(ins "ReduceKindAttr":$reduce, "::mlir::Value":$source,
                   "::mlir::Value":$dest, "::mlir::FlatSymbolRefAttr":$group,
                   "CollectiveAlgorithmAttr":$algorithm), [{
      build($_builder, $_state, reduce, source, dest, group, algorithm,
            ::mlir::IntegerAttr(), ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def MT3K_ReduceScatterOp : MT3K_CommOp<"reduce_scatter"> {
  let summary = "asynchronous reduce-scatter over a group";
  let description = [{
    Reduces `source` across the group and leaves shard `r` (of `size`
    equal, contiguous shards) on the rank with index `r` in `dest`:
    `source` holds `size` times as many elements as `dest`, of the same
    element type. ZeRO gradient sharding.

    ```mlir
    %t = mt3k.reduce_scatter sum %g -> %gshard on @dp ring
        : !mt3k.buffer<ddr, 16777216xf32> -> !mt3k.buffer<ddr, 2097152xf32>
    ```

    With `wire int8` or `wire int4` (ZeRO++ qgZ; sum or avg of f32, bf16 or
    f16) the contributions travel as block-wise quantized codes with fp32
    scales, exchanged all-to-all per level of the algorithm and summed in
    fp32.

    With `leave_own` (a `ring` on a native wire, sum or avg) the last
    reduction is left to the consumer: `dest` receives the sum of the other
    members' contributions to this rank's shard, undivided, and this rank's
    own contribution (its block of `source`, `mt3k.group_slot`) is not added.
    The update reads both (`mt3k.adamw` with `own`) and completes the
    average with the same rounding, so the shard is not read and written once
    more in between:

    ```mlir
    %t = mt3k.reduce_scatter avg %g -> %others on @dp ring leave_own
        : !mt3k.buffer<ddr, 16777216xbf16> -> !mt3k.buffer<ddr, 8388608xbf16>
    %own = mt3k.group_slot %g on @dp
        : !mt3k.buffer<ddr, 16777216xbf16> to !mt3k.buffer<ddr, 8388608xbf16>
    ```
  }];
  let arguments = (ins MT3K_ReduceKindAttr:$reduce, Arg<MT3K_DdrBuffer, "contribution", [MemRead]>:$source,
                       Arg<MT3K_DdrBuffer, "result", [MemWrite]>:$dest,
                       FlatSymbolRefAttr:$group,
                       MT3K_CollectiveAlgorithmAttr:$algorithm,
                       OptionalAttr<MT3K_WireTypeAttr>:$wire,
                       UnitAttr:$leave_own);
  let assemblyFormat = [{
    `` $reduce $source `->` $dest `on` $group `` $algorithm (`wire` `` $wire^)?
    (`leave_own` $leave_own^)?
    attr-dict `:` qualified(type($source)) `->` qualified(type($dest))
  }];
  let builders = [
    // A reduce-scatter of native elements.
    OpBuilder<(ins "ReduceKindAttr":$reduce, "::mlir::Value":$source,
                   "::mlir::Value":$dest, "::mlir::FlatSymbolRefAttr":$group,
                   "CollectiveAlgorithmAttr":$algorithm), [{
      build($_builder, $_state, reduce, source, dest, group, algorithm,
            WireTypeAttr(), ::mlir::UnitAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def MT3K_AllGatherOp : MT3K_CommOp<"all_gather"> {
  let summary = "asynchronous all-gather over a group";
  let description = [{
    Concatenates every rank's `source`, in rank order, into `dest` on every
    rank: `dest` holds `size` times as many elements as `source`, of the
    same element type. ZeRO parameter-view gathering.

    ```mlir
    %t = mt3k.all_gather %wshard -> %w on @dp ring
        : !mt3k.buffer<ddr, 2097152xbf16> -> !mt3k.buffer<ddr, 16777216xbf16>
    ```

    With `wire int8` or `wire int4` (ZeRO++ qwZ; f32, bf16 or f16) each
    rank's `source` travels as block-wise quantized codes with fp32 scales
    and is decoded into `dest`.
  }];
  let arguments = (ins Arg<MT3K_DdrBuffer, "contribution", [MemRead]>:$source,
                       Arg<MT3K_DdrBuffer, "result", [MemWrite]>:$dest,
                       FlatSymbolRefAttr:$group,
                       MT3K_CollectiveAlgorithmAttr:$algorithm,
                       OptionalAttr<MT3K_WireTypeAttr>:$wire);
  let assemblyFormat = [{
    $source `->` $dest `on` $group `` $algorithm (`wire` `` $wire^)? attr-dict
    `:` qualified(type($source)) `->` qualified(type($dest))
  }];
  let builders = [
    // An all-gather of native elements.
    OpBuilder<(ins "::mlir::Value":$source, "::mlir::Value":$dest,
                   "::mlir::FlatSymbolRefAttr":$group,
                   "CollectiveAlgorithmAttr":$algorithm), [{
      build($_builder, $_state, source, dest, group, algorithm,
            WireTypeAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def MT3K_BroadcastOp : MT3K_CommOp<"broadcast"> {
  let summary = "asynchronous broadcast from one rank of a group";
  let description = [{
    Copies `buffer` of the rank with index `root` in `group` into `buffer`
    on every other rank of the group.

    ```mlir
    %t = mt3k.broadcast %w from 0 on @dp tree : !mt3k.buffer<ddr, 4096xf32>
    ```
  }];
  let arguments = (ins Arg<MT3K_DdrBuffer, "sent on the root, received elsewhere",
                           [MemRead, MemWrite]>:$buffer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$root,
                       FlatSymbolRefAttr:$group,
                       MT3K_CollectiveAlgorithmAttr:$algorithm);
  let assemblyFormat = [{
    $buffer `from` $root `on` $group `` $algorithm attr-dict
    `:` qualified(type($buffer))
  }];
}

def MT3K_SendOp : MT3K_CommOp<"send"> {
  let summary = "asynchronous send to a peer of a group";
  let description = [{
    Sends `buffer` to the rank with index `peer` in `group`, where a
    `mt3k.recv` with the same `tag` and the sender's index as `from` receives
    it into a buffer of the same byte size. On a `pipeline` group a rank's
    index is its program's `stage`; a stage does not send to itself.

    With `put at N` the transfer is one-sided: `buffer` is written straight
    into the peer's DDR arena at byte `N` (the buffer of the matching
    `mt3k.recv`, which is `one_sided`), followed by an increment of the
    peer's completion counter for `tag`; nothing waits for the peer. The
    token completes when both have reached the peer's memory. The compiler
    proves that nothing of the peer still uses those bytes when the put is
    issued (`--ratrain-verify-schedule`, docs/schedule.md).

    ```mlir
    %t = mt3k.send %act to 1 on @pp tag 3 : !mt3k.buffer<ddr, 4096x4096xbf16>
    %u = mt3k.send %act to 1 on @pp tag 5 put at 1048576
        : !mt3k.buffer<ddr, 4096x4096xbf16>
    ```
  }];
  let arguments = (ins Arg<MT3K_DdrBuffer, "sent", [MemRead]>:$buffer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$tag,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$put_offset);
  let assemblyFormat = [{
    $buffer `to` $peer `on` $group `tag` $tag (`put` `at` $put_offset^)?
    attr-dict `:` qualified(type($buffer))
  }];
  let builders = [
    // A two-sided send.
    OpBuilder<(ins "::mlir::Value":$buffer, "::mlir::IntegerAttr":$peer,
                   "::mlir::FlatSymbolRefAttr":$group,
                   "::mlir::IntegerAttr":$tag), [{
      build($_builder, $_state, buffer, peer, group, tag, ::mlir::IntegerAttr());
    }]>
  ];
}

def MT3K_RecvOp : MT3K_CommOp<"recv"> {
  let summary = "asynchronous receive from a peer of a group";
  let description = [{
    Receives into `buffer` the message with `tag` that the rank with index
    `peer` in `group` sends with `mt3k.send`. On a `pipeline` group a stage
    does not receive from itself.

    `one_sided`: the peer puts the message into `buffer` itself (a send with
    `put at` this buffer's arena offset); the token completes once the
    peer's completion counter for `tag` says it has landed.

    ```mlir
    %t = mt3k.recv %act from 0 on @pp tag 3 : !mt3k.buffer<ddr, 4096x4096xbf16>
    ```
  }];
  let arguments = (ins Arg<MT3K_DdrBuffer, "received", [MemWrite]>:$buffer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$tag,
                       UnitAttr:$one_sided);
  let assemblyFormat = [{
    $buffer `from` $peer `on` $group `tag` $tag (`one_sided` $one_sided^)?
    attr-dict `:` qualified(type($buffer))
  }];
  let builders = [
    // A two-sided receive.
    OpBuilder<(ins "::mlir::Value":$buffer, "::mlir::IntegerAttr":$peer,
                   "::mlir::FlatSymbolRefAttr":$group,
                   "::mlir::IntegerAttr":$tag), [{
      build($_builder, $_state, buffer, peer, group, tag, false);
    }]>
  ];
}

def MT3K_BarrierOp : MT3K_InProgramOp<"barrier",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemWrite<MT3K_RuntimeResource>]>]> {
  let summary = "block until every rank of a group arrives";
  let description = [{
    Synchronous: returns once every rank of `group` has reached its
    `mt3k.barrier` on that group.

    ```mlir
    mt3k.barrier @dp
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$group);
  let assemblyFormat = "$group attr-dict";
}
