// The lowered programs of a hand-written schedule compute the gradient of
// the loss they report (test/Conversion/Inputs/mt3k-gradcheck.py, as in
// lower-to-mt3k-gradcheck.test: the mt3k kernels in float64 Python, the
// pipeline messages delivered between the stages; for 3 elements of every
// parameter tensor the gradient each mt3k.adamw receives must equal central
// finite differences of the reported loss, and the updated view one AdamW
// step from the initial value).
//
// Input: the gradcheck-sized LLaMA (hidden 8, 2 query heads sharing 1 kv
// head, ffn 12, vocab 11, seq 4; embedding, 2 decoder layers, head) on 2
// stages with 2 micro-batches, stage 0 under selective recompute, scheduled
// and buffer-assigned by --ratrain-schedule-pipeline, then edited by hand:
// stage 0's decoder activation buffers (ids 7 and 10) cut from 2176 to
// 1440 bytes, the layout up to lse, so SwiGLU's output is not stored and
// the backward recomputes it in the workspace (recompute.mlir, last case).
// The pipeline never produces that path at these sizes; dropping the
// backward's SwiGLU makes 3 elements of model.layers.0.mlp.down_proj.weight
// fail.

// (outline-layers=false: the kernel sequences unrolled at their use; the
// outlined form, the default, is checked in RATrainToMT3K/outline-layers.mlir.)
// RUN: ratrain-opt %s | ratrain-opt --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml outline-layers=false" > %t.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.mlir
// RUN: python3 %S/../Inputs/mt3k-gradcheck.py %t.mlir | FileCheck %s

// The same schedule with stage 0's decoder backward split by hand into its
// input and weight parts (deferred buffers of 1152 bytes appended to the
// arena): the weight part recomputes SwiGLU the same way (the same four
// SwiGLUs into the workspace) and the gradients pass the same check.
// RUN: sed -e 's|%%g1_0 = ratrain.backward %%view1, %%act1_0 mb(0) {ratrain.buffers = array<i64: 13, 11744, 1984>}|%%d1_0 = ratrain.backward_input %%view1, %%act1_0 mb(0) {ratrain.buffers = array<i64: 40, 13888, 1152>} : !ratrain.view<1>, !ratrain.act<1, selective>\n    %%g1_0 = ratrain.backward_weight %%view1, %%act1_0, %%d1_0 mb(0) {ratrain.buffers = array<i64: 13, 11744, 1984>}|' \
// RUN:     -e 's|%%g1_1 = ratrain.backward %%view1, %%act1_1 acc(%%g1_0) mb(1) {ratrain.buffers = array<i64: 13, 11744, 1984>}|%%d1_1 = ratrain.backward_input %%view1, %%act1_1 mb(1) {ratrain.buffers = array<i64: 41, 15040, 1152>} : !ratrain.view<1>, !ratrain.act<1, selective>\n    %%g1_1 = ratrain.backward_weight %%view1, %%act1_1, %%d1_1 acc(%%g1_0) mb(1) {ratrain.buffers = array<i64: 13, 11744, 1984>}|' \
// RUN:     -e 's/ratrain.arena_bytes = 13888/ratrain.arena_bytes = 16192/' %s > %t.split-input.mlir
// RUN: grep -c '^    %%d1_[01] = ratrain.backward_input' %t.split-input.mlir | grep -qx 2
// RUN: ratrain-opt %t.split-input.mlir --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %t.split-input.mlir --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml outline-layers=false" > %t.split.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.split.mlir
// RUN: python3 %S/../Inputs/mt3k-gradcheck.py %t.split.mlir | FileCheck %s

// LOWERED-LABEL: mt3k.program @stage0
// LOWERED: %[[WS:[0-9]+]] = mt3k.buffer "scratch.w" at 7008 : !mt3k.buffer<ddr, 384xi8>
// LOWERED-NEXT: %[[HACT:[0-9]+]] = mt3k.view %[[WS]][0] : !mt3k.buffer<ddr, 384xi8> to !mt3k.buffer<ddr, 4x12xf32>
// Forward mb 0 and mb 1, then the backward of mb 0 and of mb 1 recompute it.
// LOWERED-COUNT-4: mt3k.elementwise swiglu ins({{.*}}) outs(%[[HACT]] :
// LOWERED-NOT: mt3k.elementwise swiglu ins
// LOWERED-LABEL: mt3k.program @stage1

// CHECK: loss {{[0-9.]+}} over 2 micro-batches of 1 replicas
// CHECK-DAG: ok   model.embed_tokens.weight
// CHECK-DAG: ok   model.layers.0.mlp.down_proj.weight
// CHECK-DAG: ok   model.layers.0.mlp.gate_proj.weight
// CHECK-DAG: ok   model.layers.1.self_attn.q_proj.weight
// CHECK-DAG: ok   lm_head.weight
// CHECK: gradcheck: 63 elements OK

