// Programs with missing or late waits: --mt3k-verify reports each hazard
// (naming the conflicting operation, the asynchronous one and its token),
// --mt3k-insert-waits places the wait right before the first conflicting
// operation, and the result verifies. Inserting again changes nothing.

// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --mt3k-verify
// RUN: ratrain-opt %s -split-input-file --mt3k-insert-waits --mt3k-verify > %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: ratrain-opt %t.mlir -split-input-file --mt3k-insert-waits > %t.again.mlir
// RUN: diff %t.mlir %t.again.mlir

// A kernel reads the GSM tile a DMA is still writing, and the DMA's token is
// never waited on (read-after-write).
// CHECK-LABEL: mt3k.program @raw
// CHECK: %[[T:.*]] = mt3k.dma
// CHECK-NEXT: mt3k.wait %[[T]]{{$}}
// CHECK-NEXT: mt3k.elementwise scale
// CHECK-NOT: mt3k.wait
// CHECK: }
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @raw stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<gsm, 64xf32>
  // expected-note @+2 {{asynchronous operation started here}}
  // expected-error @+1 {{'mt3k.dma' op token is never waited on}}
  %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
  // expected-error @+1 {{'mt3k.elementwise' op reads gsm bytes [0, 256) of buffer 'b' that an unfinished 'mt3k.dma' writes; wait on its token first (token %2, read-after-write)}}
  mt3k.elementwise scale ins(%b : !mt3k.buffer<gsm, 64xf32>) outs(%b : !mt3k.buffer<gsm, 64xf32>) scale 2.0
}

// -----

// The wait comes too late: the fill overwrites what the send still reads
// (write-after-read). The token moves to a wait before the fill; the late
// wait, left empty, goes.
// CHECK-LABEL: mt3k.program @war
// CHECK: %[[T:.*]] = mt3k.send
// CHECK-NEXT: mt3k.gemm
// CHECK-NEXT: mt3k.wait %[[T]]{{$}}
// CHECK-NEXT: mt3k.fill
// CHECK-NOT: mt3k.wait
// CHECK: }
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 2
mt3k.program @war stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x8xf32>
  %c = mt3k.buffer "c" at 256 : !mt3k.buffer<ddr, 8x8xf32>
  // expected-note @+1 {{asynchronous operation started here}}
  %t = mt3k.send %a to 1 on @pp tag 0 : !mt3k.buffer<ddr, 8x8xf32>
  // Reading what a send reads is fine.
  mt3k.gemm %a, %a -> %c : !mt3k.buffer<ddr, 8x8xf32>, !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<ddr, 8x8xf32>
  // expected-error @+1 {{'mt3k.fill' op writes ddr bytes [0, 256) of buffer 'a' that an unfinished 'mt3k.send' reads; wait on its token first (token %2, write-after-read)}}
  mt3k.fill %a, 0.0 : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %t
}

// -----

// Two transfers share a late wait; only the recv conflicts (the gemm reads
// a view of what it writes), so only its token moves.
// CHECK-LABEL: mt3k.program @shared
// CHECK: %[[S:.*]] = mt3k.send
// CHECK-NEXT: %[[R:.*]] = mt3k.recv
// CHECK-NEXT: mt3k.wait %[[R]]{{$}}
// CHECK-NEXT: mt3k.gemm
// CHECK-NEXT: mt3k.wait %[[S]]{{$}}
// CHECK-NEXT: }
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 2
mt3k.program @shared stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x8xf32>
  %in = mt3k.buffer "in" at 256 : !mt3k.buffer<ddr, 128xf32>
  %c = mt3k.buffer "c" at 1024 : !mt3k.buffer<ddr, 8x8xf32>
  %rows = mt3k.view %in[256] : !mt3k.buffer<ddr, 128xf32> to !mt3k.buffer<ddr, 8x8xf32>
  %s = mt3k.send %a to 1 on @pp tag 0 : !mt3k.buffer<ddr, 8x8xf32>
  // expected-note @+1 {{asynchronous operation started here}}
  %r = mt3k.recv %in from 1 on @pp tag 1 : !mt3k.buffer<ddr, 128xf32>
  // expected-error @+1 {{'mt3k.gemm' op reads ddr bytes [512, 768) of buffer 'in' that an unfinished 'mt3k.recv' writes; wait on its token first (token %5, read-after-write)}}
  mt3k.gemm %a, %rows -> %c : !mt3k.buffer<ddr, 8x8xf32>, !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %s, %r
}

// -----

