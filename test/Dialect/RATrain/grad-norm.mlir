// RUN: ratrain-opt %s -split-input-file | ratrain-opt -split-input-file | FileCheck %s
// RUN: ratrain-opt %s -split-input-file --mlir-print-op-generic | ratrain-opt -split-input-file | FileCheck %s

// Gradient clipping in the IR: the plan's max_grad_norm, the global norm of
// a stage's synced gradients and the updates that read it.

// CHECK: plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, max_grad_norm = 5.000000e-01>
// CHECK: %[[P:.*]] = ratrain.grad_norm %[[A:.*]], %[[B:.*]] : !ratrain.grad<1, synced>, !ratrain.grad<2, synced> -> !ratrain.async<!ratrain.grad_norm>
// CHECK: %[[N:.*]] = ratrain.wait %[[P]] : !ratrain.async<!ratrain.grad_norm>
// CHECK: ratrain.update adamw %[[A]], %{{.*}}, %{{.*}} clip %[[N]] : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 1, zero = 0, stage_layers = [3],
                       recompute = [none], step_us = 0, peak_bytes = 0,
                       max_grad_norm = 0.5> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    %a, %b = builtin.unrealized_conversion_cast to !ratrain.grad<1, synced>, !ratrain.grad<2, synced>
    %p = ratrain.grad_norm %a, %b : !ratrain.grad<1, synced>, !ratrain.grad<2, synced> -> !ratrain.async<!ratrain.grad_norm>
    %n = ratrain.wait %p : !ratrain.async<!ratrain.grad_norm>
    %nm, %no = ratrain.update adamw %a, %m1, %o1 clip %n
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    ratrain.yield %v0, %m0, %o0, %v1, %nm, %no, %v2, %m2, %o2
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>,
          !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
