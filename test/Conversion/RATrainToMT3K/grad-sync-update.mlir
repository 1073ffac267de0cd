// A layer's gradient lifecycle under --ratrain-lower-to-mt3k (docs/lowering.md,
// "Op by op" and "ZeRO-1 and ZeRO-2"): `grad_ready` (nothing) -> `sync`
// (a collective on the @dp group, started asynchronously) -> `wait` (waits
// its token) -> `update adamw` (AdamW on the fp32 master and Adam state,
// writing the refreshed bf16 view into a GSM staging slot) -> `view_prefetch`
// (the DMA from GSM to the view; its `wait` waits the DMA).
//   ZeRO-0: all_reduce avg of the gradient, in place.
//   ZeRO-1: reduce_scatter avg into the lowering's zero.grad_shard, AdamW
//           on this rank's shard, the DMA into this rank's block of the
//           view (mt3k.group_slot on @dp), and the `sync all_gather` of the
//           view gathers the other shards around it, in place. The
//           reduce-scatter leaves its last reduction to the update
//           (`leave_own`): the shard holds the other member's contribution
//           and AdamW adds this rank's (its block of the full gradient,
//           another group_slot) and halves (`plus ... over 2`);
//           average-in-update=false keeps the reduce-scatter's own average.
//   ZeRO-2: as ZeRO-1, but the gradient shard is the buffer assignment gave
//           the reduce-scatter's `wait` (<prefix>.grad_shard).
//   hierarchical: a sync `hierarchy hierarchical` adds the @node group and
//           runs the collective with the hierarchical algorithm.
//   small GSM: AdamW runs in chunks of at most one staging slot of view,
//           alternating the two slots.
//
// Inputs: scheduled, buffer-assigned 1-stage pipelines of a tiny bf16 LLaMA
// (hidden 64, 2 heads, ffn 128, vocab 128, seq 8; embedding, one decoder
// layer of 41088 parameters, head) over dp = 2 (dp = 4 for the hierarchical
// case, which spans the 2 nodes of tiny.yaml), one micro-batch, reduced by
// hand from --ratrain-schedule-pipeline output. The checks follow the
// decoder layer (model layer 1, HF prefix model.layers.0).

// (outline-layers=false: the kernel sequences unrolled at their use; the
// outlined form, the default, is checked in RATrainToMT3K/outline-layers.mlir.)
// RUN: ratrain-opt %s -split-input-file | ratrain-opt -split-input-file --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s -split-input-file --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml outline-layers=false" | FileCheck %s
// RUN: ratrain-opt %s -split-input-file --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml outline-layers=false average-in-update=false" | FileCheck %s --check-prefix=AVERAGED
// With 64 KB of GSM (two 32 KB slots) an update runs in chunks of at most
// one slot of view (checked on the ZeRO-0 case below).
// RUN: sed 's/^  gsm_bytes: 1048576$/  gsm_bytes: 65536/' %S/Inputs/tiny.yaml > %t.small-gsm.yaml
// RUN: ratrain-opt %s -split-input-file --ratrain-lower-to-mt3k="trace-spans=false machine=%t.small-gsm.yaml outline-layers=false" | FileCheck %s --check-prefix=CHUNKED
// Where the DMA runs on the cores (dma_on_cores: a CPU host, whose rt.dma is
// a memcpy thread) AdamW writes the refreshed view in place, in one call
// however small GSM is: no staging slots, no DMA (checked on ZeRO-1 below).
// RUN: sed 's/^  dma_channels: 4$/  dma_channels: 4\n  dma_on_cores: true/' %t.small-gsm.yaml > %t.on-cores.yaml
// RUN: ratrain-opt %s -split-input-file --ratrain-lower-to-mt3k="trace-spans=false machine=%t.on-cores.yaml outline-layers=false" | FileCheck %s --check-prefix=ONCORES

// ZeRO-0.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 927840 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 16384, 1, 16384, 32768, 2, 49152, 65536,
                                                   3, 114688, 82176, 4, 196864, 164352, 5, 361216, 328704,
                                                   6, 689920, 16512, 7, 706432, 33024, 8, 739456, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 805504, 6144>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 927808, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 893824, 17472>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 811648, 8224>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 706432, 33024, 8, 739456, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 689920, 16512>} : !ratrain.master<2>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 196864, 164352, 5, 361216, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 114688, 82176>} : !ratrain.master<1>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 16384, 32768, 2, 49152, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 114688, 82176>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 689920, 16512>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: mt3k.job = #mt3k.job<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0,
