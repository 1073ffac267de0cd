// Outlined layers (the default of --ratrain-lower-to-mt3k, docs/lowering.md
// "Outlined layers"): a decoder layer's forward, recompute and backward are a
// `func.func` whose arguments are the buffers the kernel sequence uses (the
// layer's view and gradient, the micro-batch's activations, the boundary
// buffers, the scratch regions); every layer and micro-batch with the same
// sequence calls the same function with its own buffers, so a program grows
// by one call per layer and micro-batch instead of one kernel sequence. The
// waits a call needs come from its arguments' effects: here the third
// forward of stage 0 writes outbox slot 0 again, so the send of micro-batch
// 0 from that slot is waited on right before the call.
//
// Input: the hand-written 2-stage, 3-micro-batch schedule of
// pipeline-send-recv.mlir (one decoder layer per stage).
//
// RUN: ratrain-opt %S/pipeline-send-recv.mlir --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml" > %t.mlir
// RUN: FileCheck %s < %t.mlir
// One forward and two backward variants (the first backward does not
// accumulate into the gradient), called 6 times (3 micro-batches x forward
// and backward of the stage-0 layer).
// RUN: grep -c 'func.func private' %t.mlir | FileCheck %s --check-prefix=FUNCS
// RUN: grep -c 'func.call' %t.mlir | FileCheck %s --check-prefix=CALLS
// FUNCS: 3
// CALLS: 6
// The hazard model sees through the calls: the program verifies and
// --mt3k-insert-waits finds no wait missing.
// RUN: ratrain-opt %t.mlir --mt3k-verify > /dev/null
// RUN: ratrain-opt %t.mlir --mt3k-insert-waits > %t.rewaited.mlir
// RUN: ratrain-opt %t.mlir > %t.printed.mlir
// RUN: diff %t.printed.mlir %t.rewaited.mlir
// The unrolled form has no functions and the same kernels at each use.
// RUN: ratrain-opt %S/pipeline-send-recv.mlir --ratrain-lower-to-mt3k="trace-spans=false machine=%S/Inputs/tiny.yaml outline-layers=false" \
// RUN:   | FileCheck %s --check-prefix=UNROLLED
// UNROLLED-NOT: func.func
// UNROLLED: mt3k.program @stage0
// The C++ emitter makes each function a static C++ function of tensors.
// RUN: ratrain-translate --mt3k-to-cpp %t.mlir | FileCheck %s --check-prefix=CPP

// The body: views of the arguments, then the kernels; no waits inside.
// CHECK-LABEL: func.func private @decoder_forward_0(
// CHECK-SAME: %[[W:arg0]]: !mt3k.buffer<ddr, 164352xi8>
// CHECK-NEXT: mt3k.view %[[W]][0] : !mt3k.buffer<ddr, 164352xi8> to !mt3k.buffer<ddr, 64xf32>
// CHECK-NOT: mt3k.wait
// CHECK: mt3k.rmsnorm_fwd
// CHECK-NOT: mt3k.wait
// CHECK: mt3k.attention_fwd
// CHECK-NOT: mt3k.wait
// CHECK: return
// CHECK-LABEL: func.func private @decoder_backward_1(
// CHECK-NOT: mt3k.wait
// CHECK: mt3k.attention_bwd
// CHECK: return
// CHECK-LABEL: func.func private @decoder_backward_2(
// CHECK: return

// Stage 0: one call per micro-batch with that micro-batch's buffers; the
// layer's view (the first argument) is the same in every call.
// CHECK-LABEL: mt3k.program @stage0
// CHECK: func.call @decoder_forward_0(%[[VIEW:[0-9]+]], %[[ACT0:[0-9]+]], %[[OUT0:[0-9]+]],
// CHECK-NEXT: %[[SEND0:[0-9]+]] = mt3k.send
// CHECK: func.call @decoder_forward_0(%[[VIEW]], %[[ACT1:[0-9]+]], %[[OUT1:[0-9]+]],
// CHECK: func.call @decoder_backward_1(%[[VIEW]], %[[GRAD:[0-9]+]], %[[ACT0]],
// The third forward writes outbox slot 0 again: wait for its send first.
// CHECK: mt3k.wait %[[SEND0]]
// CHECK-NEXT: func.call @decoder_forward_0(%[[VIEW]], %{{[0-9]+}}, %[[OUT0]],
// CHECK: func.call @decoder_backward_2(%[[VIEW]], %[[GRAD]], %[[ACT1]],
// CHECK: func.call @decoder_backward_2(%[[VIEW]], %[[GRAD]],
// CHECK-LABEL: mt3k.program @stage1

// CPP: static void decoder_forward_0(ratrain::rt::emit::Tensor
// CPP: static void decoder_backward_1(
// CPP: static void decoder_backward_2(
// CPP: decoder_forward_0(
