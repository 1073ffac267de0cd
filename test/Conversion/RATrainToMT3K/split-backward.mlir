// The split backward of the embedding and the head under
// --ratrain-lower-to-mt3k (docs/lowering.md, "Split backward"): each
// ratrain.backward_input keeps what its ratrain.backward_weight needs in
// its deferred buffer (`deferred.layer<L>.mb<k>`, at the offset of its
// ratrain.buffers): the head its final norm's output gradient, the
// embedding its output gradient; the decoder layer's parts are outlined
// (`decoder_backward_input_*`, `decoder_backward_weight_*`).
//
// Input: embedding-head.mlir's model (hidden 64, 2 heads, ffn 128, vocab
// 128, seq 8; 1 stage, 2 micro-batches) scheduled and buffer-assigned by
// --ratrain-schedule-pipeline="machine=Inputs/tiny.yaml
// split-backward=true". Deferred buffers: T h 4 = 2048 bytes for the head
// and the embedding, T (4h + 2f + a d + 2 kv d) 4 = 22528 for the decoder.

// RUN: ratrain-opt %s | ratrain-opt --ratrain-verify-schedule > /dev/null
// RUN: ratrain-opt %s --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml" | FileCheck %s

// CHECK-LABEL: mt3k.program @stage0
// CHECK-DAG: %[[STREAM:[0-9]+]] = mt3k.buffer "scratch.stream" at 978048 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-DAG: %[[R1:[0-9]+]] = mt3k.buffer "scratch.r1" at 980096 : !mt3k.buffer<ddr, 6144xi8>
// CHECK-DAG: %[[DH:[0-9]+]] = mt3k.buffer "deferred.layer2.mb0" at 710944 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-DAG: %[[DD:[0-9]+]] = mt3k.buffer "deferred.layer1.mb0" at 930880 : !mt3k.buffer<ddr, 22528xi8>
// CHECK-DAG: %[[DE:[0-9]+]] = mt3k.buffer "deferred.layer0.mb0" at 862976 : !mt3k.buffer<ddr, 2048xi8>
// CHECK-DAG: %[[DXN:[0-9]+]] = mt3k.view %[[DH]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-DAG: %[[DY:[0-9]+]] = mt3k.view %[[DE]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// CHECK-DAG: %[[X:[0-9]+]] = mt3k.view %[[STREAM]][0] : !mt3k.buffer<ddr, 2048xi8> to !mt3k.buffer<ddr, 8x64xf32>
// The head's input part: dxn into the deferred buffer, then the fused norm
// backward for dx (into the stream), its weight gradient discarded in R1.
// CHECK: mt3k.report_loss %{{[0-9]+}} micro_batch 0
// CHECK-NEXT: mt3k.elementwise cross_entropy_bwd ins(%[[LOGITS:[0-9]+]], %{{[0-9]+}} :
// CHECK-NEXT: mt3k.gemm %[[LOGITS]], %[[WLM:[0-9]+]] -> %[[DXN]] :
// CHECK-NEXT: mt3k.rmsnorm_bwd %[[HX:[0-9]+]], %[[NORM:[0-9]+]], %[[RSTD:[0-9]+]], %[[DXN]] -> %[[X]], %[[GONE:[0-9]+]] :
// Its weight part: the LM-head dW, and the norm backward again for the
// weight gradient, its input gradient discarded in R1.
// CHECK-NEXT: mt3k.gemm %[[LOGITS]], %{{[0-9]+}} -> %[[GLM:[0-9]+]] transpose_a :
// CHECK-NEXT: mt3k.rmsnorm_bwd %[[HX]], %[[NORM]], %[[RSTD]], %[[DXN]] -> %{{[0-9]+}}, %[[GNORM:[0-9]+]] :
// The decoder layer's parts, outlined, with its deferred buffer.
// CHECK-NEXT: func.call @decoder_backward_input_{{[0-9]+}}({{.*}}%[[DD]]
// CHECK-NEXT: func.call @decoder_backward_weight_{{[0-9]+}}({{.*}}%[[DD]]
// The embedding: the input part keeps dy, the weight part scatter-adds it
// (the first micro-batch zeroes the table's gradient first).
// CHECK-NEXT: mt3k.elementwise cast ins(%[[X]] : !mt3k.buffer<ddr, 8x64xf32>) outs(%[[DY]] : !mt3k.buffer<ddr, 8x64xf32>)
// CHECK-NEXT: mt3k.fill %[[GTABLE:[0-9]+]], 0.000000e+00
// CHECK-NEXT: mt3k.elementwise embedding_bwd ins(%{{[0-9]+}}, %[[DY]] : !mt3k.buffer<ddr, 8xi32>, !mt3k.buffer<ddr, 8x64xf32>) outs(%[[GTABLE]] :
// Micro-batch 1: the weight parts accumulate.
// CHECK: mt3k.report_loss %{{[0-9]+}} micro_batch 1
// CHECK: mt3k.gemm %{{[0-9]+}}, %{{[0-9]+}} -> %[[GLM]] transpose_a accumulate :
// CHECK-NEXT: mt3k.rmsnorm_bwd {{.*}} -> %{{[0-9]+}}, %[[GNORM]] accumulate :
// CHECK-NOT: mt3k.fill %[[GTABLE]]
// CHECK: mt3k.elementwise embedding_bwd ins(%{{[0-9]+}}, %{{[0-9]+}} : !mt3k.buffer<ddr, 8xi32>, !mt3k.buffer<ddr, 8x64xf32>) outs(%[[GTABLE]] :