// CHECK: mt3k.group @dp data_parallel size 2
// Two GSM staging slots of half the GSM each.
// CHECK: %[[GSM0:[0-9]+]] = mt3k.buffer "gsm.staging.0" at 0 : !mt3k.buffer<gsm, 524288xi8>
// CHECK-NEXT: %[[GSM1:[0-9]+]] = mt3k.buffer "gsm.staging.1" at 524288 : !mt3k.buffer<gsm, 524288xi8>
// The bf16 view, the Adam state and the fp32 master at their assigned offsets.
// CHECK: %[[LV:[0-9]+]] = mt3k.buffer "model.layers.0.view" at 114688 : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[LA:[0-9]+]] = mt3k.buffer "model.layers.0.adam" at 361216 : !mt3k.buffer<ddr, 328704xi8>
// CHECK: %[[LM:[0-9]+]] = mt3k.buffer "model.layers.0.master" at 196864 : !mt3k.buffer<ddr, 164352xi8>
// The gradient at the backward's offset, flat for the collective.
// CHECK: %[[GB:[0-9]+]] = mt3k.buffer "model.layers.0.grad" at 811648 : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[G:[0-9]+]] = mt3k.view %[[GB]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// AdamW's operands: master, m at byte 0 and v at byte 4 n of the Adam
// buffer, the view, and its staging copy in slot 1 (the head took slot 0).
// CHECK: %[[P:[0-9]+]] = mt3k.view %[[LM]][0] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 41088xf32>
// CHECK-NEXT: %[[M:[0-9]+]] = mt3k.view %[[LA]][0] : !mt3k.buffer<ddr, 328704xi8> to !mt3k.buffer<ddr, 41088xf32>
// CHECK-NEXT: %[[V:[0-9]+]] = mt3k.view %[[LA]][164352] : !mt3k.buffer<ddr, 328704xi8> to !mt3k.buffer<ddr, 41088xf32>
// CHECK-NEXT: %[[VIEW:[0-9]+]] = mt3k.view %[[LV]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// CHECK-NEXT: %[[STAGED:[0-9]+]] = mt3k.view %[[GSM1]][0] : !mt3k.buffer<gsm, 524288xi8> to !mt3k.buffer<gsm, 41088xbf16>
// sync all_reduce: in place, averaged over dp, on the machine's algorithm.
// CHECK: %[[SYNC:[0-9]+]] = mt3k.all_reduce avg %[[G]] -> %[[G]] on @dp ring
// The head's update stages its view through slot 0.
// CHECK: %[[HEADDMA:[0-9]+]] = mt3k.dma %{{[0-9]+}} -> %{{[0-9]+}} : !mt3k.buffer<gsm, 8256xbf16> -> !mt3k.buffer<ddr, 8256xbf16>
// wait, update, view_prefetch. The decoder layer's two RMSNorm weights
// (elements [0, 64) and [16448, 16512)) take no weight decay.
// CHECK: mt3k.wait %[[SYNC]]{{$}}
// CHECK-NEXT: mt3k.adamw %[[G]], %[[P]], %[[M]], %[[V]] -> %[[STAGED]] lr 3.000000e-04 beta1 9.000000e-01 beta2 0.94999999999999996 eps 1.000000e-08 weight_decay 1.000000e-01 no_decay [0, 64, 16448, 16512] first_element 0 :
// CHECK-NEXT: %[[DMA:[0-9]+]] = mt3k.dma %[[STAGED]] -> %[[VIEW]]
// The embedding's update reuses slot 0: it waits for the head's DMA first.
// CHECK-NEXT: mt3k.wait %{{[0-9]+}}{{$}}
// CHECK-NEXT: mt3k.wait %[[HEADDMA]]{{$}}
// CHECK-NEXT: mt3k.adamw {{.*}} : !mt3k.buffer<ddr, 8192xbf16>
// CHECK-NEXT: mt3k.dma
// The view_prefetch's wait (at the end of the step) waits the DMA.
// CHECK: mt3k.wait %[[DMA]]{{$}}
// CHECK-NEXT: }


