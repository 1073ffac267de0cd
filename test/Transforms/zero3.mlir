// ZeRO-3 (docs/schedule.md, "ZeRO-3"): the view block arguments are this
// rank's shards; every compute that reads a layer's parameters reads a
// waited `sync all_gather` of the shard, issued one compute ahead;
// consecutive readers of the same view share a gather; gradients are
// reduce-scattered as under ZeRO-2; the update's view prefetch writes the
// new shard, which the yield returns (no all-gather at the step end).

// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-verify-schedule | FileCheck %s --check-prefix=RAT
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml policy=gpu-style" --ratrain-verify-schedule | FileCheck %s --check-prefix=GPU
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-assign-buffers="machine=%S/Inputs/small-machine.yaml report=%t.csv" --ratrain-verify-schedule | FileCheck %s --check-prefix=BUF
// RUN: FileCheck %s --check-prefix=CSV < %t.csv

ratrain.model @z3 family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1,
                       micro_batches = 2, zero = 3, stage_layers = [2, 2],
                       recompute = [none, full], step_us = 0,
                       peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 head hidden(256) vocab(512)
}

// Stage 0 under ratrain: the first gather at the step start, then each
// gather right before the compute before its reader.
// RAT-LABEL: ratrain.stage 0 layers [0, 2)
// RAT-NEXT: %[[G0:.+]] = ratrain.sync all_gather %view0 hierarchy flat : !ratrain.view<0> -> !ratrain.async<!ratrain.view<0>>
// RAT-NEXT: %[[V0:.+]] = ratrain.wait %[[G0]]
// RAT-NEXT: %[[G1:.+]] = ratrain.sync all_gather %view1 hierarchy flat
// RAT-NEXT: %[[A0:.+]] = ratrain.forward %[[V0]] mb(0) : !ratrain.view<0>
// RAT-NEXT: %[[V1:.+]] = ratrain.wait %[[G1]]
// RAT-NEXT: %[[G2:.+]] = ratrain.sync all_gather %view0
// RAT-NEXT: %[[A1:.+]] = ratrain.forward %[[V1]] mb(0) : !ratrain.view<1>
// RAT-NEXT: ratrain.send activation mb(0) to(1)
// RAT-NEXT: %[[V2:.+]] = ratrain.wait %[[G2]]
// RAT-NEXT: %[[G3:.+]] = ratrain.sync all_gather %view1
// RAT-NEXT: %[[A2:.+]] = ratrain.forward %[[V2]] mb(1) : !ratrain.view<0>
// RAT-NEXT: %[[V3:.+]] = ratrain.wait %[[G3]]
// The forward of layer 1 mb(1) and its backward of mb(0) read one gather.
// RAT-NEXT: %[[A3:.+]] = ratrain.forward %[[V3]] mb(1) : !ratrain.view<1>
// RAT-NEXT: ratrain.send activation mb(1) to(1)
// RAT-NEXT: ratrain.recv gradient mb(0) from(1)
// RAT-NEXT: %[[G4:.+]] = ratrain.sync all_gather %view0
// RAT-NEXT: %[[B1:.+]] = ratrain.backward %[[V3]], %[[A1]] mb(0) : !ratrain.view<1>
// RAT-NEXT: %[[V4:.+]] = ratrain.wait %[[G4]]
// RAT-NEXT: %[[G5:.+]] = ratrain.sync all_gather %view1
// RAT-NEXT: %[[B0:.+]] = ratrain.backward %[[V4]], %[[A0]] mb(0) : !ratrain.view<0>
// RAT-NEXT: ratrain.recv gradient mb(1) from(1)
// RAT-NEXT: %[[V5:.+]] = ratrain.wait %[[G5]]
// RAT-NEXT: %[[G6:.+]] = ratrain.sync all_gather %view0
// RAT-NEXT: %[[C1:.+]] = ratrain.backward %[[V5]], %[[A3]] acc(%[[B1]]) mb(1)
// RAT-NEXT: %[[R1:.+]] = ratrain.grad_ready %[[C1]]
// RAT-NEXT: %[[S1:.+]] = ratrain.sync reduce_scatter %[[R1]] hierarchy flat
// RAT-NEXT: %[[V6:.+]] = ratrain.wait %[[G6]]
// RAT-NEXT: %[[C0:.+]] = ratrain.backward %[[V6]], %[[A2]] acc(%[[B0]]) mb(1)
// RAT-NEXT: %[[R0:.+]] = ratrain.grad_ready %[[C0]]
// RAT-NEXT: %[[S0:.+]] = ratrain.sync reduce_scatter %[[R0]] hierarchy flat
// RAT-NEXT: %[[W1:.+]] = ratrain.wait %[[S1]]
// RAT-NEXT: %[[M1:.+]], %{{.+}} = ratrain.update adamw %[[W1]], %master1, %opt1
// RAT-NEXT: %[[P1:.+]] = ratrain.view_prefetch %[[M1]]
// RAT-NEXT: %[[W0:.+]] = ratrain.wait %[[S0]]
// RAT-NEXT: %[[M0:.+]], %{{.+}} = ratrain.update adamw %[[W0]], %master0, %opt0
// RAT-NEXT: %[[P0:.+]] = ratrain.view_prefetch %[[M0]]
// RAT-NEXT: %[[N0:.+]] = ratrain.wait %[[P0]]
// RAT-NEXT: %[[N1:.+]] = ratrain.wait %[[P1]]
// RAT-NEXT: ratrain.yield %[[N0]], %{{.+}}, %{{.+}}, %[[N1]],
// Stage 1: the recompute and the backward of layer 2 read one gather.
// RAT-LABEL: ratrain.stage 1 layers [2, 4)
// RAT: ratrain.forward %{{.+}} mb(0) : !ratrain.view<3>
// RAT-NEXT: %[[H:.+]] = ratrain.sync all_gather %view2
// RAT-NEXT: ratrain.backward %{{.+}}, %{{.+}} mb(0) : !ratrain.view<3>
// RAT-NEXT: %[[HV:.+]] = ratrain.wait %[[H]]
// RAT-NEXT: ratrain.recompute %[[HV]], %{{.+}} mb(0)
// RAT-NEXT: ratrain.backward %[[HV]], %{{.+}} mb(0) : !ratrain.view<2>
// RAT: ratrain.send gradient mb(1) to(0)
// RAT-NOT: all_gather
// RAT: ratrain.yield

