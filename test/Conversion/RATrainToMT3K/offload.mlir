// Offloaded optimizer states under --ratrain-lower-to-mt3k (docs/lowering.md,
// "Offloaded optimizer states and masters"): with the plan's `offload =
// optimizer`, a layer's Adam m, v live in the host tier between steps and
// in a DDR window (the reload's assigned buffer) during the update.
//   whole: the prologue initializes m, v in the window and offloads them
//     (`mt3k.prologue`); `ratrain.reload` -> `mt3k.reload` of the window,
//     its `wait` waits it, AdamW runs on views of the window, and
//     `ratrain.offload` -> `mt3k.offload` writes it back (waited at the end).
//   chunk-streamed: a window smaller than the state (262144 of 328704
//     bytes) streams it through its two halves in chunks of c = 131072 / 8 =
//     16384 elements (m of chunk [s, s + c) at byte 0 of half k % 2, v at
//     4 c), one tier key per piece (`model.layers.0.adam@<4 s>` for m,
//     `@<4 n + 4 s>` for v, n = 41088); the reload of chunk k + 1 overlaps
//     AdamW on chunk k, and a half is reloaded only after its write-back.
//
// Input: a scheduled, buffer-assigned 1-stage pipeline of a tiny fp32 LLaMA
// (hidden 64, 2 heads, ffn 128, vocab 128, seq 8; embedding, one decoder
// layer of 41088 parameters, head; 1 micro-batch) with offload = optimizer,
// reduced by hand from --ratrain-schedule-pipeline output; the second case
// is the same schedule with the decoder's reload window (buffer id 13)
// shrunk by hand from 328704 to 262144 bytes. The checks follow the
// decoder layer (HF prefix model.layers.0).

// RUN: ratrain-opt %s -split-input-file | ratrain-opt -split-input-file --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s -split-input-file --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml" | FileCheck %s

// The whole state streams through a window of its size.
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
    // The decoder's Adam state comes back into its window (buffer 13) ...
    %reload1 = ratrain.reload %opt1 {ratrain.buffers = array<i64: 13, 238336, 328704>} : !ratrain.opt_state<1>
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
    %opt1r = ratrain.wait %reload1 {ratrain.buffers = array<i64: 13, 238336, 328704>} : !ratrain.async<!ratrain.opt_state<1>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1r {ratrain.buffers = array<i64: 4, 0, 0, 13, 238336, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 32768, 164352>} : !ratrain.master<1>
    // The write-back to the host tier, waited before the yield.
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

// CHECK-LABEL: module attributes
// Prologue: m, v initialized in the window (the reload's buffer, 238336),
// each with its tier key and byte offset in the key, then put in the tier.
// CHECK: %[[WIN:[0-9]+]] = mt3k.buffer "model.layers.0.adam" at 238336 : !mt3k.buffer<ddr, 328704xi8>
// CHECK: mt3k.init_param zeros %{{[0-9]+}} "model.layers.0.input_layernorm.weight.exp_avg" {{.*}}"model.layers.0.adam"{{.*}}offload_offset = 0 : i64
// CHECK: mt3k.init_param zeros %{{[0-9]+}} "model.layers.0.input_layernorm.weight.exp_avg_sq" {{.*}}"model.layers.0.adam"{{.*}}offload_offset = 164352 : i64
// CHECK: %[[PRO:[0-9]+]] = mt3k.offload %[[WIN]] to host "model.layers.0.adam" {mt3k.prologue}
// CHECK-NEXT: mt3k.wait %[[PRO]] {mt3k.prologue}
// AdamW's m and v are views of the window.
// CHECK: %[[M:[0-9]+]] = mt3k.view %[[WIN]][0] : !mt3k.buffer<ddr, 328704xi8> to !mt3k.buffer<ddr, 41088xf32>
// CHECK-NEXT: %[[V:[0-9]+]] = mt3k.view %[[WIN]][164352] : !mt3k.buffer<ddr, 328704xi8> to !mt3k.buffer<ddr, 41088xf32>
// The step: reload (issued before the backward, as scheduled), its wait
// before AdamW, the write-back right after it, waited at the end.
// CHECK: %[[RELOAD:[0-9]+]] = mt3k.reload %[[WIN]] from host "model.layers.0.adam" : !mt3k.buffer<ddr, 328704xi8>
// CHECK: mt3k.wait %[[RELOAD]]{{$}}
// CHECK-NEXT: mt3k.adamw %{{[0-9]+}}, %{{[0-9]+}}, %[[M]], %[[V]] -> %{{[0-9]+}} lr
// CHECK-NEXT: %[[BACK:[0-9]+]] = mt3k.offload %[[WIN]] to host "model.layers.0.adam" : !mt3k.buffer<ddr, 328704xi8>
// CHECK: mt3k.wait %[[BACK]]{{$}}

