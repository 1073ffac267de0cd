// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --ratrain-verify-schedule

// Partial synchronization (docs/schedule.md, "Partial synchronization"): the
// schedule verifier refuses a step whose replicas would not agree, or that
// reads a master while it is being averaged. Each case is the gpu-style
// lifecycle of a 3-layer model on dp 2 with sync_period = 2, edited.

// A layer's updated master returned without its averaging.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(16) max_positions(32) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2> policy gpu_style {
  ratrain.stage 0 layers [0, 3) states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>, %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>, %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    %0 = ratrain.forward %view0 mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
    %1 = ratrain.forward %view1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %2 = ratrain.forward %view2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    %3 = ratrain.backward %view2, %2 mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    %4 = ratrain.backward %view1, %1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %5 = ratrain.backward %view0, %0 mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
    %6 = ratrain.grad_ready %3 : !ratrain.grad<2, partial>
    %7 = ratrain.grad_ready %4 : !ratrain.grad<1, partial>
    %8 = ratrain.grad_ready %5 : !ratrain.grad<0, partial>
    %new_master, %new_opt_state = ratrain.update adamw %6, %master2, %opt2 : !ratrain.grad<2, ready>, !ratrain.master<2>, !ratrain.opt_state<2>
    %new_master_0, %new_opt_state_1 = ratrain.update adamw %7, %master1, %opt1 : !ratrain.grad<1, ready>, !ratrain.master<1>, !ratrain.opt_state<1>
    %new_master_2, %new_opt_state_3 = ratrain.update adamw %8, %master0, %opt0 : !ratrain.grad<0, ready>, !ratrain.master<0>, !ratrain.opt_state<0>
    %9 = ratrain.sync all_reduce %new_master hierarchy flat every 2 phase 1 : !ratrain.master<2> -> !ratrain.async<!ratrain.master<2>>
    %10 = ratrain.sync all_reduce %new_master_0 hierarchy flat every 2 phase 0 : !ratrain.master<1> -> !ratrain.async<!ratrain.master<1>>
    %12 = ratrain.wait %9 : !ratrain.async<!ratrain.master<2>>
    %13 = ratrain.wait %10 : !ratrain.async<!ratrain.master<1>>
    %15 = ratrain.view_prefetch %12 : !ratrain.master<2>
    %16 = ratrain.view_prefetch %13 : !ratrain.master<1>
    %17 = ratrain.view_prefetch %new_master_2 : !ratrain.master<0>
    %18 = ratrain.wait %17 : !ratrain.async<!ratrain.view<0>>
    %19 = ratrain.wait %16 : !ratrain.async<!ratrain.view<1>>
    %20 = ratrain.wait %15 : !ratrain.async<!ratrain.view<2>>
    // expected-error @+1 {{unaveraged-master: returns the updated master of layer 0 without a completed averaging (a 'ratrain.sync all_reduce' of it every 2 steps): the replicas would never agree on it}}
    ratrain.yield %18, %new_master_2, %new_opt_state_3, %19, %13, %new_opt_state_1, %20, %12, %new_opt_state : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// An averaging of another period than the plan's.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(16) max_positions(32) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2> policy gpu_style {
  ratrain.stage 0 layers [0, 3) states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>, %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>, %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    %0 = ratrain.forward %view0 mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
    %1 = ratrain.forward %view1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %2 = ratrain.forward %view2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    %3 = ratrain.backward %view2, %2 mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    %4 = ratrain.backward %view1, %1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %5 = ratrain.backward %view0, %0 mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
    %6 = ratrain.grad_ready %3 : !ratrain.grad<2, partial>
    %7 = ratrain.grad_ready %4 : !ratrain.grad<1, partial>
    %8 = ratrain.grad_ready %5 : !ratrain.grad<0, partial>
    %new_master, %new_opt_state = ratrain.update adamw %6, %master2, %opt2 : !ratrain.grad<2, ready>, !ratrain.master<2>, !ratrain.opt_state<2>
    %new_master_0, %new_opt_state_1 = ratrain.update adamw %7, %master1, %opt1 : !ratrain.grad<1, ready>, !ratrain.master<1>, !ratrain.opt_state<1>
    %new_master_2, %new_opt_state_3 = ratrain.update adamw %8, %master0, %opt0 : !ratrain.grad<0, ready>, !ratrain.master<0>, !ratrain.opt_state<0>
    // expected-error @+1 {{averages the master of layer 2 every 3 steps, but the plan's sync_period is 2}}
    %9 = ratrain.sync all_reduce %new_master hierarchy flat every 3 phase 1 : !ratrain.master<2> -> !ratrain.async<!ratrain.master<2>>
    %10 = ratrain.sync all_reduce %new_master_0 hierarchy flat every 2 phase 0 : !ratrain.master<1> -> !ratrain.async<!ratrain.master<1>>
    %11 = ratrain.sync all_reduce %new_master_2 hierarchy flat every 2 phase 1 : !ratrain.master<0> -> !ratrain.async<!ratrain.master<0>>
    %12 = ratrain.wait %9 : !ratrain.async<!ratrain.master<2>>
    %13 = ratrain.wait %10 : !ratrain.async<!ratrain.master<1>>
    %14 = ratrain.wait %11 : !ratrain.async<!ratrain.master<0>>
    %15 = ratrain.view_prefetch %12 : !ratrain.master<2>
    %16 = ratrain.view_prefetch %13 : !ratrain.master<1>
    %17 = ratrain.view_prefetch %14 : !ratrain.master<0>
    %18 = ratrain.wait %17 : !ratrain.async<!ratrain.view<0>>
    %19 = ratrain.wait %16 : !ratrain.async<!ratrain.view<1>>
    %20 = ratrain.wait %15 : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %18, %14, %new_opt_state_3, %19, %13, %new_opt_state_1, %20, %12, %new_opt_state : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The view cast from the master while it is being averaged (in place).
