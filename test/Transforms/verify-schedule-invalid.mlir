// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --ratrain-verify-schedule

// Hand-written broken schedules, one per verifier error. A 3-layer model
// (embedding, one decoder layer, head) on one stage with 2 micro-batches;
// only layer 1 computes (the verifier does not require every layer to).

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
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{use-before-ready: the gradient of layer 1 is marked ready after 1 of 2 micro-batches accumulated into it}}
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A partial gradient accumulated into twice.
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
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %c = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-note @+1 {{used here}}
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{use-before-ready: accumulates into a partial gradient of layer 1 that 'ratrain.backward' already used}}
    %i = ratrain.backward %v1, %c acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A sync that is never waited: the step would end with it in flight.
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
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %h : !ratrain.grad<1, partial>
    // expected-note @+1 {{issued here}}
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    // expected-error @+1 {{use-before-ready: the step ends with 1 async operation(s) never waited, the first a 'ratrain.sync'}}
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The update takes a gradient that no completed sync produced (a cast left
// behind by some other tool).
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
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %h : !ratrain.grad<1, partial>
    %s = builtin.unrealized_conversion_cast %r
        : !ratrain.grad<1, ready> to !ratrain.grad<1, synced>
    // expected-error @+1 {{update-before-sync-completes: the update of layer 1 uses a gradient that is not the result of a completed 'ratrain.sync'}}
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

// A forward on a view that is not the step's view nor a completed
// re-materialization.
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
    %x = builtin.unrealized_conversion_cast %m1
        : !ratrain.master<1> to !ratrain.view<1>
    // expected-error @+1 {{forward-before-view-in-place: the forward of micro-batch 0 uses the view of layer 1 before it is in place: it is produced by 'builtin.unrealized_conversion_cast'}}
    %a = ratrain.forward %x mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// ZeRO-1: the re-materialized view is a shard; returning it for the next
// step's forward without the all-gather leaves the view incomplete.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 1, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %h : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    %nm, %no = ratrain.update adamw %s, %m1, %o1
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    // expected-error @+1 {{forward-before-view-in-place: returns the view of layer 1 for the next step's forward before it is in place: under ZeRO-1 the re-materialized view is this rank's shard until a 'ratrain.sync all_gather' completes}}
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A backward whose activations a previous backward already released.
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
    // expected-note @+1 {{released here}}
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    // expected-error @+1 {{backward-without-activation: the activations of layer 1 micro-batch 0 were already released by an earlier 'ratrain.backward'}}
    %h = ratrain.backward %v1, %a acc(%g) mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A backward whose activations no forward or recompute stored.
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
    %a = builtin.unrealized_conversion_cast %v1
        : !ratrain.view<1> to !ratrain.act<1, full>
    // expected-error @+1 {{backward-without-activation: the backward of layer 1 micro-batch 0 has no stored activations: no forward or recompute of that micro-batch produced its activation operand}}
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The old master is re-materialized after the update replaced it.
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
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %h : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    // expected-note @+1 {{replaced here}}
    %nm, %no = ratrain.update adamw %s, %m1, %o1
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    // expected-error @+1 {{uses a stale state: the '!ratrain.master<1>' was replaced by 'ratrain.update'}}
    %p = ratrain.view_prefetch %m1 : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// ZeRO-2 plans synchronize gradients with reduce_scatter.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 2, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    // expected-error @+1 {{synchronizes the gradient of layer 1 with all_reduce but the plan has zero = 2, which needs reduce_scatter}}
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// Two buffers live at the same time at overlapping addresses: the
// activations of micro-batches 0 and 1 (both held until their backward).
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
  // expected-error @+1 {{overlapping live buffers: activations of layer 1 mb 0 at [1000, 1100) and activations of layer 1 mb 1 at [1050, 1150) are both live at position 1}}
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>)
      attributes {ratrain.arg_buffers = array<i64: 0, 0, 10, 1, 10, 10,
                  2, 20, 10, 3, 30, 10, 4, 40, 10, 5, 50, 10, 6, 60, 10,
                  7, 70, 10, 8, 80, 10>} {
    %a = ratrain.forward %v1 mb(0) {ratrain.buffers = array<i64: 9, 1000, 100>}
        : !ratrain.view<1> -> !ratrain.act<1, full>
    // expected-note @+1 {{both live here}}
    %b = ratrain.forward %v1 mb(1) {ratrain.buffers = array<i64: 10, 1050, 100>}
        : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) {ratrain.buffers = array<i64: 11, 2000, 10>}
        : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) {ratrain.buffers = array<i64: 11, 2000, 10>}
        : !ratrain.view<1>, !ratrain.act<1, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// Deadlock: stage 0 waits for the gradient of micro-batch 0 before sending
