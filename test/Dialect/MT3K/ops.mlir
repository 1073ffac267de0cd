// RUN: ratrain-opt %s | ratrain-opt | FileCheck %s
// RUN: ratrain-opt %s --mlir-print-op-generic | ratrain-opt | FileCheck %s

// Every mt3k operation, with its optional clauses present and absent.

// CHECK: mt3k.machine "mt3000" ddr 21474836480 gsm 6291456 am 786432 cores 24 dma_channels 20 alignment 64
mt3k.machine "mt3000" ddr 21474836480 gsm 6291456 am 786432 cores 24 dma_channels 20 alignment 64

// CHECK: mt3k.group @dp data_parallel size 4
// CHECK: mt3k.group @pp pipeline size 2
// CHECK: mt3k.group @node node_local size 4
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.group @node node_local size 4

// CHECK-LABEL: mt3k.program @stage0 stage 0 ddr_arena 1073741824 {
mt3k.program @stage0 stage 0 ddr_arena 1073741824 {
  // CHECK: %[[IDS:.*]] = mt3k.buffer "ids" at 1024 : !mt3k.buffer<ddr, 256xi32>
  %ids = mt3k.buffer "ids" at 1024 : !mt3k.buffer<ddr, 256xi32>
  // CHECK: %[[EMB:.*]] = mt3k.buffer "embed" at 130048 : !mt3k.buffer<ddr, 1000x64xbf16>
  %embed = mt3k.buffer "embed" at 130048 : !mt3k.buffer<ddr, 1000x64xbf16>
  %x = mt3k.buffer "x" at 258048 : !mt3k.buffer<ddr, 256x64xbf16>
  %h = mt3k.buffer "h" at 290816 : !mt3k.buffer<ddr, 256x64xbf16>
  %nw = mt3k.buffer "norm.w" at 323584 : !mt3k.buffer<ddr, 64xbf16>
  %rstd = mt3k.buffer "rstd" at 323712 : !mt3k.buffer<ddr, 256xf32>
  %wqkv = mt3k.buffer "wqkv" at 324736 : !mt3k.buffer<ddr, 128x64xbf16>
  %qkv = mt3k.buffer "qkv" at 341120 : !mt3k.buffer<ddr, 256x128xbf16>
  %qkvh = mt3k.view %qkv[0] : !mt3k.buffer<ddr, 256x128xbf16> to !mt3k.buffer<ddr, 128x128xbf16>
  %o = mt3k.buffer "o" at 406656 : !mt3k.buffer<ddr, 256x64xbf16>
  %lse = mt3k.buffer "lse" at 439424 : !mt3k.buffer<ddr, 1x4x256xf32>
  %dw = mt3k.buffer "wqkv.grad" at 443520 : !mt3k.buffer<ddr, 128x64xf32>
  %gate = mt3k.buffer "gate" at 476288 : !mt3k.buffer<ddr, 256x64xbf16>
  %sum = mt3k.buffer "sum" at 509056 : !mt3k.buffer<ddr, 256x64xf32>
  %dq = mt3k.buffer "dq" at 611456 : !mt3k.buffer<ddr, 1x256x4x16xbf16>
  %dk = mt3k.buffer "dk" at 644224 : !mt3k.buffer<ddr, 1x256x2x16xbf16>
  %dv = mt3k.buffer "dv" at 660608 : !mt3k.buffer<ddr, 1x256x2x16xbf16>
  %dnw = mt3k.buffer "norm.w.grad" at 676992 : !mt3k.buffer<ddr, 64xbf16>

  // The prologue: parameter initialization, once before the first iteration.
  // CHECK: mt3k.init_param normal %{{.*}} "layers.0.wqkv.master" std 2.000000e-02 element_offset 2048 : !mt3k.buffer<ddr, 128x64xf32>
  mt3k.init_param normal %dw "layers.0.wqkv.master" std 0.02 element_offset 2048 : !mt3k.buffer<ddr, 128x64xf32>
  // CHECK: mt3k.init_param ones %{{.*}} "layers.0.norm" : !mt3k.buffer<ddr, 64xbf16>
  mt3k.init_param ones %nw "layers.0.norm" : !mt3k.buffer<ddr, 64xbf16>
  // CHECK: mt3k.init_param zeros %{{.*}} "sum" : !mt3k.buffer<ddr, 256x64xf32>
  mt3k.init_param zeros %sum "sum" : !mt3k.buffer<ddr, 256x64xf32>

  // CHECK: mt3k.load_batch inputs %[[IDS]] micro_batch 0 : !mt3k.buffer<ddr, 256xi32>
  mt3k.load_batch inputs %ids micro_batch 0 : !mt3k.buffer<ddr, 256xi32>
  // CHECK: mt3k.fill %{{.*}}, 0.000000e+00 : !mt3k.buffer<ddr, 128x64xf32>
  mt3k.fill %dw, 0.0 : !mt3k.buffer<ddr, 128x64xf32>

  // CHECK: mt3k.elementwise embedding ins(%[[EMB]], %[[IDS]] : !mt3k.buffer<ddr, 1000x64xbf16>, !mt3k.buffer<ddr, 256xi32>) outs(%{{.*}} : !mt3k.buffer<ddr, 256x64xbf16>)
  mt3k.elementwise embedding ins(%embed, %ids : !mt3k.buffer<ddr, 1000x64xbf16>, !mt3k.buffer<ddr, 256xi32>) outs(%x : !mt3k.buffer<ddr, 256x64xbf16>)

  // CHECK: mt3k.rmsnorm_fwd %{{.*}}, %{{.*}} -> %{{.*}}, %{{.*}} eps 1.000000e-05 : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 64xbf16> -> !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 256xf32>
  mt3k.rmsnorm_fwd %x, %nw -> %h, %rstd eps 1.0e-5 : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 64xbf16> -> !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 256xf32>

  // CHECK: mt3k.gemm %{{.*}}, %{{.*}} -> %{{.*}} transpose_b : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 128x64xbf16> -> !mt3k.buffer<ddr, 256x128xbf16>
  mt3k.gemm %h, %wqkv -> %qkv transpose_b : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 128x64xbf16> -> !mt3k.buffer<ddr, 256x128xbf16>
  // CHECK: mt3k.gemm %{{.*}}, %{{.*}} -> %{{.*}} transpose_a accumulate alpha 5.000000e-01 : !mt3k.buffer<ddr, 256x128xbf16>, !mt3k.buffer<ddr, 256x64xbf16> -> !mt3k.buffer<ddr, 128x64xf32>
  mt3k.gemm %qkv, %h -> %dw transpose_a accumulate alpha 0.5 : !mt3k.buffer<ddr, 256x128xbf16>, !mt3k.buffer<ddr, 256x64xbf16> -> !mt3k.buffer<ddr, 128x64xf32>

  // Views reshape [tokens, 2 * hidden] into q/k/v and [tokens, hidden] into heads.
  // CHECK: %[[Q:.*]] = mt3k.view %{{.*}}[0] : !mt3k.buffer<ddr, 256x128xbf16> to !mt3k.buffer<ddr, 1x256x4x16xbf16>
  %q = mt3k.view %qkv[0] : !mt3k.buffer<ddr, 256x128xbf16> to !mt3k.buffer<ddr, 1x256x4x16xbf16>
  %k = mt3k.view %qkv[32768] : !mt3k.buffer<ddr, 256x128xbf16> to !mt3k.buffer<ddr, 1x256x2x16xbf16>
  %v = mt3k.view %qkv[49152] : !mt3k.buffer<ddr, 256x128xbf16> to !mt3k.buffer<ddr, 1x256x2x16xbf16>
  %o4 = mt3k.view %o[0] : !mt3k.buffer<ddr, 256x64xbf16> to !mt3k.buffer<ddr, 1x256x4x16xbf16>

  // CHECK: mt3k.elementwise rope ins(%[[Q]] : !mt3k.buffer<ddr, 1x256x4x16xbf16>) outs(%[[Q]] : !mt3k.buffer<ddr, 1x256x4x16xbf16>) theta 1.000000e+04
  mt3k.elementwise rope ins(%q : !mt3k.buffer<ddr, 1x256x4x16xbf16>) outs(%q : !mt3k.buffer<ddr, 1x256x4x16xbf16>) theta 1.0e4
  // CHECK: mt3k.elementwise rope ins(%[[Q]] : !mt3k.buffer<ddr, 1x256x4x16xbf16>) outs(%[[Q]] : !mt3k.buffer<ddr, 1x256x4x16xbf16>) theta 5.000000e+05 rope_scaling #mt3k.rope_scaling<method = llama3, factor = 3.200000e+01, low_freq_factor = 1.000000e+00, high_freq_factor = 4.000000e+00, original_max_positions = 8192>
  mt3k.elementwise rope ins(%q : !mt3k.buffer<ddr, 1x256x4x16xbf16>) outs(%q : !mt3k.buffer<ddr, 1x256x4x16xbf16>) theta 5.0e5 rope_scaling #mt3k.rope_scaling<method = llama3, factor = 32.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 8192>
  // CHECK: mt3k.elementwise rope_bwd ins
  mt3k.elementwise rope_bwd ins(%q : !mt3k.buffer<ddr, 1x256x4x16xbf16>) outs(%q : !mt3k.buffer<ddr, 1x256x4x16xbf16>) theta 1.0e4

  // CHECK: mt3k.attention_fwd %[[Q]], %{{.*}}, %{{.*}} -> %{{.*}}, %{{.*}} causal : !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16> -> !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x4x256xf32>
  mt3k.attention_fwd %q, %k, %v -> %o4, %lse causal : !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16> -> !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x4x256xf32>
  // CHECK: mt3k.attention_fwd {{.*}} scale 2.500000e-01 :
  mt3k.attention_fwd %q, %k, %v -> %o4, %lse scale 0.25 : !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16> -> !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x4x256xf32>

  // CHECK: mt3k.elementwise swiglu ins(%{{.*}}, %{{.*}} : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 256x64xbf16>) outs(%{{.*}} : !mt3k.buffer<ddr, 256x64xbf16>)
  mt3k.elementwise swiglu ins(%gate, %h : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 256x64xbf16>) outs(%o : !mt3k.buffer<ddr, 256x64xbf16>)
  // CHECK: mt3k.elementwise residual_add ins
  mt3k.elementwise residual_add ins(%x, %o : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 256x64xbf16>) outs(%x : !mt3k.buffer<ddr, 256x64xbf16>)
  // CHECK: mt3k.elementwise cast ins(%{{.*}} : !mt3k.buffer<ddr, 256x64xbf16>) outs(%{{.*}} : !mt3k.buffer<ddr, 256x64xf32>)
  mt3k.elementwise cast ins(%x : !mt3k.buffer<ddr, 256x64xbf16>) outs(%sum : !mt3k.buffer<ddr, 256x64xf32>)
  // CHECK: mt3k.elementwise scale ins(%{{.*}} : !mt3k.buffer<ddr, 256x64xf32>) outs(%{{.*}} : !mt3k.buffer<ddr, 256x64xf32>) scale 2.500000e-01
  mt3k.elementwise scale ins(%sum : !mt3k.buffer<ddr, 256x64xf32>) outs(%sum : !mt3k.buffer<ddr, 256x64xf32>) scale 0.25

  // CHECK: %[[ACT:.*]] = mt3k.send %{{.*}} to 1 on @pp tag 0 : !mt3k.buffer<ddr, 256x64xbf16>
  %act = mt3k.send %x to 1 on @pp tag 0 : !mt3k.buffer<ddr, 256x64xbf16>
  // CHECK: %[[GRAD:.*]] = mt3k.recv %{{.*}} from 1 on @pp tag 1 : !mt3k.buffer<ddr, 256x64xbf16>
  %grad = mt3k.recv %h from 1 on @pp tag 1 : !mt3k.buffer<ddr, 256x64xbf16>
  // CHECK: mt3k.wait %[[ACT]], %[[GRAD]]
  mt3k.wait %act, %grad
  // A span of the per-op trace.
  // CHECK: mt3k.trace_begin "bwd-W L2 mb0" backward
  // CHECK-NEXT: mt3k.trace_end
  mt3k.trace_begin "bwd-W L2 mb0" backward
  mt3k.trace_end

  // CHECK: mt3k.elementwise swiglu_bwd ins
  mt3k.elementwise swiglu_bwd ins(%gate, %h, %o : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 256x64xbf16>) outs(%gate, %h : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 256x64xbf16>)

  // CHECK: mt3k.attention_bwd %[[Q]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, %{{.*}}, %{{.*}} causal : !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x4x256xf32> -> !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>
  mt3k.attention_bwd %q, %k, %v, %o4, %o4, %lse -> %dq, %dk, %dv causal : !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x4x256xf32> -> !mt3k.buffer<ddr, 1x256x4x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>, !mt3k.buffer<ddr, 1x256x2x16xbf16>

  // CHECK: mt3k.rmsnorm_bwd %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, %{{.*}} accumulate : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 256xf32>, !mt3k.buffer<ddr, 256x64xbf16> -> !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 64xbf16>
  mt3k.rmsnorm_bwd %x, %nw, %rstd, %h -> %h, %dnw accumulate : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 256xf32>, !mt3k.buffer<ddr, 256x64xbf16> -> !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 64xbf16>
  // CHECK: mt3k.rmsnorm_bwd {{.*}} -> %{{.*}}, %{{.*}} :
  mt3k.rmsnorm_bwd %x, %nw, %rstd, %h -> %h, %dnw : !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 256xf32>, !mt3k.buffer<ddr, 256x64xbf16> -> !mt3k.buffer<ddr, 256x64xbf16>, !mt3k.buffer<ddr, 64xbf16>

  // CHECK: mt3k.elementwise embedding_bwd ins(%[[IDS]], %{{.*}} : !mt3k.buffer<ddr, 256xi32>, !mt3k.buffer<ddr, 256x64xbf16>) outs(%[[EMB]] : !mt3k.buffer<ddr, 1000x64xbf16>)
  mt3k.elementwise embedding_bwd ins(%ids, %x : !mt3k.buffer<ddr, 256xi32>, !mt3k.buffer<ddr, 256x64xbf16>) outs(%embed : !mt3k.buffer<ddr, 1000x64xbf16>)

  // Gradient synchronization and the optimizer step, ZeRO-style.
  %flat = mt3k.view %dw[0] : !mt3k.buffer<ddr, 128x64xf32> to !mt3k.buffer<ddr, 8192xf32>
  %shard = mt3k.buffer "wqkv.grad.shard" at 574592 : !mt3k.buffer<ddr, 2048xf32>
  %master = mt3k.buffer "wqkv.master" at 582784 : !mt3k.buffer<ddr, 2048xf32>
  %m = mt3k.buffer "wqkv.m" at 590976 : !mt3k.buffer<ddr, 2048xf32>
  %v2 = mt3k.buffer "wqkv.v" at 599168 : !mt3k.buffer<ddr, 2048xf32>
  %wshard = mt3k.buffer "wqkv.view.shard" at 607360 : !mt3k.buffer<ddr, 2048xbf16>
  %wflat = mt3k.view %wqkv[0] : !mt3k.buffer<ddr, 128x64xbf16> to !mt3k.buffer<ddr, 8192xbf16>

  // CHECK: %[[AR:.*]] = mt3k.all_reduce avg %{{.*}} -> %{{.*}} on @dp hierarchical : !mt3k.buffer<ddr, 8192xf32> -> !mt3k.buffer<ddr, 8192xf32>
  %ar = mt3k.all_reduce avg %flat -> %flat on @dp hierarchical : !mt3k.buffer<ddr, 8192xf32> -> !mt3k.buffer<ddr, 8192xf32>
  // CHECK: mt3k.wait %[[AR]]
  mt3k.wait %ar
  // CHECK: %[[RS:.*]] = mt3k.reduce_scatter sum %{{.*}} -> %{{.*}} on @dp ring : !mt3k.buffer<ddr, 8192xf32> -> !mt3k.buffer<ddr, 2048xf32>
  %rs = mt3k.reduce_scatter sum %flat -> %shard on @dp ring : !mt3k.buffer<ddr, 8192xf32> -> !mt3k.buffer<ddr, 2048xf32>
  // CHECK: mt3k.wait %[[RS]]
  mt3k.wait %rs
  // CHECK: mt3k.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}} lr 3.000000e-04 beta1 9.000000e-01 beta2 {{0.9499.*|9.500000e-01}} eps 1.000000e-08 weight_decay 1.000000e-01 grad_scale 2.500000e-01 : !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32> -> !mt3k.buffer<ddr, 2048xbf16>
  mt3k.adamw %shard, %master, %m, %v2 -> %wshard lr 3.0e-4 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 grad_scale 0.25 : !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32> -> !mt3k.buffer<ddr, 2048xbf16>
  // A reduce-scatter that leaves its own contribution to the update, and
  // the update that completes the average.
  // CHECK: mt3k.reduce_scatter avg %{{.*}} -> %{{.*}} on @dp ring leave_own : !mt3k.buffer<ddr, 8192xf32> -> !mt3k.buffer<ddr, 2048xf32>
  %rso = mt3k.reduce_scatter avg %flat -> %shard on @dp ring leave_own : !mt3k.buffer<ddr, 8192xf32> -> !mt3k.buffer<ddr, 2048xf32>
  mt3k.wait %rso
  %ownGrad = mt3k.group_slot %flat on @dp : !mt3k.buffer<ddr, 8192xf32> to !mt3k.buffer<ddr, 2048xf32>
  // CHECK: mt3k.adamw %{{.*}} plus %{{.*}} : !mt3k.buffer<ddr, 2048xf32> over 4, %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}} lr
  mt3k.adamw %shard plus %ownGrad : !mt3k.buffer<ddr, 2048xf32> over 4, %master, %m, %v2 -> %wshard lr 3.0e-4 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32> -> !mt3k.buffer<ddr, 2048xbf16>
  // CHECK: mt3k.adamw {{.*}} weight_decay 0.000000e+00 :
  mt3k.adamw %shard, %master, %m, %v2 -> %wshard lr 3.0e-4 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.0 : !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32>, !mt3k.buffer<ddr, 2048xf32> -> !mt3k.buffer<ddr, 2048xbf16>
  // CHECK: %[[AG:.*]] = mt3k.all_gather %{{.*}} -> %{{.*}} on @dp tree : !mt3k.buffer<ddr, 2048xbf16> -> !mt3k.buffer<ddr, 8192xbf16>
  %ag = mt3k.all_gather %wshard -> %wflat on @dp tree : !mt3k.buffer<ddr, 2048xbf16> -> !mt3k.buffer<ddr, 8192xbf16>
  // ZeRO-1/2 in place: this rank's block of the view as the shard.
  // CHECK: %[[OWN:.*]] = mt3k.group_slot %{{.*}} on @dp : !mt3k.buffer<ddr, 8192xbf16> to !mt3k.buffer<ddr, 2048xbf16>
  %own = mt3k.group_slot %wflat on @dp : !mt3k.buffer<ddr, 8192xbf16> to !mt3k.buffer<ddr, 2048xbf16>
  // CHECK: mt3k.all_gather %[[OWN]] -> %{{.*}} on @dp ring
  %agInPlace = mt3k.all_gather %own -> %wflat on @dp ring : !mt3k.buffer<ddr, 2048xbf16> -> !mt3k.buffer<ddr, 8192xbf16>
  mt3k.wait %agInPlace
  // CHECK: %[[BC:.*]] = mt3k.broadcast %{{.*}} from 0 on @node tree : !mt3k.buffer<ddr, 64xbf16>
  %bc = mt3k.broadcast %nw from 0 on @node tree : !mt3k.buffer<ddr, 64xbf16>
  // CHECK: mt3k.wait %[[AG]], %[[BC]]
  mt3k.wait %ag, %bc

  // Parameter-view prefetch: DDR -> GSM -> one core's AM, and back.
  // CHECK: %[[TILE:.*]] = mt3k.buffer "tile" at 0 : !mt3k.buffer<gsm, 32x64xbf16>
  %tile = mt3k.buffer "tile" at 0 : !mt3k.buffer<gsm, 32x64xbf16>
  // CHECK: %[[AMT:.*]] = mt3k.buffer "am.tile" at 4096 : !mt3k.buffer<am, 32x64xbf16>
  %amt = mt3k.buffer "am.tile" at 4096 : !mt3k.buffer<am, 32x64xbf16>
  %rows = mt3k.view %wqkv[4096] : !mt3k.buffer<ddr, 128x64xbf16> to !mt3k.buffer<ddr, 32x64xbf16>
  // CHECK: %[[T0:.*]] = mt3k.dma %{{.*}} -> %[[TILE]] : !mt3k.buffer<ddr, 32x64xbf16> -> !mt3k.buffer<gsm, 32x64xbf16>
  %t0 = mt3k.dma %rows -> %tile : !mt3k.buffer<ddr, 32x64xbf16> -> !mt3k.buffer<gsm, 32x64xbf16>
  // CHECK: mt3k.wait %[[T0]]
  mt3k.wait %t0
  // CHECK: %[[T1:.*]] = mt3k.dma %[[TILE]] -> %[[AMT]] core 23 channel 19 : !mt3k.buffer<gsm, 32x64xbf16> -> !mt3k.buffer<am, 32x64xbf16>
  %t1 = mt3k.dma %tile -> %amt core 23 channel 19 : !mt3k.buffer<gsm, 32x64xbf16> -> !mt3k.buffer<am, 32x64xbf16>
  // CHECK: %[[T2:.*]] = mt3k.dma %[[AMT]] -> %{{.*}} core 0 : !mt3k.buffer<am, 32x64xbf16> -> !mt3k.buffer<ddr, 32x64xbf16>
  %t2 = mt3k.dma %amt -> %rows core 0 : !mt3k.buffer<am, 32x64xbf16> -> !mt3k.buffer<ddr, 32x64xbf16>
  // CHECK: mt3k.wait %[[T1]], %[[T2]]
  mt3k.wait %t1, %t2
  // Concurrent readers of one range, and writers of different cores' AM.
  %tile2 = mt3k.buffer "tile2" at 4096 : !mt3k.buffer<gsm, 32x64xbf16>
  %t3 = mt3k.dma %rows -> %tile : !mt3k.buffer<ddr, 32x64xbf16> -> !mt3k.buffer<gsm, 32x64xbf16>
  %t4 = mt3k.dma %rows -> %tile2 : !mt3k.buffer<ddr, 32x64xbf16> -> !mt3k.buffer<gsm, 32x64xbf16>
  %t5 = mt3k.dma %rows -> %amt core 1 : !mt3k.buffer<ddr, 32x64xbf16> -> !mt3k.buffer<am, 32x64xbf16>
  %t6 = mt3k.dma %rows -> %amt core 2 : !mt3k.buffer<ddr, 32x64xbf16> -> !mt3k.buffer<am, 32x64xbf16>
  // CHECK: mt3k.wait %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}{{$}}
  mt3k.wait %t3, %t4, %t5, %t6
  // CHECK: mt3k.gemm {{.*}} : !mt3k.buffer<gsm, 32x64xbf16>, !mt3k.buffer<am, 32x64xbf16> -> !mt3k.buffer<ddr, 32x32xbf16>
  %c = mt3k.view %o[0] : !mt3k.buffer<ddr, 256x64xbf16> to !mt3k.buffer<ddr, 32x32xbf16>
  mt3k.gemm %tile, %amt -> %c transpose_b : !mt3k.buffer<gsm, 32x64xbf16>, !mt3k.buffer<am, 32x64xbf16> -> !mt3k.buffer<ddr, 32x32xbf16>

  // Activation offloading.
  // CHECK: %[[OFF:.*]] = mt3k.offload %{{.*}} to host "act.0" : !mt3k.buffer<ddr, 256x64xbf16>
  %off = mt3k.offload %x to host "act.0" : !mt3k.buffer<ddr, 256x64xbf16>
  // CHECK: %[[OFF2:.*]] = mt3k.offload %{{.*}} to storage "act.1" : !mt3k.buffer<ddr, 256x64xbf16>
  %off2 = mt3k.offload %x to storage "act.1" : !mt3k.buffer<ddr, 256x64xbf16>
  // CHECK: mt3k.wait %[[OFF]], %[[OFF2]]
  mt3k.wait %off, %off2
  // CHECK: %[[REL:.*]] = mt3k.reload %{{.*}} from host "act.0" : !mt3k.buffer<ddr, 256x64xbf16>
  %rel = mt3k.reload %h from host "act.0" : !mt3k.buffer<ddr, 256x64xbf16>
  // CHECK: %[[REL2:.*]] = mt3k.reload %{{.*}} from storage "act.1" : !mt3k.buffer<ddr, 128x128xbf16>
  %rel2 = mt3k.reload %qkvh from storage "act.1" : !mt3k.buffer<ddr, 128x128xbf16>
  mt3k.wait %rel, %rel2

  // CHECK: mt3k.barrier @dp
  mt3k.barrier @dp
}

