// RUN: ratrain-opt %s --ratrain-expand-1f1b=split-backward=true | FileCheck %s --check-prefix=EXPAND
// RUN: ratrain-opt %s --ratrain-expand-1f1b="split-backward=true" --ratrain-schedule-lifecycle="policy=gpu-style machine=%S/../../examples/machines/mt3000.yaml" | FileCheck %s --check-prefix=GPU
// RUN: ratrain-opt %s --ratrain-expand-1f1b="split-backward=true" --ratrain-schedule-lifecycle="machine=%S/../../examples/machines/mt3000.yaml" | FileCheck %s --check-prefix=LIFE
// RUN: ratrain-opt %s --ratrain-expand-1f1b="split-backward=true" --ratrain-schedule-lifecycle="machine=%S/../../examples/machines/mt3000.yaml" --ratrain-assign-buffers="machine=%S/../../examples/machines/mt3000.yaml" --ratrain-verify-schedule | FileCheck %s --check-prefix=BUF
// RUN: ratrain-opt %s --ratrain-expand-1f1b="split-backward=true" --ratrain-schedule-lifecycle="machine=%S/../../examples/machines/mt3000.yaml" --ratrain-assign-buffers="machine=%S/../../examples/machines/mt3000.yaml" -o %t.split.mlir
// RUN: ratrain-sim %t.split.mlir --machine=%S/../../examples/machines/mt3000.yaml | FileCheck %s --check-prefix=SIM
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/../../examples/machines/mt3000.yaml" --ratrain-assign-buffers="machine=%S/../../examples/machines/mt3000.yaml" -o %t.fused.mlir
// RUN: ratrain-sim %t.fused.mlir --machine=%S/../../examples/machines/mt3000.yaml | FileCheck %s --check-prefix=SIM

// The split backward through the schedule passes. A 4-layer model
// (embedding, two decoder layers, head) on p = 2 stages of 2 layers with
// m = 4 micro-batches; stage 0 recomputes fully.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1,
                       micro_batches = 4, zero = 0, stage_layers = [2, 2],
                       recompute = [full, none], step_us = 0,
                       peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 head hidden(256) vocab(512)
}

// Stage 0: per layer, descending, the recompute of a fully recomputed layer,
// then its input part (I) and right after it its weight part (W), which
// accumulates into the previous micro-batch's gradient.
// EXPAND-LABEL: ratrain.stage 0
// EXPAND:      %[[IN0:.*]] = ratrain.forward %view0 mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// EXPAND:      %[[IN1:.*]] = ratrain.forward %view1 mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
// EXPAND:      ratrain.recv gradient mb(0) from(1)
// EXPAND-NEXT: %[[R1:.*]] = ratrain.recompute %view1, %[[IN1]] mb(0)
// EXPAND-NEXT: %[[D1:.*]] = ratrain.backward_input %view1, %[[R1]] mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// EXPAND-NEXT: %[[G1:.*]] = ratrain.backward_weight %view1, %[[R1]], %[[D1]] mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// EXPAND-NEXT: %[[D0:.*]] = ratrain.backward_input %view0, %[[IN0]] mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// EXPAND-NEXT: %[[G0:.*]] = ratrain.backward_weight %view0, %[[IN0]], %[[D0]] mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// EXPAND-NEXT: ratrain.forward %view0 mb(2)
// EXPAND:      ratrain.backward_input %view1, %{{.*}} mb(1)
// EXPAND-NEXT: ratrain.backward_weight %view1, %{{.*}}, %{{.*}} acc(%[[G1]]) mb(1)
// EXPAND-NOT:  ratrain.backward {{.*}}
// EXPAND-LABEL: ratrain.stage 1
// EXPAND:      ratrain.forward %view3 mb(0)
// EXPAND-NEXT: %[[D3:.*]] = ratrain.backward_input %view3, %{{.*}} mb(0)
// EXPAND-NEXT: ratrain.backward_weight %view3, %{{.*}}, %[[D3]] mb(0)
// EXPAND-NEXT: %[[D2:.*]] = ratrain.backward_input %view2, %{{.*}} mb(0)
// EXPAND-NEXT: ratrain.backward_weight %view2, %{{.*}}, %[[D2]] mb(0)
// EXPAND-NEXT: ratrain.send gradient mb(0) to(0)
// EXPAND-NOT:  ratrain.backward {{.*}}
// EXPAND:      ratrain.yield

