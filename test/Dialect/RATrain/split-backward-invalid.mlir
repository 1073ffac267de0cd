// RUN: ratrain-opt %s --split-input-file --verify-diagnostics

// Verifier errors of ratrain.backward_input and ratrain.backward_weight.

// input part: activations of another layer
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    // expected-error @+1 {{uses activations of layer 2 in the backward of layer 1}}
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<2, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// input part: activations of another micro-batch
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    // expected-error @+1 {{is the backward of micro-batch 1 but uses the activations of micro-batch 0}}
    %d = ratrain.backward_input %v1, %a mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// input part: needs recovered activations
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
    // expected-error @+1 {{operand #1 must be activation usable by backward (full or selective)}}
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, input>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// weight part: deferred value of another micro-batch
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{is the weight part of micro-batch 1 but uses the deferred value of the input part of micro-batch 0}}
    %g = ratrain.backward_weight %v1, %b, %d mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// weight part: activations of another micro-batch
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %d = ratrain.backward_input %v1, %b mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{is the backward of micro-batch 1 but uses the activations of micro-batch 0}}
    %g = ratrain.backward_weight %v1, %a, %d mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// weight part: deferred value of another layer
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %h = ratrain.forward %v2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    // expected-note @+1 {{prior use here}}
    %d = ratrain.backward_input %v2, %h mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    // expected-error @+1 {{use of value '%d' expects different type than prior uses: '!ratrain.deferred<1>' vs '!ratrain.deferred<2>'}}
    %g = ratrain.backward_weight %v1, %a, %d mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// weight part: accumulator of another layer
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %d = ratrain.backward_input %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.forward %v2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    // expected-note @+1 {{prior use here}}
    %g2 = ratrain.backward %v2, %h mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    // expected-error @+1 {{use of value '%g2' expects different type than prior uses: '!ratrain.grad<1, partial>' vs '!ratrain.grad<2, partial>'}}
    %g = ratrain.backward_weight %v1, %a, %d acc(%g2) mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
