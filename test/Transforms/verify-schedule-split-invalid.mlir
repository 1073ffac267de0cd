// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect --ratrain-verify-schedule

// Hand-written broken split-backward schedules (ratrain.backward_input, I,
// and ratrain.backward_weight, W), one per verifier error. A 3-layer model
// (embedding, one decoder layer, head) on one stage with 2 micro-batches;
// only layer 1 computes. "test.*" ops stand for values of an unknown origin.

// A weight part before its input part (its deferred value is not defined yet).
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    // expected-error @+1 {{operand #2 does not dominate this use}}
    %g = ratrain.backward_weight %v1, %a, %d mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-note @+1 {{operand defined here}}
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A weight part whose deferred value no input part produced.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %d = "test.deferred"() : () -> !ratrain.deferred<1>
    // expected-error @+1 {{weight-without-input: the weight part of layer 1 micro-batch 0 uses a deferred value that no 'ratrain.backward_input' produced}}
    %g = ratrain.backward_weight %v1, %a, %d mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// Two weight parts of one input part.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-note @+1 {{consumed here}}
    %g = ratrain.backward_weight %v1, %a, %d mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{weight-without-input: the weight part of layer 1 micro-batch 0 uses a deferred value that an earlier weight part already consumed}}
    %h = ratrain.backward_weight %v1, %a, %d acc(%g) mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The activations released (by a fused backward) between the input part and the weight part.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-note @+1 {{released here}}
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{backward-without-activation: the activations of layer 1 micro-batch 0 were already released by an earlier 'ratrain.backward'}}
    %h = ratrain.backward_weight %v1, %a, %d acc(%g) mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// An input part on activations a weight part already released.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-note @+1 {{released here}}
    %g = ratrain.backward_weight %v1, %a, %d mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{backward-without-activation: the activations of layer 1 micro-batch 0 were already released by an earlier 'ratrain.backward_weight'}}
    %e = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A weight part on other activations than its input part.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %b = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    // expected-note @+1 {{input part here}}
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{backward-without-activation: the weight part of layer 1 micro-batch 0 uses other activations than its input part}}
    %g = ratrain.backward_weight %v1, %b, %d mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// An input part whose weight part never runs.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    // expected-note @+1 {{input part here}}
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{input-without-weight: the step ends before the weight part of ratrain.backward_input of layer 1 mb(0)}}
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// An input part on a view that is not in place.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %v = "test.view"() : () -> !ratrain.view<1>
    // expected-error @+1 {{forward-before-view-in-place: the backward input part uses the view of layer 1 before it is in place}}
    %d = ratrain.backward_input %v, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A weight part on a view that is not in place.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %v = "test.view"() : () -> !ratrain.view<1>
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{forward-before-view-in-place: the backward weight part uses the view of layer 1 before it is in place}}
    %g = ratrain.backward_weight %v, %a, %d mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
