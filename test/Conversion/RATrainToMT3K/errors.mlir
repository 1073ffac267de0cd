// Errors of --ratrain-lower-to-mt3k on hand-written inputs (docs/lowering.md,
// "Not lowered (errors)"): what the pass rejects and the message it gives.
// Each case is a small ratrain module: a pipeline with an empty stage for
// the checks on the model and the pipeline, else the scheduled tiny fp32
// LLaMA of decoder-layer.mlir (or of offload.mlir) with one thing broken by
// hand. Errors that depend on the pass options or on the machine file are
// in errors-machine.mlir.

// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --ratrain-lower-to-mt3k=machine=%S/Inputs/tiny.yaml

// A module without a pipeline.
// expected-error@+1 {{found no ratrain.pipeline to lower: run --ratrain-schedule-pipeline first}}
module {
}

// -----

// A pipeline that --ratrain-schedule-lifecycle has not run on (no policy).
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error@+1 {{'ratrain.pipeline' op was not lifecycle-scheduled: run --ratrain-schedule-pipeline first}}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    ratrain.yield %view0, %master0, %opt0, %view1, %master1, %opt1, %view2, %master2, %opt2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A pipeline whose model is not in the module.
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error@+1 {{'ratrain.pipeline' op refers to 'nope', which is not a ratrain.model}}
ratrain.pipeline @tiny_step for @nope plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    ratrain.yield %view0, %master0, %opt0, %view1, %master1, %opt1, %view2, %master2, %opt2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A scheduled pipeline without buffer assignment (no ratrain.arg_buffers,
// ratrain.buffers, ...).
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  // expected-error@+1 {{'ratrain.stage' op stage 0 was not buffer-assigned: run --ratrain-assign-buffers (or --ratrain-schedule-pipeline) before --ratrain-lower-to-mt3k}}
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    ratrain.yield %view0, %master0, %opt0, %view1, %master1, %opt1, %view2, %master2, %opt2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// Tied embeddings with a NormHead (which normalizes the LM head's rows only).
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) tie_embeddings norm_head plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error@+1 {{'ratrain.pipeline' op cannot be lowered: model @tiny ties its embeddings and has Baichuan2's NormHead, which normalizes the LM head's rows only}}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    ratrain.yield %view0, %master0, %opt0, %view1, %master1, %opt1, %view2, %master2, %opt2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// ZeRO-1 over dp = 3: the embedding's 8192 parameters do not split equally.
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 3, pp = 1, dp = 3, micro_batch_size = 1, micro_batches = 1, zero = 1, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error@+1 {{'ratrain.pipeline' op cannot be lowered: layer 0 has 8192 parameters, not a multiple of dp = 3 (ZeRO shards must be equal)}}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 3, pp = 1, dp = 3, micro_batch_size = 1, micro_batches = 1, zero = 1, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    ratrain.yield %view0, %master0, %opt0, %view1, %master1, %opt1, %view2, %master2, %opt2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// An SGD update.
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 897888 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768,       1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352,  4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024,  7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 690432, 8192>}} {
    // Forward of micro-batch 0: embedding, decoder, head.
    %act0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 897856, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 731648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    // Head: backward, then its gradient's lifecycle (sync, update, view).
    %g2 = ratrain.backward %view2, %act2 mb(0) {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    // Decoder: backward (its gradient reuses the head gradient's bytes).
    %g1 = ratrain.backward %view1, %act1 mb(0) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    // expected-error@+1 {{'ratrain.update' op only AdamW updates are lowered}}
    %master1n, %opt1n = ratrain.update sgd %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    // Embedding.
    %g0 = ratrain.backward %view0, %act0 mb(0) {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    // The views are in place before the next step.
    %view0n = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %view1n = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %view2n = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %view0n, %master0n, %opt0n, %view1n, %master1n, %opt1n, %view2n, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A decoder activation buffer smaller than the lowering's layout (the
// slots up to lse take 24768 bytes).
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  // expected-error@+1 {{'ratrain.stage' op stage 0: activations of layer 1 mb 0 has 20000 bytes but the lowering stores 24768 bytes there}}
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 897888 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768,       1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352,  4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024,  7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 690432, 8192>}} {
    // Forward of micro-batch 0: embedding, decoder, head.
    %act0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 897856, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 20000>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 731648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    // Head: backward, then its gradient's lifecycle (sync, update, view).
    %g2 = ratrain.backward %view2, %act2 mb(0) {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    // Decoder: backward (its gradient reuses the head gradient's bytes).
    %g1 = ratrain.backward %view1, %act1 mb(0) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    // Embedding.
    %g0 = ratrain.backward %view0, %act0 mb(0) {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    // The views are in place before the next step.
    %view0n = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %view1n = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %view2n = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %view0n, %master0n, %opt0n, %view1n, %master1n, %opt1n, %view2n, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The gradient chain of one buffer recorded at two offsets.
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 897888 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768,       1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352,  4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024,  7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 690432, 8192>}} {
    // Forward of micro-batch 0: embedding, decoder, head.
    %act0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 897856, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 731648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    // Head: backward, then its gradient's lifecycle (sync, update, view).
    %g2 = ratrain.backward %view2, %act2 mb(0) {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    // expected-error@+1 {{'ratrain.grad_ready' op records buffer [12, 698656, 33024] for a value of gradient of layer 2, which is recorded elsewhere as [12, 698624, 33024]}}
    %ready2 = ratrain.grad_ready %g2 {ratrain.buffers = array<i64: 12, 698656, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    // Decoder: backward (its gradient reuses the head gradient's bytes).
    %g1 = ratrain.backward %view1, %act1 mb(0) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    // Embedding.
    %g0 = ratrain.backward %view0, %act0 mb(0) {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    // The views are in place before the next step.
    %view0n = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %view1n = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %view2n = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %view0n, %master0n, %opt0n, %view1n, %master1n, %opt1n, %view2n, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// An offloaded state whose reload window (buffer 13) cannot hold two
// halves of 16 elements.
ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000, offload = optimizer> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000, offload = optimizer> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 865376 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768, 1, 0, 0, 2, 0, 0,
                                                   3, 32768, 164352, 4, 0, 0, 5, 0, 0,
                                                   6, 197120, 33024, 7, 0, 0, 8, 0, 0>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 20, 0, 0>,
                                             sync_staging = array<i64: 19, 0, 0>,
                                             workspace = array<i64: 18, 230144, 8192>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 865344, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 797440, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 567040, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %reload2 = ratrain.reload %opt2 {ratrain.buffers = array<i64: 12, 731392, 66048>} : !ratrain.opt_state<2>
    // expected-error@+1 {{'ratrain.reload' op cannot be lowered: the window of 'model.layers.0.adam' holds 200 bytes, too few to stream the state in two chunks of 16 elements}}
    %reload1 = ratrain.reload %opt1 {ratrain.buffers = array<i64: 13, 238336, 200>} : !ratrain.opt_state<1>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 14, 832320, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 14, 832320, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 14, 832320, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 15, 567040, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 15, 567040, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 15, 567040, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 16, 797440, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 16, 797440, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 16, 797440, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 14, 832320, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %opt2r = ratrain.wait %reload2 {ratrain.buffers = array<i64: 12, 731392, 66048>} : !ratrain.async<!ratrain.opt_state<2>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2r {ratrain.buffers = array<i64: 7, 0, 0, 12, 731392, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 197120, 33024>} : !ratrain.master<2>
    %off2 = ratrain.offload %opt2n to host {ratrain.buffers = array<i64: -1, 0, 0>} : !ratrain.opt_state<2>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 15, 567040, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %opt1r = ratrain.wait %reload1 {ratrain.buffers = array<i64: 13, 238336, 200>} : !ratrain.async<!ratrain.opt_state<1>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1r {ratrain.buffers = array<i64: 4, 0, 0, 13, 238336, 200>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 32768, 164352>} : !ratrain.master<1>
    %off1 = ratrain.offload %opt1n to host {ratrain.buffers = array<i64: -1, 0, 0>} : !ratrain.opt_state<1>
    %offdone2 = ratrain.wait %off2 {ratrain.buffers = array<i64: -1, 0, 0>} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<2>>>
    %reload0 = ratrain.reload %opt0 {ratrain.buffers = array<i64: 17, 567040, 65536>} : !ratrain.opt_state<0>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 16, 797440, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %opt0r = ratrain.wait %reload0 {ratrain.buffers = array<i64: 17, 567040, 65536>} : !ratrain.async<!ratrain.opt_state<0>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0r {ratrain.buffers = array<i64: 1, 0, 0, 17, 567040, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    %off0 = ratrain.offload %opt0n to host {ratrain.buffers = array<i64: -1, 0, 0>} : !ratrain.opt_state<0>
    %offdone1 = ratrain.wait %off1 {ratrain.buffers = array<i64: -1, 0, 0>} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<1>>>
    %offdone0 = ratrain.wait %off0 {ratrain.buffers = array<i64: -1, 0, 0>} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<0>>>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 32768, 164352>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 197120, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
