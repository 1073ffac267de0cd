// A decoder layer's forward and backward under --ratrain-lower-to-mt3k
// (docs/lowering.md, "Op by op" and "Buffer layout"): the kernel sequence
// (RMSNorm, the q/k/v GEMMs, RoPE, flash attention, the o projection with
// its fused residual, RMSNorm, gate/up GEMMs, SwiGLU, the down projection)
// and the buffers it runs on, at the offsets buffer assignment recorded.
//
// Input: a scheduled, buffer-assigned 1-stage pipeline of a tiny fp32 LLaMA
// (hidden 64, 2 heads of 32, ffn 128, vocab 128, seq 8, 1 micro-batch),
// reduced by hand from --ratrain-schedule-pipeline output: embedding, one
// decoder layer, head. The embedding and head kernels are checked in
// embedding-head.mlir, the syncs and updates in grad-sync-update.mlir.
//
// Assigned DDR (`ratrain.buffers` = id, offset, bytes per result):
//        0  view of layer 0 (embedding, 128x64)       32768
//    32768  Adam m, v of layer 0                      65536
//    98304  view of layer 1 (decoder, 41088 params)  164352
//   262656  Adam m, v of layer 1                     328704
//   591360  view of layer 2 (head, 64 + 128x64)       33024
//   624384  Adam m, v of layer 2                      66048
//   690432  workspace (scratch_buffers)                8192
//   698624  the gradients, one after the other (head, decoder, embedding)
//   731648  head activations                          12320
//   862976  decoder activations                       34880
//   897856  embedding activations (token ids)            32
// fp32 masters take no bytes: an fp32 model's view is its master.

