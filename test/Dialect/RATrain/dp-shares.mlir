// RUN: ratrain-opt %s | ratrain-opt | FileCheck %s

// Uneven data-parallel shares and the rank order of a plan round-trip
// (docs/schedule.md, "Uneven data-parallel shares"); the defaults are not
// printed.

ratrain.model @m family("llama") dtype(f32) seq_len(16) max_positions(32)
    positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

// CHECK: ratrain.pipeline @uneven for @m plan #ratrain.plan<{{.*}}micro_batches = 3, {{.*}}peak_bytes = 0, dp_shares = [3, 1], rank_order = replica_major>
ratrain.pipeline @uneven for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 2, micro_batches = 3, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, dp_shares = [3, 1], rank_order = replica_major> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK: ratrain.pipeline @even for @m plan #ratrain.plan<{{.*}}peak_bytes = 0>
ratrain.pipeline @even for @m plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 2, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 0, peak_bytes = 0, rank_order = stage_major> {
  ratrain.stage 0 layers [0, 3) states(%v0: !ratrain.view<0>, %m0: !ratrain.master<0>, %o0: !ratrain.opt_state<0>, %v1: !ratrain.view<1>, %m1: !ratrain.master<1>, %o1: !ratrain.opt_state<1>, %v2: !ratrain.view<2>, %m2: !ratrain.master<2>, %o2: !ratrain.opt_state<2>) {
    ratrain.yield %v0, %m0, %o0, %v1, %m1, %o1, %v2, %m2, %o2 : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
