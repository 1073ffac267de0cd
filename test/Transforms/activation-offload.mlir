// Activation offload (docs/schedule.md, "Activation offload"): a LLaMA-style
// model (embedding, four decoders, head) on two stages, m = 4, the stages
// recomputing fully except their first 2 and 1 decoder layers, whose full
// activations go to the machine's host tier after each forward and come
// back ahead of their backward (act_offload = [2, 1]).
//
// Stage 0: each offload is waited right before the compute after next (it
// overlaps one forward); the reload is issued before the backward before
// the reader (the prefetch distance the cost model picks here is 1) and
// waited right before the reader, which reads the reloaded copy. Layer 3
// on stage 1 is read 5 computes after its forward: offloaded too; nothing
// is recomputed for the offloaded layers, layer 4 is.

// RUN: ratrain-opt %s --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine-offload.yaml" | FileCheck %s
// RUN: sed 's/kind: host/kind: storage/' %S/Inputs/small-machine-offload.yaml > %t-storage.yaml
// RUN: ratrain-opt %s --ratrain-schedule-pipeline="machine=%t-storage.yaml" | FileCheck %s --check-prefix=STORAGE
// RUN: ratrain-opt %s --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine-offload.yaml" --ratrain-lower-to-mt3k="machine=%S/Inputs/small-machine-offload.yaml trace-spans=false" --mt3k-verify | FileCheck %s --check-prefix=MT3K
// RUN: ratrain-opt %s --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine-offload.yaml" -o %t.mlir
// RUN: ratrain-sim --machine=%S/Inputs/small-machine-offload.yaml %t.mlir | FileCheck %s --check-prefix=SIM
// RUN: not ratrain-opt %s --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine.yaml" 2>&1 | FileCheck %s --check-prefix=NOTIER
// A backward that reads the activation it offloaded instead of the reload:
// RUN: sed -E 's/(backward %view1, )%[0-9]+( mb\(0\))/\1%1\2/' %t.mlir | not ratrain-opt --ratrain-verify-schedule 2>&1 | FileCheck %s --check-prefix=STALE

ratrain.model @tiny family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1,
                       micro_batches = 4, zero = 0, stage_layers = [3, 3],
                       recompute = [full, full], step_us = 0, peak_bytes = 0,
                       act_offload = [2, 1]> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 4 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 5 head hidden(256) vocab(512)
}

// (In program order; sends and receives in between.)
// CHECK-LABEL: ratrain.stage 0
// CHECK-NEXT: ratrain.forward %view0 mb(0)
// CHECK: [[A1:%[0-9]+]] = ratrain.forward %view1 mb(0)
// CHECK: [[P1:%[0-9]+]] = ratrain.offload [[A1]] to host {{.*}}: !ratrain.act<1, full>
// CHECK: ratrain.forward %view2 mb(0)
// CHECK: [[O1:%[0-9]+]] = ratrain.wait [[P1]] {{.*}}: !ratrain.async<!ratrain.offloaded<!ratrain.act<1, full>>>
// CHECK: ratrain.forward %view0 mb(1)
// CHECK: ratrain.forward %view1 mb(1)
// CHECK: ratrain.offload
// CHECK: [[R1:%[0-9]+]] = ratrain.reload [[O1]] {{.*}}: !ratrain.offloaded<!ratrain.act<1, full>>
// CHECK: ratrain.forward %view2 mb(1)
// CHECK: ratrain.offload
// CHECK: ratrain.wait
// CHECK: ratrain.backward %view2, %{{[0-9]+}} mb(0)
// CHECK: [[B1:%[0-9]+]] = ratrain.wait [[R1]] {{.*}}: !ratrain.async<!ratrain.act<1, full>>
// CHECK: ratrain.wait
// CHECK: ratrain.backward %view1, [[B1]] mb(0)
// CHECK-NOT: ratrain.recompute
// CHECK-LABEL: ratrain.stage 1
// CHECK: ratrain.offload %{{[0-9]+}} to host {{.*}}: !ratrain.act<3, full>
// CHECK-NOT: ratrain.recompute %view3
// CHECK: ratrain.recompute %view4
// CHECK-NOT: ratrain.recompute %view3

// STORAGE: ratrain.offload %{{[0-9]+}} to storage {{.*}}: !ratrain.act<1, full>

// The lowering moves each activation's buffer under its key and back.
// MT3K: mt3k.offload %{{[0-9]+}} to host "act.layer1.mb0" : !mt3k.buffer<ddr, [[BYTES:[0-9]+]]xi8>
// MT3K: mt3k.reload %{{[0-9]+}} from host "act.layer1.mb0" : !mt3k.buffer<ddr, [[BYTES]]xi8>

// The simulator prices the transfers on the offload stream.
// SIM: program: tiny_step {{.*}} recompute=full act-offload=2x1,1x1 (ratrain)
// SIM: exposed-offload-s:

// NOTIER: plan offloads the activations of some layers (act_offload), but machine 'small' has no offload tier

// STALE: 'ratrain.backward' op uses a stale state: the '!ratrain.act<1, full>' was moved to the offload tier by 'ratrain.offload'