// The input is a valid, verified schedule.
// (outline-layers=false: the kernel sequences unrolled at their use; the
// outlined form, the default, is checked in RATrainToMT3K/outline-layers.mlir.)
// RUN: ratrain-opt %s | ratrain-opt --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml outline-layers=false" | FileCheck %s

ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 897888 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768,       1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352,  4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024,  7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 690432, 8192>}} {
    // Forward of micro-batch 0: embedding, decoder, head.
    %act0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 897856, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 731648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    // Head: backward, then its gradient's lifecycle (sync, update, view).
    %g2 = ratrain.backward %view2, %act2 mb(0) {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    // Decoder: backward (its gradient reuses the head gradient's bytes).
    %g1 = ratrain.backward %view1, %act1 mb(0) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    // Embedding.
    %g0 = ratrain.backward %view0, %act0 mb(0) {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    // The views are in place before the next step.
    %view0n = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %view1n = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %view2n = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %view0n, %master0n, %opt0n, %view1n, %master1n, %opt1n, %view2n, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// The decoder's state (model layer 1 = HF layer 0) at the view's and the
// Adam state's assigned offsets; the view is carved into one view per HF
// tensor, in the order of docs/lowering.md, "Layer states" (shapes: ln1
// [64], q, k, v, o [64x64], ln2 [64], gate, up [128x64], down [64x128]).
// CHECK-LABEL: mt3k.program @stage0 stage 0
// CHECK: %[[LV:[0-9]+]] = mt3k.buffer "model.layers.0.view" at 98304 : !mt3k.buffer<ddr, 164352xi8>
// CHECK-NEXT: %[[LA:[0-9]+]] = mt3k.buffer "model.layers.0.adam" at 262656 : !mt3k.buffer<ddr, 328704xi8>
// CHECK-NEXT: %[[LN1:[0-9]+]] = mt3k.view %[[LV]][0] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 64xf32>
// CHECK-NEXT: mt3k.init_param ones %[[LN1]] "model.layers.0.input_layernorm.weight"
// CHECK-NEXT: %[[WQ:[0-9]+]] = mt3k.view %[[LV]][256] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 64x64xf32>
// CHECK-NEXT: mt3k.init_param normal %[[WQ]] "model.layers.0.self_attn.q_proj.weight" std 2.000000e-02
// CHECK-NEXT: %[[WK:[0-9]+]] = mt3k.view %[[LV]][16640] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 64x64xf32>
// CHECK-NEXT: mt3k.init_param normal %[[WK]] "model.layers.0.self_attn.k_proj.weight" std 2.000000e-02
// CHECK-NEXT: %[[WV:[0-9]+]] = mt3k.view %[[LV]][33024] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 64x64xf32>
// CHECK-NEXT: mt3k.init_param normal %[[WV]] "model.layers.0.self_attn.v_proj.weight" std 2.000000e-02
// CHECK-NEXT: %[[WO:[0-9]+]] = mt3k.view %[[LV]][49408] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 64x64xf32>
// CHECK-NEXT: mt3k.init_param normal %[[WO]] "model.layers.0.self_attn.o_proj.weight" std 2.000000e-02
// CHECK-NEXT: %[[LN2:[0-9]+]] = mt3k.view %[[LV]][65792] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 64xf32>
// CHECK-NEXT: mt3k.init_param ones %[[LN2]] "model.layers.0.post_attention_layernorm.weight"
// CHECK-NEXT: %[[WG:[0-9]+]] = mt3k.view %[[LV]][66048] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 128x64xf32>
// CHECK-NEXT: mt3k.init_param normal %[[WG]] "model.layers.0.mlp.gate_proj.weight" std 2.000000e-02
// CHECK-NEXT: %[[WU:[0-9]+]] = mt3k.view %[[LV]][98816] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 128x64xf32>
// CHECK-NEXT: mt3k.init_param normal %[[WU]] "model.layers.0.mlp.up_proj.weight" std 2.000000e-02
// CHECK-NEXT: %[[WD:[0-9]+]] = mt3k.view %[[LV]][131584] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 64x128xf32>

// The residual stream between layers lives in the lowering's scratch area,
// behind the assigned arena (897888, aligned to 64).
// CHECK: %[[STREAMBUF:[0-9]+]] = mt3k.buffer "scratch.stream" at 897920 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[STREAM:[0-9]+]] = mt3k.view %[[STREAMBUF]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>

// The stored activations at the forward's assigned offset, in the slots
// of docs/lowering.md, "Stored activations": x, xn1, q, k, v, o (and their
// [b, s, heads, d] views for RoPE and attention), x2, xn2, gate, up, hact,
// then the f32 statistics rstd1, rstd2, lse. q and k before RoPE go to R1.
// CHECK: %[[ACT:[0-9]+]] = mt3k.buffer "act.layer1.mb0" at 862976 : !mt3k.buffer<ddr, 34880xi8>
// CHECK-NEXT: %[[X:[0-9]+]] = mt3k.view %[[ACT]][0] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[XN1:[0-9]+]] = mt3k.view %[[ACT]][2048] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %{{[0-9]+}} = mt3k.view %[[ACT]][4096] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %{{[0-9]+}} = mt3k.view %[[ACT]][6144] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[V:[0-9]+]] = mt3k.view %[[ACT]][8192] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[O:[0-9]+]] = mt3k.view %[[ACT]][10240] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[Q4:[0-9]+]] = mt3k.view %[[ACT]][4096] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[K4:[0-9]+]] = mt3k.view %[[ACT]][6144] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[V4:[0-9]+]] = mt3k.view %[[ACT]][8192] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[O4:[0-9]+]] = mt3k.view %[[ACT]][10240] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[X2:[0-9]+]] = mt3k.view %[[ACT]][12288] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[XN2:[0-9]+]] = mt3k.view %[[ACT]][14336] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[GATE:[0-9]+]] = mt3k.view %[[ACT]][16384] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK-NEXT: %[[UP:[0-9]+]] = mt3k.view %[[ACT]][20480] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK-NEXT: %[[HACT:[0-9]+]] = mt3k.view %[[ACT]][24768] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK-NEXT: %[[RSTD1:[0-9]+]] = mt3k.view %[[ACT]][24576] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8xf32>
// CHECK-NEXT: %[[RSTD2:[0-9]+]] = mt3k.view %[[ACT]][24640] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8xf32>
// CHECK-NEXT: %[[LSE:[0-9]+]] = mt3k.view %[[ACT]][24704] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 1x2x8xf32>
// CHECK-NEXT: %[[R1:[0-9]+]] = mt3k.buffer "scratch.r1" at 899968 : !mt3k.buffer<ddr, 6144xi8>
// CHECK-NEXT: %[[QPRE:[0-9]+]] = mt3k.view %[[R1]][0] : !mt3k.buffer<ddr, 6144xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[KPRE:[0-9]+]] = mt3k.view %[[R1]][2048] : !mt3k.buffer<ddr, 6144xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[QPRE4:[0-9]+]] = mt3k.view %[[QPRE]][0] : !mt3k.buffer<ddr, 8x64xf32> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[KPRE4:[0-9]+]] = mt3k.view %[[KPRE]][0] : !mt3k.buffer<ddr, 8x64xf32> to !mt3k.buffer<ddr, 1x8x2x32xf32>

// R2: the backward's gradient of the attention residual.
// CHECK: %[[R2:[0-9]+]] = mt3k.buffer "scratch.r2" at 906112 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[DRES:[0-9]+]] = mt3k.view %[[R2]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>

// The gradient at the backward's assigned offset, flat and per tensor.
// CHECK: %[[GBUF:[0-9]+]] = mt3k.buffer "model.layers.0.grad" at 698624 : !mt3k.buffer<ddr, 164352xi8>
// CHECK-NEXT: %[[G:[0-9]+]] = mt3k.view %[[GBUF]][0] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 41088xf32>
// CHECK-NEXT: %[[GLN1:[0-9]+]] = mt3k.view %[[G]][0] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 64xf32>
// CHECK-NEXT: %[[GWQ:[0-9]+]] = mt3k.view %[[G]][256] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 64x64xf32>
// CHECK-NEXT: %[[GWK:[0-9]+]] = mt3k.view %[[G]][16640] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 64x64xf32>
// CHECK-NEXT: %[[GWV:[0-9]+]] = mt3k.view %[[G]][33024] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 64x64xf32>
// CHECK-NEXT: %[[GWO:[0-9]+]] = mt3k.view %[[G]][49408] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 64x64xf32>
// CHECK-NEXT: %[[GLN2:[0-9]+]] = mt3k.view %[[G]][65792] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 64xf32>
// CHECK-NEXT: %[[GWG:[0-9]+]] = mt3k.view %[[G]][66048] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 128x64xf32>
// CHECK-NEXT: %[[GWU:[0-9]+]] = mt3k.view %[[G]][98816] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 128x64xf32>
// CHECK-NEXT: %[[GWD:[0-9]+]] = mt3k.view %[[G]][131584] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 64x128xf32>

// Backward temporaries: R1 (dh, then dq, dk, dv, then dxn1 over dq) and
// the assigned workspace (dgate, dup, do, dq and dk before RoPE, the norms'
// input gradients).
// CHECK: %[[DH:[0-9]+]] = mt3k.view %[[R1]][0] : !mt3k.buffer<ddr, 6144xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK-NEXT: %[[DQ4:[0-9]+]] = mt3k.view %[[R1]][0] : !mt3k.buffer<ddr, 6144xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[DK4:[0-9]+]] = mt3k.view %[[R1]][2048] : !mt3k.buffer<ddr, 6144xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[DV4:[0-9]+]] = mt3k.view %[[R1]][4096] : !mt3k.buffer<ddr, 6144xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[DV:[0-9]+]] = mt3k.view %[[DV4]][0] : !mt3k.buffer<ddr, 1x8x2x32xf32> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[WBUF:[0-9]+]] = mt3k.buffer "scratch.w" at 690432 : !mt3k.buffer<ddr, 8192xi8>
// CHECK-NEXT: %[[DGATE:[0-9]+]] = mt3k.view %[[WBUF]][0] : !mt3k.buffer<ddr, 8192xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK-NEXT: %[[DUP:[0-9]+]] = mt3k.view %[[WBUF]][4096] : !mt3k.buffer<ddr, 8192xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK-NEXT: %[[DO4:[0-9]+]] = mt3k.view %[[WBUF]][0] : !mt3k.buffer<ddr, 8192xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[DO:[0-9]+]] = mt3k.view %[[DO4]][0] : !mt3k.buffer<ddr, 1x8x2x32xf32> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[DQPRE4:[0-9]+]] = mt3k.view %[[WBUF]][2048] : !mt3k.buffer<ddr, 8192xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[DKPRE4:[0-9]+]] = mt3k.view %[[WBUF]][4096] : !mt3k.buffer<ddr, 8192xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[DQPRE:[0-9]+]] = mt3k.view %[[DQPRE4]][0] : !mt3k.buffer<ddr, 1x8x2x32xf32> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[DKPRE:[0-9]+]] = mt3k.view %[[DKPRE4]][0] : !mt3k.buffer<ddr, 1x8x2x32xf32> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[T:[0-9]+]] = mt3k.view %[[WBUF]][0] : !mt3k.buffer<ddr, 8192xi8> to !mt3k.buffer<ddr, 8x64xf32>

// The forward: x from the stream into its slot, attention block, MLP
// block; the output goes back to the stream (the o and down projections
// accumulate onto a copy of the residual: the fused residual add).
// CHECK: mt3k.elementwise cast ins(%[[STREAM]] : {{.*}}) outs(%[[X]] : {{.*}})
// CHECK-NEXT: mt3k.rmsnorm_fwd %[[X]], %[[LN1]] -> %[[XN1]], %[[RSTD1]] eps 1.000000e-05
// CHECK-NEXT: mt3k.gemm %[[XN1]], %[[WQ]] -> %[[QPRE]] transpose_b
// CHECK-NEXT: mt3k.gemm %[[XN1]], %[[WK]] -> %[[KPRE]] transpose_b
// CHECK-NEXT: mt3k.gemm %[[XN1]], %[[WV]] -> %[[V]] transpose_b
// CHECK-NEXT: mt3k.elementwise rope ins(%[[QPRE4]] : {{.*}}) outs(%[[Q4]] : {{.*}}) theta 1.000000e+04
// CHECK-NEXT: mt3k.elementwise rope ins(%[[KPRE4]] : {{.*}}) outs(%[[K4]] : {{.*}}) theta 1.000000e+04
// CHECK-NEXT: mt3k.attention_fwd %[[Q4]], %[[K4]], %[[V4]] -> %[[O4]], %[[LSE]] causal scale 0.17677669529663687
// CHECK-NEXT: mt3k.elementwise cast ins(%[[X]] : {{.*}}) outs(%[[X2]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %[[O]], %[[WO]] -> %[[X2]] transpose_b accumulate
// CHECK-NEXT: mt3k.rmsnorm_fwd %[[X2]], %[[LN2]] -> %[[XN2]], %[[RSTD2]] eps 1.000000e-05
// CHECK-NEXT: mt3k.gemm %[[XN2]], %[[WG]] -> %[[GATE]] transpose_b
// CHECK-NEXT: mt3k.gemm %[[XN2]], %[[WU]] -> %[[UP]] transpose_b
// CHECK-NEXT: mt3k.elementwise swiglu ins(%[[GATE]], %[[UP]] : {{.*}}) outs(%[[HACT]] : {{.*}})
// CHECK-NEXT: mt3k.elementwise cast ins(%[[X2]] : {{.*}}) outs(%[[STREAM]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %[[HACT]], %[[WD]] -> %[[STREAM]] transpose_b accumulate

// The backward (after the head's): dy is in the stream; the MLP block
// back, the attention block back, dx into the stream. The first
// micro-batch writes the weight gradients (no accumulate).
// CHECK: mt3k.gemm %[[STREAM]], %[[WD]] -> %[[DH]]
// CHECK-NEXT: mt3k.gemm %[[STREAM]], %[[HACT]] -> %[[GWD]] transpose_a
// CHECK-NEXT: mt3k.elementwise swiglu_bwd ins(%[[GATE]], %[[UP]], %[[DH]] : {{.*}}) outs(%[[DGATE]], %[[DUP]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %[[DGATE]], %[[WG]] -> %[[DRES]]
// CHECK-NEXT: mt3k.gemm %[[DUP]], %[[WU]] -> %[[DRES]] accumulate
// CHECK-NEXT: mt3k.gemm %[[DGATE]], %[[XN2]] -> %[[GWG]] transpose_a
// CHECK-NEXT: mt3k.gemm %[[DUP]], %[[XN2]] -> %[[GWU]] transpose_a
// CHECK-NEXT: mt3k.rmsnorm_bwd %[[X2]], %[[LN2]], %[[RSTD2]], %[[DRES]] -> %[[T]], %[[GLN2]]
// CHECK-NEXT: mt3k.elementwise residual_add ins(%[[T]], %[[STREAM]] : {{.*}}) outs(%[[DRES]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %[[DRES]], %[[WO]] -> %[[DO]]
// CHECK-NEXT: mt3k.gemm %[[DRES]], %[[O]] -> %[[GWO]] transpose_a
// CHECK-NEXT: mt3k.attention_bwd %[[Q4]], %[[K4]], %[[V4]], %[[O4]], %[[DO4]], %[[LSE]] -> %[[DQ4]], %[[DK4]], %[[DV4]] causal scale 0.17677669529663687
// CHECK-NEXT: mt3k.elementwise rope_bwd ins(%[[DQ4]] : {{.*}}) outs(%[[DQPRE4]] : {{.*}}) theta 1.000000e+04
// CHECK-NEXT: mt3k.elementwise rope_bwd ins(%[[DK4]] : {{.*}}) outs(%[[DKPRE4]] : {{.*}}) theta 1.000000e+04
// CHECK-NEXT: mt3k.gemm %[[DQPRE]], %[[WQ]] -> %[[QPRE]]
// CHECK-NEXT: mt3k.gemm %[[DKPRE]], %[[WK]] -> %[[QPRE]] accumulate
// CHECK-NEXT: mt3k.gemm %[[DV]], %[[WV]] -> %[[QPRE]] accumulate
// CHECK-NEXT: mt3k.gemm %[[DQPRE]], %[[XN1]] -> %[[GWQ]] transpose_a
// CHECK-NEXT: mt3k.gemm %[[DKPRE]], %[[XN1]] -> %[[GWK]] transpose_a
// CHECK-NEXT: mt3k.gemm %[[DV]], %[[XN1]] -> %[[GWV]] transpose_a
// CHECK-NEXT: mt3k.rmsnorm_bwd %[[X]], %[[LN1]], %[[RSTD1]], %[[QPRE]] -> %[[T]], %[[GLN1]]
// CHECK-NEXT: mt3k.elementwise residual_add ins(%[[T]], %[[DRES]] : {{.*}}) outs(%[[STREAM]] : {{.*}})
