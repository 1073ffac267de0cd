// RUN: ratrain-opt %s -split-input-file | ratrain-opt -split-input-file | FileCheck %s
// RUN: ratrain-opt %s -split-input-file --mlir-print-op-generic | ratrain-opt -split-input-file | FileCheck %s

// Virtual stages: an interleaved pipeline of 2 ranks with 2 chunks each
// (virtual stage c on rank c mod 2). Transfers name their chunk; a plan with
// one chunk per rank prints as before.

// CHECK-LABEL: ratrain.model @m
// CHECK-SAME: schedule = interleaved_1f1b, virtual_stages = 2>
// CHECK: ratrain.stage 0 chunks [0: [0, 1), 2: [2, 3)] states(
// CHECK: ratrain.send activation mb(0) to(1) chunk(0)
// CHECK: ratrain.recv activation mb(0) from(1) chunk(2)
// CHECK: ratrain.stage 1 chunks [1: [1, 2), 3: [3, 4)] states(
// CHECK: ratrain.recv activation mb(0) from(0) chunk(1)
// CHECK: ratrain.send activation mb(0) to(0) chunk(1)
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [1, 1, 1, 1], recompute = [none, none, none, none], step_us = 0, peak_bytes = 0, schedule = interleaved_1f1b, virtual_stages = 2> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [1, 1, 1, 1], recompute = [none, none, none, none], step_us = 0, peak_bytes = 0, schedule = interleaved_1f1b, virtual_stages = 2> {
  ratrain.stage 0 chunks [0: [0, 1), 2: [2, 3)] states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.send activation mb(0) to(1) chunk(0)
    ratrain.recv activation mb(0) from(1) chunk(2)
    ratrain.yield %v0, %m0, %o0, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
  ratrain.stage 1 chunks [1: [1, 2), 3: [3, 4)] states(%v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.recv activation mb(0) from(0) chunk(1)
    ratrain.send activation mb(0) to(0) chunk(1)
    ratrain.yield %v1, %m1, %o1, %v3, %m3, %o3 : !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// ZBV: rank 0 runs the first and the last virtual stage; its two chunks
// exchange through a send to itself.
// CHECK-LABEL: ratrain.pipeline @v
// CHECK-SAME: schedule = zbv, virtual_stages = 2>
// CHECK: ratrain.stage 0 chunks [0: [0, 1), 3: [3, 4)]
// CHECK: ratrain.stage 1 chunks [1: [1, 2), 2: [2, 3)]
// CHECK: ratrain.send activation mb(0) to(1) chunk(1)
// CHECK-NEXT: ratrain.recv activation mb(0) from(1) chunk(2)
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @v for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [1, 1, 1, 1], recompute = [none, none, none, none], step_us = 0, peak_bytes = 0, schedule = zbv, virtual_stages = 2> {
  ratrain.stage 0 chunks [0: [0, 1), 3: [3, 4)] states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v0, %m0, %o0, %v3, %m3, %o3 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
  ratrain.stage 1 chunks [1: [1, 2), 2: [2, 3)] states(%v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.send activation mb(0) to(1) chunk(1)
    ratrain.recv activation mb(0) from(1) chunk(2)
    ratrain.yield %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