// With the small GSM, the decoder's 41088 elements are updated in chunks of 16384,
// 16384 and 8320 (element offsets 0, 16384, 32768 of the gradient, master,
// m, v and view), alternating the slots; the head took slot 0 first, so
// the decoder's chunk 1 waits for the head's DMA, and chunk 2 (slot 1
// again) for chunk 0's.
// CHUNKED-LABEL: mt3k.job = #mt3k.job<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 0,
// CHUNKED: %[[GSM0:[0-9]+]] = mt3k.buffer "gsm.staging.0" at 0 : !mt3k.buffer<gsm, 32768xi8>
// CHUNKED-NEXT: %[[GSM1:[0-9]+]] = mt3k.buffer "gsm.staging.1" at 32768 : !mt3k.buffer<gsm, 32768xi8>
// The chunk views: gradient, master, m, v, the staging slot, the view.
// CHUNKED: %[[G0:[0-9]+]] = mt3k.view %[[G:[0-9]+]][0] : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 16384xbf16>
// CHUNKED-NEXT: %[[P0:[0-9]+]] = mt3k.view %[[P:[0-9]+]][0] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 16384xf32>
// CHUNKED-NEXT: %[[M0:[0-9]+]] = mt3k.view %[[M:[0-9]+]][0] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 16384xf32>
// CHUNKED-NEXT: %[[V0:[0-9]+]] = mt3k.view %[[V:[0-9]+]][0] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 16384xf32>
// CHUNKED-NEXT: %[[S0:[0-9]+]] = mt3k.view %[[GSM1]][0] : !mt3k.buffer<gsm, 32768xi8> to !mt3k.buffer<gsm, 16384xbf16>
// CHUNKED-NEXT: %[[VIEW0:[0-9]+]] = mt3k.view %[[VIEW:[0-9]+]][0] : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 16384xbf16>
// CHUNKED-NEXT: %[[G1:[0-9]+]] = mt3k.view %[[G]][32768] : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 16384xbf16>
// CHUNKED-NEXT: %[[P1:[0-9]+]] = mt3k.view %[[P]][65536] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 16384xf32>
// CHUNKED-NEXT: %[[M1:[0-9]+]] = mt3k.view %[[M]][65536] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 16384xf32>
// CHUNKED-NEXT: %[[V1:[0-9]+]] = mt3k.view %[[V]][65536] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 16384xf32>
// CHUNKED-NEXT: %[[S1:[0-9]+]] = mt3k.view %[[GSM0]][0] : !mt3k.buffer<gsm, 32768xi8> to !mt3k.buffer<gsm, 16384xbf16>
// CHUNKED-NEXT: %[[VIEW1:[0-9]+]] = mt3k.view %[[VIEW]][32768] : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 16384xbf16>
// CHUNKED-NEXT: %[[G2:[0-9]+]] = mt3k.view %[[G]][65536] : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 8320xbf16>
// CHUNKED-NEXT: %[[P2:[0-9]+]] = mt3k.view %[[P]][131072] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 8320xf32>
// CHUNKED-NEXT: %[[M2:[0-9]+]] = mt3k.view %[[M]][131072] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 8320xf32>
// CHUNKED-NEXT: %[[V2:[0-9]+]] = mt3k.view %[[V]][131072] : !mt3k.buffer<ddr, 41088xf32> to !mt3k.buffer<ddr, 8320xf32>
// CHUNKED-NEXT: %[[S2:[0-9]+]] = mt3k.view %[[GSM1]][0] : !mt3k.buffer<gsm, 32768xi8> to !mt3k.buffer<gsm, 8320xbf16>
// CHUNKED-NEXT: %[[VIEW2:[0-9]+]] = mt3k.view %[[VIEW]][65536] : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 8320xbf16>
// CHUNKED: %[[SYNC:[0-9]+]] = mt3k.all_reduce avg %[[G]] -> %[[G]] on @dp ring
// CHUNKED: %[[HEADDMA:[0-9]+]] = mt3k.dma %{{[0-9]+}} -> %{{[0-9]+}}
// CHUNKED: mt3k.wait %[[SYNC]]{{$}}
// CHUNKED-NEXT: mt3k.adamw %[[G0]], %[[P0]], %[[M0]], %[[V0]] -> %[[S0]] lr
// CHUNKED-NEXT: %[[D0:[0-9]+]] = mt3k.dma %[[S0]] -> %[[VIEW0]]
// CHUNKED-NEXT: mt3k.wait %[[HEADDMA]]{{$}}
// CHUNKED-NEXT: mt3k.adamw %[[G1]], %[[P1]], %[[M1]], %[[V1]] -> %[[S1]] lr
// CHUNKED-NEXT: %[[D1:[0-9]+]] = mt3k.dma %[[S1]] -> %[[VIEW1]]
// CHUNKED-NEXT: mt3k.wait %[[D0]]{{$}}
// CHUNKED-NEXT: mt3k.adamw %[[G2]], %[[P2]], %[[M2]], %[[V2]] -> %[[S2]] lr
// CHUNKED-NEXT: %[[D2:[0-9]+]] = mt3k.dma %[[S2]] -> %[[VIEW2]]

