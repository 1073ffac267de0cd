// RUN: ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-verify-schedule | FileCheck %s --check-prefix=RAT
// RUN: ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml policy=gpu-style" --ratrain-verify-schedule | FileCheck %s --check-prefix=GPU
// RUN: ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml recompute-ahead=0" | FileCheck %s --check-prefix=JIT
// RUN: not ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml policy=eager" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" 2>&1 | FileCheck %s --check-prefix=TWICE

// BAD: unknown policy 'eager' (ratrain or gpu-style)
// TWICE: already has lifecycle operations

// 8 layers on p = 4 stages of 2, m = 8, dp = 2 inside a node (flat
// all-reduce), ZeRO 0. Stage 0 recomputes its decoder layer fully.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 8, pp = 4, dp = 2, micro_batch_size = 1,
                       micro_batches = 8, zero = 0, stage_layers = [2, 2, 2, 2],
                       recompute = [full, none, selective, none], step_us = 0,
                       peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 4 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 5 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 6 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 7 head hidden(256) vocab(512)
}

// ratrain: the recompute of micro-batch k's first backward layer runs
// before its `recv gradient` (it overlaps the wait for stage 1); each
// layer's sync is issued right after its last backward; the updates follow
// in sync order (the last stage's after its last gradient send); the views
// are waited last. The full order of the first and the last stage:
// RAT: ratrain.pipeline @tiny_step for @tiny plan {{.*}} policy ratrain
// RAT-LABEL: ratrain.stage 0 layers
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
// RAT-NEXT: ratrain.send activation mb(0) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1> -> !ratrain.act<1, input>
// RAT-NEXT: ratrain.send activation mb(1) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<1> -> !ratrain.act<1, input>
// RAT-NEXT: ratrain.send activation mb(2) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<1> -> !ratrain.act<1, input>
// RAT-NEXT: ratrain.send activation mb(3) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// RAT-NEXT: ratrain.recv gradient mb(0) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<1> -> !ratrain.act<1, input>
// RAT-NEXT: ratrain.send activation mb(4) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// RAT-NEXT: ratrain.recv gradient mb(1) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<1> -> !ratrain.act<1, input>
// RAT-NEXT: ratrain.send activation mb(5) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(2) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// RAT-NEXT: ratrain.recv gradient mb(2) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<1> -> !ratrain.act<1, input>
// RAT-NEXT: ratrain.send activation mb(6) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(3) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// RAT-NEXT: ratrain.recv gradient mb(3) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<1> -> !ratrain.act<1, input>
// RAT-NEXT: ratrain.send activation mb(7) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(4) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// RAT-NEXT: ratrain.recv gradient mb(4) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(5) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// RAT-NEXT: ratrain.recv gradient mb(5) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(6) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// RAT-NEXT: ratrain.recv gradient mb(6) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(7) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// RAT-NEXT: ratrain.recv gradient mb(7) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<1, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<0, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<1, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<0, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// RAT-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
// RAT-LABEL: ratrain.stage 3 layers
// RAT-NEXT: ratrain.recv activation mb(0) from(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: ratrain.send gradient mb(0) to(2)
// RAT-NEXT: ratrain.recv activation mb(1) from(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<6> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: ratrain.send gradient mb(1) to(2)
// RAT-NEXT: ratrain.recv activation mb(2) from(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<6> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: ratrain.send gradient mb(2) to(2)
// RAT-NEXT: ratrain.recv activation mb(3) from(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<6> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: ratrain.send gradient mb(3) to(2)
// RAT-NEXT: ratrain.recv activation mb(4) from(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<6> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: ratrain.send gradient mb(4) to(2)
// RAT-NEXT: ratrain.recv activation mb(5) from(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<6> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: ratrain.send gradient mb(5) to(2)
// RAT-NEXT: ratrain.recv activation mb(6) from(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<6> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: ratrain.send gradient mb(6) to(2)
// RAT-NEXT: ratrain.recv activation mb(7) from(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<6> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<7, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<7, ready> -> !ratrain.async<!ratrain.grad<7, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<6, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<6, ready> -> !ratrain.async<!ratrain.grad<6, synced>>
// RAT-NEXT: ratrain.send gradient mb(7) to(2)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<7, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<7, synced>, !ratrain.master<7>, !ratrain.opt_state<7>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<7>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<6, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<6, synced>, !ratrain.master<6>, !ratrain.opt_state<6>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<6>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<6>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<7>>
// RAT-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<6>, !ratrain.master<6>, !ratrain.opt_state<6>, !ratrain.view<7>, !ratrain.master<7>, !ratrain.opt_state<7>

