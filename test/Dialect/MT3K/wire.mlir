// RUN: ratrain-opt %s | ratrain-opt | FileCheck %s
// RUN: ratrain-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// The optional `wire` of mt3k.reduce_scatter and mt3k.all_gather (ZeRO++
// qgZ / qwZ): printed after the algorithm, absent for native elements.
// Invalid uses are in wire-invalid.mlir.

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 8192xf32>
  %s = mt3k.buffer "s" at 32768 : !mt3k.buffer<ddr, 2048xf32>
  %w = mt3k.buffer "w" at 40960 : !mt3k.buffer<ddr, 8192xbf16>
  %ws = mt3k.buffer "ws" at 57344 : !mt3k.buffer<ddr, 2048xbf16>
  // CHECK: mt3k.reduce_scatter avg %{{.*}} -> %{{.*}} on @dp hierarchical wire int4 : !mt3k.buffer<ddr, 8192xf32> -> !mt3k.buffer<ddr, 2048xf32>
  // GENERIC: "mt3k.reduce_scatter"({{.*}}) <{algorithm = #mt3k<algorithm hierarchical>, group = @dp, reduce = #mt3k<reduce avg>, wire = #mt3k<wire int4>}>
  %rs = mt3k.reduce_scatter avg %g -> %s on @dp hierarchical wire int4 : !mt3k.buffer<ddr, 8192xf32> -> !mt3k.buffer<ddr, 2048xf32>
  // CHECK: mt3k.all_gather %{{.*}} -> %{{.*}} on @dp ring wire int8 : !mt3k.buffer<ddr, 2048xbf16> -> !mt3k.buffer<ddr, 8192xbf16>
  // GENERIC: "mt3k.all_gather"({{.*}}) <{algorithm = #mt3k<algorithm ring>, group = @dp, wire = #mt3k<wire int8>}>
  %ag = mt3k.all_gather %ws -> %w on @dp ring wire int8 : !mt3k.buffer<ddr, 2048xbf16> -> !mt3k.buffer<ddr, 8192xbf16>
  // CHECK: mt3k.all_gather %{{.*}} -> %{{.*}} on @dp ring : !mt3k.buffer<ddr, 2048xbf16> -> !mt3k.buffer<ddr, 8192xbf16>
  // GENERIC: "mt3k.all_gather"({{.*}}) <{algorithm = #mt3k<algorithm ring>, group = @dp}>
  %ag2 = mt3k.all_gather %ws -> %w on @dp ring : !mt3k.buffer<ddr, 2048xbf16> -> !mt3k.buffer<ddr, 8192xbf16>
  mt3k.wait %rs, %ag, %ag2
}