// -----

// The decoder's window cut to 262144 bytes: its state streams in 3 chunks
// (16384, 16384 and 8320 elements).
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
    // ... into a window smaller than the state (buffer 13, cut by hand).
    %reload1 = ratrain.reload %opt1 {ratrain.buffers = array<i64: 13, 238336, 262144>} : !ratrain.opt_state<1>
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
    %opt1r = ratrain.wait %reload1 {ratrain.buffers = array<i64: 13, 238336, 262144>} : !ratrain.async<!ratrain.opt_state<1>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1r {ratrain.buffers = array<i64: 4, 0, 0, 13, 238336, 262144>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
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

// CHECK-LABEL: module attributes
// CHECK: %[[WIN:[0-9]+]] = mt3k.buffer "model.layers.0.adam" at 238336 : !mt3k.buffer<ddr, 262144xi8>
// Chunk 0 in half 0: m at byte 0, v at 4 c = 65536.
// CHECK-NEXT: %[[M0:[0-9]+]] = mt3k.view %[[WIN]][0] : !mt3k.buffer<ddr, 262144xi8> to !mt3k.buffer<ddr, 16384xf32>
// CHECK: %[[V0:[0-9]+]] = mt3k.view %[[WIN]][65536] : !mt3k.buffer<ddr, 262144xi8> to !mt3k.buffer<ddr, 16384xf32>
// CHECK: %[[M0B:[0-9]+]] = mt3k.view %[[M0]][0] : !mt3k.buffer<ddr, 16384xf32> to !mt3k.buffer<ddr, 65536xi8>
// CHECK-NEXT: %[[V0B:[0-9]+]] = mt3k.view %[[V0]][0] : !mt3k.buffer<ddr, 16384xf32> to !mt3k.buffer<ddr, 65536xi8>
// The prologue initializes and offloads chunk by chunk through half 0; a
// tensor spanning two chunks is initialized in pieces (element_offset).
// CHECK-NEXT: %[[P0:[0-9]+]] = mt3k.offload %[[M0B]] to host "model.layers.0.adam@0" {mt3k.prologue}
// CHECK-NEXT: mt3k.wait %[[P0]] {mt3k.prologue}
// CHECK-NEXT: %[[P1:[0-9]+]] = mt3k.offload %[[V0B]] to host "model.layers.0.adam@164352" {mt3k.prologue}
// CHECK-NEXT: mt3k.wait %[[P1]] {mt3k.prologue}
// CHECK-NEXT: mt3k.init_param zeros %{{[0-9]+}} "model.layers.0.self_attn.o_proj.weight.exp_avg" element_offset 4032
// CHECK: mt3k.offload %[[M0B]] to host "model.layers.0.adam@65536" {mt3k.prologue}
// CHECK: mt3k.offload %[[V0B]] to host "model.layers.0.adam@229888" {mt3k.prologue}
// The last chunk (8320 elements) in half 0.
// CHECK: %[[M2:[0-9]+]] = mt3k.view %[[WIN]][0] : !mt3k.buffer<ddr, 262144xi8> to !mt3k.buffer<ddr, 8320xf32>
// CHECK: %[[V2:[0-9]+]] = mt3k.view %[[WIN]][65536] : !mt3k.buffer<ddr, 262144xi8> to !mt3k.buffer<ddr, 8320xf32>
// CHECK: %[[M2B:[0-9]+]] = mt3k.view %[[M2]][0] : !mt3k.buffer<ddr, 8320xf32> to !mt3k.buffer<ddr, 33280xi8>
// CHECK-NEXT: %[[V2B:[0-9]+]] = mt3k.view %[[V2]][0] : !mt3k.buffer<ddr, 8320xf32> to !mt3k.buffer<ddr, 33280xi8>
// CHECK-NEXT: mt3k.offload %[[M2B]] to host "model.layers.0.adam@131072" {mt3k.prologue}
// CHECK-NEXT: mt3k.wait
// CHECK-NEXT: mt3k.offload %[[V2B]] to host "model.layers.0.adam@295424" {mt3k.prologue}
// Chunk 1 in half 1 (byte 131072 of the window).
// CHECK: %[[M1:[0-9]+]] = mt3k.view %[[WIN]][131072] : !mt3k.buffer<ddr, 262144xi8> to !mt3k.buffer<ddr, 16384xf32>
// CHECK-NEXT: %[[M1B:[0-9]+]] = mt3k.view %[[M1]][0] : !mt3k.buffer<ddr, 16384xf32> to !mt3k.buffer<ddr, 65536xi8>
// CHECK-NEXT: %[[V1:[0-9]+]] = mt3k.view %[[WIN]][196608] : !mt3k.buffer<ddr, 262144xi8> to !mt3k.buffer<ddr, 16384xf32>
// CHECK-NEXT: %[[V1B:[0-9]+]] = mt3k.view %[[V1]][0] : !mt3k.buffer<ddr, 16384xf32> to !mt3k.buffer<ddr, 65536xi8>
// The step: `ratrain.reload` reloads chunk 0 into half 0; its wait waits it.
// CHECK: %[[R0M:[0-9]+]] = mt3k.reload %[[M0B]] from host "model.layers.0.adam@0"
// CHECK-NEXT: %[[R0V:[0-9]+]] = mt3k.reload %[[V0B]] from host "model.layers.0.adam@164352"
// CHECK: mt3k.wait %[[R0M]], %[[R0V]]{{$}}
// Chunk 1 is reloaded into half 1 while AdamW runs on chunk 0, which is
// then written back.
// CHECK-NEXT: %[[R1M:[0-9]+]] = mt3k.reload %[[M1B]] from host "model.layers.0.adam@65536"
// CHECK-NEXT: %[[R1V:[0-9]+]] = mt3k.reload %[[V1B]] from host "model.layers.0.adam@229888"
// CHECK-NEXT: mt3k.adamw %{{[0-9]+}}, %{{[0-9]+}}, %[[M0]], %[[V0]] -> %{{[0-9]+}} lr {{.*}} : !mt3k.buffer<ddr, 16384xf32>
// CHECK-NEXT: %[[B0M:[0-9]+]] = mt3k.offload %[[M0B]] to host "model.layers.0.adam@0"
// CHECK-NEXT: %[[B0V:[0-9]+]] = mt3k.offload %[[V0B]] to host "model.layers.0.adam@164352"
// Chunk 2 goes into half 0 once chunk 0's pieces are written back.
// CHECK-NEXT: mt3k.wait %[[B0M]]{{$}}
// CHECK-NEXT: %[[R2M:[0-9]+]] = mt3k.reload %[[M2B]] from host "model.layers.0.adam@131072"
// CHECK-NEXT: mt3k.wait %[[B0V]]{{$}}
// CHECK-NEXT: %[[R2V:[0-9]+]] = mt3k.reload %[[V2B]] from host "model.layers.0.adam@295424"
// CHECK-NEXT: mt3k.wait %[[R1M]], %[[R1V]]{{$}}
// CHECK-NEXT: mt3k.adamw %{{[0-9]+}}, %{{[0-9]+}}, %[[M1]], %[[V1]] -> %{{[0-9]+}} lr {{.*}} : !mt3k.buffer<ddr, 16384xf32>
// CHECK-NEXT: %[[B1M:[0-9]+]] = mt3k.offload %[[M1B]] to host "model.layers.0.adam@65536"
// CHECK-NEXT: %[[B1V:[0-9]+]] = mt3k.offload %[[V1B]] to host "model.layers.0.adam@229888"
// CHECK-NEXT: mt3k.wait %[[R2M]], %[[R2V]]{{$}}
// CHECK-NEXT: mt3k.adamw %{{[0-9]+}}, %{{[0-9]+}}, %[[M2]], %[[V2]] -> %{{[0-9]+}} lr {{.*}} : !mt3k.buffer<ddr, 8320xf32>
// CHECK-NEXT: %[[B2M:[0-9]+]] = mt3k.offload %[[M2B]] to host "model.layers.0.adam@131072"
// CHECK-NEXT: %[[B2V:[0-9]+]] = mt3k.offload %[[V2B]] to host "model.layers.0.adam@295424"
// `ratrain.offload` adds nothing; its wait waits the write-backs in flight.
// CHECK: mt3k.wait %[[B1M]], %[[B1V]], %[[B2M]], %[[B2V]]{{$}}
