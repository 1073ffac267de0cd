// RUN: ratrain-opt %s -split-input-file -verify-diagnostics

// Only an all_gather of a view and a reduce_scatter of a gradient may carry
// a quantized wire type.

// wire on all_reduce
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
    // expected-error @+1 {{only an all_gather of a view (qwZ) or a reduce_scatter of a gradient (qgZ) may be quantized; this all_reduce of '!ratrain.grad<1, ready>' has wire int8}}
    %t = ratrain.sync all_reduce %r hierarchy flat wire int8 : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// wire on all_gather of a master
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
    // expected-error @+1 {{only an all_gather of a view (qwZ) or a reduce_scatter of a gradient (qgZ) may be quantized; this all_gather of '!ratrain.master<1>' has wire int4}}
    %t = ratrain.sync all_gather %m1 hierarchy flat wire int4 : !ratrain.master<1> -> !ratrain.async<!ratrain.master<1>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// wire on unknown wire type
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
    // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'wire' [int8, int4]}}
    %t = ratrain.sync reduce_scatter %r hierarchy flat wire fp8 : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}
