// Errors of --ratrain-lower-to-mt3k. Each case runs the schedule passes and
// the lowering in one invocation, so the pipeline and its stages carry the
// location of the model they were expanded from.

// RUN: ratrain-opt %s -split-input-file -verify-diagnostics \
// RUN:   --ratrain-expand-1f1b --ratrain-schedule-lifecycle=machine=%examples/machines/mt3000.yaml \
// RUN:   --ratrain-assign-buffers=machine=%examples/machines/mt3000.yaml --ratrain-verify-schedule \
// RUN:   --ratrain-lower-to-mt3k=machine=%examples/machines/mt3000.yaml

// A module without a scheduled pipeline.
// expected-error@+1 {{found no ratrain.pipeline to lower: run --ratrain-schedule-pipeline first}}
module {
}

// -----

// Tied embeddings under ZeRO-3: the LM head would need the embedding's full
// view on another stage.
// expected-error@+1 {{'ratrain.pipeline' op cannot be lowered: model @tied ties its embeddings, whose LM head reads the embedding's full view, which ZeRO-3 shards; use zero = 2 or less}}
ratrain.model @tied family("llama") dtype(bf16) seq_len(64) max_positions(128) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) tie_embeddings plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1, micro_batches = 2, zero = 3, stage_layers = [2, 2], recompute = [none, none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 2 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// ZeRO-1 shards each layer's flattened parameters equally over dp.
// expected-error@+1 {{'ratrain.pipeline' op cannot be lowered: layer 0 has 8192 parameters, not a multiple of dp = 3 (ZeRO shards must be equal)}}
ratrain.model @uneven family("llama") dtype(bf16) seq_len(64) max_positions(128) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 6, pp = 2, dp = 3, micro_batch_size = 1, micro_batches = 2, zero = 1, stage_layers = [2, 2], recompute = [none, none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 2 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 3 head hidden(64) vocab(128)
}

// -----

// Two models expand to two pipelines; a module describes one job.
ratrain.model @first family("llama") dtype(bf16) seq_len(64) max_positions(128) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 2 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 3 head hidden(64) vocab(128)
}
// expected-error@+1 {{'ratrain.pipeline' op is a second pipeline; an mt3k module describes one training job}}
ratrain.model @second family("llama") dtype(bf16) seq_len(64) max_positions(128) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 2 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 3 head hidden(64) vocab(128)
}