// gpu-style: recompute just before each backward; after the stage's last
// op all grad_ready + syncs, then all waits, all updates, all view casts.
// GPU: ratrain.pipeline @tiny_step for @tiny plan {{.*}} policy gpu_style
// GPU-LABEL: ratrain.stage 0 layers
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
// GPU-NEXT: ratrain.send activation mb(0) to(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1> -> !ratrain.act<1, input>
// GPU-NEXT: ratrain.send activation mb(1) to(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<1> -> !ratrain.act<1, input>
// GPU-NEXT: ratrain.send activation mb(2) to(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<1> -> !ratrain.act<1, input>
// GPU-NEXT: ratrain.send activation mb(3) to(1)
// GPU-NEXT: ratrain.recv gradient mb(0) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<1> -> !ratrain.act<1, input>
// GPU-NEXT: ratrain.send activation mb(4) to(1)
// GPU-NEXT: ratrain.recv gradient mb(1) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<1> -> !ratrain.act<1, input>
// GPU-NEXT: ratrain.send activation mb(5) to(1)
// GPU-NEXT: ratrain.recv gradient mb(2) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(2) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<1> -> !ratrain.act<1, input>
// GPU-NEXT: ratrain.send activation mb(6) to(1)
// GPU-NEXT: ratrain.recv gradient mb(3) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(3) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<1> -> !ratrain.act<1, input>
// GPU-NEXT: ratrain.send activation mb(7) to(1)
// GPU-NEXT: ratrain.recv gradient mb(4) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(4) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: ratrain.recv gradient mb(5) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(5) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: ratrain.recv gradient mb(6) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(6) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: ratrain.recv gradient mb(7) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(7) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<1, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<0, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<1, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<0, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<1>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// GPU-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
// GPU-LABEL: ratrain.stage 3 layers
// GPU-NEXT: ratrain.recv activation mb(0) from(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: ratrain.send gradient mb(0) to(2)
// GPU-NEXT: ratrain.recv activation mb(1) from(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<6> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: ratrain.send gradient mb(1) to(2)
// GPU-NEXT: ratrain.recv activation mb(2) from(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<6> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: ratrain.send gradient mb(2) to(2)
// GPU-NEXT: ratrain.recv activation mb(3) from(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<6> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: ratrain.send gradient mb(3) to(2)
// GPU-NEXT: ratrain.recv activation mb(4) from(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<6> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: ratrain.send gradient mb(4) to(2)
// GPU-NEXT: ratrain.recv activation mb(5) from(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<6> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: ratrain.send gradient mb(5) to(2)
// GPU-NEXT: ratrain.recv activation mb(6) from(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<6> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: ratrain.send gradient mb(6) to(2)
// GPU-NEXT: ratrain.recv activation mb(7) from(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<6> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: ratrain.send gradient mb(7) to(2)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<7, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<7, ready> -> !ratrain.async<!ratrain.grad<7, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<6, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_reduce %{{[a-z_0-9]+}} hierarchy flat : !ratrain.grad<6, ready> -> !ratrain.async<!ratrain.grad<6, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<7, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<6, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<7, synced>, !ratrain.master<7>, !ratrain.opt_state<7>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<6, synced>, !ratrain.master<6>, !ratrain.opt_state<6>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<7>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<6>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<6>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<7>>
// GPU-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<6>, !ratrain.master<6>, !ratrain.opt_state<6>, !ratrain.view<7>, !ratrain.master<7>, !ratrain.opt_state<7>

// recompute-ahead=0 keeps every recompute just before its backward.
// JIT-LABEL: ratrain.stage 0
// JIT: ratrain.recv gradient mb(0) from(1)
// JIT-NEXT: ratrain.recompute %{{.*}} mb(0)
// JIT-NEXT: ratrain.backward

// -----

// ZeRO-2 over dp = 8 (two nodes of 4 clusters: hierarchical
// reduce-scatter, then all-gathers of the new views), 4 layers per stage;
// stage 1 recomputes fully. Under ratrain, stage 0 (no upstream stage)
// updates layers 3 and 2 while the backward of layers 1 and 0 still runs;
// stage 1 issues its syncs during the last backward sweep, waits for each
// reduce-scatter where it is predicted complete (the layer's full gradient
// is free from there) and updates after its last gradient send. Under
// ratrain each refreshed view is all-gathered right after the next update
// (the last one at the end): the gathers overlap the rest of the step; only
// their waits stay at its end. gpu-style gathers every view at the end.
ratrain.model @deep family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 16, pp = 2, dp = 8, micro_batch_size = 1,
                       micro_batches = 2, zero = 2, stage_layers = [4, 4],
                       recompute = [none, full], step_us = 0,
                       peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 4 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 5 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 6 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 7 head hidden(256) vocab(512)
}

