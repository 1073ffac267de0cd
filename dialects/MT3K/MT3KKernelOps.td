//===- MT3KKernelOps.td - kernel calls ---------------------*- tablegen -*-===//
//
// Compute kernels of the MT-3000 backend. Included from MT3KOps.td.
//
// Every kernel runs synchronously on all cores of the cluster. Operands are
// buffers in any memory space: GSM/AM operands have been staged by explicit
// `mt3k.dma`; DDR operands are streamed by the kernel through its own
// double-buffered DMA (as the MT-3000 library kernels do). Matrices are
// row-major; activations are flattened to [tokens, hidden] (use `mt3k.view`
// to reshape). Outputs never overlap inputs or each other, except where an
// op's description allows an output to be exactly one of its inputs (the
// verifiers check this on the absolute ranges, through views).
//
//===----------------------------------------------------------------------===//

def MT3K_GemmOp : MT3K_ComputeOp<"gemm"> {
  let summary = "matrix multiply: c = alpha * op(a) * op(b) (+ c)";
  let description = [{
    `op(a)` is `a` (`[M, K]`) or, with `transpose_a`, `a` transposed (`a` is
    `[K, M]`); likewise `op(b)` is `[K, N]`. `c` is `[M, N]`. With
    `accumulate` the product is added to `c` (weight gradients summed over
    micro-batches), otherwise `c` is overwritten. `alpha` defaults to 1.

    `a` and `b` share one element type (f16/bf16 for the FP16 path, or f32);
    `c` holds f32 or that same type; the kernel accumulates in f32.

    ```mlir
    // y[tokens, out] = x[tokens, in] * w[out, in]^T
    mt3k.gemm %x, %w -> %y transpose_b
        : !mt3k.buffer<ddr, 4096x4096xbf16>, !mt3k.buffer<ddr, 11008x4096xbf16>
          -> !mt3k.buffer<ddr, 4096x11008xbf16>
    // dw[out, in] += dy[tokens, out]^T * x[tokens, in]
    mt3k.gemm %dy, %x -> %dw transpose_a accumulate : ...
    ```
  }];
  let arguments = (ins Arg<MT3K_FloatBufferOfRank<2>, "left matrix", [MemRead]>:$a,
                       Arg<MT3K_FloatBufferOfRank<2>, "right matrix", [MemRead]>:$b,
                       Arg<MT3K_FloatBufferOfRank<2>, "result",
                           [MemRead, MemWrite]>:$c,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$accumulate, OptionalAttr<F64Attr>:$alpha);
  let assemblyFormat = [{
    $a `,` $b `->` $c (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? (`accumulate` $accumulate^)?
    (`alpha` $alpha^)? attr-dict
    `:` qualified(type($a)) `,` qualified(type($b)) `->` qualified(type($c))
  }];
  let hasVerifier = 1;
}

def MT3K_AttentionFwdOp : MT3K_ComputeOp<"attention_fwd"> {
  let summary = "fused multi-head attention forward (GQA), saves the log-sum-exp";
  let description = [{
    `o = softmax(scale * q k^T + mask) v` per head, with grouped-query
    attention: `q` is `[batch, seq, heads, head_dim]`, `k` and `v` are
    `[batch, kv_seq, kv_heads, head_dim]`, and query head `h` reads kv head
    `h / (heads / kv_heads)`. `o` has the shape of `q`. `lse`
    (`[batch, heads, seq]`, f32) receives the log-sum-exp of each softmax row,
    which `mt3k.attention_bwd` needs. `causal` applies the causal mask (then
    `seq == kv_seq`). `scale` defaults to `1/sqrt(head_dim)`. Rotary
    embeddings are applied beforehand (`mt3k.elementwise rope`).

    `alibi` adds the ALiBi linear position bias of Baichuan-13B and BLOOM
    instead: `mask[h, i, j] = slope_h * (j - i)` for `j <= i`, with the
    slopes of `heads` heads as those models compute them (`2^(-8 (k+1) / n)`
    for the largest power of two `n <= heads`, then every other slope of
    `2n` heads for the rest; `ratrain::kernels::alibiSlopes`). `lse`
    includes the bias.

    `window W` (with `causal`; Mistral's sliding window) lets query `i` see
    only the keys `i - W < j <= i`.

    ```mlir
    mt3k.attention_fwd %q, %k, %v -> %o, %lse causal
        : !mt3k.buffer<ddr, 1x4096x32x128xbf16>, !mt3k.buffer<ddr, 1x4096x8x128xbf16>,
          !mt3k.buffer<ddr, 1x4096x8x128xbf16>
          -> !mt3k.buffer<ddr, 1x4096x32x128xbf16>, !mt3k.buffer<ddr, 1x32x4096xf32>
    ```
  }];
  let arguments = (ins Arg<MT3K_FloatBufferOfRank<4>, "queries", [MemRead]>:$q,
                       Arg<MT3K_FloatBufferOfRank<4>, "keys", [MemRead]>:$k,
                       Arg<MT3K_FloatBufferOfRank<4>, "values", [MemRead]>:$v,
                       Arg<MT3K_FloatBufferOfRank<4>, "output", [MemWrite]>:$o,
                       Arg<MT3K_F32BufferOfRank<3>, "log-sum-exp", [MemWrite]>:$lse,
                       UnitAttr:$causal, UnitAttr:$alibi,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$window);
  let assemblyFormat = [{
    $q `,` $k `,` $v `->` $o `,` $lse (`causal` $causal^)? (`alibi` $alibi^)?
    (`window` $window^)?
    (`scale` $scale^)? attr-dict `:` qualified(type($q)) `,` qualified(type($k)) `,`
    qualified(type($v)) `->` qualified(type($o)) `,` qualified(type($lse))
  }];
  let hasVerifier = 1;
}

def MT3K_AttentionBwdOp : MT3K_ComputeOp<"attention_bwd"> {
  let summary = "fused multi-head attention backward (GQA)";
  let description = [{
    Given the forward's inputs `q`, `k`, `v`, its output `o`, the output
    gradient `do` and the saved `lse`, writes the gradients `dq`, `dk`, `dv`
    (each of the type of its input). The attention probabilities are
    recomputed from `lse` tile by tile (flash-attention backward); `dk` and
    `dv` sum the contributions of all query heads of a group. `causal`,
    `alibi`, `window` and `scale` must match the forward call.

    ```mlir
    mt3k.attention_bwd %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv causal
        : !mt3k.buffer<ddr, 1x4096x32x128xbf16>, ..., !mt3k.buffer<ddr, 1x32x4096xf32>
          -> !mt3k.buffer<ddr, 1x4096x32x128xbf16>, ..., ...
    ```
  }];
  let arguments = (ins Arg<MT3K_FloatBufferOfRank<4>, "queries", [MemRead]>:$q,
                       Arg<MT3K_FloatBufferOfRank<4>, "keys", [MemRead]>:$k,
                       Arg<MT3K_FloatBufferOfRank<4>, "values", [MemRead]>:$v,
                       Arg<MT3K_FloatBufferOfRank<4>, "forward output", [MemRead]>:$o,
                       Arg<MT3K_FloatBufferOfRank<4>, "output gradient", [MemRead]>:$d_o,
                       Arg<MT3K_F32BufferOfRank<3>, "saved log-sum-exp", [MemRead]>:$lse,
                       Arg<MT3K_FloatBufferOfRank<4>, "query gradient", [MemWrite]>:$dq,
                       Arg<MT3K_FloatBufferOfRank<4>, "key gradient", [MemWrite]>:$dk,
                       Arg<MT3K_FloatBufferOfRank<4>, "value gradient", [MemWrite]>:$dv,
                       UnitAttr:$causal, UnitAttr:$alibi,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$window);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $o `,` $d_o `,` $lse `->` $dq `,` $dk `,` $dv
    (`causal` $causal^)? (`alibi` $alibi^)? (`window` $window^)?
    (`scale` $scale^)? attr-dict
    `:` qualified(type($q)) `,` qualified(type($k)) `,` qualified(type($v))
    `,` qualified(type($o)) `,` qualified(type($d_o)) `,` qualified(type($lse))
    `->` qualified(type($dq)) `,` qualified(type($dk)) `,` qualified(type($dv))
  }];
  let hasVerifier = 1;
}

