// Activation recovery under --ratrain-lower-to-mt3k (docs/lowering.md,
// "Stored activations" and "Op by op"):
//   full: the forward of a decoder layer that stores `input` keeps only x
//     (its other tensors go to the scratch.forward region, SwiGLU's output
//     to the workspace); `ratrain.recompute` re-runs the forward from the
//     stored x into the recompute's assigned buffer, in the full layout,
//     without the down projection, and the backward reads that buffer.
//   selective: stored like full (flash attention keeps no s x s scores);
//     there is no recompute op, and attention_bwd recomputes the scores
//     from the stored q, k, v, o and lse.
//   no room for hact: when the smallest assigned decoder activation buffer
//     cannot hold SwiGLU's output (a hand-shrunk buffer here), the forward
//     writes it to the workspace and the backward recomputes SwiGLU.
//
// Inputs: scheduled, buffer-assigned 1-stage pipelines of a tiny fp32 LLaMA
// (hidden 64, 2 heads, ffn 128, vocab 128, seq 8; embedding, one decoder
// layer, head; 1 micro-batch), reduced by hand from
// --ratrain-schedule-pipeline output with recompute = [full] and
// [selective]; the third is the second with the decoder's activation
// buffer cut from 34816 to 24768 bytes (the layout up to lse).

// (outline-layers=false: the kernel sequences unrolled at their use; the
// outlined form, the default, is checked in RATrainToMT3K/outline-layers.mlir.)
// RUN: ratrain-opt %s -split-input-file | ratrain-opt -split-input-file --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s -split-input-file --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml outline-layers=false" | FileCheck %s