// gpu-style: each recompute right before the input part that needs it (not
// before the weight part); the lifecycle phases after the last op.
// GPU-LABEL: ratrain.stage 0
// GPU:      ratrain.recv gradient mb(3) from(1)
// GPU-NEXT: %[[R:.*]] = ratrain.recompute %view1, %{{.*}} mb(3)
// GPU-NEXT: %[[D:.*]] = ratrain.backward_input %view1, %[[R]] mb(3)
// GPU-NEXT: %[[W1:.*]] = ratrain.backward_weight %view1, %[[R]], %[[D]] acc(%{{.*}}) mb(3)
// GPU-NEXT: %{{.*}} = ratrain.backward_input %view0
// GPU-NEXT: %[[W0:.*]] = ratrain.backward_weight %view0
// GPU-NEXT: ratrain.grad_ready %[[W1]]
// GPU:      ratrain.grad_ready %[[W0]]

// ratrain: a layer's grad_ready and sync follow the weight part of its last
// micro-batch, not its input part; the recompute still runs ahead of the
// gradient's recv, before the input part.
// LIFE-LABEL: ratrain.stage 0
// LIFE:      %[[R:.*]] = ratrain.recompute %view1, %{{.*}} mb(3)
// LIFE-NEXT: ratrain.recv gradient mb(3) from(1)
// LIFE-NEXT: %[[D:.*]] = ratrain.backward_input %view1, %[[R]] mb(3)
// LIFE-NEXT: %[[W1:.*]] = ratrain.backward_weight %view1, %[[R]], %[[D]] acc(%{{.*}}) mb(3)
// LIFE-NEXT: %[[READY1:.*]] = ratrain.grad_ready %[[W1]] : !ratrain.grad<1, partial>
// LIFE-NEXT: ratrain.sync all_reduce %[[READY1]]
// LIFE:      %[[D0:.*]] = ratrain.backward_input %view0, %{{.*}} mb(3)
// LIFE-NEXT: %[[W0:.*]] = ratrain.backward_weight %view0, %{{.*}}, %[[D0]] acc(%{{.*}}) mb(3)
// LIFE-NEXT: ratrain.grad_ready %[[W0]] : !ratrain.grad<0, partial>
// LIFE-LABEL: ratrain.stage 1
// LIFE:      %[[D3:.*]] = ratrain.backward_input %view3, %{{.*}} mb(3)
// LIFE-NEXT: %[[W3:.*]] = ratrain.backward_weight %view3, %{{.*}}, %[[D3]] acc(%{{.*}}) mb(3)
// LIFE-NEXT: ratrain.grad_ready %[[W3]]

// Deferred buffers, one per input part, from the I to its W: a decoder
// layer's T (4h + 2 ffn + q + 2 kv) w = 128 * (1024 + 1376 + 256 + 256) * 2
// = 745472 bytes; the embedding's and the head's output gradient, T h w =
// 65536. The weight part joins the layer's gradient buffer.
// BUF-LABEL: ratrain.stage 0
// BUF:      ratrain.backward_input %view1, %{{.*}} mb(0) {ratrain.buffers = array<i64: [[D1:[0-9]+]], {{[0-9]+}}, 745472>}
// BUF-NEXT: %[[G1:.*]] = ratrain.backward_weight %view1, {{.*}} mb(0) {ratrain.buffers = array<i64: [[G1B:[0-9]+]], [[G1O:[0-9]+]], [[G1S:[0-9]+]]>}
// BUF-NEXT: ratrain.backward_input %view0, %{{.*}} mb(0) {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 65536>}
// BUF:      ratrain.backward_weight %view1, {{.*}} acc(%[[G1]]) mb(1) {ratrain.buffers = array<i64: [[G1B]], [[G1O]], [[G1S]]>}
// BUF-LABEL: ratrain.stage 1
// BUF:      ratrain.backward_input %view3, %{{.*}} mb(0) {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 65536>}
// BUF-NEXT: ratrain.backward_weight %view3
// BUF-NEXT: ratrain.backward_input %view2, %{{.*}} mb(0) {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 745472>}

// The simulator prices I and W so that they sum to the fused backward: in
// 1F1B order (each W right after its I) the step takes as long as with B
// (two-sided messages, priced with the rendezvous).
// SIM: step-time-s: 0.00223465
