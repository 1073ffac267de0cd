// RUN: ratrain-opt %s -split-input-file -verify-diagnostics

// A quantized wire encodes f32, bf16 or f16 and reduces by sum or avg.

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 16xf32>
  // expected-error @+1 {{a int8 wire reduces by sum or avg, not max}}
  %t = mt3k.reduce_scatter max %a -> %b on @dp ring wire int8 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 16xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16xi32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xi32>
  // expected-error @+1 {{a int4 wire quantizes f32, bf16 or f16 elements, not 'i32'}}
  %t = mt3k.all_gather %a -> %b on @dp ring wire int4 : !mt3k.buffer<ddr, 16xi32> -> !mt3k.buffer<ddr, 64xi32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+2 {{expected ::ratrain::mt3k::WireType to be one of: int8, int4}}
  // expected-error @+1 {{failed to parse MT3K_WireTypeAttr parameter 'value'}}
  %t = mt3k.all_gather %a -> %b on @dp ring wire fp8 : !mt3k.buffer<ddr, 16xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}
