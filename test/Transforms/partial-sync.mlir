// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-verify-schedule | FileCheck %s --check-prefix=RAT
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml policy=gpu-style" --ratrain-verify-schedule | FileCheck %s --check-prefix=GPU
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-assign-buffers="machine=%S/Inputs/small-machine.yaml" --ratrain-verify-schedule --ratrain-lower-to-mt3k="machine=%S/Inputs/small-machine.yaml trace-spans=false" | FileCheck %s --check-prefix=MT3K

// Layer-wise partial synchronization (DreamDDP; docs/schedule.md, "Partial
// synchronization"): with the plan's sync_period = 2 no gradient is
// all-reduced; each layer's update applies the replica's own (ready)
// gradient, and its updated master is averaged over the data-parallel group
// every 2 steps, in the layer's phase (the stage's layers spread over the
// phases by size: a decoder and the smaller head or embedding per stage).
// The view is re-made from the averaged master. 4 layers on 2 stages, dp 2.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1,
                       micro_batches = 4, zero = 0, stage_layers = [2, 2],
                       recompute = [none, none], step_us = 0,
                       peak_bytes = 0, sync_period = 2> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 head hidden(256) vocab(512)
}

// ratrain: after the stage's last gradient send, each update follows its
// gradient; its averaging starts at once and the cast of the view waits for
// it.
// RAT: ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<{{.*}}sync_period = 2>
// RAT-LABEL: ratrain.stage 0 layers
// RAT-NOT: ratrain.sync
// RAT: %[[R1:.*]] = ratrain.grad_ready %{{.*}} : !ratrain.grad<1, partial>
// RAT-NEXT: %[[M1:.*]], %{{.*}} = ratrain.update adamw %[[R1]], %master1, %opt1 : !ratrain.grad<1, ready>
// RAT-NEXT: %[[A1:.*]] = ratrain.sync all_reduce %[[M1]] hierarchy flat every 2 phase 0 : !ratrain.master<1> -> !ratrain.async<!ratrain.master<1>>
// RAT: %[[R0:.*]] = ratrain.grad_ready %{{.*}} : !ratrain.grad<0, partial>
// RAT-NEXT: %[[M0:.*]], %{{.*}} = ratrain.update adamw %[[R0]], %master0, %opt0 : !ratrain.grad<0, ready>
// RAT-NEXT: %[[A0:.*]] = ratrain.sync all_reduce %[[M0]] hierarchy flat every 2 phase 1 : !ratrain.master<0>
// RAT: %[[W1:.*]] = ratrain.wait %[[A1]] : !ratrain.async<!ratrain.master<1>>
// RAT-NEXT: ratrain.view_prefetch %[[W1]] : !ratrain.master<1>
// RAT: %[[W0:.*]] = ratrain.wait %[[A0]] : !ratrain.async<!ratrain.master<0>>
// RAT-NEXT: ratrain.view_prefetch %[[W0]] : !ratrain.master<0>
// RAT: ratrain.yield %{{.*}}, %[[W0]], %{{.*}}, %{{.*}}, %[[W1]], %{{.*}} :
// RAT-LABEL: ratrain.stage 1 layers
// RAT: ratrain.sync all_reduce %{{.*}} every 2 phase 1 : !ratrain.master<3>
// RAT: ratrain.sync all_reduce %{{.*}} every 2 phase 0 : !ratrain.master<2>

// gpu-style: whole-stage phases at the iteration boundary: the updates,
// then the averagings, their waits and the casts.
// GPU-LABEL: ratrain.stage 1 layers
// GPU: ratrain.send gradient mb(3) to(0)
// GPU-NEXT: ratrain.grad_ready {{.*}} : !ratrain.grad<3, partial>
// GPU-NEXT: ratrain.grad_ready {{.*}} : !ratrain.grad<2, partial>
// GPU-NEXT: ratrain.update adamw {{.*}} : !ratrain.grad<3, ready>
// GPU-NEXT: ratrain.update adamw {{.*}} : !ratrain.grad<2, ready>
// GPU-NEXT: ratrain.sync all_reduce {{.*}} every 2 phase 1 : !ratrain.master<3>
// GPU-NEXT: ratrain.sync all_reduce {{.*}} every 2 phase 0 : !ratrain.master<2>
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.view_prefetch
// GPU-NEXT: ratrain.view_prefetch

// Lowered: AdamW on the local gradient (no gradient all-reduce), the fp32
// masters averaged in place every 2 steps, then the bf16 view cast from
// them (the update's own copy of the view is not moved to DDR).
// MT3K-NOT: mt3k.all_reduce avg {{.*}}bf16
// MT3K: mt3k.adamw %{{[0-9]+}}, %[[MASTER:[0-9]+]],
// MT3K-NOT: mt3k.dma
// MT3K: %[[T:.*]] = mt3k.all_reduce avg %[[MASTER]] -> %[[MASTER]] on @dp {{.*}} every 2 phase {{[01]}} : !mt3k.buffer<ddr, {{[0-9]+}}xf32>
// MT3K: mt3k.wait %[[T]]
// MT3K: mt3k.elementwise cast ins(%[[MASTER]] : !mt3k.buffer<ddr, {{[0-9]+}}xf32>) outs(%{{.*}} : !mt3k.buffer<ddr, {{[0-9]+}}xbf16>)
