// RUN: ratrain-opt %s -split-input-file --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-assign-buffers="machine=%S/Inputs/small-machine.yaml" | FileCheck %s
// RUN: ratrain-opt %S/Inputs/tiny-p4-m8.mlir --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-assign-buffers="machine=%S/Inputs/small-machine.yaml report=%t.csv" -o /dev/null
// RUN: FileCheck %s --check-prefix=CSV < %t.csv
// RUN: awk -F, '$1 == "tiny_step" && $2 == 0 && $5 > max { max = $5 } END { print "max", max }' %t.csv | FileCheck %s --check-prefix=MAX
// RUN: not ratrain-opt %s -split-input-file -mlir-print-op-on-diagnostic=false --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/small-machine.yaml" --ratrain-assign-buffers="capacity=20000000" 2>&1 | FileCheck %s --check-prefix=CAP

// 8 layers (bf16, s = 128, h = 256) on 4 stages of 2, m = 8, ZeRO 0.
// Stage 0: embedding (131072 params) and decoder layer 1 (725504 params).
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

// CHECK: ratrain.pipeline @tiny_step {{.*}} attributes {ratrain.capacity_bytes = 1000000000 : i64}
// Persistent states stacked from 0, per layer view (2 B/param), master
// (4 B/param) and Adam m + v (8 B/param); then the kernel workspace
// (2 s b ffn w = 352256 bytes) at 11992064.
// CHECK-LABEL: ratrain.stage 0 layers [0, 2)
// CHECK-SAME: ratrain.arena_bytes = 16091136 : i64
// CHECK-SAME: ratrain.arg_buffers = array<i64: 0, 0, 262144, 1, 262144, 524288, 2, 786432, 1048576, 3, 1835008, 1451008, 4, 3286016, 2902016, 5, 6188032, 5804032>
// CHECK-SAME: ratrain.peak_bytes = 16091136 : i64
// CHECK-SAME: ratrain.peak_position = 19 : i64
// CHECK-SAME: ratrain.scratch_buffers = {attention_scratch = array<i64: {{[0-9]+}}, 0, 0>, sync_staging = array<i64: {{[0-9]+}}, 0, 0>, workspace = array<i64: {{[0-9]+}}, 11992064, 352256>}
// Token ids (4 s b = 512 bytes), the recomputed layer's input (2 s b h =
// 65536 bytes), the outgoing activation, its full recomputed activations
// (s b h (34 + 5 a s / h) = 1769472 bytes), and one gradient buffer per
// layer that every micro-batch accumulates into, through ready and synced.
// CHECK: ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 512>}
// CHECK-NEXT: ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 65536>}
// CHECK-NEXT: ratrain.send activation mb(0) to(1) {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 65536>}
// CHECK: ratrain.recompute %view1, %{{.*}} mb(0) {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 1769472>}
// CHECK: ratrain.backward %view1, %{{.*}} mb(0) {ratrain.buffers = array<i64: [[G1:[0-9]+, [0-9]+]], 1451008>}
// CHECK: ratrain.backward %view0, %{{.*}} mb(0) {ratrain.buffers = array<i64: [[G0:[0-9]+, [0-9]+]], 262144>}
// CHECK: ratrain.backward %view1, %{{.*}} acc(%{{.*}}) mb(1) {ratrain.buffers = array<i64: [[G1]], 1451008>}
// CHECK: ratrain.grad_ready %{{.*}} {ratrain.buffers = array<i64: [[G1]], 1451008>}
// CHECK: ratrain.wait %{{.*}} {ratrain.buffers = array<i64: [[G1]], 1451008>} : !ratrain.async<!ratrain.grad<1, synced>>
// The update works in place on the master and optimizer state, the view
// is re-materialized over the old view.
// CHECK-NEXT: ratrain.update adamw {{.*}} {ratrain.buffers = array<i64: 4, 3286016, 2902016, 5, 6188032, 5804032>}
// CHECK-NEXT: ratrain.view_prefetch {{.*}} {ratrain.buffers = array<i64: 3, 1835008, 1451008>}
// CHECK-LABEL: ratrain.stage 3 layers [6, 8)
// CHECK-SAME: ratrain.arena_bytes = 16355840 : i64
// CHECK-SAME: ratrain.peak_bytes = 16355840 : i64

// The report (of Inputs/tiny-p4-m8.mlir, this model): live bytes per
// program position of each stage (position -1 is the step start: the
// persistent states and workspace).
// CSV: pipeline,stage,position,op,live_bytes
// CSV-NEXT: tiny_step,0,-1,start,12344320
// CSV-NEXT: tiny_step,0,0,ratrain.forward of layer 0 mb(0),12344832
// CSV-NEXT: tiny_step,0,1,ratrain.forward of layer 1 mb(0),12475904
// CSV: tiny_step,0,19,ratrain.recompute of layer 1 mb(1),16091136
// CSV: tiny_step,3,-1,start,

// The largest value of the report is the recorded peak.
// MAX: max 16091136

// Over capacity: each stage that does not fit is an error that names the
// peak position and op and the largest buffers live there.
// CAP: error: 'ratrain.stage' op stage 1 needs 34.3 MB of DDR but a cluster has 20.0 MB; peak 34.3 MB at position 18 (ratrain.forward of layer 3 mb(3)) in action 1F3: 20.7 MB of persistent states and scratch, and 9 other live buffers, the largest: activations of layer 2 mb 1 1.8 MB, activations of layer 3 mb 1 1.8 MB
// CAP: note: the peak is at this op
// CAP: error: 'ratrain.stage' op stage 2 needs 28.7 MB of DDR but a cluster has 20.0 MB

// -----

// ZeRO-2 over dp = 8: master and optimizer state are this rank's 1/8 shard.
// A layer's gradient accumulates over the micro-batches in a full-size
// buffer (1451008 bytes for a decoder layer) that the reduce-scatter reads
// in place; this rank's shard (181376 bytes) lands at the wait in a buffer
// of its own that persists over the step; no sync staging.
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

// CHECK-LABEL: ratrain.stage 1 layers [4, 8)
// CHECK-SAME: ratrain.arg_buffers = array<i64: 0, 0, 1451008, 1, 1451008, 362752, 2, 1813760, 725504,
// CHECK-SAME: 9, 7617792, 262656, 10, 7880448, 65664, 11, 7946112, 131328>
// CHECK-SAME: sync_staging = array<i64: {{[0-9]+}}, {{[0-9]+}}, 0>
// CHECK: ratrain.backward %view4, %{{.*}} mb(0) {ratrain.buffers = array<i64: [[G4:[0-9]+]], {{[0-9]+}}, 1451008>}
// CHECK: ratrain.backward %view4, %{{.*}} mb(1) {ratrain.buffers = array<i64: [[G4]], {{[0-9]+}}, 1451008>}
// CHECK: ratrain.sync reduce_scatter %{{.*}} {ratrain.buffers = array<i64: [[G4]], {{[0-9]+}}, 1451008>} : !ratrain.grad<4, ready>
// CHECK: ratrain.wait %{{.*}} {ratrain.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, 181376>} : !ratrain.async<!ratrain.grad<4, synced>>