// CHECK-LABEL: mt3k.program @stage1 stage 1 {
mt3k.program @stage1 stage 1 {
  %labels = mt3k.buffer "labels" at 0 : !mt3k.buffer<ddr, 256xi32>
  %logits = mt3k.buffer "logits" at 1024 : !mt3k.buffer<ddr, 256x1000xf32>
  %loss = mt3k.buffer "loss" at 1025024 : !mt3k.buffer<ddr, f32>
  // CHECK: mt3k.load_batch labels %{{.*}} micro_batch 7 : !mt3k.buffer<ddr, 256xi32>
  mt3k.load_batch labels %labels micro_batch 7 : !mt3k.buffer<ddr, 256xi32>
  // CHECK: mt3k.elementwise cross_entropy ins(%{{.*}}, %{{.*}} : !mt3k.buffer<ddr, 256x1000xf32>, !mt3k.buffer<ddr, 256xi32>) outs(%{{.*}} : !mt3k.buffer<ddr, f32>)
  mt3k.elementwise cross_entropy ins(%logits, %labels : !mt3k.buffer<ddr, 256x1000xf32>, !mt3k.buffer<ddr, 256xi32>) outs(%loss : !mt3k.buffer<ddr, f32>)
  // CHECK: mt3k.report_loss %{{.*}} micro_batch 7 : !mt3k.buffer<ddr, f32>
  mt3k.report_loss %loss micro_batch 7 : !mt3k.buffer<ddr, f32>
  // CHECK: mt3k.elementwise cross_entropy_bwd ins(%{{.*}}, %{{.*}} : !mt3k.buffer<ddr, 256x1000xf32>, !mt3k.buffer<ddr, 256xi32>) outs(%{{.*}} : !mt3k.buffer<ddr, 256x1000xf32>) scale 3.906250e-03
  mt3k.elementwise cross_entropy_bwd ins(%logits, %labels : !mt3k.buffer<ddr, 256x1000xf32>, !mt3k.buffer<ddr, 256xi32>) outs(%logits : !mt3k.buffer<ddr, 256x1000xf32>) scale 0.00390625
  // CHECK: mt3k.elementwise cross_entropy_bwd {{.*}}256x1000xf32>){{$}}
  mt3k.elementwise cross_entropy_bwd ins(%logits, %labels : !mt3k.buffer<ddr, 256x1000xf32>, !mt3k.buffer<ddr, 256xi32>) outs(%logits : !mt3k.buffer<ddr, 256x1000xf32>)
  %x = mt3k.view %logits[0] : !mt3k.buffer<ddr, 256x1000xf32> to !mt3k.buffer<ddr, 256x64xbf16>
  // CHECK: mt3k.recv %{{.*}} from 0 on @pp tag 0
  %t = mt3k.recv %x from 0 on @pp tag 0 : !mt3k.buffer<ddr, 256x64xbf16>
  mt3k.wait %t
  // CHECK: mt3k.send %{{.*}} to 0 on @pp tag 1
  %t2 = mt3k.send %x to 0 on @pp tag 1 : !mt3k.buffer<ddr, 256x64xbf16>
  mt3k.wait %t2
  // An empty program is fine too.
}

// CHECK-LABEL: mt3k.program @empty stage 2 {
// CHECK-NEXT: }
mt3k.program @empty stage 2 {
}