def MT3K_RMSNormFwdOp : MT3K_ComputeOp<"rmsnorm_fwd"> {
  let summary = "RMSNorm forward, saves the reciprocal RMS";
  let description = [{
    For each row `i` of `x` (`[tokens, hidden]`):
    `rstd[i] = 1 / sqrt(mean(x[i]^2) + eps)` and
    `y[i] = x[i] * rstd[i] * weight`. `weight` is `[hidden]`, `y` has the
    shape of `x` (it may be `x` itself), `rstd` is `[tokens]` f32 (saved for
    the backward).

    ```mlir
    mt3k.rmsnorm_fwd %x, %w -> %y, %rstd eps 1.000000e-05
        : !mt3k.buffer<ddr, 4096x4096xbf16>, !mt3k.buffer<ddr, 4096xbf16>
          -> !mt3k.buffer<ddr, 4096x4096xbf16>, !mt3k.buffer<ddr, 4096xf32>
    ```
  }];
  let arguments = (ins Arg<MT3K_FloatBufferOfRank<2>, "input", [MemRead]>:$x,
                       Arg<MT3K_FloatBufferOfRank<1>, "gain", [MemRead]>:$weight,
                       Arg<MT3K_FloatBufferOfRank<2>, "output", [MemWrite]>:$y,
                       Arg<MT3K_F32BufferOfRank<1>, "saved 1/rms", [MemWrite]>:$rstd,
                       F64Attr:$eps);
  let assemblyFormat = [{
    $x `,` $weight `->` $y `,` $rstd `eps` $eps attr-dict
    `:` qualified(type($x)) `,` qualified(type($weight))
    `->` qualified(type($y)) `,` qualified(type($rstd))
  }];
  let hasVerifier = 1;
}

