// RUN: ratrain-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the mt3k dialect (and a few of the ODS
// constraints it relies on). The program-wide checks of --mt3k-verify
// (waits, hazards, offload keys, pipeline traffic) are in
// test/MT3K/verify-invalid.mlir. Capacities: DDR 1 MiB, GSM 64 KiB, AM 4 KiB per
// core, 4 cores, 2 DMA channels, 64-byte alignment.

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{buffer dimensions must be positive, got 0}}
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 4x0xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{buffer element type must be f32, f16, bf16, i8, i32 or i64, got 'f64'}}
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 4xf64>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{buffer size overflows 64 bits}}
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 4294967296x4294967296xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{unknown memory space 'hbm', expected ddr, gsm or am}}
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<hbm, 4xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
// expected-error @+1 {{duplicates the module's machine; a module describes one machine}}
mt3k.machine "again" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64

// -----

// expected-error @+1 {{attribute 'alignment' failed to satisfy constraint: 64-bit signless integer attribute whose value is a power of two > 0}}
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 48

// -----

// expected-error @+1 {{needs an 'mt3k.machine' in the enclosing module}}
mt3k.program @p stage 0 {
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
// expected-error @+1 {{DDR arena of 2097152 bytes exceeds the machine's DDR capacity of 1048576 bytes}}
mt3k.program @p stage 0 ddr_arena 2097152 {
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{offset 32 of buffer 'a' is not a multiple of the machine alignment of 64 bytes}}
  %a = mt3k.buffer "a" at 32 : !mt3k.buffer<ddr, 4xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 ddr_arena 4096 {
  // expected-error @+1 {{buffer 'a' [0, 8192) exceeds the DDR arena of 4096 bytes of program @p}}
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 2048xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{buffer 'a' [1048512, 1048640) exceeds the ddr capacity of 1048576 bytes}}
  %a = mt3k.buffer "a" at 1048512 : !mt3k.buffer<ddr, 32xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{buffer 'tile' [0, 8192) exceeds the am capacity of 4096 bytes per core}}
  %a = mt3k.buffer "tile" at 0 : !mt3k.buffer<am, 32x64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{buffer 'tile' [65536, 65792) exceeds the gsm capacity of 65536 bytes}}
  %a = mt3k.buffer "tile" at 65536 : !mt3k.buffer<gsm, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
