// The embedding and the head (final RMSNorm, LM head, cross-entropy) under
// --ratrain-lower-to-mt3k on a 1-stage pipeline (docs/lowering.md, "Op by
// op"): the token ids and labels the loader writes per micro-batch, the
// table lookup and its scatter-add gradient (zeroed by the first
// micro-batch only), the loss reported per micro-batch and its gradient
// computed in place with the 1 / (T m) scale, the head backward.
//
// Input: a scheduled, buffer-assigned 1-stage pipeline of a tiny fp32 LLaMA
// (hidden 64, 2 heads, ffn 128, vocab 128, seq 8; embedding, one decoder
// layer, head; 2 micro-batches, so T m = 16), reduced by hand from
// --ratrain-schedule-pipeline output. Assigned DDR: the views and Adam
// states of layers 0, 1, 2 from offset 0 (arg_buffers), the workspace at
// 690432; head activations at 698624 (mb 0) and 963648 (mb 1), token ids at
// 963648 (mb 0) and 975968 (mb 1), the head gradient at 897856, the
// embedding gradient at 930880.

// RUN: ratrain-opt %s | ratrain-opt --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml" | FileCheck %s

ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 976000 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768, 1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352, 4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024, 7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 20, 0, 0>,
                                             sync_staging = array<i64: 19, 0, 0>,
                                             workspace = array<i64: 18, 690432, 8192>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 963648, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 698624, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 897856, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 930880, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %act0_1 = ratrain.forward %view0 mb(1) {ratrain.buffers = array<i64: 15, 975968, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_1 = ratrain.forward %view1 mb(1) {ratrain.buffers = array<i64: 16, 862976, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_1 = ratrain.forward %view2 mb(1) {ratrain.buffers = array<i64: 17, 963648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_1 = ratrain.backward %view2, %act2_1 acc(%g2_0) mb(1) {ratrain.buffers = array<i64: 12, 897856, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_1 {ratrain.buffers = array<i64: 12, 897856, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 897856, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 897856, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    %g1_1 = ratrain.backward %view1, %act1_1 acc(%g1_0) mb(1) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    %g0_1 = ratrain.backward %view0, %act0_1 acc(%g0_0) mb(1) {ratrain.buffers = array<i64: 14, 930880, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_1 {ratrain.buffers = array<i64: 14, 930880, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 930880, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 930880, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// Prologue: the embedding table and the head's weights (model.norm,
// lm_head) at their assigned offsets, with their HF names.
// CHECK-LABEL: mt3k.program @stage0 stage 0
// CHECK: %[[EV:[0-9]+]] = mt3k.buffer "model.embed_tokens.view" at 0 : !mt3k.buffer<ddr, 32768xi8>
// CHECK-NEXT: %[[EA:[0-9]+]] = mt3k.buffer "model.embed_tokens.adam" at 32768 : !mt3k.buffer<ddr, 65536xi8>
// CHECK-NEXT: %[[TABLE:[0-9]+]] = mt3k.view %[[EV]][0] : !mt3k.buffer<ddr, 32768xi8> to !mt3k.buffer<ddr, 128x64xf32>
// CHECK-NEXT: mt3k.init_param normal %[[TABLE]] "model.embed_tokens.weight" std 2.000000e-02
// CHECK-NEXT: %{{[0-9]+}} = mt3k.view %[[EA]][0] : !mt3k.buffer<ddr, 65536xi8> to !mt3k.buffer<ddr, 128x64xf32>
// CHECK-NEXT: mt3k.init_param zeros %{{[0-9]+}} "model.embed_tokens.weight.exp_avg"
// CHECK: %[[HV:[0-9]+]] = mt3k.buffer "lm_head.view" at 591360 : !mt3k.buffer<ddr, 33024xi8>
// CHECK-NEXT: %{{[0-9]+}} = mt3k.buffer "lm_head.adam" at 624384 : !mt3k.buffer<ddr, 66048xi8>
// CHECK-NEXT: %[[NORM:[0-9]+]] = mt3k.view %[[HV]][0] : !mt3k.buffer<ddr, 33024xi8> to !mt3k.buffer<ddr, 64xf32>
// CHECK-NEXT: mt3k.init_param ones %[[NORM]] "model.norm.weight"
// CHECK-NEXT: %[[WLM:[0-9]+]] = mt3k.view %[[HV]][256] : !mt3k.buffer<ddr, 33024xi8> to !mt3k.buffer<ddr, 128x64xf32>

// Micro-batch 0's token ids (i32: the embedding's stored activation) and
// the residual stream in the scratch area.
// CHECK: %[[IDSBUF0:[0-9]+]] = mt3k.buffer "act.layer0.mb0" at 963648 : !mt3k.buffer<ddr, 32xi8>
// CHECK-NEXT: %[[IDS0:[0-9]+]] = mt3k.view %[[IDSBUF0]][0] : !mt3k.buffer<ddr, 32xi8> to !mt3k.buffer<ddr, 8xi32>
// CHECK-NEXT: %[[STREAMBUF:[0-9]+]] = mt3k.buffer "scratch.stream" at 976000 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[STREAM:[0-9]+]] = mt3k.view %[[STREAMBUF]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>

// The head's stored activations of micro-batch 0 at the forward's offset:
// x, xn, logits (overwritten by their gradient), f32 rstd, the loss, i32
// labels; the head's gradient (norm, then lm_head); R2 holds dxn.
// CHECK: %[[HACT0:[0-9]+]] = mt3k.buffer "act.layer2.mb0" at 698624 : !mt3k.buffer<ddr, 12320xi8>
// CHECK-NEXT: %[[HX0:[0-9]+]] = mt3k.view %[[HACT0]][0] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[HXN0:[0-9]+]] = mt3k.view %[[HACT0]][2048] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[LOGITS0:[0-9]+]] = mt3k.view %[[HACT0]][4096] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK-NEXT: %[[RSTD0:[0-9]+]] = mt3k.view %[[HACT0]][8192] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8xf32>
// CHECK-NEXT: %[[LOSS0:[0-9]+]] = mt3k.view %[[HACT0]][8256] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, f32>
// CHECK-NEXT: %[[LABELS0:[0-9]+]] = mt3k.view %[[HACT0]][8320] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8xi32>
// CHECK-NEXT: %[[HGBUF:[0-9]+]] = mt3k.buffer "lm_head.grad" at 897856 : !mt3k.buffer<ddr, 33024xi8>
// CHECK-NEXT: %[[HG:[0-9]+]] = mt3k.view %[[HGBUF]][0] : !mt3k.buffer<ddr, 33024xi8> to !mt3k.buffer<ddr, 8256xf32>
// CHECK-NEXT: %[[GNORM:[0-9]+]] = mt3k.view %[[HG]][0] : !mt3k.buffer<ddr, 8256xf32> to !mt3k.buffer<ddr, 64xf32>
// CHECK-NEXT: %[[GWLM:[0-9]+]] = mt3k.view %[[HG]][256] : !mt3k.buffer<ddr, 8256xf32> to !mt3k.buffer<ddr, 128x64xf32>
// CHECK-NEXT: %[[R2:[0-9]+]] = mt3k.buffer "scratch.r2" at 984192 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[DXN:[0-9]+]] = mt3k.view %[[R2]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>

// The embedding gradient, then micro-batch 1's ids and head activations
// at their own assigned offsets.
// CHECK: %[[EGBUF:[0-9]+]] = mt3k.buffer "model.embed_tokens.grad" at 930880 : !mt3k.buffer<ddr, 32768xi8>
// CHECK-NEXT: %[[EG:[0-9]+]] = mt3k.view %[[EGBUF]][0] : !mt3k.buffer<ddr, 32768xi8> to !mt3k.buffer<ddr, 8192xf32>
// CHECK-NEXT: %[[GTABLE:[0-9]+]] = mt3k.view %[[EG]][0] : !mt3k.buffer<ddr, 8192xf32> to !mt3k.buffer<ddr, 128x64xf32>
// CHECK-NEXT: %[[IDSBUF1:[0-9]+]] = mt3k.buffer "act.layer0.mb1" at 975968 : !mt3k.buffer<ddr, 32xi8>
// CHECK-NEXT: %[[IDS1:[0-9]+]] = mt3k.view %[[IDSBUF1]][0] : !mt3k.buffer<ddr, 32xi8> to !mt3k.buffer<ddr, 8xi32>
// CHECK: %[[HACT1:[0-9]+]] = mt3k.buffer "act.layer2.mb1" at 963648 : !mt3k.buffer<ddr, 12320xi8>
// CHECK-NEXT: %[[HX1:[0-9]+]] = mt3k.view %[[HACT1]][0] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[HXN1:[0-9]+]] = mt3k.view %[[HACT1]][2048] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[LOGITS1:[0-9]+]] = mt3k.view %[[HACT1]][4096] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK-NEXT: %[[RSTD1:[0-9]+]] = mt3k.view %[[HACT1]][8192] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8xf32>
// CHECK-NEXT: %[[LOSS1:[0-9]+]] = mt3k.view %[[HACT1]][8256] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, f32>
// CHECK-NEXT: %[[LABELS1:[0-9]+]] = mt3k.view %[[HACT1]][8320] : !mt3k.buffer<ddr, 12320xi8> to !mt3k.buffer<ddr, 8xi32>

// Micro-batch 0. Embedding forward: the loader writes the ids, the lookup
// writes the stream.
// CHECK: mt3k.load_batch inputs %[[IDS0]] micro_batch 0
// CHECK-NEXT: mt3k.elementwise embedding ins(%[[TABLE]], %[[IDS0]] : {{.*}}) outs(%[[STREAM]] : {{.*}})

// (The decoder forward runs in between.) Head forward: final norm, logits,
// the loss, reported per micro-batch, and in place its gradient, scaled by
// 1 / (T m) = 1 / (8 * 2) = 0.0625. Head backward: dxn, the LM-head weight
// gradient, the norm backward writes dx to the stream.
// CHECK: mt3k.elementwise cast ins(%[[STREAM]] : {{.*}}) outs(%[[HX0]] : {{.*}})
// CHECK-NEXT: mt3k.rmsnorm_fwd %[[HX0]], %[[NORM]] -> %[[HXN0]], %[[RSTD0]] eps 1.000000e-05
// CHECK-NEXT: mt3k.gemm %[[HXN0]], %[[WLM]] -> %[[LOGITS0]] transpose_b
// CHECK-NEXT: mt3k.load_batch labels %[[LABELS0]] micro_batch 0
// CHECK-NEXT: mt3k.elementwise cross_entropy ins(%[[LOGITS0]], %[[LABELS0]] : {{.*}}) outs(%[[LOSS0]] : {{.*}})
// CHECK-NEXT: mt3k.report_loss %[[LOSS0]] micro_batch 0
// CHECK-NEXT: mt3k.elementwise cross_entropy_bwd ins(%[[LOGITS0]], %[[LABELS0]] : {{.*}}) outs(%[[LOGITS0]] : {{.*}}) scale 6.250000e-02
// CHECK-NEXT: mt3k.gemm %[[LOGITS0]], %[[WLM]] -> %[[DXN]]
// CHECK-NEXT: mt3k.gemm %[[LOGITS0]], %[[HXN0]] -> %[[GWLM]] transpose_a
// CHECK-NEXT: mt3k.rmsnorm_bwd %[[HX0]], %[[NORM]], %[[RSTD0]], %[[DXN]] -> %[[STREAM]], %[[GNORM]]

// (The decoder backward runs in between.) Embedding backward: the first
// micro-batch zeroes the table's gradient, then scatter-adds into it.
// CHECK: mt3k.fill %[[GTABLE]], 0.000000e+00
// CHECK-NEXT: mt3k.elementwise embedding_bwd ins(%[[IDS0]], %[[STREAM]] : {{.*}}) outs(%[[GTABLE]] : {{.*}})
// CHECK-NEXT: mt3k.load_batch inputs %[[IDS1]] micro_batch 1
// CHECK-NEXT: mt3k.elementwise embedding ins(%[[TABLE]], %[[IDS1]] : {{.*}}) outs(%[[STREAM]] : {{.*}})

// Micro-batch 1: the head's weight gradients accumulate.
// CHECK: mt3k.elementwise cast ins(%[[STREAM]] : {{.*}}) outs(%[[HX1]] : {{.*}})
// CHECK-NEXT: mt3k.rmsnorm_fwd %[[HX1]], %[[NORM]] -> %[[HXN1]], %[[RSTD1]] eps 1.000000e-05
// CHECK-NEXT: mt3k.gemm %[[HXN1]], %[[WLM]] -> %[[LOGITS1]] transpose_b
// CHECK-NEXT: mt3k.load_batch labels %[[LABELS1]] micro_batch 1
// CHECK-NEXT: mt3k.elementwise cross_entropy ins(%[[LOGITS1]], %[[LABELS1]] : {{.*}}) outs(%[[LOSS1]] : {{.*}})
// CHECK-NEXT: mt3k.report_loss %[[LOSS1]] micro_batch 1
// CHECK-NEXT: mt3k.elementwise cross_entropy_bwd ins(%[[LOGITS1]], %[[LABELS1]] : {{.*}}) outs(%[[LOGITS1]] : {{.*}}) scale 6.250000e-02
// CHECK-NEXT: mt3k.gemm %[[LOGITS1]], %[[WLM]] -> %[[DXN]]
// CHECK-NEXT: mt3k.gemm %[[LOGITS1]], %[[HXN1]] -> %[[GWLM]] transpose_a accumulate
// CHECK-NEXT: mt3k.rmsnorm_bwd %[[HX1]], %[[NORM]], %[[RSTD1]], %[[DXN]] -> %[[STREAM]], %[[GNORM]] accumulate

// The embedding backward of micro-batch 1 scatter-adds without zeroing.
// CHECK: mt3k.elementwise embedding_bwd ins(%[[IDS1]], %[[STREAM]] : {{.*}}) outs(%[[GTABLE]] : {{.*}})
