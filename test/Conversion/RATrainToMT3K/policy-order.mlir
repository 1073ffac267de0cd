// The lifecycle policy's order survives the lowering: the mt3k program runs
// the ops in the schedule's order (docs/schedule.md, "--ratrain-schedule-
// lifecycle"; docs/lowering.md, "Op by op").
//   gpu_style: after the last backward, all syncs, then all waits, then all
//     updates (each with its GSM staging DMA), then the view waits: whole-
//     model phases at the iteration boundary; the three gradients are live
//     together, at three offsets.
//   ratrain: each layer's sync, wait and update right after its last
//     backward, before the next layer's backward; the gradients reuse one
//     offset (811648).
// Both: a staging slot is reused (the embedding's update takes the head's
// slot 0) only after the DMA that read it is waited.
//
// Inputs: the same tiny bf16 LLaMA (hidden 64, 2 heads, ffn 128, vocab 128,
// seq 8; embedding, one decoder layer, head; 1 stage, 1 micro-batch)
// scheduled under `policy gpu_style` and `policy ratrain` and buffer-
// assigned, reduced by hand from --ratrain-schedule-pipeline output.

// (outline-layers=false: the kernel sequences unrolled at their use; the
// outlined form, the default, is checked in RATrainToMT3K/outline-layers.mlir.)
// RUN: ratrain-opt %s -split-input-file | ratrain-opt -split-input-file --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s -split-input-file --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml outline-layers=false" | FileCheck %s

// gpu_style.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy gpu_style {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 927840 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 16384, 1, 16384, 32768, 2, 49152, 65536,
                                                   3, 114688, 82176, 4, 196864, 164352, 5, 361216, 328704,
                                                   6, 689920, 16512, 7, 706432, 33024, 8, 739456, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 805504, 6144>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 927808, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 893824, 17472>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 811648, 8224>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.view<2>, !ratrain.act<2, full>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.view<1>, !ratrain.act<1, full>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.async<!ratrain.grad<2, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.async<!ratrain.grad<1, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 706432, 33024, 8, 739456, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 196864, 164352, 5, 361216, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 16384, 32768, 2, 49152, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 689920, 16512>} : !ratrain.master<2>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 114688, 82176>} : !ratrain.master<1>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 114688, 82176>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 689920, 16512>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: policy = "gpu_style"
// CHECK: %[[HGB:[0-9]+]] = mt3k.buffer "lm_head.grad" at 911296 : !mt3k.buffer<ddr, 16512xi8>
// CHECK-NEXT: %[[HG:[0-9]+]] = mt3k.view %[[HGB]][0] : !mt3k.buffer<ddr, 16512xi8> to !mt3k.buffer<ddr, 8256xbf16>
// CHECK: %[[LGB:[0-9]+]] = mt3k.buffer "model.layers.0.grad" at 811648 : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[LG:[0-9]+]] = mt3k.view %[[LGB]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// CHECK: %[[EGB:[0-9]+]] = mt3k.buffer "model.embed_tokens.grad" at 893824 : !mt3k.buffer<ddr, 16384xi8>
// CHECK-NEXT: %[[EG:[0-9]+]] = mt3k.view %[[EGB]][0] : !mt3k.buffer<ddr, 16384xi8> to !mt3k.buffer<ddr, 8192xbf16>
// No collective before the last backward (the embedding's).
// CHECK-NOT: mt3k.all_reduce
// CHECK: mt3k.elementwise embedding_bwd
// CHECK-NEXT: %[[S2:[0-9]+]] = mt3k.all_reduce avg %[[HG]] -> %[[HG]] on @dp ring
// CHECK-NEXT: %[[S1:[0-9]+]] = mt3k.all_reduce avg %[[LG]] -> %[[LG]] on @dp ring
// CHECK-NEXT: %[[S0:[0-9]+]] = mt3k.all_reduce avg %[[EG]] -> %[[EG]] on @dp ring
// CHECK-NEXT: mt3k.wait %[[S2]]{{$}}
// CHECK-NEXT: mt3k.wait %[[S1]]{{$}}
// CHECK-NEXT: mt3k.wait %[[S0]]{{$}}
// CHECK-NEXT: mt3k.adamw %[[HG]], {{.*}} -> %[[ST2:[0-9]+]] lr
// CHECK-NEXT: %[[D2:[0-9]+]] = mt3k.dma %[[ST2]] -> %{{[0-9]+}} :
// CHECK-NEXT: mt3k.adamw %[[LG]], {{.*}} -> %[[ST1:[0-9]+]] lr
// CHECK-NEXT: %[[D1:[0-9]+]] = mt3k.dma %[[ST1]] -> %{{[0-9]+}} :
// CHECK-NEXT: mt3k.wait %[[D2]]{{$}}
// CHECK-NEXT: mt3k.adamw %[[EG]], {{.*}} -> %[[ST0:[0-9]+]] lr
// CHECK-NEXT: %[[D0:[0-9]+]] = mt3k.dma %[[ST0]] -> %{{[0-9]+}} :
// The view waits (view_prefetch's wait) at the end.
// CHECK-NEXT: mt3k.wait %[[D0]]{{$}}
// CHECK-NEXT: mt3k.wait %[[D1]]{{$}}
// CHECK-NEXT: }

