// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --ratrain-verify-schedule

// Gradient clipping (docs/schedule.md, "Gradient clipping"): hand-written
// broken schedules, one per verifier error. A 3-layer model on one stage
// with dp 2 and one micro-batch; only layer 1 computes.

// The plan clips, the update does not read the norm.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0, max_grad_norm = 1.0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    // expected-error @+1 {{update-before-grad-norm: the plan clips the gradients (max_grad_norm = 1.000000e+00) but the update of layer 1 does not read a completed 'ratrain.grad_norm'}}
    %nm, %no = ratrain.update adamw %s, %m1, %o1
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The norm leaves out layers of the stage (0 and 2): a norm over part of
// the model is not the global norm.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0, max_grad_norm = 1.0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    // expected-error @+1 {{grad-norm-misses-layer: the global norm the update of layer 1 reads does not count layer 0 of the stage}}
    %q = ratrain.grad_norm %s : !ratrain.grad<1, synced> -> !ratrain.async<!ratrain.grad_norm>
    %n = ratrain.wait %q : !ratrain.async<!ratrain.grad_norm>
    %nm, %no = ratrain.update adamw %s, %m1, %o1 clip %n
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The norm read before its all-reduce completed (no wait).
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0, max_grad_norm = 1.0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    %q = ratrain.grad_norm %s : !ratrain.grad<1, synced> -> !ratrain.async<!ratrain.grad_norm>
    %n = builtin.unrealized_conversion_cast %q
        : !ratrain.async<!ratrain.grad_norm> to !ratrain.grad_norm
    // expected-error @+1 {{update-before-grad-norm}}
    %nm, %no = ratrain.update adamw %s, %m1, %o1 clip %n
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A clipped update in a plan without max_grad_norm.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    %q = ratrain.grad_norm %s : !ratrain.grad<1, synced> -> !ratrain.async<!ratrain.grad_norm>
    %n = ratrain.wait %q : !ratrain.async<!ratrain.grad_norm>
    // expected-error @+1 {{clip-without-max-grad-norm: the update of layer 1 clips to a gradient norm, but the plan sets no max_grad_norm}}
    %nm, %no = ratrain.update adamw %s, %m1, %o1 clip %n
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
