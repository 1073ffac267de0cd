// mt3k ops the host emitter has no kernel for are errors that name the op.
// RUN: ratrain-translate --mt3k-to-cpp --split-input-file --verify-diagnostics %s

module {
  mt3k.machine "test" ddr 1048576 gsm 65536 am 16384 cores 2 dma_channels 2 alignment 64
  mt3k.program @stage0 stage 0 {
    %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16x16xf32>
    %b = mt3k.buffer "b" at 4096 : !mt3k.buffer<ddr, 16x16xf32>
    %c = mt3k.buffer "c" at 8192 : !mt3k.buffer<ddr, 16x16xf32>
    // expected-error @below {{'mt3k.gemm' op has no host kernel: transpose_a with transpose_b}}
    mt3k.gemm %a, %b -> %c transpose_a transpose_b : !mt3k.buffer<ddr, 16x16xf32>, !mt3k.buffer<ddr, 16x16xf32> -> !mt3k.buffer<ddr, 16x16xf32>
  }
}

// -----

module {
  mt3k.machine "test" ddr 1048576 gsm 65536 am 16384 cores 2 dma_channels 2 alignment 64
  mt3k.program @stage0 stage 0 {
    %q = mt3k.buffer "q" at 0 : !mt3k.buffer<ddr, 1x16x2x32xf32>
    %k = mt3k.buffer "k" at 4096 : !mt3k.buffer<ddr, 1x16x1x32xf32>
    %v = mt3k.buffer "v" at 8192 : !mt3k.buffer<ddr, 1x16x1x32xf32>
    %o = mt3k.buffer "o" at 12288 : !mt3k.buffer<ddr, 1x16x2x32xf32>
    %lse = mt3k.buffer "lse" at 16384 : !mt3k.buffer<ddr, 1x2x16xf32>
    // expected-error @below {{'mt3k.attention_fwd' op has no host kernel: attention without causal}}
    mt3k.attention_fwd %q, %k, %v -> %o, %lse : !mt3k.buffer<ddr, 1x16x2x32xf32>, !mt3k.buffer<ddr, 1x16x1x32xf32>, !mt3k.buffer<ddr, 1x16x1x32xf32> -> !mt3k.buffer<ddr, 1x16x2x32xf32>, !mt3k.buffer<ddr, 1x2x16xf32>
  }
}

// -----

// expected-error @below {{has no mt3k.program to emit}}
module {
  mt3k.machine "test" ddr 1048576 gsm 65536 am 16384 cores 2 dma_channels 2 alignment 64
}

// -----

// A program's name becomes part of a C++ function name.
module {
  mt3k.machine "test" ddr 1048576 gsm 65536 am 16384 cores 2 dma_channels 2 alignment 64
  // expected-error @below {{'mt3k.program' op name 'stage\x0a0' is not usable in a C++ identifier (letters, digits, '_')}}
  mt3k.program @"stage\0A0" stage 0 {
  }
}