// RAT-LABEL: ratrain.pipeline @deep_step
// RAT-LABEL: ratrain.stage 0 layers
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<3> -> !ratrain.act<3, full>
// RAT-NEXT: ratrain.send activation mb(0) to(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<2> -> !ratrain.act<2, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<3> -> !ratrain.act<3, full>
// RAT-NEXT: ratrain.send activation mb(1) to(1)
// RAT-NEXT: ratrain.recv gradient mb(0) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<3>, !ratrain.act<3, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: ratrain.recv gradient mb(1) from(1)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<3>, !ratrain.act<3, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<3, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<3, ready> -> !ratrain.async<!ratrain.grad<3, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<2>, !ratrain.act<2, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<2, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<1, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<3, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<3, synced>, !ratrain.master<3>, !ratrain.opt_state<3>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<3>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<2, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<3>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<3> -> !ratrain.async<!ratrain.view<3>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<2>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<0>, !ratrain.act<0, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<0, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<1, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<2>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<2> -> !ratrain.async<!ratrain.view<2>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<1>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<0, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<0>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<2>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<3>>
// RAT-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
// RAT-LABEL: ratrain.stage 1 layers
// RAT-NEXT: ratrain.recv activation mb(0) from(0)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<4> -> !ratrain.act<4, input>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<5> -> !ratrain.act<5, input>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6> -> !ratrain.act<6, input>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6>, !ratrain.act<6, input> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<5>, !ratrain.act<5, input> -> !ratrain.act<5, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<5>, !ratrain.act<5, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<4>, !ratrain.act<4, input> -> !ratrain.act<4, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<4>, !ratrain.act<4, full>
// RAT-NEXT: ratrain.send gradient mb(0) to(0)
// RAT-NEXT: ratrain.recv activation mb(1) from(0)
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<4> -> !ratrain.act<4, input>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<5> -> !ratrain.act<5, input>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<6> -> !ratrain.act<6, input>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<7> -> !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<7>, !ratrain.act<7, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<7, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<7, ready> -> !ratrain.async<!ratrain.grad<7, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<6>, !ratrain.act<6, input> -> !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<7, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<6>, !ratrain.act<6, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<6, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<6, ready> -> !ratrain.async<!ratrain.grad<6, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<5>, !ratrain.act<5, input> -> !ratrain.act<5, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<5>, !ratrain.act<5, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<5, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<5, ready> -> !ratrain.async<!ratrain.grad<5, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<6, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<4>, !ratrain.act<4, input> -> !ratrain.act<4, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<4>, !ratrain.act<4, full>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<4, partial>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<4, ready> -> !ratrain.async<!ratrain.grad<4, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<5, synced>>
// RAT-NEXT: ratrain.send gradient mb(1) to(0)
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<7, synced>, !ratrain.master<7>, !ratrain.opt_state<7>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<7>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<6, synced>, !ratrain.master<6>, !ratrain.opt_state<6>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<7>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<7> -> !ratrain.async<!ratrain.view<7>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<6>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<5, synced>, !ratrain.master<5>, !ratrain.opt_state<5>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<6>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<6> -> !ratrain.async<!ratrain.view<6>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<5>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<4, synced>>
// RAT-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<4, synced>, !ratrain.master<4>, !ratrain.opt_state<4>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<5>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<5> -> !ratrain.async<!ratrain.view<5>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<4>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<4>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<4> -> !ratrain.async<!ratrain.view<4>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<4>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<5>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<6>>
// RAT-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<7>>
// RAT-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<4>, !ratrain.master<4>, !ratrain.opt_state<4>, !ratrain.view<5>, !ratrain.master<5>, !ratrain.opt_state<5>, !ratrain.view<6>, !ratrain.master<6>, !ratrain.opt_state<6>, !ratrain.view<7>, !ratrain.master<7>, !ratrain.opt_state<7>