// A token nothing conflicts with but nobody waits on is waited on at the end.
// Two DMAs into the same AM offset of different cores do not overlap.
// CHECK-LABEL: mt3k.program @end
// CHECK: %[[T0:.*]] = mt3k.dma
// CHECK-NEXT: %[[T1:.*]] = mt3k.dma
// CHECK-NEXT: mt3k.wait %[[T0]]{{$}}
// CHECK-NEXT: mt3k.fill
// CHECK-NEXT: mt3k.wait %[[T1]]{{$}}
// CHECK-NEXT: }
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @end stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<am, 64xf32>
  %c = mt3k.buffer "c" at 256 : !mt3k.buffer<ddr, 64xf32>
  %t0 = mt3k.dma %a -> %b core 1 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<am, 64xf32>
  // expected-error @+1 {{'mt3k.dma' op token is never waited on}}
  %t1 = mt3k.dma %a -> %b core 2 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<am, 64xf32>
  mt3k.wait %t0
  mt3k.fill %c, 1.0 : !mt3k.buffer<ddr, 64xf32>
}

// -----

// A prologue offload is waited on within the prologue, before the first
// operation of the iteration, even where the conflict comes later; the
// reload of its key reads the slot the offload writes.
// CHECK-LABEL: mt3k.program @prologue
// CHECK: %[[P:.*]] = mt3k.offload %{{.*}} to host "s" {mt3k.prologue}
// CHECK-NEXT: mt3k.init_param zeros
// CHECK-NEXT: mt3k.wait %[[P]] {mt3k.prologue}
// CHECK-NEXT: mt3k.fill
// CHECK-NEXT: mt3k.reload
// CHECK-NEXT: mt3k.wait
// CHECK-NEXT: }
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @prologue stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xf32>
  %c = mt3k.buffer "c" at 512 : !mt3k.buffer<ddr, 64xf32>
  mt3k.init_param zeros %a "s" : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+2 {{offloaded here}}
  // expected-error @+1 {{token is never waited on}}
  %p = mt3k.offload %a to host "s" {mt3k.prologue} : !mt3k.buffer<ddr, 64xf32>
  mt3k.init_param zeros %b "w" : !mt3k.buffer<ddr, 64xf32>
  mt3k.fill %c, 1.0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.reload' op reloads key 's' before its offload is waited on (token %3, read-after-write)}}
  %r = mt3k.reload %b from host "s" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %r
}

// -----

// Two DMAs into the two halves of one group slot (AdamW's chunks of a ZeRO
// view shard written into the rank's block of the view): the slot's block
// is known at run time only, but views of the same slot compare by their
// offsets in it, so the second DMA needs no wait on the first. A DMA into
// the view outside the slot does (the slot may be any block).
// CHECK-LABEL: mt3k.program @slot
// CHECK: %[[T0:.*]] = mt3k.dma %{{.*}} -> %{{.*}} : !mt3k.buffer<gsm, 8xf32> -> !mt3k.buffer<ddr, 8xf32>
// CHECK-NEXT: %[[T1:.*]] = mt3k.dma
// CHECK-NEXT: mt3k.wait %[[T0]], %[[T1]]{{$}}
// CHECK-NEXT: %[[T2:.*]] = mt3k.dma
// CHECK-NEXT: mt3k.wait %[[T2]]{{$}}
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @slot stage 0 {
  %view = mt3k.buffer "view" at 0 : !mt3k.buffer<ddr, 64xf32>
  %staged = mt3k.buffer "staged" at 0 : !mt3k.buffer<gsm, 16xf32>
  %own = mt3k.group_slot %view on @dp : !mt3k.buffer<ddr, 64xf32> to !mt3k.buffer<ddr, 16xf32>
  %low = mt3k.view %own[0] : !mt3k.buffer<ddr, 16xf32> to !mt3k.buffer<ddr, 8xf32>
  %high = mt3k.view %own[32] : !mt3k.buffer<ddr, 16xf32> to !mt3k.buffer<ddr, 8xf32>
  %first = mt3k.view %staged[0] : !mt3k.buffer<gsm, 16xf32> to !mt3k.buffer<gsm, 8xf32>
  %second = mt3k.view %staged[32] : !mt3k.buffer<gsm, 16xf32> to !mt3k.buffer<gsm, 8xf32>
  %whole = mt3k.view %view[64] : !mt3k.buffer<ddr, 64xf32> to !mt3k.buffer<ddr, 8xf32>
  // expected-note @+1 {{asynchronous operation started here}}
  %t0 = mt3k.dma %first -> %low : !mt3k.buffer<gsm, 8xf32> -> !mt3k.buffer<ddr, 8xf32>
  // expected-note @+1 {{asynchronous operation started here}}
  %t1 = mt3k.dma %second -> %high : !mt3k.buffer<gsm, 8xf32> -> !mt3k.buffer<ddr, 8xf32>
  // expected-error @+2 {{'mt3k.dma' op writes ddr bytes [64, 96) of buffer 'view' that an unfinished 'mt3k.dma' writes; wait on its token first (token %8, write-after-write)}}
  // expected-error @+1 {{'mt3k.dma' op writes ddr bytes [64, 96) of buffer 'view' that an unfinished 'mt3k.dma' writes; wait on its token first (token %9, write-after-write)}}
  %t2 = mt3k.dma %first -> %whole : !mt3k.buffer<gsm, 8xf32> -> !mt3k.buffer<ddr, 8xf32>
  mt3k.wait %t0, %t1, %t2
}
