// RUN: ratrain-opt %s --split-input-file | ratrain-opt --split-input-file | FileCheck %s
// RUN: ratrain-opt %s --split-input-file --mlir-print-op-generic | ratrain-opt --split-input-file | FileCheck %s

// The split backward: ratrain.backward_input (I) and ratrain.backward_weight
// (W) with their !ratrain.deferred value, on a 1-stage pipeline (embedding,
// a decoder layer, head) with 2 micro-batches.

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// CHECK-LABEL: ratrain.pipeline @p
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [full], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a1 = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
    %b1 = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, input>
    %r1 = ratrain.recompute %v1, %a1 mb(0) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    // CHECK: %[[D:.*]] = ratrain.backward_input %[[V1:.*]], %[[R1:.*]] mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %d1 = ratrain.backward_input %v1, %r1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // CHECK: %[[G:.*]] = ratrain.backward_weight %[[V1]], %[[R1]], %[[D]] mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %g1 = ratrain.backward_weight %v1, %r1, %d1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %s1 = ratrain.recompute %v1, %b1 mb(1) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    %e1 = ratrain.backward_input %v1, %s1 mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    // CHECK: ratrain.backward_weight %{{.*}}, %{{.*}}, %{{.*}} acc(%[[G]]) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %h1 = ratrain.backward_weight %v1, %s1, %e1 acc(%g1) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