ratrain.model @tiny family("llama") dtype(bf16) seq_len(16) max_positions(32) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2> policy gpu_style {
  ratrain.stage 0 layers [0, 3) states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>, %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>, %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    %0 = ratrain.forward %view0 mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
    %1 = ratrain.forward %view1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %2 = ratrain.forward %view2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    %3 = ratrain.backward %view2, %2 mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    %4 = ratrain.backward %view1, %1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %5 = ratrain.backward %view0, %0 mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
    %6 = ratrain.grad_ready %3 : !ratrain.grad<2, partial>
    %7 = ratrain.grad_ready %4 : !ratrain.grad<1, partial>
    %8 = ratrain.grad_ready %5 : !ratrain.grad<0, partial>
    %new_master, %new_opt_state = ratrain.update adamw %6, %master2, %opt2 : !ratrain.grad<2, ready>, !ratrain.master<2>, !ratrain.opt_state<2>
    %new_master_0, %new_opt_state_1 = ratrain.update adamw %7, %master1, %opt1 : !ratrain.grad<1, ready>, !ratrain.master<1>, !ratrain.opt_state<1>
    %new_master_2, %new_opt_state_3 = ratrain.update adamw %8, %master0, %opt0 : !ratrain.grad<0, ready>, !ratrain.master<0>, !ratrain.opt_state<0>
    // expected-note @+1 {{replaced here}}
    %9 = ratrain.sync all_reduce %new_master hierarchy flat every 2 phase 1 : !ratrain.master<2> -> !ratrain.async<!ratrain.master<2>>
    %10 = ratrain.sync all_reduce %new_master_0 hierarchy flat every 2 phase 0 : !ratrain.master<1> -> !ratrain.async<!ratrain.master<1>>
    %11 = ratrain.sync all_reduce %new_master_2 hierarchy flat every 2 phase 1 : !ratrain.master<0> -> !ratrain.async<!ratrain.master<0>>
    %12 = ratrain.wait %9 : !ratrain.async<!ratrain.master<2>>
    %13 = ratrain.wait %10 : !ratrain.async<!ratrain.master<1>>
    %14 = ratrain.wait %11 : !ratrain.async<!ratrain.master<0>>
    // expected-error @+1 {{uses a stale state: the '!ratrain.master<2>' was replaced by 'ratrain.sync'}}
    %15 = ratrain.view_prefetch %new_master : !ratrain.master<2>
    %16 = ratrain.view_prefetch %13 : !ratrain.master<1>
    %17 = ratrain.view_prefetch %14 : !ratrain.master<0>
    %18 = ratrain.wait %17 : !ratrain.async<!ratrain.view<0>>
    %19 = ratrain.wait %16 : !ratrain.async<!ratrain.view<1>>
    %20 = ratrain.wait %15 : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %18, %14, %new_opt_state_3, %19, %13, %new_opt_state_1, %20, %12, %new_opt_state : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// -----

// The averaging of the step-start master, before the update.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(16) max_positions(32) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, sync_period = 2> policy gpu_style {
  ratrain.stage 0 layers [0, 3) states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>, %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>, %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) {
    %0 = ratrain.forward %view0 mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
    %1 = ratrain.forward %view1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %2 = ratrain.forward %view2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    %3 = ratrain.backward %view2, %2 mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    %4 = ratrain.backward %view1, %1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %5 = ratrain.backward %view0, %0 mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
    %6 = ratrain.grad_ready %3 : !ratrain.grad<2, partial>
    %7 = ratrain.grad_ready %4 : !ratrain.grad<1, partial>
    %8 = ratrain.grad_ready %5 : !ratrain.grad<0, partial>
    %new_master_0, %new_opt_state_1 = ratrain.update adamw %7, %master1, %opt1 : !ratrain.grad<1, ready>, !ratrain.master<1>, !ratrain.opt_state<1>
    %new_master_2, %new_opt_state_3 = ratrain.update adamw %8, %master0, %opt0 : !ratrain.grad<0, ready>, !ratrain.master<0>, !ratrain.opt_state<0>
    // expected-error @+1 {{average-before-update: averages the master of layer 2 that is not the result of this step's update}}
    %9 = ratrain.sync all_reduce %master2 hierarchy flat every 2 phase 1 : !ratrain.master<2> -> !ratrain.async<!ratrain.master<2>>
    %10 = ratrain.sync all_reduce %new_master_0 hierarchy flat every 2 phase 0 : !ratrain.master<1> -> !ratrain.async<!ratrain.master<1>>
    %11 = ratrain.sync all_reduce %new_master_2 hierarchy flat every 2 phase 1 : !ratrain.master<0> -> !ratrain.async<!ratrain.master<0>>
    %12 = ratrain.wait %9 : !ratrain.async<!ratrain.master<2>>
    %13 = ratrain.wait %10 : !ratrain.async<!ratrain.master<1>>
    %14 = ratrain.wait %11 : !ratrain.async<!ratrain.master<0>>
    %15 = ratrain.view_prefetch %12 : !ratrain.master<2>
    %16 = ratrain.view_prefetch %13 : !ratrain.master<1>
    %17 = ratrain.view_prefetch %14 : !ratrain.master<0>
    %18 = ratrain.wait %17 : !ratrain.async<!ratrain.view<0>>
    %19 = ratrain.wait %16 : !ratrain.async<!ratrain.view<1>>
    %20 = ratrain.wait %15 : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %18, %14, %new_opt_state_3, %19, %13, %new_opt_state_1, %20, %12, %opt2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