// expected-error @+1 {{'mt3k.buffer' op expects parent op 'mt3k.program'}}
%a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 4xf32>

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{a view stays in its source's memory space, got ddr -> gsm}}
  %v = mt3k.view %a[0] : !mt3k.buffer<ddr, 64xf32> to !mt3k.buffer<gsm, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{byte offset 6 is not a multiple of the element size of 4 bytes}}
  %v = mt3k.view %a[6] : !mt3k.buffer<ddr, 64xf32> to !mt3k.buffer<ddr, 8xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{view [240, 272) exceeds its source of 256 bytes}}
  %v = mt3k.view %a[240] : !mt3k.buffer<ddr, 64xf32> to !mt3k.buffer<ddr, 8xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{DMA between incompatible spaces: ddr -> ddr (allowed: ddr <-> gsm, ddr <-> am, gsm <-> am)}}
  %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<gsm, 128xf16>
  // expected-error @+1 {{source and destination element types differ: 'f32' vs 'f16'}}
  %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 128xf16>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<gsm, 32xf32>
  // expected-error @+1 {{source and destination sizes differ: 256 vs 128 bytes}}
  %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 32xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<gsm, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<am, 64xf32>
  // expected-error @+1 {{a DMA to or from am must name its 'core'}}
  %t = mt3k.dma %a -> %b : !mt3k.buffer<gsm, 64xf32> -> !mt3k.buffer<am, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<gsm, 64xf32>
  // expected-error @+1 {{'core' only applies to a DMA to or from am}}
  %t = mt3k.dma %a -> %b core 0 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<am, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{core 4 is out of range: the machine has 4 cores}}
  %t = mt3k.dma %a -> %b core 4 : !mt3k.buffer<am, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<gsm, 64xf32>
  // expected-error @+1 {{channel 2 is out of range: the machine has 2 DMA channels}}
  %t = mt3k.dma %a -> %b channel 2 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x16xbf16>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 16x4xf16>
  %c = mt3k.buffer "c" at 0 : !mt3k.buffer<ddr, 8x4xf32>
  // expected-error @+1 {{a and b must have the same element type, got 'bf16' and 'f16'}}
  mt3k.gemm %a, %b -> %c : !mt3k.buffer<ddr, 8x16xbf16>, !mt3k.buffer<ddr, 16x4xf16> -> !mt3k.buffer<ddr, 8x4xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x16xbf16>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 16x4xbf16>
  %c = mt3k.buffer "c" at 0 : !mt3k.buffer<ddr, 8x4xf16>
  // expected-error @+1 {{c must hold f32 or the element type of a and b, got 'f16'}}
  mt3k.gemm %a, %b -> %c : !mt3k.buffer<ddr, 8x16xbf16>, !mt3k.buffer<ddr, 16x4xbf16> -> !mt3k.buffer<ddr, 8x4xf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x16xbf16>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 16x4xbf16>
  %c = mt3k.buffer "c" at 0 : !mt3k.buffer<ddr, 8x4xf32>
  // expected-error @+1 {{contraction dimensions disagree: op(a) is 8x16, op(b) is 4x16}}
  mt3k.gemm %a, %b -> %c transpose_b : !mt3k.buffer<ddr, 8x16xbf16>, !mt3k.buffer<ddr, 16x4xbf16> -> !mt3k.buffer<ddr, 8x4xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 16x4xbf16>
  %c = mt3k.buffer "c" at 0 : !mt3k.buffer<ddr, 16x4xf32>
  // expected-error @+1 {{c is [16, 4], expected [8, 4]}}
  mt3k.gemm %a, %b -> %c transpose_a : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16x4xbf16> -> !mt3k.buffer<ddr, 16x4xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x16x1xbf16>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 16x4xbf16>
  %c = mt3k.buffer "c" at 0 : !mt3k.buffer<ddr, 8x4xf32>
  // expected-error @+1 {{operand #0 must be rank-2 mt3k buffer of floats, but got '!mt3k.buffer<ddr, 8x16x1xbf16>'}}
  mt3k.gemm %a, %b -> %c : !mt3k.buffer<ddr, 8x16x1xbf16>, !mt3k.buffer<ddr, 16x4xbf16> -> !mt3k.buffer<ddr, 8x4xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 1x16x2x8xf16>
  %o = mt3k.buffer "o" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x4x16xf32>
  // expected-error @+1 {{q, k, v and o must share one element type}}
  mt3k.attention_fwd %q, %k, %v -> %o, %lse : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xf16> -> !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x4x16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 1x16x1x8xbf16>
  %o = mt3k.buffer "o" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x4x16xf32>
  // expected-error @+1 {{k and v must have the same shape, got [1, 16, 2, 8] and [1, 16, 1, 8]}}
  mt3k.attention_fwd %q, %k, %v -> %o, %lse : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x1x8xbf16> -> !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x4x16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x16x2x4xbf16>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 1x16x2x4xbf16>
  %o = mt3k.buffer "o" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x4x16xf32>
  // expected-error @+1 {{q and k disagree on batch size or head dim: q is [1, 16, 4, 8], k is [1, 16, 2, 4]}}
  mt3k.attention_fwd %q, %k, %v -> %o, %lse : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x2x4xbf16>, !mt3k.buffer<ddr, 1x16x2x4xbf16> -> !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x4x16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x16x3x8xbf16>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 1x16x3x8xbf16>
  %o = mt3k.buffer "o" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x4x16xf32>
  // expected-error @+1 {{query heads (4) must be a multiple of key/value heads (3)}}
  mt3k.attention_fwd %q, %k, %v -> %o, %lse : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x3x8xbf16>, !mt3k.buffer<ddr, 1x16x3x8xbf16> -> !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x4x16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x32x2x8xbf16>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 1x32x2x8xbf16>
  %o = mt3k.buffer "o" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x4x16xf32>
  // expected-error @+1 {{causal attention needs equal query and key lengths, got 16 and 32}}
  mt3k.attention_fwd %q, %k, %v -> %o, %lse causal : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x32x2x8xbf16>, !mt3k.buffer<ddr, 1x32x2x8xbf16> -> !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x4x16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %o = mt3k.buffer "o" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x4x16xf32>
  // expected-error @+1 {{'o' must have the shape of 'q', got [1, 16, 2, 8] and [1, 16, 4, 8]}}
  mt3k.attention_fwd %q, %k, %v -> %o, %lse : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16> -> !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x4x16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %o = mt3k.buffer "o" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x16x4xf32>
  // expected-error @+1 {{lse must be [batch, heads, seq] = [1, 4, 16], got [1, 16, 4]}}
  mt3k.attention_fwd %q, %k, %v -> %o, %lse : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16> -> !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x4xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %o = mt3k.buffer "o" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x4x16xbf16>
  // expected-error @+1 {{operand #4 must be rank-3 mt3k buffer of f32, but got '!mt3k.buffer<ddr, 1x4x16xbf16>'}}
  mt3k.attention_fwd %q, %k, %v -> %o, %lse : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16> -> !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x4x16xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %lse = mt3k.buffer "lse" at 0 : !mt3k.buffer<ddr, 1x4x16xf32>
  %dq = mt3k.buffer "dq" at 0 : !mt3k.buffer<ddr, 1x16x4x8xf32>
  // expected-error @+1 {{'dq' must have the type of 'q', got '!mt3k.buffer<ddr, 1x16x4x8xf32>' and '!mt3k.buffer<ddr, 1x16x4x8xbf16>'}}
  mt3k.attention_bwd %q, %k, %k, %q, %q, %lse -> %dq, %k, %k causal : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x4x16xf32> -> !mt3k.buffer<ddr, 1x16x4x8xf32>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %x = mt3k.buffer "x" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %w = mt3k.buffer "w" at 0 : !mt3k.buffer<ddr, 16xbf16>
  %y = mt3k.buffer "y" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %r = mt3k.buffer "r" at 0 : !mt3k.buffer<ddr, 16xf32>
  // expected-error @+1 {{weight has 16 elements, expected the hidden size 8 of x}}
  mt3k.rmsnorm_fwd %x, %w -> %y, %r eps 1.0e-5 : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16xbf16> -> !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %x = mt3k.buffer "x" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %w = mt3k.buffer "w" at 0 : !mt3k.buffer<ddr, 8xbf16>
  %y = mt3k.buffer "y" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %r = mt3k.buffer "r" at 0 : !mt3k.buffer<ddr, 8xf32>
  // expected-error @+1 {{rstd has 8 elements, expected the row count 16 of x}}
  mt3k.rmsnorm_fwd %x, %w -> %y, %r eps 1.0e-5 : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 8xbf16> -> !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 8xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %x = mt3k.buffer "x" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %w = mt3k.buffer "w" at 0 : !mt3k.buffer<ddr, 8xbf16>
  %y = mt3k.buffer "y" at 0 : !mt3k.buffer<ddr, 8x16xbf16>
  %r = mt3k.buffer "r" at 0 : !mt3k.buffer<ddr, 16xf32>
  // expected-error @+1 {{'y' must have the shape of 'x', got [8, 16] and [16, 8]}}
  mt3k.rmsnorm_fwd %x, %w -> %y, %r eps 1.0e-5 : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 8xbf16> -> !mt3k.buffer<ddr, 8x16xbf16>, !mt3k.buffer<ddr, 16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %x = mt3k.buffer "x" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %w = mt3k.buffer "w" at 0 : !mt3k.buffer<ddr, 8xbf16>
  %r = mt3k.buffer "r" at 0 : !mt3k.buffer<ddr, 16xf32>
  %dw = mt3k.buffer "dw" at 0 : !mt3k.buffer<ddr, 16xf32>
  // expected-error @+1 {{'dweight' must have the shape of 'weight', got [16] and [8]}}
  mt3k.rmsnorm_bwd %x, %w, %r, %x -> %x, %dw accumulate : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 8xbf16>, !mt3k.buffer<ddr, 16xf32>, !mt3k.buffer<ddr, 16x8xbf16> -> !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  // expected-error @+1 {{'swiglu' takes 2 inputs and 1 outputs, got 1 and 1}}
  mt3k.elementwise swiglu ins(%a : !mt3k.buffer<ddr, 16x8xbf16>) outs(%b : !mt3k.buffer<ddr, 16x8xbf16>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  // expected-error @+1 {{'rope' needs a 'theta'}}
  mt3k.elementwise rope ins(%a : !mt3k.buffer<ddr, 1x16x2x8xbf16>) outs(%a : !mt3k.buffer<ddr, 1x16x2x8xbf16>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  // expected-error @+1 {{'theta' only applies to rope and rope_bwd}}
  mt3k.elementwise residual_add ins(%a, %a : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16x8xbf16>) outs(%a : !mt3k.buffer<ddr, 16x8xbf16>) theta 1.0e4
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  // expected-error @+1 {{'rope_scaling' only applies to rope and rope_bwd}}
  mt3k.elementwise residual_add ins(%a, %a : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16x8xbf16>) outs(%a : !mt3k.buffer<ddr, 16x8xbf16>) rope_scaling #mt3k.rope_scaling<method = linear, factor = 2.0>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  // expected-error @+1 {{llama3 rope scaling needs 'low_freq_factor', 'high_freq_factor' and 'original_max_positions'}}
  mt3k.elementwise rope ins(%a : !mt3k.buffer<ddr, 1x16x2x8xbf16>) outs(%a : !mt3k.buffer<ddr, 1x16x2x8xbf16>) theta 1.0e4 rope_scaling #mt3k.rope_scaling<method = llama3, factor = 8.0>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  // expected-error @+1 {{rope_scaling: 'factor' must be a positive number, got}}
  mt3k.elementwise rope ins(%a : !mt3k.buffer<ddr, 1x16x2x8xbf16>) outs(%a : !mt3k.buffer<ddr, 1x16x2x8xbf16>) theta 1.0e4 rope_scaling #mt3k.rope_scaling<method = linear, factor = 0.0>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  // expected-error @+1 {{'scale' needs a 'scale' factor}}
  mt3k.elementwise scale ins(%a : !mt3k.buffer<ddr, 16x8xbf16>) outs(%a : !mt3k.buffer<ddr, 16x8xbf16>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  // expected-error @+1 {{'scale' only applies to scale and cross_entropy_bwd}}
  mt3k.elementwise residual_add ins(%a, %a : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16x8xbf16>) outs(%a : !mt3k.buffer<ddr, 16x8xbf16>) scale 2.0
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 16x8xf32>
  // expected-error @+1 {{'residual_add' operands must all have the same type, got '!mt3k.buffer<ddr, 16x8xbf16>' and '!mt3k.buffer<ddr, 16x8xf32>'}}
  mt3k.elementwise residual_add ins(%a, %b : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16x8xf32>) outs(%a : !mt3k.buffer<ddr, 16x8xbf16>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 1x16x2x7xbf16>
  // expected-error @+1 {{'rope_bwd' operates on [batch, seq, heads, head_dim] buffers with an even head_dim, got [1, 16, 2, 7]}}
  mt3k.elementwise rope_bwd ins(%a : !mt3k.buffer<ddr, 1x16x2x7xbf16>) outs(%a : !mt3k.buffer<ddr, 1x16x2x7xbf16>) theta 1.0e4
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<ddr, 8x16xf32>
  // expected-error @+1 {{'cast' input and output must have the same shape}}
  mt3k.elementwise cast ins(%a : !mt3k.buffer<ddr, 16x8xbf16>) outs(%b : !mt3k.buffer<ddr, 8x16xf32>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %t = mt3k.buffer "t" at 0 : !mt3k.buffer<ddr, 100x8xbf16>
  %ids = mt3k.buffer "ids" at 0 : !mt3k.buffer<ddr, 16xi64>
  %x = mt3k.buffer "x" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  // expected-error @+1 {{'embedding' token ids must be a rank-1 i32 buffer}}
  mt3k.elementwise embedding ins(%t, %ids : !mt3k.buffer<ddr, 100x8xbf16>, !mt3k.buffer<ddr, 16xi64>) outs(%x : !mt3k.buffer<ddr, 16x8xbf16>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %t = mt3k.buffer "t" at 0 : !mt3k.buffer<ddr, 100x4xbf16>
  %ids = mt3k.buffer "ids" at 0 : !mt3k.buffer<ddr, 16xi32>
  %x = mt3k.buffer "x" at 0 : !mt3k.buffer<ddr, 16x8xbf16>
  // expected-error @+1 {{'embedding_bwd' expects a table [vocab, hidden] and activations [tokens, hidden] for ids [tokens], got table [100, 4], activations [16, 8], ids [16]}}
  mt3k.elementwise embedding_bwd ins(%ids, %x : !mt3k.buffer<ddr, 16xi32>, !mt3k.buffer<ddr, 16x8xbf16>) outs(%t : !mt3k.buffer<ddr, 100x4xbf16>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %l = mt3k.buffer "l" at 0 : !mt3k.buffer<ddr, 8x100xf32>
  %lab = mt3k.buffer "lab" at 0 : !mt3k.buffer<ddr, 16xi32>
  %loss = mt3k.buffer "loss" at 0 : !mt3k.buffer<ddr, f32>
  // expected-error @+1 {{'cross_entropy' expects logits [tokens, vocab] for labels [tokens], got logits [8, 100], labels [16]}}
  mt3k.elementwise cross_entropy ins(%l, %lab : !mt3k.buffer<ddr, 8x100xf32>, !mt3k.buffer<ddr, 16xi32>) outs(%loss : !mt3k.buffer<ddr, f32>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %l = mt3k.buffer "l" at 0 : !mt3k.buffer<ddr, 16x100xf32>
  %lab = mt3k.buffer "lab" at 0 : !mt3k.buffer<ddr, 16xi32>
  %loss = mt3k.buffer "loss" at 0 : !mt3k.buffer<ddr, 16xf32>
  // expected-error @+1 {{'cross_entropy' loss must be a rank-0 f32 buffer}}
  mt3k.elementwise cross_entropy ins(%l, %lab : !mt3k.buffer<ddr, 16x100xf32>, !mt3k.buffer<ddr, 16xi32>) outs(%loss : !mt3k.buffer<ddr, 16xf32>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %l = mt3k.buffer "l" at 0 : !mt3k.buffer<ddr, 16x100xf32>
  %lab = mt3k.buffer "lab" at 0 : !mt3k.buffer<ddr, 16xi32>
  %d = mt3k.buffer "d" at 0 : !mt3k.buffer<ddr, 16x50xf32>
  // expected-error @+1 {{'dlogits' must have the shape of 'logits', got [16, 50] and [16, 100]}}
  mt3k.elementwise cross_entropy_bwd ins(%l, %lab : !mt3k.buffer<ddr, 16x100xf32>, !mt3k.buffer<ddr, 16xi32>) outs(%d : !mt3k.buffer<ddr, 16x50xf32>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %mt = mt3k.buffer "mt" at 0 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 0 : !mt3k.buffer<ddr, 32xf32>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 0 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{'m' has 32 elements, expected 64 like 'grad'}}
  mt3k.adamw %g, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 32xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %mt = mt3k.buffer "mt" at 0 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 0 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 0 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{hyper-parameters out of range: need lr >= 0, 0 <= beta1, beta2 < 1, eps > 0, weight_decay >= 0}}
  mt3k.adamw %g, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 1.0 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %mt = mt3k.buffer "mt" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %m = mt3k.buffer "m" at 0 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 0 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 0 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{operand #1 must be mt3k buffer of f32, but got '!mt3k.buffer<ddr, 64xbf16>'}}
  mt3k.adamw %g, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %ids = mt3k.buffer "ids" at 0 : !mt3k.buffer<gsm, 16xi32>
  // expected-error @+1 {{operand #0 must be mt3k buffer of i32 in ddr, but got '!mt3k.buffer<gsm, 16xi32>'}}
  mt3k.load_batch inputs %ids micro_batch 0 : !mt3k.buffer<gsm, 16xi32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %l = mt3k.buffer "l" at 0 : !mt3k.buffer<ddr, 1xf32>
  // expected-error @+1 {{operand #0 must be rank-0 mt3k buffer of f32 in ddr, but got '!mt3k.buffer<ddr, 1xf32>'}}
  mt3k.report_loss %l micro_batch 0 : !mt3k.buffer<ddr, 1xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{source has 128 bytes, expected 4 (size of @dp) x 64 (the slot)}}
  %s = mt3k.group_slot %a on @dp : !mt3k.buffer<ddr, 64xbf16> to !mt3k.buffer<ddr, 32xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{a group slot stays in its source's memory space, got ddr -> gsm}}
  %s = mt3k.group_slot %a on @dp : !mt3k.buffer<ddr, 64xbf16> to !mt3k.buffer<gsm, 16xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 128xi8>
  // expected-error @+1 {{slot of 'bf16' elements in a source of 'i8' elements (they must agree)}}
  %s = mt3k.group_slot %a on @dp : !mt3k.buffer<ddr, 128xi8> to !mt3k.buffer<ddr, 16xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{'@dp' does not name an 'mt3k.group'}}
  %s = mt3k.group_slot %a on @dp : !mt3k.buffer<ddr, 64xbf16> to !mt3k.buffer<ddr, 16xbf16>
}

// -----

// An all-gather in place gathers into the buffer its source is the
// rank's block of, over the same group: not another group's slot, and not
// a block at a fixed offset (the runtime passes MPI_IN_PLACE on every rank
// or on none).
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 2
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %s = mt3k.group_slot %a on @pp : !mt3k.buffer<ddr, 64xbf16> to !mt3k.buffer<ddr, 32xbf16>
  // expected-error @+1 {{source overlaps the destination: ddr bytes [0, 128) and [0, 128); in place, the source must be the destination's 'mt3k.group_slot' on @dp}}
  %t = mt3k.all_gather %s -> %a on @dp ring : !mt3k.buffer<ddr, 32xbf16> -> !mt3k.buffer<ddr, 64xbf16>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %s = mt3k.view %a[64] : !mt3k.buffer<ddr, 64xbf16> to !mt3k.buffer<ddr, 32xbf16>
  // expected-error @+1 {{source overlaps the destination: ddr bytes [64, 128) and [0, 128); in place, the source must be the destination's 'mt3k.group_slot' on @dp}}
  %t = mt3k.all_gather %s -> %a on @dp ring : !mt3k.buffer<ddr, 32xbf16> -> !mt3k.buffer<ddr, 64xbf16>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'@nope' does not name an 'mt3k.group'}}
  %t = mt3k.all_reduce sum %a -> %a on @nope ring : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{source and destination types differ: '!mt3k.buffer<ddr, 64xf32>' vs '!mt3k.buffer<ddr, 64xbf16>'}}
  %t = mt3k.all_reduce sum %a -> %b on @dp ring : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xbf16>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<gsm, 64xf32>
  // expected-error @+1 {{operand #0 must be mt3k buffer in ddr, but got '!mt3k.buffer<gsm, 64xf32>'}}
  %t = mt3k.all_reduce sum %a -> %a on @dp ring : !mt3k.buffer<gsm, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 32xf32>
  // expected-error @+1 {{source has 64 elements, expected 4 (size of @dp) x 32 (destination)}}
  %t = mt3k.reduce_scatter sum %a -> %b on @dp ring : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 32xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{source and destination element types differ: 'bf16' vs 'f32'}}
  %t = mt3k.all_gather %a -> %b on @dp ring : !mt3k.buffer<ddr, 16xf32> -> !mt3k.buffer<ddr, 64xbf16>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{root 4 is out of range: group @dp has 4 ranks}}
  %t = mt3k.broadcast %a from 4 on @dp tree : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{peer 2 is out of range: group @pp has 2 ranks}}
  %t = mt3k.send %a to 2 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 1 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{stage 1 cannot transfer to or from itself}}
  %t = mt3k.recv %a from 1 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{'@dp' does not name an 'mt3k.group'}}
  mt3k.barrier @dp
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<gsm, 64xf32>
  // expected-error @+1 {{token is waited on more than once}}
  %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
  mt3k.wait %t
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'normal' initialization needs a 'std'}}
  mt3k.init_param normal %a "w" : !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'std' only applies to normal initialization}}
  mt3k.init_param zeros %a "w" std 1.0 : !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'std' must be positive}}
  mt3k.init_param normal %a "w" std 0.0 : !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{the iteration starts here}}
  mt3k.fill %a, 0.0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.init_param' op must precede the iteration: only mt3k.buffer, mt3k.view, mt3k.group_slot and mt3k.init_param may come before it}}
  mt3k.init_param zeros %a "w" : !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 3