ratrain.model @grad family("llama") dtype(f32) seq_len(4) max_positions(8) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [selective, none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(8) vocab(11)
  ratrain.layer 1 decoder hidden(8) heads(2) kv_heads(1) ffn(12)
  ratrain.layer 2 decoder hidden(8) heads(2) kv_heads(1) ffn(12)
  ratrain.layer 3 head hidden(8) vocab(11)
}
ratrain.pipeline @grad_step for @grad plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [selective, none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 2)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>)
      attributes {ratrain.arena_bytes = 13888 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 352, 1, 0, 0, 2, 352, 704,
                                                   3, 1056, 1984, 4, 0, 0, 5, 3040, 3968>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 18, 0, 0>,
                                             sync_staging = array<i64: 17, 0, 0>,
                                             workspace = array<i64: 16, 7008, 384>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 6, 13856, 16>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 7, 7392, 1440>} : !ratrain.view<1> -> !ratrain.act<1, selective>
    ratrain.send activation mb(0) to(1) {ratrain.buffers = array<i64: 8, 9568, 128>}
    %act0_1 = ratrain.forward %view0 mb(1) {ratrain.buffers = array<i64: 9, 13872, 16>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_1 = ratrain.forward %view1 mb(1) {ratrain.buffers = array<i64: 10, 9568, 1440>} : !ratrain.view<1> -> !ratrain.act<1, selective>
    ratrain.send activation mb(1) to(1) {ratrain.buffers = array<i64: 11, 11744, 128>}
    ratrain.recv gradient mb(0) from(1) {ratrain.buffers = array<i64: 12, 13728, 128>}
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 11744, 1984>} : !ratrain.view<1>, !ratrain.act<1, selective>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 7392, 352>} : !ratrain.view<0>, !ratrain.act<0, full>
    ratrain.recv gradient mb(1) from(1) {ratrain.buffers = array<i64: 15, 7744, 128>}
    %g1_1 = ratrain.backward %view1, %act1_1 acc(%g1_0) mb(1) {ratrain.buffers = array<i64: 13, 11744, 1984>} : !ratrain.view<1>, !ratrain.act<1, selective>
    %ready1 = ratrain.grad_ready %g1_1 {ratrain.buffers = array<i64: 13, 11744, 1984>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 11744, 1984>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 11744, 1984>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 3040, 3968>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 1056, 1984>} : !ratrain.master<1>
    %g0_1 = ratrain.backward %view0, %act0_1 acc(%g0_0) mb(1) {ratrain.buffers = array<i64: 14, 7392, 352>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_1 {ratrain.buffers = array<i64: 14, 7392, 352>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 7392, 352>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 7392, 352>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 352, 704>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 352>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 352>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 1056, 1984>} : !ratrain.async<!ratrain.view<1>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4)
      states(%view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>,
             %view3: !ratrain.view<3>, %master3: !ratrain.master<3>, %opt3: !ratrain.opt_state<3>)
      attributes {ratrain.arena_bytes = 12688 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 1984, 1, 0, 0, 2, 1984, 3968,
                                                   3, 5952, 384, 4, 0, 0, 5, 6336, 768>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 18, 0, 0>,
                                             sync_staging = array<i64: 17, 0, 0>,
                                             workspace = array<i64: 16, 7104, 384>}} {
    ratrain.recv activation mb(0) from(0) {ratrain.buffers = array<i64: 6, 9696, 128>}
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 7, 7488, 2208>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %act3_0 = ratrain.forward %view3 mb(0) {ratrain.buffers = array<i64: 8, 9696, 624>} : !ratrain.view<3> -> !ratrain.act<3, full>
    %g3_0 = ratrain.backward %view3, %act3_0 mb(0) {ratrain.buffers = array<i64: 9, 12304, 384>} : !ratrain.view<3>, !ratrain.act<3, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 10, 9696, 1984>} : !ratrain.view<2>, !ratrain.act<2, full>
    ratrain.send gradient mb(0) to(0) {ratrain.buffers = array<i64: 11, 11680, 128>}
    ratrain.recv activation mb(1) from(0) {ratrain.buffers = array<i64: 12, 11680, 128>}
    %act2_1 = ratrain.forward %view2 mb(1) {ratrain.buffers = array<i64: 13, 7488, 2208>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %act3_1 = ratrain.forward %view3 mb(1) {ratrain.buffers = array<i64: 14, 11680, 624>} : !ratrain.view<3> -> !ratrain.act<3, full>
    %g3_1 = ratrain.backward %view3, %act3_1 acc(%g3_0) mb(1) {ratrain.buffers = array<i64: 9, 12304, 384>} : !ratrain.view<3>, !ratrain.act<3, full>
    %ready3 = ratrain.grad_ready %g3_1 {ratrain.buffers = array<i64: 9, 12304, 384>} : !ratrain.grad<3, partial>
    %sync3 = ratrain.sync all_reduce %ready3 hierarchy flat {ratrain.buffers = array<i64: 9, 12304, 384>} : !ratrain.grad<3, ready> -> !ratrain.async<!ratrain.grad<3, synced>>
    %g2_1 = ratrain.backward %view2, %act2_1 acc(%g2_0) mb(1) {ratrain.buffers = array<i64: 10, 9696, 1984>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_1 {ratrain.buffers = array<i64: 10, 9696, 1984>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 10, 9696, 1984>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    ratrain.send gradient mb(1) to(0) {ratrain.buffers = array<i64: 15, 11680, 128>}
    %synced3 = ratrain.wait %sync3 {ratrain.buffers = array<i64: 9, 12304, 384>} : !ratrain.async<!ratrain.grad<3, synced>>
    %master3n, %opt3n = ratrain.update adamw %synced3, %master3, %opt3 {ratrain.buffers = array<i64: 4, 0, 0, 5, 6336, 768>} : !ratrain.grad<3, synced>, !ratrain.master<3>, !ratrain.opt_state<3>
    %cast3 = ratrain.view_prefetch %master3n {ratrain.buffers = array<i64: 3, 5952, 384>} : !ratrain.master<3>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 10, 9696, 1984>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 1, 0, 0, 2, 1984, 3968>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 0, 0, 1984>} : !ratrain.master<2>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 0, 0, 1984>} : !ratrain.async<!ratrain.view<2>>
    %inplace3 = ratrain.wait %cast3 {ratrain.buffers = array<i64: 3, 5952, 384>} : !ratrain.async<!ratrain.view<3>>
    ratrain.yield %inplace2, %master2n, %opt2n, %inplace3, %master3n, %opt3n : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}