// -----

// ZeRO-1.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 1, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 1, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 582624 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 16384, 1, 16384, 16384, 2, 32768, 32768,
                                                   3, 65536, 82176, 4, 147712, 82176, 5, 229888, 164352,
                                                   6, 394240, 16512, 7, 410752, 16512, 8, 427264, 33024>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 460288, 6144>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 582592, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 548608, 17472>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 466432, 8224>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 566080, 16512>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 566080, 16512>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 566080, 16512>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 466432, 82176>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 13, 466432, 82176>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 466432, 82176>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 566080, 16512>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 410752, 16512, 8, 427264, 33024>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.master<2>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 548608, 16384>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 14, 548608, 16384>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 548608, 16384>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 466432, 82176>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 147712, 82176, 5, 229888, 164352>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.master<1>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 548608, 16384>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 16384, 16384, 2, 32768, 32768>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %gather0 = ratrain.sync all_gather %inplace0 hierarchy flat {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.async<!ratrain.view<1>>
    %gather1 = ratrain.sync all_gather %inplace1 hierarchy flat {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.async<!ratrain.view<2>>
    %gather2 = ratrain.sync all_gather %inplace2 hierarchy flat {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.view<2> -> !ratrain.async<!ratrain.view<2>>
    %inplace0_2 = ratrain.wait %gather0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %inplace1_2 = ratrain.wait %gather1 {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.async<!ratrain.view<1>>
    %inplace2_2 = ratrain.wait %gather2 {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0_2, %master0n, %opt0n, %inplace1_2, %master1n, %opt1n, %inplace2_2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: mt3k.job = #mt3k.job<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 1,
// CHECK: %[[GSM1:[0-9]+]] = mt3k.buffer "gsm.staging.1" at 524288 : !mt3k.buffer<gsm, 524288xi8>
// The view is whole; the master and the Adam state hold this rank's shard
// of the layer's flattened parameters (41088 / 2 = 20544 elements).
// CHECK: %[[LV:[0-9]+]] = mt3k.buffer "model.layers.0.view" at 65536 : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[LA:[0-9]+]] = mt3k.buffer "model.layers.0.adam" at 229888 : !mt3k.buffer<ddr, 164352xi8>
// CHECK: %[[LM:[0-9]+]] = mt3k.buffer "model.layers.0.master" at 147712 : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[P:[0-9]+]] = mt3k.view %[[LM]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 20544xf32>
// CHECK-NEXT: %[[M:[0-9]+]] = mt3k.view %[[LA]][0] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 20544xf32>
// CHECK-NEXT: %[[V:[0-9]+]] = mt3k.view %[[LA]][82176] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 20544xf32>
// CHECK: %[[GB:[0-9]+]] = mt3k.buffer "model.layers.0.grad" at 466432 : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[G:[0-9]+]] = mt3k.view %[[GB]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// The gradient shard lives in the lowering's scratch area; the refreshed
// view shard is this rank's block of the view itself (no zero.view_shard).
// CHECK-NOT: zero.view_shard
// CHECK: %[[GSB:[0-9]+]] = mt3k.buffer "zero.grad_shard.layer1" at 595968 : !mt3k.buffer<ddr, 41088xi8>
// CHECK-NEXT: %[[GS:[0-9]+]] = mt3k.view %[[GSB]][0] : !mt3k.buffer<ddr, 41088xi8> to !mt3k.buffer<ddr, 20544xbf16>
// CHECK-NEXT: %[[OWN:[0-9]+]] = mt3k.group_slot %[[G]] on @dp : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 20544xbf16>
// CHECK: %[[VIEW:[0-9]+]] = mt3k.view %[[LV]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// CHECK-NEXT: %[[VS:[0-9]+]] = mt3k.group_slot %[[VIEW]] on @dp : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 20544xbf16>
// CHECK-NEXT: %[[STAGED:[0-9]+]] = mt3k.view %[[GSM1]][0] : !mt3k.buffer<gsm, 524288xi8> to !mt3k.buffer<gsm, 20544xbf16>
// CHECK-NOT: zero.view_shard
// sync all_reduce under ZeRO-1: the optimizer needs only this rank's shard
// of the average.
// CHECK: %[[SYNC:[0-9]+]] = mt3k.reduce_scatter avg %[[G]] -> %[[GS]] on @dp ring leave_own :
// CHECK: mt3k.wait %[[SYNC]]{{$}}
// CHECK-NEXT: mt3k.adamw %[[GS]] plus %[[OWN]] : !mt3k.buffer<ddr, 20544xbf16> over 2, %[[P]], %[[M]], %[[V]] -> %[[STAGED]] lr
// CHECK-NEXT: %[[DMA:[0-9]+]] = mt3k.dma %[[STAGED]] -> %[[VS]]
// sync all_gather of the view, after the view_prefetch's wait.
// CHECK: mt3k.wait %[[DMA]]{{$}}
// CHECK-NEXT: %[[GATHER:[0-9]+]] = mt3k.all_gather %[[VS]] -> %[[VIEW]] on @dp ring
// CHECK: mt3k.wait %[[GATHER]]{{$}}

// AVERAGED-LABEL: mt3k.job = #mt3k.job<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 1,
// AVERAGED: %[[G:[0-9]+]] = mt3k.view %{{[0-9]+}}[0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// AVERAGED-NOT: mt3k.group_slot %[[G]] on
// AVERAGED: %[[SYNC:[0-9]+]] = mt3k.reduce_scatter avg %[[G]] -> %[[GS:[0-9]+]] on @dp ring :
// AVERAGED: mt3k.wait %[[SYNC]]{{$}}
// AVERAGED-NEXT: mt3k.adamw %[[GS]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} -> %{{[0-9]+}} lr
// AVERAGED-LABEL: mt3k.job = #mt3k.job<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 2,

// ONCORES-LABEL: mt3k.job = #mt3k.job<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 1,
// ONCORES-NOT: gsm.staging
// ONCORES: %[[SYNC:[0-9]+]] = mt3k.reduce_scatter avg %{{[0-9]+}} -> %{{[0-9]+}} on @dp ring leave_own : !mt3k.buffer<ddr, 41088xbf16>
// ONCORES: mt3k.wait %[[SYNC]]{{$}}
// ONCORES-NEXT: mt3k.adamw %{{[0-9]+}} plus %{{[0-9]+}} : !mt3k.buffer<ddr, 20544xbf16> over 2, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} -> %[[VS:[0-9]+]] lr {{.*}} : !mt3k.buffer<ddr, 20544xbf16>, {{.*}} -> !mt3k.buffer<ddr, 20544xbf16>
// ONCORES-NOT: mt3k.dma
// ONCORES: mt3k.all_gather %[[VS]] -> %{{[0-9]+}} on @dp ring
// ONCORES-NOT: mt3k.dma
// ONCORES-LABEL: mt3k.job = #mt3k.job<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 2,

// -----

// ZeRO-2: the reduce-scatter's wait has a buffer of its own (id 16).
ratrain.model @tiny family("llama") dtype(bf16) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 2, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 2, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
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
    %sync1 = ratrain.sync reduce_scatter %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 523968, 82176>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
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
    %gather1 = ratrain.sync all_gather %inplace1 hierarchy flat {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.async<!ratrain.view<2>>
    %gather2 = ratrain.sync all_gather %inplace2 hierarchy flat {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.view<2> -> !ratrain.async<!ratrain.view<2>>
    %inplace0_2 = ratrain.wait %gather0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %inplace1_2 = ratrain.wait %gather1 {ratrain.buffers = array<i64: 3, 65536, 82176>} : !ratrain.async<!ratrain.view<1>>
    %inplace2_2 = ratrain.wait %gather2 {ratrain.buffers = array<i64: 6, 394240, 16512>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0_2, %master0n, %opt0n, %inplace1_2, %master1n, %opt1n, %inplace2_2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: mt3k.job = #mt3k.job<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1, micro_batches = 1, zero = 2,
// CHECK: %[[GB:[0-9]+]] = mt3k.buffer "model.layers.0.grad" at 523968 : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[G:[0-9]+]] = mt3k.view %[[GB]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// The gradient shard at the offset of the sync's wait, no zero.grad_shard.
// CHECK-NOT: zero.grad_shard.layer1
// CHECK: %[[GSB:[0-9]+]] = mt3k.buffer "model.layers.0.grad_shard" at 468544 : !mt3k.buffer<ddr, 41088xi8>
// CHECK-NEXT: %[[GS:[0-9]+]] = mt3k.view %[[GSB]][0] : !mt3k.buffer<ddr, 41088xi8> to !mt3k.buffer<ddr, 20544xbf16>
// CHECK-NOT: zero.grad_shard.layer1
// CHECK-NOT: zero.view_shard
// CHECK: %[[VS:[0-9]+]] = mt3k.group_slot %{{[0-9]+}} on @dp : !mt3k.buffer<ddr, 41088xbf16> to !mt3k.buffer<ddr, 20544xbf16>
// CHECK: %[[SYNC:[0-9]+]] = mt3k.reduce_scatter avg %[[G]] -> %[[GS]] on @dp ring
// CHECK: mt3k.wait %[[SYNC]]{{$}}
// CHECK-NEXT: mt3k.adamw %[[GS]], {{.*}} -> %[[STAGED:[0-9]+]] lr
// CHECK-NEXT: %[[DMA:[0-9]+]] = mt3k.dma %[[STAGED]] -> %[[VS]]
// CHECK: %{{[0-9]+}} = mt3k.all_gather %[[VS]] -> %{{[0-9]+}} on @dp ring

// -----

// ZeRO-0 over dp = 4: the replicas span 2 nodes, the syncs are
// `hierarchy hierarchical`.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 4, pp = 1, dp = 4, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}
ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 4, pp = 1, dp = 4, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 927840 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 16384, 1, 16384, 32768, 2, 49152, 65536,
                                                   3, 114688, 82176, 4, 196864, 164352, 5, 361216, 328704,
                                                   6, 689920, 16512, 7, 706432, 33024, 8, 739456, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 805504, 6144>}} {
    %act0_0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 927808, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1_0 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 893824, 17472>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2_0 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 811648, 8224>} : !ratrain.view<2> -> !ratrain.act<2, full>
    %g2_0 = ratrain.backward %view2, %act2_0 mb(0) {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2_0 {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy hierarchical {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %g1_0 = ratrain.backward %view1, %act1_0 mb(0) {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1_0 {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy hierarchical {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %g0_0 = ratrain.backward %view0, %act0_0 mb(0) {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0_0 {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy hierarchical {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 911296, 16512>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 706432, 33024, 8, 739456, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 689920, 16512>} : !ratrain.master<2>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 811648, 82176>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 196864, 164352, 5, 361216, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 114688, 82176>} : !ratrain.master<1>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 893824, 16384>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 16384, 32768, 2, 49152, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.master<0>
    %inplace0 = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 16384>} : !ratrain.async<!ratrain.view<0>>
    %inplace1 = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 114688, 82176>} : !ratrain.async<!ratrain.view<1>>
    %inplace2 = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 689920, 16512>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %inplace0, %master0n, %opt0n, %inplace1, %master1n, %opt1n, %inplace2, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}

// CHECK-LABEL: mt3k.job = #mt3k.job<clusters = 4, pp = 1, dp = 4,
// CHECK: mt3k.group @dp data_parallel size 4
// CHECK-NEXT: mt3k.group @pp pipeline size 1
// CHECK-NEXT: mt3k.group @node node_local size 2
// CHECK: %[[GB:[0-9]+]] = mt3k.buffer "model.layers.0.grad" at {{[0-9]+}} : !mt3k.buffer<ddr, 82176xi8>
// CHECK-NEXT: %[[G:[0-9]+]] = mt3k.view %[[GB]][0] : !mt3k.buffer<ddr, 82176xi8> to !mt3k.buffer<ddr, 41088xbf16>
// CHECK: mt3k.all_reduce avg %[[G]] -> %[[G]] on @dp hierarchical