// expected-note @+1 {{first program of the stage}}
mt3k.program @a stage 0 {
}
// expected-error @+1 {{stage 0 already has program @a}}
mt3k.program @b stage 0 {
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x16xbf16>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 16x4xbf16>
  // The result partly covers a.
  %c = mt3k.buffer "c" at 128 : !mt3k.buffer<ddr, 8x4xf32>
  // expected-error @+1 {{'c' overlaps 'a': ddr bytes [128, 256) and [0, 256)}}
  mt3k.gemm %a, %b -> %c : !mt3k.buffer<ddr, 8x16xbf16>, !mt3k.buffer<ddr, 16x4xbf16> -> !mt3k.buffer<ddr, 8x4xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x4x8xbf16>
  %k = mt3k.buffer "k" at 1024 : !mt3k.buffer<ddr, 1x16x2x8xbf16>
  %lse = mt3k.buffer "lse" at 2048 : !mt3k.buffer<ddr, 1x4x16xf32>
  // Attention does not work in place, not even on the identical range.
  // expected-error @+1 {{'o' overlaps 'q': ddr bytes [0, 1024) and [0, 1024)}}
  mt3k.attention_fwd %q, %k, %k -> %q, %lse : !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16>, !mt3k.buffer<ddr, 1x16x2x8xbf16> -> !mt3k.buffer<ddr, 1x16x4x8xbf16>, !mt3k.buffer<ddr, 1x4x16xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %arena = mt3k.buffer "arena" at 0 : !mt3k.buffer<ddr, 1024xbf16>
  %a = mt3k.view %arena[0] : !mt3k.buffer<ddr, 1024xbf16> to !mt3k.buffer<ddr, 16x8xbf16>
  %b = mt3k.buffer "b" at 2048 : !mt3k.buffer<ddr, 16x8xbf16>
  %c = mt3k.view %arena[64] : !mt3k.buffer<ddr, 1024xbf16> to !mt3k.buffer<ddr, 16x8xbf16>
  // expected-error @+1 {{'output #0' overlaps 'input #0': ddr bytes [64, 320) and [0, 256)}}
  mt3k.elementwise residual_add ins(%a, %b : !mt3k.buffer<ddr, 16x8xbf16>, !mt3k.buffer<ddr, 16x8xbf16>) outs(%c : !mt3k.buffer<ddr, 16x8xbf16>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x8xi32>
  // expected-error @+1 {{'residual_add' needs floating-point buffers}}
  mt3k.elementwise residual_add ins(%a, %a : !mt3k.buffer<ddr, 16x8xi32>, !mt3k.buffer<ddr, 16x8xi32>) outs(%a : !mt3k.buffer<ddr, 16x8xi32>)
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 256 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 512 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{'master' overlaps 'm': ddr bytes [256, 512) and [256, 512)}}
  mt3k.adamw %g, %m, %m, %g -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xbf16>
}

