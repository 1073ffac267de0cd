// RUN: ratrain-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the ratrain dialect, plus the lifecycle
// phase rules the types enforce.
// pp must be >= 1
// expected-error @+3 {{plan needs pp, dp, micro_batch_size and micro_batches >= 1}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 0, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// more clusters than given
// expected-error @+3 {{plan uses pp * dp = 4 clusters but only 2 are given}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 2, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// ZeRO stages are 0 to 3
// expected-error @+3 {{plan zero stage must be 0, 1, 2 or 3, got 4}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 4, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// one stage_layers entry per stage
// expected-error @+3 {{plan has 1 stage_layers entries for pp * virtual_stages = 2}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [4], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// one recompute entry per stage
// expected-error @+3 {{plan has 1 recompute entries for pp * virtual_stages = 2}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [full], step_us = 0, peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// empty stage
// expected-error @+3 {{plan gives a stage 0 layers}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [4, 0], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// negative prediction
// expected-error @+3 {{plan predictions must not be negative}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = -1, peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// dtype
// expected-error @+1 {{dtype must be f32, f16 or bf16, got 'f64'}}
ratrain.model @m family("llama") dtype(f64) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// seq_len positive
// expected-error @+1 {{seq_len must be positive, got 0}}
ratrain.model @m family("llama") dtype(f32) seq_len(0) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// expected-error @+1 {{sliding_window must be positive, got 0}}
ratrain.model @m family("mistral") dtype(f32) seq_len(64) max_positions(128)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) sliding_window(0) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// rope scaling of ALiBi positions
// expected-error @+1 {{rope_scaling needs rotary positions}}
ratrain.model @m family("baichuan") dtype(f32) seq_len(16) max_positions(32)
    positions alibi rms_eps(1.0e-05) rope_theta(1.0e+04)
    rope_scaling #ratrain.rope_scaling<method = linear, factor = 2.0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// linear scaling with llama3's fields
// expected-error @+3 {{linear rope scaling takes only a 'factor'}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    rope_scaling #ratrain.rope_scaling<method = linear, factor = 2.0, original_max_positions = 16> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// seq_len too long
// expected-error @+1 {{seq_len 64 exceeds max_positions 32}}
ratrain.model @m family("llama") dtype(f32) seq_len(64) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// foreign op in model
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  // expected-error @+1 {{is not allowed in a ratrain.model; only ratrain.layer is}}
  %x = builtin.unrealized_conversion_cast to i32
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// too few layers
// expected-error @+1 {{needs an embedding, at least one decoder layer and a head, got 2 layers}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 head hidden(64) vocab(128)
}

// -----

// layer index
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  // expected-error @+1 {{has index 5 but is layer 1 of the model}}
  ratrain.layer 5 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// layer order
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  // expected-error @+1 {{is a decoder layer where the model needs a head layer}}
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
}

// -----

// hidden size
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  // expected-error @+1 {{has hidden size 32 but the model's is 64}}
  ratrain.layer 1 decoder hidden(32) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// vocab
// expected-error @+1 {{embedding vocab 128 differs from head vocab 64}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(64)
}

// -----

// plan covers the layers
// expected-error @+1 {{plan assigns 4 layers to stages but the model has 3}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// hidden positive
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  // expected-error @+1 {{hidden must be positive, got 0}}
  ratrain.layer 1 decoder hidden(0) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// decoder needs heads
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  // expected-error @+1 {{of kind 'decoder' needs heads}}
  ratrain.layer 1 decoder hidden(64) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// sizes positive
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  // expected-error @+1 {{ffn must be positive, got 0}}
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(0)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// embedding has no heads
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  // expected-error @+1 {{of kind 'embedding' must not have heads}}
  ratrain.layer 0 embedding hidden(64) heads(4) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// heads divide hidden
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  // expected-error @+1 {{hidden 64 is not a multiple of heads 6}}
  ratrain.layer 1 decoder hidden(64) heads(6) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// kv heads divide heads
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  // expected-error @+1 {{heads 4 is not a multiple of kv_heads 3}}
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(3) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// -----

