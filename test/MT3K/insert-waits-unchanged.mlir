// A program whose waits are all in place (early enough, each token once)
// verifies and leaves --mt3k-insert-waits unchanged, including waits that
// come later than they need to and transfers that overlap other work.

// RUN: ratrain-opt %s > %t.before.mlir
// RUN: ratrain-opt %s --mt3k-insert-waits --mt3k-verify > %t.after.mlir
// RUN: diff %t.before.mlir %t.after.mlir
// RUN: FileCheck %s < %t.after.mlir

// CHECK-LABEL: mt3k.program @stage0
// CHECK-COUNT-4: mt3k.wait
// CHECK-NOT: mt3k.wait
// CHECK-LABEL: mt3k.program @stage1
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 2
mt3k.group @pp pipeline size 2
mt3k.program @stage0 stage 0 {
  %w = mt3k.buffer "w" at 0 : !mt3k.buffer<ddr, 8x8xf32>
  %s = mt3k.buffer "s" at 256 : !mt3k.buffer<ddr, 8x8xf32>
  %x = mt3k.buffer "x" at 512 : !mt3k.buffer<ddr, 8x8xf32>
  %y = mt3k.buffer "y" at 768 : !mt3k.buffer<ddr, 8x8xf32>
  %g = mt3k.buffer "g" at 1024 : !mt3k.buffer<ddr, 8x8xf32>
  %v = mt3k.buffer "v" at 1280 : !mt3k.buffer<ddr, 8x8xf32>
  %tile = mt3k.buffer "tile" at 0 : !mt3k.buffer<gsm, 8x8xf32>
  %am = mt3k.buffer "am" at 0 : !mt3k.buffer<am, 8x8xf32>
  mt3k.init_param normal %w "w" std 2.0e-02 : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.init_param zeros %s "s" : !mt3k.buffer<ddr, 8x8xf32>
  %p = mt3k.offload %s to host "s" {mt3k.prologue} : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %p {mt3k.prologue}
  // Staging overlaps the forward gemm, which only reads what the DMAs read.
  %d0 = mt3k.dma %w -> %tile : !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<gsm, 8x8xf32>
  %d1 = mt3k.dma %w -> %am core 0 : !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<am, 8x8xf32>
  %d2 = mt3k.dma %w -> %am core 1 : !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<am, 8x8xf32>
  mt3k.gemm %x, %w -> %y transpose_b : !mt3k.buffer<ddr, 8x8xf32>, !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<ddr, 8x8xf32>
  %t = mt3k.send %y to 1 on @pp tag 0 : !mt3k.buffer<ddr, 8x8xf32>
  %r = mt3k.reload %s from host "s" : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.gemm %x, %x -> %g : !mt3k.buffer<ddr, 8x8xf32>, !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %d0, %d1, %d2, %r
  %a = mt3k.all_reduce avg %g -> %g on @dp ring : !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %a
  mt3k.adamw %g, %w, %s, %v -> %x lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 8x8xf32>, !mt3k.buffer<ddr, 8x8xf32>, !mt3k.buffer<ddr, 8x8xf32>, !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<ddr, 8x8xf32>
  %o = mt3k.offload %s to host "s" : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %t, %o
}
mt3k.program @stage1 stage 1 {
  %y = mt3k.buffer "y" at 0 : !mt3k.buffer<ddr, 8x8xf32>
  %r = mt3k.recv %y from 0 on @pp tag 0 : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %r
  mt3k.fill %y, 0.0 : !mt3k.buffer<ddr, 8x8xf32>
}
