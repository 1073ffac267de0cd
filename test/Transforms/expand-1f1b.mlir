// RUN: ratrain-opt %s --ratrain-expand-1f1b | FileCheck %s
// RUN: ratrain-opt %s --ratrain-expand-1f1b | FileCheck %s --check-prefix=ORDER
// RUN: ratrain-opt %s --ratrain-expand-1f1b | FileCheck %s --check-prefix=SEL
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-expand-1f1b | FileCheck %s --check-prefix=ONCE

// An 8-layer model (embedding, 6 decoder layers, head) on p = 4 stages of 2
// layers with m = 8 micro-batches. Stage 0 recomputes fully (its decoder
// layer stores only its input and is recomputed before its backward), stage
// 2 selectively (stores `selective`), stages 1 and 3 keep everything.
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

// CHECK: ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 8, pp = 4, dp = 2, micro_batch_size = 1, micro_batches = 8, zero = 0, stage_layers = [2, 2, 2, 2], recompute = [full, none, selective, none], step_us = 0, peak_bytes = 0> {
// CHECK-NOT: policy

// Data flow in stage 0: the forward of micro-batch 0 stores the embedding's
// activations and the decoder layer's input; the backward of micro-batch 0
// recomputes layer 1 from that input; micro-batch 1 accumulates into
// micro-batch 0's gradient.
// CHECK: ratrain.stage 0 layers [0, 2) states(%[[V0:.*]]: !ratrain.view<0>, %[[M0:.*]]: !ratrain.master<0>, %[[O0:.*]]: !ratrain.opt_state<0>, %[[V1:.*]]: !ratrain.view<1>, %[[M1:.*]]: !ratrain.master<1>, %[[O1:.*]]: !ratrain.opt_state<1>)
// CHECK: %[[A0:.*]] = ratrain.forward %[[V0]] mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// CHECK: %[[A1:.*]] = ratrain.forward %[[V1]] mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
// CHECK: %[[R1:.*]] = ratrain.recompute %[[V1]], %[[A1]] mb(0)
// CHECK: %[[G1:.*]] = ratrain.backward %[[V1]], %[[R1]] mb(0)
// CHECK: %[[G0:.*]] = ratrain.backward %[[V0]], %[[A0]] mb(0)
// CHECK: ratrain.backward %[[V1]], %{{.*}} acc(%[[G1]]) mb(1)
// CHECK: ratrain.backward %[[V0]], %{{.*}} acc(%[[G0]]) mb(1)
// CHECK: ratrain.yield %[[V0]], %[[M0]], %[[O0]], %[[V1]], %[[M1]], %[[O1]] :

