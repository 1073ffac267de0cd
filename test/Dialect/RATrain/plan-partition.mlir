// RUN: ratrain-opt %s | ratrain-opt | FileCheck %s

// The sharding policy of a plan (docs/schedule.md, "Partitioning"): printed
// only when not at its defaults, and the partition syncs that run on part of
// the data-parallel group.

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// CHECK: ratrain.pipeline @flat for @m plan #ratrain.plan<{{.*}}peak_bytes = 0>
ratrain.pipeline @flat for @m plan #ratrain.plan<clusters = 8, pp = 1, dp = 8, micro_batch_size = 1, micro_batches = 1, zero = 3, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, weight_partition = -1> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
// CHECK: ratrain.pipeline @three for @m plan #ratrain.plan<{{.*}}peak_bytes = 0, weight_partition = 0, grad_partition = 1, weight_wire = int8, grad_wire = int4>
ratrain.pipeline @three for @m plan #ratrain.plan<clusters = 8, pp = 1, dp = 8, micro_batch_size = 1, micro_batches = 1, zero = 3, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, weight_partition = 0, grad_partition = 1, weight_wire = int8, grad_wire = int4> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    // CHECK: ratrain.sync all_gather %{{.+}} hierarchy flat across level 0 members 4 wire int8 : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %s = ratrain.sync all_gather %v1 hierarchy flat across level 0 members 4 wire int8 : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %sv = ratrain.wait %s : !ratrain.async<!ratrain.view<1>>
    // CHECK: ratrain.sync all_gather %{{.+}} hierarchy flat inside level 0 members 2 wire int8
    %f = ratrain.sync all_gather %sv hierarchy flat inside level 0 members 2 wire int8 : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %fv = ratrain.wait %f : !ratrain.async<!ratrain.view<1>>
    %a = ratrain.forward %fv mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
    %g = ratrain.backward %fv, %a mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %r = ratrain.grad_ready %g : !ratrain.grad<1, partial>
    // CHECK: ratrain.sync reduce_scatter %{{.+}} hierarchy hierarchical inside level 1 members 4 wire int4 : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, ready>>
    %p = ratrain.sync reduce_scatter %r hierarchy hierarchical inside level 1 members 4 wire int4 : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, ready>>
    %pv = ratrain.wait %p : !ratrain.async<!ratrain.grad<1, ready>>
    // CHECK: ratrain.sync reduce_scatter %{{.+}} hierarchy flat across level 1 members 2 wire int4 : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %q = ratrain.sync reduce_scatter %pv hierarchy flat across level 1 members 2 wire int4 : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %qv = ratrain.wait %q : !ratrain.async<!ratrain.grad<1, synced>>
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
// CHECK: ratrain.pipeline @grads for @m plan #ratrain.plan<{{.*}}zero = 2, {{.*}}peak_bytes = 0, grad_partition = 2>
ratrain.pipeline @grads for @m plan #ratrain.plan<clusters = 8, pp = 1, dp = 8, micro_batch_size = 1, micro_batches = 1, zero = 2, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, grad_partition = 2> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
