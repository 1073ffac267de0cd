// RUN: ratrain-opt %s | ratrain-opt | FileCheck %s
// RUN: ratrain-opt %s --mlir-print-op-generic | ratrain-opt | FileCheck %s

// The optional wire type of ratrain.sync (ZeRO++ qwZ / qgZ): printed
// `wire int8` / `wire int4`, absent for native elements. Invalid uses are
// in sync-wire-invalid.mlir.

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    // CHECK: ratrain.sync reduce_scatter %{{.*}} hierarchy hierarchical wire int4 : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %t = ratrain.sync reduce_scatter %r hierarchy hierarchical wire int4
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    // CHECK: ratrain.sync all_gather %{{.*}} hierarchy flat wire int8 : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %ag = ratrain.sync all_gather %v1 hierarchy flat wire int8
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    // CHECK: ratrain.sync all_gather %{{.*}} hierarchy flat : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %ag2 = ratrain.sync all_gather %v1 hierarchy flat
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}
