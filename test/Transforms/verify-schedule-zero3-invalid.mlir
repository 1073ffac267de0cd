// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --ratrain-verify-schedule

// Hand-written broken ZeRO-3 schedules (docs/schedule.md, "ZeRO-3"): a
// 3-layer model on one stage of dp = 2; only layer 1 computes.

// A forward reads the view shard itself instead of a gather of it.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 3, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    // expected-error @+1 {{forward-before-view-in-place: the forward of micro-batch 0 uses the view of layer 1 before it is in place: under ZeRO-3 the view is this rank's shard; a compute reads the completed 'ratrain.sync all_gather' of it}}
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The backward reads the shard instead of the gather its forward read.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 3, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %t = ratrain.sync all_gather %v1 hierarchy flat
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %f = ratrain.wait %t : !ratrain.async<!ratrain.view<1>>
    %a = ratrain.forward %f mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    // expected-error @+1 {{forward-before-view-in-place: the backward uses the view of layer 1 before it is in place: under ZeRO-3}}
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A gather of the old shard after the update's view prefetch was issued
// (it writes the new shard over the old one).
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 3, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %t = ratrain.sync all_gather %v1 hierarchy flat
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %f = ratrain.wait %t : !ratrain.async<!ratrain.view<1>>
    %a = ratrain.forward %f mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %f, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    %s = ratrain.sync reduce_scatter %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %sw = ratrain.wait %s : !ratrain.async<!ratrain.grad<1, synced>>
    %nm, %no = ratrain.update adamw %sw, %m1, %o1
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    // expected-note @+1 {{replaced here}}
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    // expected-error @+1 {{uses a stale state: the '!ratrain.view<1>' was replaced by 'ratrain.view_prefetch'}}
    %t2 = ratrain.sync all_gather %v1 hierarchy flat
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The yield returns a gathered full view: the next step starts from the
// shard the view prefetch wrote.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 3, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %t = ratrain.sync all_gather %v1 hierarchy flat
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %f = ratrain.wait %t : !ratrain.async<!ratrain.view<1>>
    %a = ratrain.forward %f mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %f, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    %s = ratrain.sync reduce_scatter %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %sw = ratrain.wait %s : !ratrain.async<!ratrain.grad<1, synced>>
    %nm, %no = ratrain.update adamw %sw, %m1, %o1
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    %t2 = ratrain.sync all_gather %nv hierarchy flat
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %full = ratrain.wait %t2 : !ratrain.async<!ratrain.view<1>>
    // expected-error @+1 {{forward-before-view-in-place: returns the view of layer 1 for the next step's forward before it is in place: under ZeRO-3 the next step starts from this rank's shard, not a gathered view}}
    ratrain.yield %v0, %m0, %o0, %full, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
