// RUN: ratrain-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The ratrain dialect's declared discardable attributes (RATrainDialect.td
// `discardableAttrs`) must have their declared types; other `ratrain.*`
// names are not checked.

// CHECK: module attributes {ratrain.machine = "machine.yaml", ratrain.other = 1 : i64}
module attributes {ratrain.machine = "machine.yaml", ratrain.other = 1} {
}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'ratrain.machine' must be a string, got 42}}
module attributes {ratrain.machine = 42} {
}

// -----

module {
  // expected-error @+1 {{'ratrain.model' op attribute 'ratrain.buffers' must be an array<i64: ...>, got 3}}
  ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
      positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
      attributes {ratrain.buffers = 3} {
    ratrain.layer 0 embedding hidden(64) vocab(128)
    ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
    ratrain.layer 2 head hidden(64) vocab(128)
  }
}

// -----

module {
  // expected-error @+1 {{'ratrain.model' op attribute 'ratrain.arena_bytes' must be an integer, got "big"}}
  ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
      positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
      attributes {ratrain.arena_bytes = "big"} {
    ratrain.layer 0 embedding hidden(64) vocab(128)
    ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
    ratrain.layer 2 head hidden(64) vocab(128)
  }
}

// -----

module {
  // expected-error @+1 {{'ratrain.model' op attribute 'ratrain.scratch_buffers' must be a dictionary, got 0 : i64}}
  ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
      positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
      attributes {ratrain.scratch_buffers = 0} {
    ratrain.layer 0 embedding hidden(64) vocab(128)
    ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
    ratrain.layer 2 head hidden(64) vocab(128)
  }
}