// Full recompute: the forward stores !ratrain.act<1, input> (2048 bytes, x),
// the recompute gives !ratrain.act<1, full> at 862976.
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [full], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [full], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 897888 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768, 1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352, 4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024, 7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 18, 0, 0>,
                                             sync_staging = array<i64: 17, 0, 0>,
                                             workspace = array<i64: 16, 690432, 8192>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 897856, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 743968, 2048>} : !ratrain.view<1> -> !ratrain.act<1, input>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 731648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    // Recovers layer 1's full activations from its stored input into a
    // buffer of its own (id 13), which the backward then reads.
    %rec1_0 = ratrain.recompute %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 862976, 34880>} : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    %g1_0 = ratrain.backward %view1, %rec1_0 mb(0) {ratrain.buffers = array<i64: 14, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 14, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 14, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 14, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 15, 698624, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 15, 698624, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 15, 698624, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 15, 698624, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: module attributes {mt3k.job
// The stored input, and the forward's other tensors behind the arena
// (897888; stream, R1, R2 first); SwiGLU's output in the workspace.
// CHECK: %[[IN:[0-9]+]] = mt3k.buffer "act.layer1.mb0" at 743968 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[FWD:[0-9]+]] = mt3k.buffer "scratch.forward" at 908160 : !mt3k.buffer<ddr, 24768xi8>
// CHECK-NEXT: %[[X:[0-9]+]] = mt3k.view %[[IN]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[FXN1:[0-9]+]] = mt3k.view %[[FWD]][2048] : !mt3k.buffer<ddr, 24768xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK: %[[WS:[0-9]+]] = mt3k.buffer "scratch.w" at 690432 : !mt3k.buffer<ddr, 8192xi8>
// CHECK-NEXT: %[[FHACT:[0-9]+]] = mt3k.view %[[WS]][0] : !mt3k.buffer<ddr, 8192xi8> to !mt3k.buffer<ddr, 8x128xf32>
// The recompute's buffer holds the full layout (x, xn1, ..., hact at 24768).
// CHECK: %[[REC:[0-9]+]] = mt3k.buffer "act.layer1.mb0.recomputed" at 862976 : !mt3k.buffer<ddr, 34880xi8>
// CHECK-NEXT: %[[RX:[0-9]+]] = mt3k.view %[[REC]][0] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[RXN1:[0-9]+]] = mt3k.view %[[REC]][2048] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK: %[[RHACT:[0-9]+]] = mt3k.view %[[REC]][24768] : !mt3k.buffer<ddr, 34880xi8> to !mt3k.buffer<ddr, 8x128xf32>
// The forward: x from the stream into the stored input, xn1 into scratch.forward,
// ..., SwiGLU into the workspace, the output into the stream.
// CHECK: mt3k.elementwise cast ins(%[[STREAM:[0-9]+]] : {{.*}}) outs(%[[X]] : {{.*}})
// CHECK-NEXT: mt3k.rmsnorm_fwd %[[X]], %[[LN1:[0-9]+]] -> %[[FXN1]], %{{[0-9]+}} eps 1.000000e-05
// CHECK: mt3k.elementwise swiglu ins(%[[FGATE:[0-9]+]], %[[FUP:[0-9]+]] : {{.*}}) outs(%[[FHACT]] : {{.*}})
// CHECK-NEXT: mt3k.elementwise cast ins(%{{[0-9]+}} : {{.*}}) outs(%[[STREAM]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %[[FHACT]], %[[WD:[0-9]+]] -> %[[STREAM]] transpose_b accumulate
// The recompute (after the head's backward and update): the same kernels
// from the stored x into the recovered buffer, up to SwiGLU; no down
// projection. The backward follows and reads the recovered tensors.
// CHECK: mt3k.elementwise cast ins(%[[X]] : {{.*}}) outs(%[[RX]] : {{.*}})
// CHECK-NEXT: mt3k.rmsnorm_fwd %[[RX]], %[[LN1]] -> %[[RXN1]], %[[RRSTD1:[0-9]+]] eps 1.000000e-05
// CHECK-NEXT: mt3k.gemm %[[RXN1]], %{{[0-9]+}} -> %{{[0-9]+}} transpose_b
// CHECK-NEXT: mt3k.gemm %[[RXN1]], %{{[0-9]+}} -> %{{[0-9]+}} transpose_b
// CHECK-NEXT: mt3k.gemm %[[RXN1]], %{{[0-9]+}} -> %[[RV:[0-9]+]] transpose_b
// CHECK-NEXT: mt3k.elementwise rope ins(%{{[0-9]+}} : {{.*}}) outs(%[[RQ4:[0-9]+]] : {{.*}}) theta 1.000000e+04
// CHECK-NEXT: mt3k.elementwise rope ins(%{{[0-9]+}} : {{.*}}) outs(%[[RK4:[0-9]+]] : {{.*}}) theta 1.000000e+04
// CHECK-NEXT: mt3k.attention_fwd %[[RQ4]], %[[RK4]], %[[RV4:[0-9]+]] -> %[[RO4:[0-9]+]], %[[RLSE:[0-9]+]] causal scale 0.17677669529663687
// CHECK-NEXT: mt3k.elementwise cast ins(%[[RX]] : {{.*}}) outs(%[[RX2:[0-9]+]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %[[RO:[0-9]+]], %{{[0-9]+}} -> %[[RX2]] transpose_b accumulate
// CHECK-NEXT: mt3k.rmsnorm_fwd %[[RX2]], %{{[0-9]+}} -> %{{[0-9]+}}, %{{[0-9]+}} eps 1.000000e-05
// CHECK-NEXT: mt3k.gemm %{{[0-9]+}}, %{{[0-9]+}} -> %[[RGATE:[0-9]+]] transpose_b
// CHECK-NEXT: mt3k.gemm %{{[0-9]+}}, %{{[0-9]+}} -> %[[RUP:[0-9]+]] transpose_b
// CHECK-NEXT: mt3k.elementwise swiglu ins(%[[RGATE]], %[[RUP]] : {{.*}}) outs(%[[RHACT]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %[[STREAM]], %[[WD]] -> %{{[0-9]+}}
// CHECK-NEXT: mt3k.gemm %[[STREAM]], %[[RHACT]] -> %{{[0-9]+}} transpose_a
// CHECK: mt3k.attention_bwd %[[RQ4]], %[[RK4]], %[[RV4]], %[[RO4]], %{{[0-9]+}}, %[[RLSE]] -> {{.*}} causal

// -----

// Selective recompute: the forward stores !ratrain.act<1, selective>.
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [selective], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [selective], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 897824 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768, 1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352, 4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024, 7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 690432, 8192>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 897792, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 34816>} : !ratrain.view<1> -> !ratrain.act<1, selective>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 731648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, selective>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: module attributes {mt3k.job
// CHECK-NOT: recomputed
// CHECK: %[[ACT:[0-9]+]] = mt3k.buffer "act.layer1.mb0" at 862976 : !mt3k.buffer<ddr, 34816xi8>
// CHECK: %[[Q4:[0-9]+]] = mt3k.view %[[ACT]][4096] : !mt3k.buffer<ddr, 34816xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[K4:[0-9]+]] = mt3k.view %[[ACT]][6144] : !mt3k.buffer<ddr, 34816xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[V4:[0-9]+]] = mt3k.view %[[ACT]][8192] : !mt3k.buffer<ddr, 34816xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// CHECK-NEXT: %[[O4:[0-9]+]] = mt3k.view %[[ACT]][10240] : !mt3k.buffer<ddr, 34816xi8> to !mt3k.buffer<ddr, 1x8x2x32xf32>
// hact is stored (the buffer has room for it).
// CHECK: %[[HACT:[0-9]+]] = mt3k.view %[[ACT]][24768] : !mt3k.buffer<ddr, 34816xi8> to !mt3k.buffer<ddr, 8x128xf32>
// CHECK: %[[LSE:[0-9]+]] = mt3k.view %[[ACT]][24704] : !mt3k.buffer<ddr, 34816xi8> to !mt3k.buffer<ddr, 1x2x8xf32>
// CHECK: mt3k.attention_fwd %[[Q4]], %[[K4]], %[[V4]] -> %[[O4]], %[[LSE]] causal
// CHECK: mt3k.elementwise swiglu ins({{.*}}) outs(%[[HACT]] : {{.*}})
// CHECK-NEXT: mt3k.elementwise cast
// CHECK-NEXT: mt3k.gemm %[[HACT]], %[[WD:[0-9]+]] -> %[[STREAM:[0-9]+]] transpose_b accumulate
// The backward reads the stored hact; SwiGLU runs once, in the forward.
// CHECK-NOT: mt3k.elementwise swiglu ins
// CHECK: mt3k.gemm %[[STREAM]], %[[WD]] -> %{{[0-9]+}} :
// CHECK-NEXT: mt3k.gemm %[[STREAM]], %[[HACT]] -> %{{[0-9]+}} transpose_a
// CHECK-NEXT: mt3k.elementwise swiglu_bwd
// CHECK: mt3k.attention_bwd %[[Q4]], %[[K4]], %[[V4]], %[[O4]], %{{[0-9]+}}, %[[LSE]] -> {{.*}} causal

// -----

// Selective, with the activation buffer shrunk by hand to 24768 bytes (id
// 10): the layout without hact.
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [selective], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [selective], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 897824 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768, 1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352, 4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024, 7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 690432, 8192>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 897792, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 24768>} : !ratrain.view<1> -> !ratrain.act<1, selective>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 731648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, selective>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: mt3k.buffer "act.layer1.mb0" at 862976 : !mt3k.buffer<ddr, 24768xi8>
// CHECK-NOT: mt3k.view %{{[0-9]+}}[24768]
// CHECK: %[[WS:[0-9]+]] = mt3k.buffer "scratch.w" at 690432 : !mt3k.buffer<ddr, 8192xi8>
// CHECK-NEXT: %[[HACT:[0-9]+]] = mt3k.view %[[WS]][0] : !mt3k.buffer<ddr, 8192xi8> to !mt3k.buffer<ddr, 8x128xf32>
// The forward's SwiGLU output goes to the workspace ...
// CHECK: mt3k.elementwise swiglu ins(%[[GATE:[0-9]+]], %[[UP:[0-9]+]] : {{.*}}) outs(%[[HACT]] : {{.*}})
// CHECK-NEXT: mt3k.elementwise cast
// CHECK-NEXT: mt3k.gemm %[[HACT]], %[[WD:[0-9]+]] -> %[[STREAM:[0-9]+]] transpose_b accumulate
// ... and the backward recomputes it there before the down projection's
// weight gradient reads it.
// CHECK: mt3k.elementwise swiglu ins(%[[GATE]], %[[UP]] : {{.*}}) outs(%[[HACT]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %[[STREAM]], %[[WD]] -> %{{[0-9]+}} :
// CHECK-NEXT: mt3k.gemm %[[STREAM]], %[[HACT]] -> %{{[0-9]+}} transpose_a
// CHECK-NEXT: mt3k.elementwise swiglu_bwd ins(%[[GATE]], %[[UP]], %{{[0-9]+}} : {{.*}}) outs(%[[HACT]], %{{[0-9]+}} : {{.*}})