module {
  ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.000000e-05) rope_theta(1.000000e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
    ratrain.layer 0 embedding hidden(64) vocab(128)
    ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
    ratrain.layer 2 head hidden(64) vocab(128)
  }
  ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain attributes {ratrain.capacity_bytes = 16000000 : i64} {
    ratrain.stage 0 layers [0, 3) states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>, %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>, %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>) attributes {ratrain.arena_bytes = 978048 : i64, ratrain.arg_buffers = array<i64: 0, 0, 32768, 1, 0, 0, 2, 32768, 65536, 3, 98304, 164352, 4, 0, 0, 5, 262656, 328704, 6, 591360, 33024, 7, 0, 0, 8, 624384, 66048>, ratrain.peak_bytes = 978048 : i64, ratrain.peak_position = 12 : i64, ratrain.scratch_buffers = {attention_scratch = array<i64: 26, 0, 0>, sync_staging = array<i64: 25, 0, 0>, workspace = array<i64: 24, 690432, 8192>}} {
      %0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 963648, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
      %1 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
      %2 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 698624, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
      %3 = ratrain.backward_input %view2, %2 mb(0) {ratrain.buffers = array<i64: 12, 710944, 2048>} : !ratrain.view<2>, !ratrain.act<2, full>
      %4 = ratrain.backward_weight %view2, %2, %3 mb(0) {ratrain.buffers = array<i64: 13, 897856, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
      %5 = ratrain.backward_input %view1, %1 mb(0) {ratrain.buffers = array<i64: 14, 930880, 22528>} : !ratrain.view<1>, !ratrain.act<1, full>
      %6 = ratrain.backward_weight %view1, %1, %5 mb(0) {ratrain.buffers = array<i64: 15, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
      %7 = ratrain.backward_input %view0, %0 mb(0) {ratrain.buffers = array<i64: 16, 862976, 2048>} : !ratrain.view<0>, !ratrain.act<0, full>
      %8 = ratrain.backward_weight %view0, %0, %7 mb(0) {ratrain.buffers = array<i64: 17, 930880, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
      %9 = ratrain.forward %view0 mb(1) {ratrain.buffers = array<i64: 18, 978016, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
      %10 = ratrain.forward %view1 mb(1) {ratrain.buffers = array<i64: 19, 862976, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
      %11 = ratrain.forward %view2 mb(1) {ratrain.buffers = array<i64: 20, 963648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
      %12 = ratrain.backward_input %view2, %11 mb(1) {ratrain.buffers = array<i64: 21, 975968, 2048>} : !ratrain.view<2>, !ratrain.act<2, full>
      %13 = ratrain.backward_weight %view2, %11, %12 acc(%4) mb(1) {ratrain.buffers = array<i64: 13, 897856, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
      %14 = ratrain.grad_ready %13 {ratrain.buffers = array<i64: 13, 897856, 33024>} : !ratrain.grad<2, partial>
      %15 = ratrain.sync all_reduce %14 hierarchy flat {ratrain.buffers = array<i64: 13, 897856, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
      %16 = ratrain.wait %15 {ratrain.buffers = array<i64: 13, 897856, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
      %new_master, %new_opt_state = ratrain.update adamw %16, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
      %17 = ratrain.view_prefetch %new_master {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
      %18 = ratrain.backward_input %view1, %10 mb(1) {ratrain.buffers = array<i64: 22, 897856, 22528>} : !ratrain.view<1>, !ratrain.act<1, full>
      %19 = ratrain.backward_weight %view1, %10, %18 acc(%6) mb(1) {ratrain.buffers = array<i64: 15, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
      %20 = ratrain.grad_ready %19 {ratrain.buffers = array<i64: 15, 698624, 164352>} : !ratrain.grad<1, partial>
      %21 = ratrain.sync all_reduce %20 hierarchy flat {ratrain.buffers = array<i64: 15, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
      %22 = ratrain.wait %21 {ratrain.buffers = array<i64: 15, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
      %new_master_0, %new_opt_state_1 = ratrain.update adamw %22, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
      %23 = ratrain.view_prefetch %new_master_0 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
      %24 = ratrain.backward_input %view0, %9 mb(1) {ratrain.buffers = array<i64: 23, 698624, 2048>} : !ratrain.view<0>, !ratrain.act<0, full>
      %25 = ratrain.backward_weight %view0, %9, %24 acc(%8) mb(1) {ratrain.buffers = array<i64: 17, 930880, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
      %26 = ratrain.grad_ready %25 {ratrain.buffers = array<i64: 17, 930880, 32768>} : !ratrain.grad<0, partial>
      %27 = ratrain.sync all_reduce %26 hierarchy flat {ratrain.buffers = array<i64: 17, 930880, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
      %28 = ratrain.wait %27 {ratrain.buffers = array<i64: 17, 930880, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
      %new_master_2, %new_opt_state_3 = ratrain.update adamw %28, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
      %29 = ratrain.view_prefetch %new_master_2 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
      %30 = ratrain.wait %29 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
      %31 = ratrain.wait %23 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
      %32 = ratrain.wait %17 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
      ratrain.yield %30, %new_master_2, %new_opt_state_3, %31, %new_master_0, %new_opt_state_1, %32, %new_master, %new_opt_state : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
    }
  }
}

