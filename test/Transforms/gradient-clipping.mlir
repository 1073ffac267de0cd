// RUN: ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-verify-schedule | FileCheck %s --check-prefix=RAT
// RUN: ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml policy=gpu-style" --ratrain-verify-schedule | FileCheck %s --check-prefix=GPU
// RUN: ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-assign-buffers="machine=%S/Inputs/small-machine.yaml" | FileCheck %s --check-prefix=BUF

// Gradient clipping (docs/schedule.md, "Gradient clipping"): with the
// plan's max_grad_norm, every stage syncs each layer's gradient as soon as
// it is ready (as without clipping), but holds every update until the
// global norm over all its synced gradients (ratrain.grad_norm, an
// all-reduce over every rank) is known; all updates read it. 4 layers on 2
// stages, dp 2, ZeRO-1, m = 4.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1,
                       micro_batches = 4, zero = 1, stage_layers = [2, 2],
                       recompute = [none, none], step_us = 0,
                       peak_bytes = 0, max_grad_norm = 1.0> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 head hidden(256) vocab(512)
}

// ratrain: stage 0's syncs follow its last backwards (layer 1's before
// layer 0's backward of the last micro-batch), no update before the norm.
// RAT: ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<{{.*}}max_grad_norm = 1.000000e+00>
// RAT-LABEL: ratrain.stage 0 layers
// RAT: ratrain.backward {{.*}} mb(3) : !ratrain.view<1>
// RAT-NEXT: ratrain.grad_ready {{.*}} : !ratrain.grad<1, partial>
// RAT-NEXT: ratrain.sync all_reduce {{.*}} : !ratrain.grad<1, ready>
// RAT-NEXT: ratrain.backward {{.*}} mb(3) : !ratrain.view<0>
// RAT-NEXT: ratrain.grad_ready {{.*}} : !ratrain.grad<0, partial>
// RAT-NEXT: ratrain.sync all_reduce {{.*}} : !ratrain.grad<0, ready>
// RAT-NEXT: %[[S1:.*]] = ratrain.wait {{.*}} : !ratrain.async<!ratrain.grad<1, synced>>
// RAT-NEXT: %[[S0:.*]] = ratrain.wait {{.*}} : !ratrain.async<!ratrain.grad<0, synced>>
// RAT-NEXT: %[[P:.*]] = ratrain.grad_norm %[[S1]], %[[S0]] : !ratrain.grad<1, synced>, !ratrain.grad<0, synced> -> !ratrain.async<!ratrain.grad_norm>
// RAT-NEXT: %[[N:.*]] = ratrain.wait %[[P]] : !ratrain.async<!ratrain.grad_norm>
// RAT-NEXT: ratrain.update adamw %[[S1]], %{{.*}}, %{{.*}} clip %[[N]]
// RAT-NEXT: ratrain.view_prefetch
// RAT-NEXT: ratrain.update adamw %[[S0]], %{{.*}}, %{{.*}} clip %[[N]]
// RAT-LABEL: ratrain.stage 1 layers
// RAT-NOT: ratrain.update
// RAT: ratrain.grad_norm {{.*}} : !ratrain.grad<3, synced>, !ratrain.grad<2, synced>
// RAT-NOT: ratrain.update adamw {{.*}} : !ratrain
// RAT: ratrain.update adamw {{.*}} clip
// RAT: ratrain.update adamw {{.*}} clip

// gpu-style: the syncs at the step end, then the norm, then the updates.
// GPU-LABEL: ratrain.stage 0 layers
// GPU: ratrain.sync all_reduce
// GPU-NEXT: ratrain.grad_ready
// GPU-NEXT: ratrain.sync all_reduce
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.grad_norm
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.update adamw {{.*}} clip
// GPU-NEXT: ratrain.update adamw {{.*}} clip

// The norm's sum of squares is one f32 in DDR.
// BUF: ratrain.grad_norm {{.*}} {ratrain.buffers = array<i64: [[B:[0-9]+]], {{[0-9]+}}, 4>}
// BUF-NEXT: ratrain.wait {{.*}} {ratrain.buffers = array<i64: [[B]], {{[0-9]+}}, 4>}
