// Pipeline transfers under --ratrain-lower-to-mt3k (docs/lowering.md,
// "Messages"): `ratrain.send` / `ratrain.recv` become `mt3k.send` /
// `mt3k.recv` on the @pp group with tag 2k for the activation of
// micro-batch k and 2k + 1 for its gradient. A recv lands at its assigned
// buffer and is waited right before the compute that reads it. A send reads
// an outbox slot in the scratch area (not its assigned buffer, which
// assign-buffers reuses right after the send: stage 1's `send gradient
// mb(0)` and `recv activation mb(1)` share offset 152608); two slots per
// direction, round-robin, and a slot's reuse waits for the send that used it
// two sends earlier. Sends still in flight are waited at the end of the step.
//
// Input: a scheduled, buffer-assigned 2-stage 1F1B pipeline of a tiny fp32
// LLaMA (hidden 64, 2 heads, ffn 128, vocab 128, seq 8), 3 micro-batches:
// stage 0 holds the embedding and the decoder layer, stage 1 the head;
// reduced by hand from --ratrain-schedule-pipeline output.

// (outline-layers=false: the kernel sequences unrolled at their use; the
// outlined form, the default, is checked in RATrainToMT3K/outline-layers.mlir.)
// RUN: ratrain-opt %s | ratrain-opt --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml outline-layers=false" | FileCheck %s

ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 3, zero = 0, stage_layers = [2, 1], recompute = [none, none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 3, zero = 0, stage_layers = [2, 1], recompute = [none, none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 2)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>)
      attributes {ratrain.arena_bytes = 868544 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768, 1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352, 4, 0, 0, 5, 262656, 328704>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 22, 0, 0>,
                                             sync_staging = array<i64: 21, 0, 0>,
                                             workspace = array<i64: 20, 591360, 8192>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 6, 866432, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 7, 763904, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    // Sends are buffered: the stage goes on at once, and assign-buffers
    // reuses a send buffer right after the send (599552: mb 0, mb 1, then
    // the decoder gradient).
    ratrain.send activation mb(0) to(1) {ratrain.buffers = array<i64: 8, 599552, 2048>}
    %act0_1 = ratrain.forward %view0 mb(1) {ratrain.buffers = array<i64: 9, 868480, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_1 = ratrain.forward %view1 mb(1) {ratrain.buffers = array<i64: 10, 798784, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    ratrain.send activation mb(1) to(1) {ratrain.buffers = array<i64: 11, 599552, 2048>}
    // A recv blocks until the message is there; it lands at its buffer.
    ratrain.recv gradient mb(0) from(1) {ratrain.buffers = array<i64: 12, 833664, 2048>}
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 599552, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 833664, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %act0_2 = ratrain.forward %view0 mb(2) {ratrain.buffers = array<i64: 15, 868512, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_2 = ratrain.forward %view1 mb(2) {ratrain.buffers = array<i64: 16, 763904, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    ratrain.send activation mb(2) to(1) {ratrain.buffers = array<i64: 17, 866432, 2048>}
    ratrain.recv gradient mb(1) from(1) {ratrain.buffers = array<i64: 18, 866432, 2048>}
    %g1_1 = ratrain.backward %view1, %act1_1 acc(%g1_0) mb(1) {ratrain.buffers = array<i64: 13, 599552, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %g0_1 = ratrain.backward %view0, %act0_1 acc(%g0_0) mb(1) {ratrain.buffers = array<i64: 14, 833664, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    ratrain.recv gradient mb(2) from(1) {ratrain.buffers = array<i64: 19, 798784, 2048>}
    %g1_2 = ratrain.backward %view1, %act1_2 acc(%g1_1) mb(2) {ratrain.buffers = array<i64: 13, 599552, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_2 {ratrain.buffers = array<i64: 13, 599552, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 599552, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 599552, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    %g0_2 = ratrain.backward %view0, %act0_2 acc(%g0_1) mb(2) {ratrain.buffers = array<i64: 14, 833664, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_2 {ratrain.buffers = array<i64: 14, 833664, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 833664, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 833664, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 3)
      states(%view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 154656 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 33024, 1, 0, 0, 2, 33024, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 15, 0, 0>,
                                             sync_staging = array<i64: 14, 0, 0>,
                                             workspace = array<i64: 13, 99072, 8192>}} {
    ratrain.recv activation mb(0) from(0) {ratrain.buffers = array<i64: 3, 107264, 2048>}
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 4, 140288, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 5, 107264, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    // 152608: the send buffer of gradient mb 0 is the recv buffer of
    // activation mb 1, posted right after the send.
    ratrain.send gradient mb(0) to(0) {ratrain.buffers = array<i64: 6, 152608, 2048>}
    ratrain.recv activation mb(1) from(0) {ratrain.buffers = array<i64: 7, 152608, 2048>}
    %act2_1 = ratrain.forward %view2 mb(1) {ratrain.buffers = array<i64: 8, 140288, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_1 = ratrain.backward %view2, %act2_1 acc(%g2_0) mb(1) {ratrain.buffers = array<i64: 5, 107264, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    ratrain.send gradient mb(1) to(0) {ratrain.buffers = array<i64: 9, 152608, 2048>}
    ratrain.recv activation mb(2) from(0) {ratrain.buffers = array<i64: 10, 152608, 2048>}
    %act2_2 = ratrain.forward %view2 mb(2) {ratrain.buffers = array<i64: 11, 140288, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_2 = ratrain.backward %view2, %act2_2 acc(%g2_1) mb(2) {ratrain.buffers = array<i64: 5, 107264, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_2 {ratrain.buffers = array<i64: 5, 107264, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 5, 107264, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    ratrain.send gradient mb(2) to(0) {ratrain.buffers = array<i64: 12, 152608, 2048>}
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 5, 107264, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 1, 0, 0, 2, 33024, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 0, 0, 33024>} : !ratrain.master<2>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 0, 0, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace2, %master2n, %opt2n : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK: mt3k.group @pp pipeline size 2

// Stage 0: the outboxes of outgoing activations in the scratch area (behind
// the arena of 868544 bytes: stream, R1, R2, then the outboxes); incoming
// gradients at the recvs' assigned offsets.
// CHECK-LABEL: mt3k.program @stage0 stage 0
// CHECK: %[[OB0:[0-9]+]] = mt3k.buffer "outbox.activation.0" at 878784 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[OUT0:[0-9]+]] = mt3k.view %[[OB0]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK: %[[OB1:[0-9]+]] = mt3k.buffer "outbox.activation.1" at 880832 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[OUT1:[0-9]+]] = mt3k.view %[[OB1]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[RB0:[0-9]+]] = mt3k.buffer "recv.gradient.mb0" at 833664 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[RG0:[0-9]+]] = mt3k.view %[[RB0]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK: %[[RB1:[0-9]+]] = mt3k.buffer "recv.gradient.mb1" at 866432 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[RG1:[0-9]+]] = mt3k.view %[[RB1]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[RB2:[0-9]+]] = mt3k.buffer "recv.gradient.mb2" at 798784 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[RG2:[0-9]+]] = mt3k.view %[[RB2]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>

// The forward of micro-batch 0 ends in outbox slot 0 (the down projection
// accumulates onto the residual there), which is sent; micro-batch 1 uses
// slot 1.
// CHECK: mt3k.gemm %{{[0-9]+}}, %[[WD:[0-9]+]] -> %[[OUT0]] transpose_b accumulate
// CHECK-NEXT: %[[S0:[0-9]+]] = mt3k.send %[[OUT0]] to 1 on @pp tag 0
// CHECK: mt3k.gemm %{{[0-9]+}}, %[[WD]] -> %[[OUT1]] transpose_b accumulate
// CHECK-NEXT: %[[S1:[0-9]+]] = mt3k.send %[[OUT1]] to 1 on @pp tag 2
// The gradient of micro-batch 0 (tag 1) is received into its buffer and
// waited before the decoder backward reads it as dy.
// CHECK-NEXT: %[[R0:[0-9]+]] = mt3k.recv %[[RG0]] from 1 on @pp tag 1
// CHECK-NEXT: mt3k.wait %[[R0]]{{$}}
// CHECK-NEXT: mt3k.gemm %[[RG0]], %[[WD]] -> %{{[0-9]+}}
// Micro-batch 2 reuses slot 0: its forward waits for the send of
// micro-batch 0 before writing the slot.
// CHECK-NOT: mt3k.wait %[[S0]]{{$}}
// CHECK: mt3k.wait %[[S0]]{{$}}
// CHECK-NEXT: mt3k.elementwise cast ins(%{{[0-9]+}} : {{.*}}) outs(%[[OUT0]] : {{.*}})
// CHECK-NEXT: mt3k.gemm %{{[0-9]+}}, %[[WD]] -> %[[OUT0]] transpose_b accumulate
// CHECK-NEXT: %[[S2:[0-9]+]] = mt3k.send %[[OUT0]] to 1 on @pp tag 4
// CHECK-NEXT: %[[R1:[0-9]+]] = mt3k.recv %[[RG1]] from 1 on @pp tag 3
// CHECK-NEXT: mt3k.wait %[[R1]]{{$}}
// CHECK-NEXT: mt3k.gemm %[[RG1]], %[[WD]] -> %{{[0-9]+}}
// CHECK: %[[R2:[0-9]+]] = mt3k.recv %[[RG2]] from 1 on @pp tag 5
// CHECK-NEXT: mt3k.wait %[[R2]]{{$}}
// CHECK-NEXT: mt3k.gemm %[[RG2]], %[[WD]] -> %{{[0-9]+}}
// The sends of micro-batches 1 and 2 are waited at the end of the step.
// CHECK: mt3k.wait %[[S1]], %[[S2]]{{$}}
// CHECK-NEXT: }

// Stage 1: activations arrive at the recvs' assigned offsets (mb 1 and mb 2
// share one: mb 1's message is consumed before mb 2's recv is posted);
// outgoing gradients use the outbox slots behind the arena of 154656 bytes.
// CHECK-LABEL: mt3k.program @stage1 stage 1
// CHECK: %[[RAB0:[0-9]+]] = mt3k.buffer "recv.activation.mb0" at 107264 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[RA0:[0-9]+]] = mt3k.view %[[RAB0]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK: %[[OGB0:[0-9]+]] = mt3k.buffer "outbox.gradient.0" at 164928 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[OG0:[0-9]+]] = mt3k.view %[[OGB0]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK: %[[RAB1:[0-9]+]] = mt3k.buffer "recv.activation.mb1" at 152608 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[RA1:[0-9]+]] = mt3k.view %[[RAB1]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK: %[[OGB1:[0-9]+]] = mt3k.buffer "outbox.gradient.1" at 166976 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[OG1:[0-9]+]] = mt3k.view %[[OGB1]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-NEXT: %[[RAB2:[0-9]+]] = mt3k.buffer "recv.activation.mb2" at 152608 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-NEXT: %[[RA2:[0-9]+]] = mt3k.view %[[RAB2]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>

// Per micro-batch: recv (tag 2k), wait, the head forward reads the message;
// the head backward writes dx into an outbox slot, sent with tag 2k + 1.
// CHECK: %[[R0:[0-9]+]] = mt3k.recv %[[RA0]] from 0 on @pp tag 0
// CHECK-NEXT: mt3k.wait %[[R0]]{{$}}
// CHECK-NEXT: mt3k.elementwise cast ins(%[[RA0]] : {{.*}}) outs(%{{[0-9]+}} : {{.*}})
// CHECK: mt3k.rmsnorm_bwd {{.*}} -> %[[OG0]], %{{[0-9]+}} :
// CHECK-NEXT: %[[S0:[0-9]+]] = mt3k.send %[[OG0]] to 0 on @pp tag 1
// CHECK-NEXT: %[[R1:[0-9]+]] = mt3k.recv %[[RA1]] from 0 on @pp tag 2
// CHECK-NEXT: mt3k.wait %[[R1]]{{$}}
// CHECK-NEXT: mt3k.elementwise cast ins(%[[RA1]] : {{.*}}) outs(%{{[0-9]+}} : {{.*}})
// CHECK: mt3k.rmsnorm_bwd {{.*}} -> %[[OG1]], %{{[0-9]+}} accumulate :
// CHECK-NEXT: %[[S1:[0-9]+]] = mt3k.send %[[OG1]] to 0 on @pp tag 3
// CHECK-NEXT: %[[R2:[0-9]+]] = mt3k.recv %[[RA2]] from 0 on @pp tag 4
// CHECK-NEXT: mt3k.wait %[[R2]]{{$}}
// CHECK-NEXT: mt3k.elementwise cast ins(%[[RA2]] : {{.*}}) outs(%{{[0-9]+}} : {{.*}})
// Micro-batch 2's dx reuses slot 0: the send of micro-batch 0 is waited
// first. The schedule issues the head's gradient sync before the last send.
// CHECK-NOT: mt3k.wait %[[S0]]{{$}}
// CHECK: mt3k.wait %[[S0]]{{$}}
// CHECK-NEXT: mt3k.rmsnorm_bwd {{.*}} -> %[[OG0]], %{{[0-9]+}} accumulate :
// CHECK-NEXT: mt3k.all_reduce
// CHECK-NEXT: %[[S2:[0-9]+]] = mt3k.send %[[OG0]] to 0 on @pp tag 5
// CHECK: mt3k.wait %[[S1]], %[[S2]]{{$}}
// CHECK-NEXT: }
