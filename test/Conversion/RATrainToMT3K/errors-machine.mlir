// Errors of --ratrain-lower-to-mt3k that depend on its options or on the
// machine file (docs/lowering.md, "Not lowered (errors)"), on the valid
// schedule of decoder-layer.mlir (a tiny fp32 LLaMA, 1 stage; its assigned
// arena is 897888 bytes and its last buffer, the token ids, sits at 897856,
// a multiple of 64 but not of 128).

// The machine comes from the option or from the module's ratrain.machine.
// RUN: not ratrain-opt %s --ratrain-lower-to-mt3k 2>&1 | FileCheck %s --check-prefix=NO-MACHINE
// NO-MACHINE: error: no machine file: pass machine=<file> or import with --machine

// An explicit alignment must divide every assigned offset ...
// RUN: not ratrain-opt %s --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml alignment=128" 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: error: 'ratrain.stage' op stage 0: activations of layer 0 mb 0 is at offset 897856, not a multiple of the alignment 128
// ... and be a power of two; one that divides them is recorded on the
// machine (auto: the largest power of two up to 64 that does).
// RUN: not ratrain-opt %s --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml alignment=48" 2>&1 | FileCheck %s --check-prefix=POW2
// POW2: error: --ratrain-lower-to-mt3k: alignment 48 is not a power of two
// RUN: ratrain-opt %s --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml alignment=32" | FileCheck %s --check-prefix=ALIGN32
// ALIGN32: mt3k.machine "tiny" ddr 16000000 gsm 1048576 am 65536 cores 4 dma_channels 4 alignment 32
// RUN: ratrain-opt %s --ratrain-lower-to-mt3k="machine=%S/Inputs/tiny.yaml" | FileCheck %s --check-prefix=AUTO
// AUTO: mt3k.machine "tiny" ddr 16000000 gsm 1048576 am 65536 cores 4 dma_channels 4 alignment 64

// The assigned arena plus the lowering's scratch area (10272 bytes here:
// stream, R1, R2) must fit the machine's DDR.
// RUN: sed 's/^  ddr_bytes: 16000000$/  ddr_bytes: 900000/' %S/Inputs/tiny.yaml > %t.small-ddr.yaml
// RUN: not ratrain-opt %s --ratrain-lower-to-mt3k=machine=%t.small-ddr.yaml 2>&1 | FileCheck %s --check-prefix=DDR
// DDR: error: 'ratrain.stage' op stage 0 needs 908160 bytes of DDR once lowered (897888 assigned + 10272 of kernel temporaries and outgoing messages), but a cluster has 900000

// GSM must hold two aligned AdamW staging slots.
// RUN: sed 's/^  gsm_bytes: 1048576$/  gsm_bytes: 100/' %S/Inputs/tiny.yaml > %t.tiny-gsm.yaml
// RUN: not ratrain-opt %s --ratrain-lower-to-mt3k=machine=%t.tiny-gsm.yaml 2>&1 | FileCheck %s --check-prefix=GSM
// GSM: error: 'ratrain.stage' op the machine's GSM (100 bytes) is too small for two staging slots