// GPU-LABEL: ratrain.pipeline @deep_step
// GPU-LABEL: ratrain.stage 0 layers
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<2> -> !ratrain.act<2, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<3> -> !ratrain.act<3, full>
// GPU-NEXT: ratrain.send activation mb(0) to(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1> -> !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<2> -> !ratrain.act<2, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<3> -> !ratrain.act<3, full>
// GPU-NEXT: ratrain.send activation mb(1) to(1)
// GPU-NEXT: ratrain.recv gradient mb(0) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<3>, !ratrain.act<3, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<2>, !ratrain.act<2, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: ratrain.recv gradient mb(1) from(1)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<3>, !ratrain.act<3, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<2>, !ratrain.act<2, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<0>, !ratrain.act<0, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<3, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<3, ready> -> !ratrain.async<!ratrain.grad<3, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<2, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<1, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<0, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<3, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<2, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<1, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<0, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<3, synced>, !ratrain.master<3>, !ratrain.opt_state<3>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<3>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<2>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<1>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<0>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<1> -> !ratrain.async<!ratrain.view<1>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<2>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<2> -> !ratrain.async<!ratrain.view<2>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<3>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<3> -> !ratrain.async<!ratrain.view<3>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<0>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<1>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<2>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<3>>
// GPU-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>, !ratrain.view<3>, !ratrain.master<3>, !ratrain.opt_state<3>
// GPU-LABEL: ratrain.stage 1 layers
// GPU-NEXT: ratrain.recv activation mb(0) from(0)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<4> -> !ratrain.act<4, input>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<5> -> !ratrain.act<5, input>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6> -> !ratrain.act<6, input>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6>, !ratrain.act<6, input> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<5>, !ratrain.act<5, input> -> !ratrain.act<5, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<5>, !ratrain.act<5, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<4>, !ratrain.act<4, input> -> !ratrain.act<4, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<4>, !ratrain.act<4, full>
// GPU-NEXT: ratrain.send gradient mb(0) to(0)
// GPU-NEXT: ratrain.recv activation mb(1) from(0)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<4> -> !ratrain.act<4, input>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<5> -> !ratrain.act<5, input>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<6> -> !ratrain.act<6, input>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<7> -> !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<7>, !ratrain.act<7, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<6>, !ratrain.act<6, input> -> !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<6>, !ratrain.act<6, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<5>, !ratrain.act<5, input> -> !ratrain.act<5, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<5>, !ratrain.act<5, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<4>, !ratrain.act<4, input> -> !ratrain.act<4, full>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<4>, !ratrain.act<4, full>
// GPU-NEXT: ratrain.send gradient mb(1) to(0)
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<7, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<7, ready> -> !ratrain.async<!ratrain.grad<7, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<6, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<6, ready> -> !ratrain.async<!ratrain.grad<6, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<5, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<5, ready> -> !ratrain.async<!ratrain.grad<5, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.grad_ready %{{[a-z_0-9]+}} : !ratrain.grad<4, partial>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync reduce_scatter %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.grad<4, ready> -> !ratrain.async<!ratrain.grad<4, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<7, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<6, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<5, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.grad<4, synced>>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<7, synced>, !ratrain.master<7>, !ratrain.opt_state<7>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<6, synced>, !ratrain.master<6>, !ratrain.opt_state<6>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<5, synced>, !ratrain.master<5>, !ratrain.opt_state<5>
// GPU-NEXT: %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = ratrain.update adamw %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.grad<4, synced>, !ratrain.master<4>, !ratrain.opt_state<4>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<7>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<6>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<5>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.view_prefetch %{{[a-z_0-9]+}} : !ratrain.master<4>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<4>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<4> -> !ratrain.async<!ratrain.view<4>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<5>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<5> -> !ratrain.async<!ratrain.view<5>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<6>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<6> -> !ratrain.async<!ratrain.view<6>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<7>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.sync all_gather %{{[a-z_0-9]+}} hierarchy hierarchical : !ratrain.view<7> -> !ratrain.async<!ratrain.view<7>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<4>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<5>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<6>>
// GPU-NEXT: %{{[a-z_0-9]+}} = ratrain.wait %{{[a-z_0-9]+}} : !ratrain.async<!ratrain.view<7>>
// GPU-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<4>, !ratrain.master<4>, !ratrain.opt_state<4>, !ratrain.view<5>, !ratrain.master<5>, !ratrain.opt_state<5>, !ratrain.view<6>, !ratrain.master<6>, !ratrain.opt_state<6>, !ratrain.view<7>, !ratrain.master<7>, !ratrain.opt_state<7>