// -----

// The view may be the master itself (an FP32 model updated in place), but
// not a range that only partly overlaps it.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xf32>
  %mt = mt3k.buffer "mt" at 256 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 512 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 768 : !mt3k.buffer<ddr, 64xf32>
  %shifted = mt3k.buffer "shifted" at 320 : !mt3k.buffer<ddr, 64xf32>
  mt3k.adamw %g, %mt, %m, %v -> %mt lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'master' overlaps 'view': ddr bytes [256, 512) and [320, 576)}}
  mt3k.adamw %g, %mt, %m, %v -> %shifted lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xf32>
  %mt = mt3k.buffer "mt" at 256 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 512 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 768 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 1024 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{no_decay needs [begin, end) pairs, got 3 numbers}}
  mt3k.adamw %g, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 no_decay [0, 8, 16] first_element 0 : !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xf32>
  %mt = mt3k.buffer "mt" at 256 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 512 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 768 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 1024 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{no_decay ranges must be non-empty, ascending and disjoint, got [4, 12) after end 8}}
  mt3k.adamw %g, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 no_decay [0, 8, 4, 12] first_element 0 : !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xf32>
  %mt = mt3k.buffer "mt" at 256 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 512 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 768 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 1024 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{first_element must be >= 0 and shard_elements >= 1}}
  mt3k.adamw %g, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 no_decay [0, 8] first_element 0 shard_elements 0 : !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
}