def MT3K_RMSNormBwdOp : MT3K_ComputeOp<"rmsnorm_bwd"> {
  let summary = "RMSNorm backward";
  let description = [{
    From the forward's input `x`, `weight`, saved `rstd` and the output
    gradient `dy`, writes the input gradient `dx` (shape of `x`; it may alias
    `dy`) and the weight gradient `dweight` (shape of `weight`). With
    `accumulate`, `dweight` is added to (summed over micro-batches), otherwise
    overwritten.

    ```mlir
    mt3k.rmsnorm_bwd %x, %w, %rstd, %dy -> %dx, %dw accumulate
        : !mt3k.buffer<ddr, 4096x4096xbf16>, !mt3k.buffer<ddr, 4096xbf16>,
          !mt3k.buffer<ddr, 4096xf32>, !mt3k.buffer<ddr, 4096x4096xbf16>
          -> !mt3k.buffer<ddr, 4096x4096xbf16>, !mt3k.buffer<ddr, 4096xf32>
    ```
  }];
  let arguments = (ins Arg<MT3K_FloatBufferOfRank<2>, "forward input", [MemRead]>:$x,
                       Arg<MT3K_FloatBufferOfRank<1>, "gain", [MemRead]>:$weight,
                       Arg<MT3K_F32BufferOfRank<1>, "saved 1/rms", [MemRead]>:$rstd,
                       Arg<MT3K_FloatBufferOfRank<2>, "output gradient", [MemRead]>:$dy,
                       Arg<MT3K_FloatBufferOfRank<2>, "input gradient", [MemWrite]>:$dx,
                       Arg<MT3K_FloatBufferOfRank<1>, "gain gradient",
                           [MemRead, MemWrite]>:$dweight,
                       UnitAttr:$accumulate);
  let assemblyFormat = [{
    $x `,` $weight `,` $rstd `,` $dy `->` $dx `,` $dweight
    (`accumulate` $accumulate^)? attr-dict
    `:` qualified(type($x)) `,` qualified(type($weight)) `,`
    qualified(type($rstd)) `,` qualified(type($dy))
    `->` qualified(type($dx)) `,` qualified(type($dweight))
  }];
  let hasVerifier = 1;
}

