// The wire type of a quantized ratrain.sync (ZeRO++ qgZ / qwZ) goes onto
// the mt3k collective it lowers to; syncs without one stay native. Input:
// the ZeRO-2 case of grad-sync-update.mlir with layer 1's gradient
// reduce-scatter quantized to int4 and its view all-gather to int8.
// RUN: ratrain-opt %s -split-input-file --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml outline-layers=false" | FileCheck %s
// Without ZeRO the gradient sync is an all-reduce, which cannot be quantized.
// RUN: sed -e 's/zero = 2/zero = 0/g; s/, weight_wire = int8//g' %s | not ratrain-opt --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml outline-layers=false" 2>&1 | FileCheck %s --check-prefix=ZERO0
// The plan's sharding policy names the weight wire: with the default one the
// view shard is the rank's block of the view, which a quantized gather
// would decode into (over an FP32 model's master shard).
// RUN: sed -e 's/, weight_wire = int8//g' %s | not ratrain-opt --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml outline-layers=false" 2>&1 | FileCheck %s --check-prefix=DEFAULT

ratrain.model @tiny family("llama") dtype(bf16) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 2, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000, weight_wire = int8> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 2, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000, weight_wire = int8> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 640160 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 16384, 1, 16384, 16384, 2, 32768, 32768,
                                                   3, 65536, 82176, 4, 147712, 82176, 5, 229888, 164352,
                                                   6, 394240, 16512, 7, 410752, 16512, 8, 427264, 33024>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 20, 0, 0>,
                                             sync_staging = array<i64: 19, 0, 0>,
                                             workspace = array<i64: 18, 517824, 6144>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 640128, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 606144, 17472>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 523968, 8224>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 623616, 16512>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 623616, 16512>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync reduce_scatter %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 623616, 16512>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 523968, 82176>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 13, 523968, 82176>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync reduce_scatter %ready1 hierarchy flat wire int4 {ratrain.buffers = array<i64: 13, 523968, 82176>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 14, 460288, 8256>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 410752, 16512, 8, 427264, 33024>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.master<2>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 15, 606144, 16384>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 15, 606144, 16384>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync reduce_scatter %ready0 hierarchy flat {ratrain.buffers = array<i64: 15, 606144, 16384>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    // ZeRO-2: the reduce-scatter reads the full gradient (buffer 13) and
    // its wait starts this rank's shard, a buffer of its own (16).
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 16, 468544, 41088>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 147712, 82176, 5, 229888, 164352>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.master<1>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 17, 509632, 8192>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 16384, 16384, 2, 32768, 32768>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %gather0 = ratrain.sync all_gather %inplace0 hierarchy flat {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.async<!ratrain.view<1>>
    %gather1 = ratrain.sync all_gather %inplace1 hierarchy flat wire int8 {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.async<!ratrain.view<2>>
    %gather2 = ratrain.sync all_gather %inplace2 hierarchy flat {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.view<2> -> !ratrain.async<!ratrain.view<2>>
    %inplace0_2 = ratrain.wait %gather0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %inplace1_2 = ratrain.wait %gather1 {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.async<!ratrain.view<1>>
    %inplace2_2 = ratrain.wait %gather2 {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0_2, %master0n, %opt0n, %inplace1_2, %master1n, %opt1n, %inplace2_2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: mt3k.job
// CHECK: mt3k.reduce_scatter avg %{{.*}} on @dp ring : !mt3k.buffer<ddr, 8256xbf16> -> !mt3k.buffer<ddr, 4128xbf16>
// CHECK: mt3k.reduce_scatter avg %{{.*}} on @dp ring wire int4 : !mt3k.buffer<ddr, 41088xbf16> -> !mt3k.buffer<ddr, 20544xbf16>
// CHECK: mt3k.reduce_scatter avg %{{.*}} on @dp ring : !mt3k.buffer<ddr, 8192xbf16>
// CHECK: mt3k.all_gather %{{.*}} on @dp ring : !mt3k.buffer<ddr, 4096xbf16>
// CHECK: mt3k.all_gather %{{.*}} on @dp ring wire int8 : !mt3k.buffer<ddr, 20544xbf16> -> !mt3k.buffer<ddr, 41088xbf16>
// CHECK: mt3k.all_gather %{{.*}} on @dp ring : !mt3k.buffer<ddr, 4128xbf16>

// ZERO0: error: 'ratrain.sync' op a quantized reduce_scatter needs sharded gradients (ZeRO >= 1); without ZeRO the gradient sync is an all-reduce
// DEFAULT: error: 'ratrain.sync' op gathers the view on a quantized wire, but the plan's sharding policy is the default (no weight_wire, no weight_partition), under which the view shard is the rank's block of the view itself; give the plan the same policy