ratrain.model @tiny family("llama") dtype(f32) seq_len(8) max_positions(16) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(128)
  ratrain.layer 2 head hidden(64) vocab(128)
}

ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<clusters = 1, pp = 1, dp = 1, micro_batch_size = 1, micro_batches = 1, zero = 0, stage_layers = [3], recompute = [none], step_us = 1000, peak_bytes = 1000000> policy ratrain {
  ratrain.stage 0 layers [0, 3)
      states(%view0: !ratrain.view<0>, %master0: !ratrain.master<0>, %opt0: !ratrain.opt_state<0>,
             %view1: !ratrain.view<1>, %master1: !ratrain.master<1>, %opt1: !ratrain.opt_state<1>,
             %view2: !ratrain.view<2>, %master2: !ratrain.master<2>, %opt2: !ratrain.opt_state<2>)
      attributes {ratrain.arena_bytes = 897888 : i64,
                  ratrain.arg_buffers = array<i64: 0, 0, 32768,       1, 0, 0, 2, 32768, 65536,
                                                   3, 98304, 164352,  4, 0, 0, 5, 262656, 328704,
                                                   6, 591360, 33024,  7, 0, 0, 8, 624384, 66048>,
                  ratrain.scratch_buffers = {attention_scratch = array<i64: 17, 0, 0>,
                                             sync_staging = array<i64: 16, 0, 0>,
                                             workspace = array<i64: 15, 690432, 8192>}} {
    // Forward of micro-batch 0: embedding, decoder, head.
    %act0 = ratrain.forward %view0 mb(0) {ratrain.buffers = array<i64: 9, 897856, 32>} : !ratrain.view<0> -> !ratrain.act<0, full>
    %act1 = ratrain.forward %view1 mb(0) {ratrain.buffers = array<i64: 10, 862976, 34880>} : !ratrain.view<1> -> !ratrain.act<1, full>
    %act2 = ratrain.forward %view2 mb(0) {ratrain.buffers = array<i64: 11, 731648, 12320>} : !ratrain.view<2> -> !ratrain.act<2, full>
    // Head: backward, then its gradient's lifecycle (sync, update, view).
    %g2 = ratrain.backward %view2, %act2 mb(0) {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.view<2>, !ratrain.act<2, full>
    %ready2 = ratrain.grad_ready %g2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, partial>
    %sync2 = ratrain.sync all_reduce %ready2 hierarchy flat {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.grad<2, ready> -> !ratrain.async<!ratrain.grad<2, synced>>
    %synced2 = ratrain.wait %sync2 {ratrain.buffers = array<i64: 12, 698624, 33024>} : !ratrain.async<!ratrain.grad<2, synced>>
    %master2n, %opt2n = ratrain.update adamw %synced2, %master2, %opt2 {ratrain.buffers = array<i64: 7, 0, 0, 8, 624384, 66048>} : !ratrain.grad<2, synced>, !ratrain.master<2>, !ratrain.opt_state<2>
    %cast2 = ratrain.view_prefetch %master2n {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.master<2>
    // Decoder: backward (its gradient reuses the head gradient's bytes).
    %g1 = ratrain.backward %view1, %act1 mb(0) {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.view<1>, !ratrain.act<1, full>
    %ready1 = ratrain.grad_ready %g1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, partial>
    %sync1 = ratrain.sync all_reduce %ready1 hierarchy flat {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.grad<1, ready> -> !ratrain.async<!ratrain.grad<1, synced>>
    %synced1 = ratrain.wait %sync1 {ratrain.buffers = array<i64: 13, 698624, 164352>} : !ratrain.async<!ratrain.grad<1, synced>>
    %master1n, %opt1n = ratrain.update adamw %synced1, %master1, %opt1 {ratrain.buffers = array<i64: 4, 0, 0, 5, 262656, 328704>} : !ratrain.grad<1, synced>, !ratrain.master<1>, !ratrain.opt_state<1>
    %cast1 = ratrain.view_prefetch %master1n {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.master<1>
    // Embedding.
    %g0 = ratrain.backward %view0, %act0 mb(0) {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.view<0>, !ratrain.act<0, full>
    %ready0 = ratrain.grad_ready %g0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, partial>
    %sync0 = ratrain.sync all_reduce %ready0 hierarchy flat {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.grad<0, ready> -> !ratrain.async<!ratrain.grad<0, synced>>
    %synced0 = ratrain.wait %sync0 {ratrain.buffers = array<i64: 14, 698624, 32768>} : !ratrain.async<!ratrain.grad<0, synced>>
    %master0n, %opt0n = ratrain.update adamw %synced0, %master0, %opt0 {ratrain.buffers = array<i64: 1, 0, 0, 2, 32768, 65536>} : !ratrain.grad<0, synced>, !ratrain.master<0>, !ratrain.opt_state<0>
    %cast0 = ratrain.view_prefetch %master0n {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.master<0>
    // The views are in place before the next step.
    %view0n = ratrain.wait %cast0 {ratrain.buffers = array<i64: 0, 0, 32768>} : !ratrain.async<!ratrain.view<0>>
    %view1n = ratrain.wait %cast1 {ratrain.buffers = array<i64: 3, 98304, 164352>} : !ratrain.async<!ratrain.view<1>>
    %view2n = ratrain.wait %cast2 {ratrain.buffers = array<i64: 6, 591360, 33024>} : !ratrain.async<!ratrain.view<2>>
    ratrain.yield %view0n, %master0n, %opt0n, %view1n, %master1n, %opt1n, %view2n, %master2n, %opt2n : !ratrain.view<0>, !ratrain.master<0>, !ratrain.opt_state<0>, !ratrain.view<1>, !ratrain.master<1>, !ratrain.opt_state<1>, !ratrain.view<2>, !ratrain.master<2>, !ratrain.opt_state<2>
  }
}