// The full order of the first and the last stage. Stage 0: 3 warm-up
// forwards, then forward/backward pairs, then 3 cool-down backwards; stage
// 3: no warm-up, each forward followed by its backward.
// ORDER-LABEL: ratrain.stage 0 layers
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0> -> !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1> -> !ratrain.act<1, input>
// ORDER-NEXT: ratrain.send activation mb(0) to(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<0> -> !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1> -> !ratrain.act<1, input>
// ORDER-NEXT: ratrain.send activation mb(1) to(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<0> -> !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<1> -> !ratrain.act<1, input>
// ORDER-NEXT: ratrain.send activation mb(2) to(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<0> -> !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<1> -> !ratrain.act<1, input>
// ORDER-NEXT: ratrain.send activation mb(3) to(1)
// ORDER-NEXT: ratrain.recv gradient mb(0) from(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<1>, !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<0>, !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<0> -> !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<1> -> !ratrain.act<1, input>
// ORDER-NEXT: ratrain.send activation mb(4) to(1)
// ORDER-NEXT: ratrain.recv gradient mb(1) from(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(1) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<1>, !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<0>, !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<0> -> !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<1> -> !ratrain.act<1, input>
// ORDER-NEXT: ratrain.send activation mb(5) to(1)
// ORDER-NEXT: ratrain.recv gradient mb(2) from(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(2) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<1>, !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<0>, !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<0> -> !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<1> -> !ratrain.act<1, input>
// ORDER-NEXT: ratrain.send activation mb(6) to(1)
// ORDER-NEXT: ratrain.recv gradient mb(3) from(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(3) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<1>, !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<0>, !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<0> -> !ratrain.act<0, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<1> -> !ratrain.act<1, input>
// ORDER-NEXT: ratrain.send activation mb(7) to(1)
// ORDER-NEXT: ratrain.recv gradient mb(4) from(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(4) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<1>, !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<0>, !ratrain.act<0, full>
// ORDER-NEXT: ratrain.recv gradient mb(5) from(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(5) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<1>, !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<0>, !ratrain.act<0, full>
// ORDER-NEXT: ratrain.recv gradient mb(6) from(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(6) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<1>, !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<0>, !ratrain.act<0, full>
// ORDER-NEXT: ratrain.recv gradient mb(7) from(1)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.recompute %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(7) : !ratrain.view<1>, !ratrain.act<1, input> -> !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<1>, !ratrain.act<1, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<0>, !ratrain.act<0, full>
// ORDER-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>
// ORDER-LABEL: ratrain.stage 3 layers
// ORDER-NEXT: ratrain.recv activation mb(0) from(2)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6> -> !ratrain.act<6, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7> -> !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<7>, !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} mb(0) : !ratrain.view<6>, !ratrain.act<6, full>
// ORDER-NEXT: ratrain.send gradient mb(0) to(2)
// ORDER-NEXT: ratrain.recv activation mb(1) from(2)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<6> -> !ratrain.act<6, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(1) : !ratrain.view<7> -> !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<7>, !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(1) : !ratrain.view<6>, !ratrain.act<6, full>
// ORDER-NEXT: ratrain.send gradient mb(1) to(2)
// ORDER-NEXT: ratrain.recv activation mb(2) from(2)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<6> -> !ratrain.act<6, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(2) : !ratrain.view<7> -> !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<7>, !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(2) : !ratrain.view<6>, !ratrain.act<6, full>
// ORDER-NEXT: ratrain.send gradient mb(2) to(2)
// ORDER-NEXT: ratrain.recv activation mb(3) from(2)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<6> -> !ratrain.act<6, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(3) : !ratrain.view<7> -> !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<7>, !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(3) : !ratrain.view<6>, !ratrain.act<6, full>
// ORDER-NEXT: ratrain.send gradient mb(3) to(2)
// ORDER-NEXT: ratrain.recv activation mb(4) from(2)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<6> -> !ratrain.act<6, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(4) : !ratrain.view<7> -> !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<7>, !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(4) : !ratrain.view<6>, !ratrain.act<6, full>
// ORDER-NEXT: ratrain.send gradient mb(4) to(2)
// ORDER-NEXT: ratrain.recv activation mb(5) from(2)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<6> -> !ratrain.act<6, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(5) : !ratrain.view<7> -> !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<7>, !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(5) : !ratrain.view<6>, !ratrain.act<6, full>
// ORDER-NEXT: ratrain.send gradient mb(5) to(2)
// ORDER-NEXT: ratrain.recv activation mb(6) from(2)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<6> -> !ratrain.act<6, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(6) : !ratrain.view<7> -> !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<7>, !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(6) : !ratrain.view<6>, !ratrain.act<6, full>
// ORDER-NEXT: ratrain.send gradient mb(6) to(2)
// ORDER-NEXT: ratrain.recv activation mb(7) from(2)
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<6> -> !ratrain.act<6, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.forward %{{[a-z_0-9]+}} mb(7) : !ratrain.view<7> -> !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<7>, !ratrain.act<7, full>
// ORDER-NEXT: %{{[a-z_0-9]+}} = ratrain.backward %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} acc(%{{[a-z_0-9]+}}) mb(7) : !ratrain.view<6>, !ratrain.act<6, full>
// ORDER-NEXT: ratrain.send gradient mb(7) to(2)
// ORDER-NEXT: ratrain.yield %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : !ratrain.view<6>, !ratrain.master<6>, !ratrain.opt_state<6>, !ratrain.view<7>, !ratrain.master<7>, !ratrain.opt_state<7>

// Stage 2 stores selective activations and has no recompute.
// SEL-LABEL: ratrain.stage 2 layers [4, 6)
// SEL-NOT: ratrain.recompute
// SEL: ratrain.forward %{{.*}} mb(0) : !ratrain.view<4> -> !ratrain.act<4, selective>
// SEL-NOT: ratrain.recompute
// SEL: ratrain.yield

// Running the pass again adds nothing: the model already has a pipeline.
// ONCE: ratrain.pipeline @tiny_step
// ONCE-NOT: ratrain.pipeline
