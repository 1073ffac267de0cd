// RUN: ratrain-opt %s | ratrain-opt | FileCheck %s
// RUN: ratrain-opt %s --mlir-print-op-generic | ratrain-opt | FileCheck %s

// Every ratrain op, in a 2-stage pipeline over a 4-layer model (embedding,
// two decoder layers, head) with 2 micro-batches.

// CHECK-LABEL: ratrain.model @tiny family("llama") dtype(f32) seq_len(128) max_positions(256) positions rope
// CHECK-SAME: plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1, micro_batches = 2, zero = 1, stage_layers = [2, 2], recompute = [full, none], step_us = 1500, peak_bytes = 1000000>
// CHECK-NEXT: ratrain.layer 0 embedding hidden(256) vocab(256)
// CHECK-NEXT: ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
// CHECK-NEXT: ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688) qkv_bias
// CHECK-NEXT: ratrain.layer 3 head hidden(256) vocab(256)
ratrain.model @tiny family("llama") dtype(f32) seq_len(128) max_positions(256)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 1, stage_layers = [2, 2],
                       recompute = [full, none], step_us = 1500,
                       peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(256) vocab(256)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688) qkv_bias
  ratrain.layer 3 head hidden(256) vocab(256)
}

// CHECK-LABEL: ratrain.pipeline @step for @tiny plan #ratrain.plan<{{.*}}> policy ratrain
ratrain.pipeline @step for @tiny
    plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 1, stage_layers = [2, 2],
                       recompute = [full, none], step_us = 1500,
                       peak_bytes = 1000000> policy ratrain {
  // CHECK: ratrain.stage 0 layers [0, 2) states(%[[V0:.*]]: !ratrain.view<0>, %[[M0:.*]]: !ratrain.master<0>, %[[O0:.*]]: !ratrain.opt_state<0>, %[[V1:.*]]: !ratrain.view<1>, %[[M1:.*]]: !ratrain.master<1>, %[[O1:.*]]: !ratrain.opt_state<1>)
  ratrain.stage 0 layers [0, 2) states(%v0: !ratrain.view<0>,
      %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>,
      %v1: !ratrain.view<1>, %m1: !ratrain.master<1>,
      %o1: !ratrain.opt_state<1>) {
    // CHECK: %[[A0:.*]] = ratrain.forward %[[V0]] mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
    %a0 = ratrain.forward %v0 mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
    // CHECK: %[[A1:.*]] = ratrain.forward %[[V1]] mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
    %a1 = ratrain.forward %v1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
    // CHECK: ratrain.send activation mb(0) to(1)
    ratrain.send activation mb(0) to(1)
    %b0 = ratrain.forward %v0 mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
    %b1 = ratrain.forward %v1 mb(1) : !ratrain.view<1> -> !ratrain.act<1, input>
    ratrain.send activation mb(1) to(1)
    // CHECK: ratrain.recv gradient mb(0) from(1)
    ratrain.recv gradient mb(0) from(1)
    // CHECK: %[[R1:.*]] = ratrain.recompute %[[V1]], %[[A1]] mb(0) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    %r1 = ratrain.recompute %v1, %a1 mb(0)
        : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
    // CHECK: %[[G1:.*]] = ratrain.backward %[[V1]], %[[R1]] mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %g1 = ratrain.backward %v1, %r1 mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
    %g0 = ratrain.backward %v0, %a0 mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
    ratrain.recv gradient mb(1) from(1)
    %s1 = ratrain.recompute %v1, %b1 mb(1)
        : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, selective>
    // CHECK: %[[H1:.*]] = ratrain.backward %[[V1]], %{{.*}} acc(%[[G1]]) mb(1) : !ratrain.view<1>, !ratrain.act<1, selective>
    %h1 = ratrain.backward %v1, %s1 acc(%g1) mb(1)
        : !ratrain.view<1>, !ratrain.act<1, selective>
    // CHECK: %[[READY1:.*]] = ratrain.grad_ready %[[H1]] : !ratrain.grad<1, partial>
    %ready1 = ratrain.grad_ready %h1 : !ratrain.grad<1, partial>
    // CHECK: %[[T1:.*]] = ratrain.sync reduce_scatter %[[READY1]] hierarchy hierarchical : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %t1 = ratrain.sync reduce_scatter %ready1 hierarchy hierarchical
        : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %h0 = ratrain.backward %v0, %b0 acc(%g0) mb(1)
        : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %h0 : !ratrain.grad<0, partial>
    %t0 = ratrain.sync all_reduce %ready0 hierarchy flat
        : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    // CHECK: %[[SYNCED1:.*]] = ratrain.wait %[[T1]] : !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %t1 : !ratrain.async<!ratrain.grad<1, synced>>
    // CHECK: %[[NM1:.*]], %[[NO1:.*]] = ratrain.update adamw %[[SYNCED1]], %[[M1]], %[[O1]] : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %nm1, %no1 = ratrain.update adamw %synced1, %m1, %o1
        : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    // CHECK: %[[PV1:.*]] = ratrain.view_prefetch %[[NM1]] : !ratrain.master<1>
    %pv1 = ratrain.view_prefetch %nm1 : !ratrain.master<1>
    %nv1 = ratrain.wait %pv1 : !ratrain.async<!ratrain.view<1>>
    // CHECK: ratrain.sync all_gather %{{.*}} hierarchy flat : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %ag1 = ratrain.sync all_gather %nv1 hierarchy flat
        : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %gv1 = ratrain.wait %ag1 : !ratrain.async<!ratrain.view<1>>
    %synced0 = ratrain.wait %t0 : !ratrain.async<!ratrain.grad<0, synced>>
    %nm0, %no0 = ratrain.update sgd %synced0, %m0, %o0
        : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    // CHECK: %[[OFF:.*]] = ratrain.offload %{{.*}} to storage : !ratrain.opt_state<0>
    %off = ratrain.offload %no0 to storage : !ratrain.opt_state<0>
    %stored = ratrain.wait %off
        : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<0>>>
    // CHECK: ratrain.reload %{{.*}} : !ratrain.offloaded<!ratrain.opt_state<0>>
    %back = ratrain.reload %stored : !ratrain.offloaded<!ratrain.opt_state<0>>
    %no0r = ratrain.wait %back : !ratrain.async<!ratrain.opt_state<0>>
    %pv0 = ratrain.view_prefetch %nm0 : !ratrain.master<0>
    %nv0 = ratrain.wait %pv0 : !ratrain.async<!ratrain.view<0>>
    // CHECK: ratrain.yield %{{.*}} : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
    ratrain.yield %nv0, %nm0, %no0r, %gv1, %nm1, %no1
        : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>,
          !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
  }
  // CHECK: ratrain.stage 1 layers [2, 4)
  ratrain.stage 1 layers [2, 4) states(%v2: !ratrain.view<2>,
      %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>,
      %v3: !ratrain.view<3>, %m3: !ratrain.master<3>,
      %o3: !ratrain.opt_state<3>) {
    // CHECK: ratrain.recv activation mb(0) from(0)
    ratrain.recv activation mb(0) from(0)
    %a2 = ratrain.forward %v2 mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
    %a3 = ratrain.forward %v3 mb(0) : !ratrain.view<3> -> !ratrain.act<3, full>
    %g3 = ratrain.backward %v3, %a3 mb(0) : !ratrain.view<3>, !ratrain.act<3, full>
    %g2 = ratrain.backward %v2, %a2 mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
    // CHECK: ratrain.send gradient mb(0) to(0)
    ratrain.send gradient mb(0) to(0)
    ratrain.yield %v2, %m2, %o2, %v3, %m3, %o3
        : !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>,
          !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
  }
}