// its activations; stage 1 waits for those activations.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
// expected-error @+1 {{deadlocks: 2 stage(s) block on a recv whose send is never issued: stage 0 at 'recv gradient mb(0) from(1)' stage 1 at 'recv activation mb(0) from(0)'}}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1,
                       micro_batches = 1, zero = 0, stage_layers = [2, 1],
                       recompute = [none, none], step_us = 0,
                       peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>) {
    %a0 = ratrain.forward %v0 mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
    %a1 = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    // expected-note @+1 {{blocks here}}
    ratrain.recv gradient mb(0) from(1)
    ratrain.send activation mb(0) to(1)
    %g1 = ratrain.backward %v1, %a1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %g0 = ratrain.backward %v0, %a0 mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 3) states(%v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    // expected-note @+1 {{blocks here}}
    ratrain.recv activation mb(0) from(0)
    %a2 = ratrain.forward %v2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2 = ratrain.backward %v2, %a2 mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    ratrain.send gradient mb(0) to(0)
    ratrain.yield %v2, %m2, %o2
        : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// A send that the peer never receives.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1,
                       micro_batches = 1, zero = 0, stage_layers = [2, 1],
                       recompute = [none, none], step_us = 0,
                       peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>) {
    ratrain.send activation mb(0) to(1)
    // expected-error @+1 {{sends activation mb(1) to stage 1, which never receives it}}
    ratrain.send activation mb(1) to(1)
    ratrain.recv gradient mb(0) from(1)
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 3) states(%v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.recv activation mb(0) from(0)
    ratrain.send gradient mb(0) to(0)
    ratrain.yield %v2, %m2, %o2
        : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The plan keeps Adam m, v in the offload tier, but the update uses the
// optimizer state of the step start without reloading it.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0,
                       offload = optimizer> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %h : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    // expected-error @+1 {{update-on-offloaded-state: the update of layer 1 uses '!ratrain.opt_state<1>', which the plan keeps in the offload tier (offload = optimizer), without reloading it}}
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

// The optimizer state is reloaded and updated, but the step returns it
// without writing it back to the tier.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0,
                       offload = optimizer> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %h : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    %ro = ratrain.reload %o1 : !ratrain.opt_state<1>
    %o1r = ratrain.wait %ro : !ratrain.async<!ratrain.opt_state<1>>
    %nm, %no = ratrain.update adamw %s, %m1, %o1r
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    // expected-error @+1 {{offloaded-state-not-written-back: returns '!ratrain.opt_state<1>', which the plan keeps in the offload tier (offload = optimizer), without a completed 'ratrain.offload' of it}}
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// With `offload = optimizer` the master stays in DDR: reloading it from
// the step start is a misuse.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0,
                       offload = optimizer> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %h : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    // expected-error @+1 {{reload-of-resident-state: reloads '!ratrain.master<1>' from the step start, but the plan keeps it in DDR (offload = optimizer)}}
    %rm = ratrain.reload %m1 : !ratrain.master<1>
    %m1r = ratrain.wait %rm : !ratrain.async<!ratrain.master<1>>
    %ro = ratrain.reload %o1 : !ratrain.opt_state<1>
    %o1r = ratrain.wait %ro : !ratrain.async<!ratrain.opt_state<1>>
    %nm, %no = ratrain.update adamw %s, %m1r, %o1r
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

// With `offload = master` the new master is written back before the view
// prefetch casts it: the cast reads a state that is leaving DDR.
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0,
                       offload = master> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %b = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %v1, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %h = ratrain.backward %v1, %b acc(%g) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %h : !ratrain.grad<1, partial>
    %t = ratrain.sync all_reduce %r hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %s = ratrain.wait %t : !ratrain.async<!ratrain.grad<1, synced>>
    %rm = ratrain.reload %m1 : !ratrain.master<1>
    %m1r = ratrain.wait %rm : !ratrain.async<!ratrain.master<1>>
    %ro = ratrain.reload %o1 : !ratrain.opt_state<1>
    %o1r = ratrain.wait %ro : !ratrain.async<!ratrain.opt_state<1>>
    %nm, %no = ratrain.update adamw %s, %m1r, %o1r
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    // expected-note @+1 {{offloaded here}}
    %wm = ratrain.offload %nm to host : !ratrain.master<1>
    %wo = ratrain.offload %no to host : !ratrain.opt_state<1>
    // expected-error @+1 {{uses a stale state: the '!ratrain.master<1>' was moved to the offload tier by 'ratrain.offload'}}
    %p = ratrain.view_prefetch %nm : !ratrain.master<1>
    %nv = ratrain.wait %p : !ratrain.async<!ratrain.view<1>>
    %dm = ratrain.wait %wm : !ratrain.async<!ratrain.offloaded<!ratrain.master<1>>>
    %do = ratrain.wait %wo : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<1>>>
    ratrain.yield %v0, %m0, %o0, %nv, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