def MT3K_ElementwiseOp
    : MT3K_ComputeOp<"elementwise", [AttrSizedOperandSegments]> {
  let summary = "a memory-bound kernel selected by `kind`";
  let description = [{
    Kernels whose cost is dominated by memory traffic. Each kind takes a
    fixed number of inputs and outputs:

    | kind | inputs | outputs | semantics |
    | --- | --- | --- | --- |
    | `swiglu` | gate, up `[n, f]` | h `[n, f]` | `h = silu(gate) * up` |
    | `swiglu_bwd` | gate, up, dh | dgate, dup | gradients of `swiglu` |
    | `residual_add` | a, b | c | `c = a + b` (c may alias a or b) |
    | `rope` | x `[b, s, heads, d]` | y | rotary embedding, positions `0..s-1`, base `theta` |
    | `rope_bwd` | dy | dx | inverse rotation, base `theta` |
    | `embedding` | table `[V, h]`, ids `[n]` i32 | x `[n, h]` | row gather |
    | `embedding_bwd` | ids `[n]` i32, dx `[n, h]` | dtable `[V, h]` | scatter-add into dtable |
    | `cross_entropy` | logits `[n, V]`, labels `[n]` i32 | loss (rank-0 f32) | mean token loss |
    | `cross_entropy_bwd` | logits `[n, V]`, labels `[n]` i32 | dlogits `[n, V]` | `(softmax - onehot) * scale` |
    | `cast` | x | y (same shape) | element type conversion / copy |
    | `scale` | x | y | `y = x * scale` |

    Same-kind operands of `swiglu`, `swiglu_bwd`, `residual_add`, `rope`,
    `rope_bwd` and `scale` share one floating-point type. Except for
    `embedding`, `embedding_bwd` and `cross_entropy`, an output may be
    exactly one of the inputs (in place); otherwise outputs overlap nothing.
    `theta` is required by the rope kinds and rejected elsewhere;
    `rope_scaling` (`#mt3k.rope_scaling`) rescales their frequencies and is
    rejected elsewhere; `scale` is required by `scale`, optional
    for `cross_entropy_bwd` (default 1), rejected elsewhere.

    ```mlir
    mt3k.elementwise swiglu ins(%gate, %up : !mt3k.buffer<ddr, 4096x11008xbf16>,
        !mt3k.buffer<ddr, 4096x11008xbf16>) outs(%h : !mt3k.buffer<ddr, 4096x11008xbf16>)
    mt3k.elementwise rope ins(%q : !mt3k.buffer<ddr, 1x4096x32x128xbf16>)
        outs(%q : !mt3k.buffer<ddr, 1x4096x32x128xbf16>) theta 1.000000e+04
    ```
  }];
  let arguments = (ins MT3K_ElementwiseKindAttr:$kind,
                       Arg<Variadic<MT3K_AnyBuffer>, "inputs", [MemRead]>:$inputs,
                       Arg<Variadic<MT3K_AnyBuffer>, "outputs",
                           [MemRead, MemWrite]>:$outputs,
                       OptionalAttr<F64Attr>:$theta,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<MT3K_RopeScalingAttr>:$rope_scaling);
  let assemblyFormat = [{
    `` $kind `ins` `(` $inputs `:` qualified(type($inputs)) `)`
    `outs` `(` $outputs `:` qualified(type($outputs)) `)`
    (`theta` $theta^)? (`rope_scaling` qualified($rope_scaling)^)?
    (`scale` $scale^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The per-kind arity, shape and attribute rules (part of verify()).
    ::llvm::LogicalResult verifyKindRules();
  }];
}

def MT3K_AdamWOp : MT3K_InProgramOp<"adamw", [AttrSizedOperandSegments]> {
  let summary = "AdamW step on a parameter shard, refreshing its 16-bit view";
  let description = [{
    One decoupled-weight-decay Adam step on `master` (f32), with moments `m`
    and `v` (f32), from the gradient `grad` (f16/bf16/f32, multiplied by
    `grad_scale` first, default 1): `m`, `v` and `master` are updated in
    place, and `view` receives the updated master weights converted to its
    element type (the FP16 parameter view compute reads). All five buffers
    hold the same number of elements (a whole parameter or a ZeRO shard) and
    are disjoint, except that `view` may be `master` itself: an FP32 model
    whose view is its master is updated in place, with nothing to copy.
    The runtime supplies the iteration number for bias correction and may
    scale `lr` by its schedule. With `clip` (the all-reduced
    `mt3k.sum_squares` of the step's gradients) the gradient is also
    multiplied by `min(1, max_grad_norm / (sqrt(clip) + 1e-6))`, PyTorch's
    `clip_grad_norm_`.

    With `own` the gradient arrives in two parts, as a reduce-scatter with
    `leave_own` leaves it: `grad` holds the other members' sum of this rank's
    shard and `own` (of the same type and size) this rank's contribution; the
    update reads `(grad + own) / members`, each step rounded to the
    gradient's element type as the reduce-scatter's average would have been,
    so the update is the same, bit for bit. Not with `clip` (the norm is
    taken of the averaged gradient before the update).

    `no_decay` lists element ranges `[begin, end)` of the layer's flat
    parameters (ratrain/Model/ParameterLayout.h) that take no weight decay
    (norm weights and biases under the default policy); element `i` of this
    op is element `first_element + i` of the layer, or with
    `shard_elements` (ZeRO: the op updates part of a data-parallel shard)
    element `first_element + shard_index * shard_elements + i`, where the
    runtime supplies the rank's shard index.

    ```mlir
    mt3k.adamw %g, %master, %m, %v -> %w lr 3.000000e-04 beta1 9.000000e-01
        beta2 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01
        : !mt3k.buffer<ddr, 16777216xbf16>, !mt3k.buffer<ddr, 16777216xf32>,
          !mt3k.buffer<ddr, 16777216xf32>, !mt3k.buffer<ddr, 16777216xf32>
          -> !mt3k.buffer<ddr, 16777216xbf16>
    ```
  }];
  let arguments = (ins Arg<MT3K_FloatBuffer, "gradient", [MemRead]>:$grad,
                       Arg<Optional<MT3K_FloatBuffer>,
                           "this rank's part of the gradient", [MemRead]>:$own,
                       OptionalAttr<I64Attr>:$members,
                       Arg<MT3K_F32Buffer, "master weights", [MemRead, MemWrite]>:$master,
                       Arg<MT3K_F32Buffer, "first moment", [MemRead, MemWrite]>:$m,
                       Arg<MT3K_F32Buffer, "second moment", [MemRead, MemWrite]>:$v,
                       Arg<MT3K_FloatBuffer, "parameter view", [MemWrite]>:$view,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2,
                       F64Attr:$eps, F64Attr:$weight_decay,
                       OptionalAttr<F64Attr>:$grad_scale,
                       Arg<Optional<MT3K_DdrF32Scalar>,
                           "squared global gradient norm", [MemRead]>:$clip,
                       OptionalAttr<F64Attr>:$max_grad_norm,
                       OptionalAttr<DenseI64ArrayAttr>:$no_decay,
                       OptionalAttr<I64Attr>:$first_element,
                       OptionalAttr<I64Attr>:$shard_elements);
  let assemblyFormat = [{
    $grad (`plus` $own^ `:` qualified(type($own)) `over` $members)?
    `,` $master `,` $m `,` $v `->` $view `lr` $lr `beta1` $beta1
    `beta2` $beta2 `eps` $eps `weight_decay` $weight_decay
    (`grad_scale` $grad_scale^)?
    (`clip` `(` $clip^ `:` qualified(type($clip)) `)`
     `max_grad_norm` $max_grad_norm)?
    (`no_decay` $no_decay^ `first_element` $first_element
     (`shard_elements` $shard_elements^)?)?
    attr-dict
    `:` qualified(type($grad)) `,` qualified(type($master)) `,`
    qualified(type($m)) `,` qualified(type($v)) `->` qualified(type($view))
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$grad, "::mlir::Value":$master,
                   "::mlir::Value":$m, "::mlir::Value":$v,
                   "::mlir::Value":$view, "double":$lr, "double":$beta1,
                   "double":$beta2, "double":$eps, "double":$weightDecay,
                   CArg<"std::optional<double>", "std::nullopt">:$gradScale), [{
      build($_builder, $_state, grad, ::mlir::Value(), ::mlir::IntegerAttr(),
            master, m, v, view,
            $_builder.getF64FloatAttr(lr), $_builder.getF64FloatAttr(beta1),
            $_builder.getF64FloatAttr(beta2), $_builder.getF64FloatAttr(eps),
            $_builder.getF64FloatAttr(weightDecay),
            gradScale ? $_builder.getF64FloatAttr(*gradScale)
                      : ::mlir::FloatAttr(),
            ::mlir::Value(), ::mlir::FloatAttr(),
            ::mlir::DenseI64ArrayAttr(), ::mlir::IntegerAttr(),
            ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def MT3K_SumSquaresOp : MT3K_ComputeOp<"sum_squares"> {
  let summary = "add the weighted sum of squares of a buffer to a scalar";
  let description = [{
    `acc += weight * sum_i source[i]^2`, the sum taken in float64 (global
    gradient-norm clipping: the squares of this rank's part of a synced
    gradient; `weight` 1 / dp counts a gradient every data-parallel
    replica holds whole once over the group).

    ```mlir
    mt3k.sum_squares %g -> %acc weight 5.000000e-01
        : !mt3k.buffer<ddr, 4096xbf16> -> !mt3k.buffer<ddr, f32>
    ```
  }];
  let arguments = (ins Arg<MT3K_FloatBuffer, "summed", [MemRead]>:$source,
                       Arg<MT3K_DdrF32Scalar, "accumulator",
                           [MemRead, MemWrite]>:$acc,
                       F64Attr:$weight);
  let assemblyFormat = [{
    $source `->` $acc `weight` $weight attr-dict `:` qualified(type($source))
    `->` qualified(type($acc))
  }];
  let hasVerifier = 1;
}

def MT3K_FillOp : MT3K_ComputeOp<"fill"> {
  let summary = "set every element of a buffer to a constant";
  let description = [{
    Writes `value` (converted to the element type) to every element, e.g. to
    zero gradient accumulators at the start of an iteration.

    ```mlir
    mt3k.fill %dw, 0.000000e+00 : !mt3k.buffer<ddr, 4096x4096xf32>
    ```
  }];
  let arguments = (ins Arg<MT3K_AnyBuffer, "filled", [MemWrite]>:$dest,
                       F64Attr:$value);
  let assemblyFormat = "$dest `,` $value attr-dict `:` qualified(type($dest))";
}

//===----------------------------------------------------------------------===//
// Runtime interface
//===----------------------------------------------------------------------===//

def MT3K_InitParamOp : MT3K_InProgramOp<"init_param"> {
  let summary = "initialize (part of) a parameter before the first iteration";
  let description = [{
    Writes the initial value of the elements `[element_offset,
    element_offset + size(dest))` of the parameter named `param` into
    `dest`: zeros, ones, or a normal distribution with mean 0 and standard
    deviation `std` (required for `normal`, rejected otherwise). The value
    of element `i` depends only on `param`, `i`, the kind and `std`, so every
    schedule and every sharding (a ZeRO shard passes its global
    `element_offset`) starts from the same weights.

    What the checkpoint code needs to find the parameter again (printed in
    the attribute dictionary): `dp_shard` (a ZeRO shard: the elements per
    rank of the flattened layer), `dp_shard_tensors` (`"name:offset:numel:
    init"` per HF tensor of the flattened layer), `dp_shard_offset` (the
    shard piece's offset in the rank's shard when streamed in chunks); for a
    state kept in the offload tier, `offload_key` and `offload_offset` (its
    tier copy), `offload_piece` (the byte offset of a streamed chunk's
    piece) and `offload_bytes` (the whole state's bytes).

    `mt3k.init_param` belongs to a program's prologue: it may only be
    preceded by `mt3k.buffer`, `mt3k.view` and other `mt3k.init_param`s. The
    runtime runs the prologue once before the first iteration and the rest
    of the program once per iteration.

    ```mlir
    mt3k.init_param normal %wq_master "layers.0.attn.wq" std 2.000000e-02
        : !mt3k.buffer<ddr, 4096x4096xf32>
    mt3k.init_param zeros %wq_m "layers.0.attn.wq.m" element_offset 1048576
        : !mt3k.buffer<ddr, 1048576xf32>
    ```
  }];
  let arguments = (ins MT3K_InitKindAttr:$kind,
                       Arg<MT3K_FloatBuffer, "initialized", [MemWrite]>:$dest,
                       StrAttr:$param, OptionalAttr<F64Attr>:$std,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$element_offset,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$dp_shard,
                       OptionalAttr<StrArrayAttr>:$dp_shard_tensors,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$dp_shard_offset,
                       OptionalAttr<StrAttr>:$offload_key,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$offload_offset,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$offload_piece,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$offload_bytes);
  let assemblyFormat = [{
    `` $kind $dest $param (`std` $std^)? (`element_offset` $element_offset^)?
    attr-dict `:` qualified(type($dest))
  }];
  let builders = [
    // A parameter with no shard or offload information (set it after).
    OpBuilder<(ins "InitKind":$kind, "::mlir::Value":$dest,
                   "::llvm::StringRef":$param, "::mlir::FloatAttr":$std,
                   "::mlir::IntegerAttr":$element_offset), [{
      build($_builder, $_state, kind, dest, param, std, element_offset,
            ::mlir::IntegerAttr(), ::mlir::ArrayAttr(), ::mlir::IntegerAttr(),
            ::mlir::StringAttr(), ::mlir::IntegerAttr(), ::mlir::IntegerAttr(),
            ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def MT3K_LoadBatchOp : MT3K_InProgramOp<"load_batch",
    [MemoryEffects<[MemWrite<MT3K_RuntimeResource>]>]> {
  let summary = "fill a buffer with a micro-batch from the data loader";
  let description = [{
    The runtime's data loader writes the token ids (`inputs`) or the
    next-token targets (`labels`) of micro-batch `micro_batch` of the current
    iteration into `dest` (i32, DDR; `[batch * seq]` or `[batch, seq]`).

    ```mlir
    mt3k.load_batch inputs %ids micro_batch 3 : !mt3k.buffer<ddr, 4096xi32>
    ```
  }];
  let arguments = (ins MT3K_BatchFieldAttr:$field, Arg<MT3K_DdrI32Buffer, "ids or labels", [MemWrite]>:$dest,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$micro_batch);
  let assemblyFormat = [{
    `` $field $dest `micro_batch` $micro_batch attr-dict `:` qualified(type($dest))
  }];
}

def MT3K_ReportLossOp : MT3K_InProgramOp<"report_loss",
    [MemoryEffects<[MemWrite<MT3K_RuntimeResource>]>]> {
  let summary = "hand a micro-batch's loss to the runtime's log";
  let description = [{
    The runtime reads the scalar loss of micro-batch `micro_batch` from
    `loss` (written by `mt3k.elementwise cross_entropy`) and averages it into
    the iteration's reported loss.

    ```mlir
    mt3k.report_loss %loss micro_batch 3 : !mt3k.buffer<ddr, f32>
    ```
  }];
  let arguments = (ins Arg<MT3K_DdrF32Scalar, "loss", [MemRead]>:$loss,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$micro_batch);
  let assemblyFormat = [{
    $loss `micro_batch` $micro_batch attr-dict `:` qualified(type($loss))
  }];
}
