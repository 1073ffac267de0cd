// RUN: ratrain-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// What a job's programs need besides the programs, as the mt3k dialect's own
// typed module attributes (the lowering sets them; no ratrain attribute is
// left on an mt3k module).

// CHECK: module attributes {mt3k.job = #mt3k.job<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 4, zero = 0, stage_layers = [3, 3], policy = "ratrain">, mt3k.model = #mt3k.model<name = "tiny_llama", family = "llama", dtype = f32, decoder_layers = 4, hidden = 256, heads = 8, kv_heads = 4, ffn = 688, vocab = 256, seq_len = 256, max_positions = 256, rms_eps = 1.000000e-05 : f64, rope_theta = 1.000000e+04 : f64, qkv_bias = false, norm_head = false>}
module attributes {mt3k.job = #mt3k.job<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 4, zero = 0, stage_layers = [3, 3], policy = "ratrain">, mt3k.model = #mt3k.model<name = "tiny_llama", family = "llama", dtype = f32, decoder_layers = 4, hidden = 256, heads = 8, kv_heads = 4, ffn = 688, vocab = 256, seq_len = 256, max_positions = 256, rms_eps = 1.000000e-05 : f64, rope_theta = 1.000000e+04 : f64, qkv_bias = false, norm_head = false>} {
}

// -----

// expected-error @+1 {{attribute 'mt3k.job' must be a #mt3k.job, got 3 : i64}}
module attributes {mt3k.job = 3 : i64} {
}

// -----

// expected-error @+1 {{attribute 'mt3k.model' must be a #mt3k.model}}
module attributes {mt3k.model = {hidden = 256 : i64}} {
}

// -----

// expected-error @+1 {{has the unknown attribute 'mt3k.plan'}}
module attributes {mt3k.plan = 1 : i64} {
}

// -----

module {
  // expected-error @+1 {{attribute 'mt3k.job' belongs on the module}}
  func.func @f() attributes {mt3k.job = #mt3k.job<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], policy = "ratrain">} {
    return
  }
}