// -----

// Trace spans pair up: begin, end; they do not nest or stay open.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-note @+1 {{the open span}}
  mt3k.trace_begin "fwd L0 mb0" forward
  // expected-error @+1 {{'mt3k.trace_begin' op opens a trace span while 'fwd L0 mb0' is still open (spans do not nest)}}
  mt3k.trace_begin "fwd L1 mb0" forward
  mt3k.trace_end
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{'mt3k.trace_end' op closes no trace span: no mt3k.trace_begin is open}}
  mt3k.trace_end
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+1 {{'mt3k.trace_begin' op opens a trace span 'update L3' that no mt3k.trace_end closes}}
  mt3k.trace_begin "update L3" update
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  // expected-error @+2 {{expected ::ratrain::mt3k::TracePhase to be one of: forward, backward, recompute, update, view_cast, other}}
  // expected-error @+2 {{failed to parse MT3K_TracePhaseAttr}}
  mt3k.trace_begin "x" sideways
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{phase 4 must be below the period 4}}
  %t = mt3k.all_reduce avg %a -> %a on @dp ring every 4 phase 4 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{attribute 'period' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 2}}
  %t = mt3k.all_reduce avg %a -> %a on @dp ring every 1 phase 0 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{period 4294967296 exceeds the limit of 1024 steps}}
  %t = mt3k.all_reduce avg %a -> %a on @dp ring every 4294967296 phase 0 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 2
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 128xf32>
  %s = mt3k.buffer "s" at 512 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{leave_own needs a ring on a native wire reducing by avg (its last round reduces the own block, and the update completes the average)}}
  %t = mt3k.reduce_scatter avg %g -> %s on @dp tree leave_own : !mt3k.buffer<ddr, 128xf32> -> !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 2
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 128xf32>
  %s = mt3k.buffer "s" at 512 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{leave_own needs a ring on a native wire reducing by avg}}
  %t = mt3k.reduce_scatter sum %g -> %s on @dp ring leave_own : !mt3k.buffer<ddr, 128xf32> -> !mt3k.buffer<ddr, 64xf32>
}