// foreign op in pipeline
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  // expected-error @+1 {{is not allowed in a ratrain.pipeline; only ratrain.stage is}}
  %x = builtin.unrealized_conversion_cast to i32
}

// -----

// stage count
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
// expected-error @+1 {{has 1 stages but its plan has pp = 2}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
}

// -----

// stage numbering
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  // expected-error @+1 {{is numbered 5 but is stage 1 of the pipeline}}
  ratrain.stage 5 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// stage layers match the plan
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [1, 3], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  // expected-error @+1 {{owns layers [0, 2) in virtual stage 0 but the plan gives it [0, 1)}}
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// model symbol
// expected-error @+1 {{refers to 'nowhere', which is not a ratrain.model}}
ratrain.pipeline @p for @nowhere plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// plan covers the model
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan covers 4 layers but model 'm' has 3}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// stage owns a layer
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [4], recompute = [none], step_us = 0, peak_bytes = 0> {
  // expected-error @+1 {{must own at least one layer}}
  ratrain.stage 0 layers [0, 0) states() {
    ratrain.yield
  }
}

// -----

// stage states
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  // expected-error @+1 {{states must be, per owned layer in order, its view, master and opt_state (6 block arguments starting with '!ratrain.view<0>')}}
  ratrain.stage 0 layers [0, 2) states(%m0: !ratrain.master<0>) {
    ratrain.yield %m0 : !ratrain.master<0>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// yield returns the states
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    // expected-error @+1 {{must return the stage's states, in the order of its block arguments}}
    ratrain.yield %v0, %m0, %o0, %v1, %m1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// forward micro-batch
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    // expected-error @+1 {{micro-batch must not be negative}}
    %a = ratrain.forward %v0 mb(-1) : !ratrain.view<0> -> !ratrain.act<0, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// forward layer
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    // expected-error @+1 {{produces activations of layer 1 from the view of layer 0}}
    %a = ratrain.forward %v0 mb(0) : !ratrain.view<0> -> !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// forward needs a view (lifecycle phase)
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    // expected-error @+1 {{operand #0 must be parameter view}}
    %a = "ratrain.forward"(%m0) <{micro_batch = 0 : i64}> : (!ratrain.master<0>) -> !ratrain.act<0, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// recompute layers
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
    // expected-error @+1 {{mixes states of different layers}}
    %r = ratrain.recompute %v0, %a mb(0) : !ratrain.view<0>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// recompute micro-batch
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
    // expected-error @+1 {{recomputes micro-batch 1 from the input of micro-batch 0}}
    %r = ratrain.recompute %v1, %a mb(1) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// backward layers
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
    // expected-error @+1 {{uses activations of layer 1 in the backward of layer 0}}
    %g = ratrain.backward %v0, %a mb(0) : !ratrain.view<0>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// backward micro-batch
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
    // expected-error @+1 {{is the backward of micro-batch 1 but uses the activations of micro-batch 0}}
    %g = ratrain.backward %v1, %a mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// backward needs recovered activations (lifecycle phase)
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
    // expected-error @+1 {{operand #1 must be activation usable by backward (full or selective)}}
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, input>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// transfer micro-batch
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    // expected-error @+1 {{micro-batch must not be negative}}
    ratrain.send activation mb(-1) to(1)
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// transfer direction
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    // expected-error @+1 {{in stage 1 must send gradient to stage 0, not 1}}
    ratrain.send gradient mb(0) to(1)
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// transfer peer exists
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    // expected-error @+1 {{in virtual stage 0 cannot receive activation from virtual stage -1: the pipeline has 2}}
    ratrain.recv activation mb(0) from(-1)
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// all_gather takes parameters
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
    
    // expected-error @+1 {{all_gather re-assembles parameters; it takes a view or master, not '!ratrain.grad<1, ready>'}}
    %t = ratrain.sync all_gather %r hierarchy flat : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, ready>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// all_gather result
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    // expected-error @+1 {{all_gather must produce '!ratrain.view<1>'}}
    %t = ratrain.sync all_gather %v1 hierarchy flat : !ratrain.view<1> -> !ratrain.async<!ratrain.view<0>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// sync a ready gradient (lifecycle phase)
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
    // expected-error @+1 {{all_reduce synchronizes a ready gradient, not '!ratrain.grad<1, partial>'}}
    %t = ratrain.sync all_reduce %g hierarchy flat : !ratrain.grad<1, partial> -> !ratrain.async<!ratrain.grad<1, synced>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// sync result
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
    
    // expected-error @+1 {{must produce !ratrain.async<'!ratrain.grad<1, synced>'>}}
    %t = ratrain.sync all_reduce %r hierarchy flat : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, ready>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// update needs a synced gradient (lifecycle phase) unless the plan
// synchronizes partially
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
    
    // expected-error @+1 {{applies the ready (unsynced) gradient of layer 1, but the plan synchronizes every step (sync_period = 1)}}
    %nm, %no = ratrain.update adamw %r, %m1, %o1 : !ratrain.grad<1, ready>, !ratrain.master<1>, !ratrain.opt_state<1>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// update layers
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
    
    %t = ratrain.sync all_reduce %r hierarchy flat : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    // expected-error @+1 {{updates layer 1 with the master or optimizer state of another layer}}
    %nm, %no = ratrain.update adamw %s, %m0, %o1 : !ratrain.grad<1, synced>, !ratrain.master<0>, !ratrain.opt_state<1>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// only states are offloaded
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    // expected-error @+2 {{only a training state can be offloaded, got 'f32'}}
    // expected-error @+1 {{failed to parse RATrain_AsyncType parameter 'value'}}
    %t = "ratrain.reload"(%v0) : (!ratrain.view<0>) -> !ratrain.async<!ratrain.offloaded<f32>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// only a step-start state or an offloaded value can be reloaded
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, offload = optimizer> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %r = ratrain.reload %o0 : !ratrain.opt_state<0>
    %o0r = ratrain.wait %r : !ratrain.async<!ratrain.opt_state<0>>
    // expected-error @+1 {{reloads '!ratrain.opt_state<0>' that is not in the offload tier}}
    %again = ratrain.reload %o0r : !ratrain.opt_state<0>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// schedule and virtual stages agree
// expected-error @+3 {{plan schedule zbv runs 2 virtual stages per rank, not 1}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0, schedule = zbv> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// one stage_layers entry per virtual stage
// expected-error @+3 {{plan has 2 stage_layers entries for pp * virtual_stages = 4}}
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0, schedule = interleaved_1f1b, virtual_stages = 2> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// every virtual stage runs on exactly one rank
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
// expected-error @+1 {{runs virtual stage 3 on no stage}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [1, 1, 1, 1], recompute = [none, none, none, none], step_us = 0, peak_bytes = 0, schedule = custom, virtual_stages = 2> {
  ratrain.stage 0 chunks [0: [0, 1), 2: [2, 3)] states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.yield %v0, %m0, %o0, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
  ratrain.stage 1 chunks [1: [1, 2)] states(%v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    ratrain.yield %v1, %m1, %o1 : !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
}

// -----

// chunks ascend
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0, schedule = custom, virtual_stages = 2> {
  // expected-error @+1 {{virtual stages must ascend with their layers; virtual stage 0 at layer 0 follows virtual stage 1 ending at layer 4}}
  ratrain.stage 0 chunks [1: [2, 4), 0: [0, 2)] states(%v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>, %v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>) {
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3, %v0, %m0, %o0, %v1, %m1, %o1 : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>, !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
}

// -----

// a transfer names a chunk of its rank
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [1, 1, 1, 1], recompute = [none, none, none, none], step_us = 0, peak_bytes = 0, schedule = interleaved_1f1b, virtual_stages = 2> {
  ratrain.stage 0 chunks [0: [0, 1), 2: [2, 3)] states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    // expected-error @+1 {{names virtual stage 1, which stage 0 does not run}}
    ratrain.send activation mb(0) to(0) chunk(1)
    ratrain.yield %v0, %m0, %o0, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
  ratrain.stage 1 chunks [1: [1, 2), 3: [3, 4)] states(%v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v3: !ratrain.view<3>, %m3: !ratrain.master<3>, %o3: !ratrain.opt_state<3>) {
    ratrain.yield %v1, %m1, %o1, %v3, %m3, %o3 : !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}

// -----

// expected-error @+1 {{plan max_grad_norm = -1.000000e+00 must be a finite number >= 0 (0: no clipping)}}
#bad_clip = #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
    micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none],
    step_us = 0, peak_bytes = 0, max_grad_norm = -1.0>

// -----

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
    %a = builtin.unrealized_conversion_cast to !ratrain.grad<1, synced>
    // expected-error @+1 {{counts the gradient of layer 1 twice}}
    %p = ratrain.grad_norm %a, %a : !ratrain.grad<1, synced>, !ratrain.grad<1, synced> -> !ratrain.async<!ratrain.grad_norm>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// the averaging of partial synchronization: an all_reduce of a master needs a
// period, a phase below it, and a period only goes on that all_reduce
ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 4> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    // expected-error @+1 {{an all_reduce of a master averages it under partial synchronization and needs `every <period> phase <phase>`}}
    %a = ratrain.sync all_reduce %m0 hierarchy flat : !ratrain.master<0> -> !ratrain.async<!ratrain.master<0>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 4> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    // expected-error @+1 {{phase 4 must be below the period 4}}
    %a = ratrain.sync all_reduce %m0 hierarchy flat every 4 phase 4 : !ratrain.master<0> -> !ratrain.async<!ratrain.master<0>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 4> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    // expected-error @+1 {{only an all_reduce of a master (the averaging of partial synchronization) runs every few steps; this is a all_gather of '!ratrain.view<0>'}}
    %a = ratrain.sync all_gather %v0 hierarchy flat every 4 phase 1 : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan sync_period = 4 needs zero = 0 (each replica keeps and updates whole masters), got zero = 1}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 1, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 4> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan sync_period = 0 must be 1 (every step) to 1024}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 0> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan act_offload = 2 for stage 0 must be 0 to its 1 decoder layers}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, act_offload = [2]> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan act_offload needs a schedule whose backward is not split (one_f_one_b, interleaved_1f1b or custom), got zb_h1}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0, schedule = zb_h1, act_offload = [1, 1]> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan has 2 act_offload entries for pp * virtual_stages = 1}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, act_offload = [1, 0]> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan has 1 dp_shares entries for dp = 2}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 3, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, dp_shares = [3]> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan dp_shares = 0 for replica 1 must be 1 to micro_batches = 3}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 3, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, dp_shares = [3, 0]> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan micro_batches = 3 must be the largest of dp_shares (2): the schedule is expanded for it}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 3, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, dp_shares = [2, 1]> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan dp_shares needs schedule one_f_one_b, got zb_h1}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1, micro_batches = 3, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 0, peak_bytes = 0, schedule = zb_h1, dp_shares = [3, 1]> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan dp_shares needs sync_period = 1: replicas of uneven shares average gradients, not masters}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 3, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2, dp_shares = [3, 1]> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{unknown rank order 'diagonal'; expected stage_major or replica_major}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, rank_order = diagonal> {
}

// -----

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{plan rank_order = replica_major cannot partition (weight_partition = 0, grad_partition = -1): a level's groups are consecutive clusters of a stage, which replica-major ranks are not}}
ratrain.pipeline @p for @m plan #ratrain.plan<clusters = 4, pp = 1, dp = 4, micro_batch_size = 1, micro_batches = 1, zero = 3, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, weight_partition = 0, rank_order = replica_major> {
}
