// Offloaded states under both policies: LLaMA-style model (embedding, two
// decoder layers, head) on one stage, dp = 2, ZeRO-1, m = 2, with the plan
// keeping the FP32 master and Adam m, v in the host tier (offload = master).
// The stage's master and optimizer-state arguments name the copies in the
// tier; each layer's update is bracketed by a reload of both and their
// write-back, and at most two layers' states are in DDR at once.
//
// ratrain: the first two layers' reloads (head, decoder 2) are issued when
// the last backward sweep starts and overlap it; a layer's reload waits for
// the buffer of the layer two updates earlier (its view cast and write-back
// waited). gpu-style: each reload right before its update at the iteration
// boundary; the view of an offloaded master is cast right after its update,
// before the write-back frees it.

// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine-offload.yaml" --ratrain-verify-schedule | FileCheck %s --check-prefix=RAT
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine-offload.yaml policy=gpu-style" --ratrain-verify-schedule | FileCheck %s --check-prefix=GPU
// RUN: ratrain-opt %s --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine-offload.yaml" -o %t.mlir
// RUN: FileCheck %s --check-prefix=BUF < %t.mlir
// RUN: ratrain-sim --machine=%S/Inputs/small-machine-offload.yaml %t.mlir | FileCheck %s --check-prefix=SIM
// RUN: not ratrain-opt %s --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine.yaml" 2>&1 | FileCheck %s --check-prefix=NOTIER

ratrain.model @tiny family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 1, stage_layers = [4],
                       recompute = [none], step_us = 0, peak_bytes = 0,
                       offload = master> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 head hidden(256) vocab(512)
}

// RAT-LABEL: ratrain.stage 0 layers
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<3> -> !ratrain.act<3, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<3>, !ratrain.act<3, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<2> -> !ratrain.act<2, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<3> -> !ratrain.act<3, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.master<3>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.opt_state<3>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.master<2>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.opt_state<2>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<3>, !ratrain.act<3, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<3, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<3, ready> -> !ratrain.async<!ratrain.grad<3, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<2>, !ratrain.act<2, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<2, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<3, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.master<3>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.opt_state<3>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<3, synced>, !ratrain.master<3>, !ratrain.opt_state<3>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<3>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.master<3>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.opt_state<3>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<1, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<0, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<2, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.master<2>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.opt_state<2>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<2>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.master<2>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.opt_state<2>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<3>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.master<3>>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<3>>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.master<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.opt_state<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<1, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.master<1>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.opt_state<1>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.master<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.opt_state<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<2>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.master<2>>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<2>>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.master<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.opt_state<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<0, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.master<0>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.opt_state<0>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.master<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.opt_state<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.master<1>>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<1>>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.master<0>>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<0>>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy flat : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy flat : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy flat : !ratrain.view<2> -> !ratrain.async<!ratrain.view<2>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy flat : !ratrain.view<3> -> !ratrain.async<!ratrain.view<3>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<2>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<3>>
// RAT-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>

// GPU-LABEL: ratrain.stage 0 layers
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<3> -> !ratrain.act<3, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<3>, !ratrain.act<3, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<2> -> !ratrain.act<2, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<3> -> !ratrain.act<3, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<3>, !ratrain.act<3, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<2>, !ratrain.act<2, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<3, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<3, ready> -> !ratrain.async<!ratrain.grad<3, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<2, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<1, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<0, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<3, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<2, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<1, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<0, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.master<3>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.opt_state<3>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.master<3>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.opt_state<3>>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<3, synced>, !ratrain.master<3>, !ratrain.opt_state<3>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<3>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.master<3>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.opt_state<3>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.master<2>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.opt_state<2>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.master<2>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.opt_state<2>>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<2>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.master<2>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.opt_state<2>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<3>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.master<3>>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<3>>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.master<1>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.opt_state<1>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.master<1>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.opt_state<1>>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<1>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.master<1>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.opt_state<1>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<2>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.master<2>>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<2>>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.master<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.reload %{{[a-z_0-9]+}} : !ratrain.opt_state<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.master<0>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.opt_state<0>>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.master<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.offload %{{[a-z_0-9]+}} to host : !ratrain.opt_state<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.master<1>>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<1>>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.master<0>>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.offloaded<!ratrain.opt_state<0>>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy flat : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy flat : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy flat : !ratrain.view<2> -> !ratrain.async<!ratrain.view<2>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy flat : !ratrain.view<3> -> !ratrain.async<!ratrain.view<3>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<2>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<3>>
// GPU-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>

// Offloaded states take no DDR between updates (bytes 0 in the stage's
// arg_buffers); a reloaded state takes its size (decoder layer: 725504
// params, the ZeRO-1 shard 362752: master 1451008, Adam 2902016 bytes) from
// its reload to the wait of its write-back. Views are in DDR as before.
// BUF-LABEL: ratrain.stage 0 layers
// BUF-SAME: ratrain.arg_buffers = array<i64: 0, 0, 262144, 1, 0, 0, 2, 0, 0, 3, {{[0-9]+}}, 1451008, 4, 0, 0, 5, 0, 0,
// BUF: ratrain.reload %master3 {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 262656>}
// BUF: ratrain.reload %master2 {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 1451008>}
// BUF: ratrain.reload %opt2 {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 2902016>}
// BUF: ratrain.offload %{{.*}} to host {ratrain.buffers = array<i64: -1, 0, 0>} : !ratrain.master<3>

// The simulator reads the reloads and write-backs as offload-tier
// transfers.
// SIM: program: tiny_step {{.*}} offload=master (ratrain)
// SIM: exposed-offload-s:

// NOTIER: error: 'ratrain.pipeline' op plan keeps the master weights and optimizer states in the offload tier, but machine 'small' has none