// -----

// In place (the destination the source's own block) the last round would
// overwrite what the update reads.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 2
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 128xf32>
  %own = mt3k.group_slot %g on @dp : !mt3k.buffer<ddr, 128xf32> to !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{leave_own needs a destination apart from the source (the update reads the own block of the source): ddr bytes [0, 512) and [0, 512)}}
  %t = mt3k.reduce_scatter avg %g -> %own on @dp ring leave_own : !mt3k.buffer<ddr, 128xf32> -> !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %o = mt3k.buffer "o" at 128 : !mt3k.buffer<ddr, 64xf32>
  %mt = mt3k.buffer "mt" at 1024 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 2048 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 3072 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 4096 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{'own' must have the type of 'grad' ('!mt3k.buffer<ddr, 64xbf16>'), got '!mt3k.buffer<ddr, 64xf32>'}}
  mt3k.adamw %g plus %o : !mt3k.buffer<ddr, 64xf32> over 2, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %o = mt3k.buffer "o" at 128 : !mt3k.buffer<ddr, 64xbf16>
  %mt = mt3k.buffer "mt" at 1024 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 2048 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 3072 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 4096 : !mt3k.buffer<ddr, 64xbf16>
  // expected-error @+1 {{'members' must be at least 2, got 1}}
  mt3k.adamw %g plus %o : !mt3k.buffer<ddr, 64xbf16> over 1, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 : !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xbf16>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<ddr, 64xbf16>
  %o = mt3k.buffer "o" at 128 : !mt3k.buffer<ddr, 64xbf16>
  %mt = mt3k.buffer "mt" at 1024 : !mt3k.buffer<ddr, 64xf32>
  %m = mt3k.buffer "m" at 2048 : !mt3k.buffer<ddr, 64xf32>
  %v = mt3k.buffer "v" at 3072 : !mt3k.buffer<ddr, 64xf32>
  %w = mt3k.buffer "w" at 4096 : !mt3k.buffer<ddr, 64xbf16>
  %n = mt3k.buffer "n" at 8192 : !mt3k.buffer<ddr, f32>
  // expected-error @+1 {{'own' cannot go with 'clip': the norm is taken of the averaged gradient}}
  mt3k.adamw %g plus %o : !mt3k.buffer<ddr, 64xbf16> over 2, %mt, %m, %v -> %w lr 1.0e-3 beta1 0.9 beta2 0.95 eps 1.0e-8 weight_decay 0.1 clip(%n : !mt3k.buffer<ddr, f32>) max_grad_norm 1.0 : !mt3k.buffer<ddr, 64xbf16>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32>, !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xbf16>
}
