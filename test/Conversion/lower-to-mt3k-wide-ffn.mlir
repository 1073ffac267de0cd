// An FFN much wider than 4h (ffn = 31h): the 34sbh activation formula
// (fused attention on MT-3000) is 139776 bytes per layer and micro-batch,
// less than the lowering's layout of x, xn1, q, k, v, o, x2, xn2, gate, up
// and the f32 statistics (578560 bytes). The memory model sizes the stored
// activations to the layout, so the assigned buffers hold what the lowering
// stores and the stage lowers.

// RUN: ratrain-opt %s \
// RUN:   --ratrain-expand-1f1b --ratrain-schedule-lifecycle=machine=%examples/machines/mt3000.yaml \
// RUN:   --ratrain-assign-buffers=machine=%examples/machines/mt3000.yaml --ratrain-verify-schedule \
// RUN:   --ratrain-lower-to-mt3k=machine=%examples/machines/mt3000.yaml | FileCheck %s

// CHECK: mt3k.program @stage0 stage 0 ddr_arena {{[0-9]+}}
// CHECK: "act.layer1.mb0"{{.*}}578560
// CHECK: mt3k.program @stage1 stage 1 ddr_arena {{[0-9]+}}
ratrain.model @wide family("llama") dtype(bf16) seq_len(64) max_positions(128) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(2000)
  ratrain.layer 2 decoder hidden(64) heads(2) kv_heads(2) ffn(2000)
  ratrain.layer 3 head hidden(64) vocab(128)
}
