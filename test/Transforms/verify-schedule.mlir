// Schedules the passes produce verify, for both policies and without a
// lifecycle; and a hand-written schedule with ZeRO-1 all-gathers, offload
// and reload verifies.

// RUN: ratrain-opt %S/Inputs/tiny-p4-m8.mlir --ratrain-expand-1f1b --ratrain-verify-schedule | FileCheck %s --check-prefix=EXPANDED
// RUN: ratrain-opt %S/Inputs/tiny-p4-m8.mlir --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine.yaml" | FileCheck %s --check-prefix=RAT
// RUN: ratrain-opt %S/Inputs/tiny-p4-m8.mlir --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine.yaml policy=gpu-style" | FileCheck %s --check-prefix=GPU
// RUN: ratrain-opt %s --ratrain-verify-schedule | FileCheck %s

// EXPANDED: ratrain.pipeline @tiny_step
// EXPANDED-COUNT-4: ratrain.stage

// RAT: ratrain.pipeline @tiny_step {{.*}} policy ratrain
// RAT-COUNT-4: ratrain.stage {{.*}} ratrain.peak_bytes

// GPU: ratrain.pipeline @tiny_step {{.*}} policy gpu_style
// GPU-COUNT-4: ratrain.stage {{.*}} ratrain.peak_bytes

ratrain.model @m family("llama") dtype(bf16) seq_len(16) max_positions(16)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(4) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// CHECK-LABEL: ratrain.pipeline @step
ratrain.pipeline @step for @m
    plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 1, stage_layers = [2, 1],
                       recompute = [full, none], step_us = 0,
                       peak_bytes = 0> {
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>) {
    %a0 = ratrain.forward %v0 mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
    %a1 = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
    ratrain.send activation mb(0) to(1)
    %b0 = ratrain.forward %v0 mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
    %b1 = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, input>
    ratrain.send activation mb(1) to(1)
    // The layer input of micro-batch 1 waits in host memory.
    %off = ratrain.offload %b1 to host : !ratrain.act<1, input>
    %stored = ratrain.wait %off
        : !ratrain.async<!ratrain.offloaded<!ratrain.act<1, input>>>
    %r1 = ratrain.recompute %v1, %a1 mb(0)
        : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    ratrain.recv gradient mb(0) from(1)
    %g1 = ratrain.backward %v1, %r1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %g0 = ratrain.backward %v0, %a0 mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
    %back = ratrain.reload %stored : !ratrain.offloaded<!ratrain.act<1, input>>
    %b1r = ratrain.wait %back : !ratrain.async<!ratrain.act<1, input>>
    %s1 = ratrain.recompute %v1, %b1r mb(1)
        : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    ratrain.recv gradient mb(1) from(1)
    %h1 = ratrain.backward %v1, %s1 acc(%g1) mb(1)
        : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %h1 : !ratrain.grad<1, partial>
    %t1 = ratrain.sync all_reduce %ready1 hierarchy flat
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %h0 = ratrain.backward %v0, %b0 acc(%g0) mb(1)
        : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %h0 : !ratrain.grad<0, partial>
    %t0 = ratrain.sync all_reduce %ready0 hierarchy flat
        : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced1 = ratrain.wait %t1 : !ratrain.async<!ratrain.grad<1, synced>>
    %nm1, %no1 = ratrain.update adamw %synced1, %m1, %o1
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %pv1 = ratrain.view_prefetch %nm1 : !ratrain.master<1>
    %synced0 = ratrain.wait %t0 : !ratrain.async<!ratrain.grad<0, synced>>
    %nm0, %no0 = ratrain.update adamw %synced0, %m0, %o0
        : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %pv0 = ratrain.view_prefetch %nm0 : !ratrain.master<0>
    %nv0 = ratrain.wait %pv0 : !ratrain.async<!ratrain.view<0>>
    %ag0 = ratrain.sync all_gather %nv0 hierarchy flat
        : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
    %nv1 = ratrain.wait %pv1 : !ratrain.async<!ratrain.view<1>>
    %ag1 = ratrain.sync all_gather %nv1 hierarchy flat
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %gv0 = ratrain.wait %ag0 : !ratrain.async<!ratrain.view<0>>
    %gv1 = ratrain.wait %ag1 : !ratrain.async<!ratrain.view<1>>
    // CHECK: ratrain.yield
    ratrain.yield %gv0, %nm0, %no0, %gv1, %nm1, %no1
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  ratrain.stage 1 layers [2, 3) states(%v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.recv activation mb(0) from(0)
    %a2 = ratrain.forward %v2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2 = ratrain.backward %v2, %a2 mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    ratrain.send gradient mb(0) to(0)
    ratrain.recv activation mb(1) from(0)
    %b2 = ratrain.forward %v2 mb(1) : !ratrain.view<2> -> !ratrain.act<2, full>
    %h2 = ratrain.backward %v2, %b2 acc(%g2) mb(1) : !ratrain.view<2>, !ratrain.act<2, full>
    ratrain.send gradient mb(1) to(0)
    %ready2 = ratrain.grad_ready %h2 : !ratrain.grad<2, partial>
    %t2 = ratrain.sync all_reduce %ready2 hierarchy flat
        : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %t2 : !ratrain.async<!ratrain.grad<2, synced>>
    %nm2, %no2 = ratrain.update adamw %synced2, %m2, %o2
        : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %pv2 = ratrain.view_prefetch %nm2 : !ratrain.master<2>
    %nv2 = ratrain.wait %pv2 : !ratrain.async<!ratrain.view<2>>
    %ag2 = ratrain.sync all_gather %nv2 hierarchy flat
        : !ratrain.view<2> -> !ratrain.async<!ratrain.view<2>>
    %gv2 = ratrain.wait %ag2 : !ratrain.async<!ratrain.view<2>>
    // CHECK: ratrain.yield
    ratrain.yield %gv2, %nm2, %no2
        : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