// -----

// ratrain.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 911328 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 16384, 1, 16384, 32768, 2, 49152, 65536,
                                                   3, 114688, 82176, 4, 196864, 164352, 5, 361216, 328704,
                                                   6, 689920, 16512, 7, 706432, 33024, 8, 739456, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 805504, 6144>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 911296, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 893824, 17472>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 828160, 8224>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 811648, 16512>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 811648, 16512>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 811648, 16512>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 811648, 16512>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 706432, 33024, 8, 739456, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 689920, 16512>} : !ratrain.master<2>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 196864, 164352, 5, 361216, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 114688, 82176>} : !ratrain.master<1>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 811648, 16384>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 14, 811648, 16384>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 811648, 16384>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 811648, 16384>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 16384, 32768, 2, 49152, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 114688, 82176>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 689920, 16512>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: policy = "ratrain"
// CHECK: %[[HGB:[0-9]+]] = mt3k.buffer "lm_head.grad" at 811648 : !mt3k.buffer<ddr, 16512xi8>
// CHECK-NEXT: %[[HG:[0-9]+]] = mt3k.view %[[HGB]][0] : !mt3k.buffer<ddr, 16512xi8> to !mt3k.buffer<ddr, 8256xbf16>
// CHECK: %[[LGB:[0-9]+]] = mt3k.buffer "model.layers.0.grad" at 811648 : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[LG:[0-9]+]] = mt3k.view %[[LGB]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// CHECK: %[[EGB:[0-9]+]] = mt3k.buffer "model.embed_tokens.grad" at 811648 : !mt3k.buffer<ddr, 16384xi8>
// CHECK-NEXT: %[[EG:[0-9]+]] = mt3k.view %[[EGB]][0] : !mt3k.buffer<ddr, 16384xi8> to !mt3k.buffer<ddr, 8192xbf16>
// The head: backward, sync, wait, update; then the decoder's backward.
// CHECK: mt3k.rmsnorm_bwd
// CHECK-NEXT: %[[S2:[0-9]+]] = mt3k.all_reduce avg %[[HG]] -> %[[HG]] on @dp ring
// CHECK-NEXT: mt3k.wait %[[S2]]{{$}}
// CHECK-NEXT: mt3k.adamw %[[HG]], {{.*}} -> %[[ST2:[0-9]+]] lr
// CHECK-NEXT: %[[D2:[0-9]+]] = mt3k.dma %[[ST2]] -> %{{[0-9]+}} :
// CHECK-NEXT: mt3k.gemm
// The decoder: backward, sync, wait, update; then the embedding's backward.
// CHECK: mt3k.elementwise residual_add
// CHECK: mt3k.elementwise residual_add
// CHECK-NEXT: %[[S1:[0-9]+]] = mt3k.all_reduce avg %[[LG]] -> %[[LG]] on @dp ring
// CHECK-NEXT: mt3k.wait %[[S1]]{{$}}
// CHECK-NEXT: mt3k.adamw %[[LG]], {{.*}} -> %[[ST1:[0-9]+]] lr
// CHECK-NEXT: %[[D1:[0-9]+]] = mt3k.dma %[[ST1]] -> %{{[0-9]+}} :
// CHECK-NEXT: mt3k.fill
// CHECK-NEXT: mt3k.elementwise embedding_bwd
// CHECK-NEXT: %[[S0:[0-9]+]] = mt3k.all_reduce avg %[[EG]] -> %[[EG]] on @dp ring
// CHECK-NEXT: mt3k.wait %[[S0]]{{$}}
// CHECK-NEXT: mt3k.wait %[[D2]]{{$}}
// CHECK-NEXT: mt3k.adamw %[[EG]], {{.*}} -> %[[ST0:[0-9]+]] lr
// CHECK-NEXT: %[[D0:[0-9]+]] = mt3k.dma %[[ST0]] -> %{{[0-9]+}} :
// CHECK-NEXT: mt3k.wait %[[D0]]{{$}}
// CHECK-NEXT: mt3k.wait %[[D1]]{{$}}
// CHECK-NEXT: }