// gpu-style: the same gathers; the lifecycle at the iteration boundary
// ends with the view waits, without all-gathers.
// GPU-LABEL: ratrain.stage 1 layers [2, 4)
// GPU-NEXT: ratrain.sync all_gather %view2
// GPU-NEXT: ratrain.recv activation mb(0) from(0)
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.sync all_gather %view3
// GPU-NEXT: ratrain.forward
// GPU: ratrain.send gradient mb(1) to(0)
// GPU-NEXT: ratrain.grad_ready
// GPU-NEXT: ratrain.sync reduce_scatter
// GPU-NEXT: ratrain.grad_ready
// GPU-NEXT: ratrain.sync reduce_scatter
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.update
// GPU-NEXT: ratrain.update
// GPU-NEXT: ratrain.view_prefetch
// GPU-NEXT: ratrain.view_prefetch
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.wait
// GPU-NEXT: ratrain.yield

// Buffers: the persistent view is this rank's shard (layer 2: 362752
// parameters of 725504 at 2 bytes; the head: 131328 of 262656 bytes); a
// gather starts a buffer of the full view, live from its issue to its last
// reader (at most two at a time).
// BUF-LABEL: ratrain.stage 1 layers [2, 4)
// BUF-SAME: ratrain.arg_buffers = array<i64: 0, 0, 725504, 1, 725504, 1451008, 2, 2176512, 2902016, 3, 5078528, 131328,
// BUF-NEXT: ratrain.sync all_gather %view2 hierarchy flat {ratrain.buffers = array<i64: [[B2:[0-9]+]], {{[0-9]+}}, 1451008>}
// BUF-NEXT: ratrain.recv activation mb(0)
// BUF-NEXT: ratrain.wait %{{.+}} {ratrain.buffers = array<i64: [[B2]], {{[0-9]+}}, 1451008>}
// BUF-NEXT: ratrain.sync all_gather %view3 hierarchy flat {ratrain.buffers = array<i64: [[B3:[0-9]+]], {{[0-9]+}}, 262656>}
// BUF-NOT: array<i64: [[B2]],
// BUF: ratrain.view_prefetch {{.*}} {ratrain.buffers = array<i64: 3, 5078528, 131328>}
// BUF: ratrain.view_prefetch {{.*}} {ratrain.buffers = array<i64: 0, 0, 725504>}

// Stage 1's states take 7206912 bytes; the first gathered view of layer 2
// (1451008) is live from the step start.
// CSV: z3_step,1,-1,start,7206912
// CSV-NEXT: z3_step,1,0,ratrain.sync of layer 2,8657920
