// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --mt3k-verify | FileCheck %s

// Offloaded states (docs/lowering.md, "Offloaded optimizer states and
// masters"): the prologue initializes a state, offloads it and waits
// (`mt3k.prologue`); the iteration reloads the key, updates and offloads it
// again (a key is offloaded once by the prologue and once per iteration).

// CHECK-LABEL: mt3k.program @ok
// CHECK: mt3k.offload %{{.*}} to host "s" {mt3k.prologue}
// CHECK: mt3k.init_param zeros
// CHECK: mt3k.reload %{{.*}} from host "s"
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @ok stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xf32>
  mt3k.init_param zeros %a "s.exp_avg" : !mt3k.buffer<ddr, 64xf32>
  %p = mt3k.offload %a to host "s" {mt3k.prologue} : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %p {mt3k.prologue}
  mt3k.init_param zeros %b "w" : !mt3k.buffer<ddr, 64xf32>
  %r = mt3k.reload %a from host "s" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %r
  mt3k.fill %a, 1.0 : !mt3k.buffer<ddr, 64xf32>
  %o = mt3k.offload %a to host "s" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %o
}

// -----

// Without the prologue's offload, the iteration's reload has none before it.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.init_param zeros %a "s.exp_avg" : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{key 's' has no earlier offload to host}}
  %r = mt3k.reload %a from host "s" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %r
  %o = mt3k.offload %a to host "s" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %o
}

// -----

// A prologue offload after the iteration started.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{the iteration starts here}}
  mt3k.fill %a, 0.0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.offload' op must precede the iteration}}
  %p = mt3k.offload %a to host "s" {mt3k.prologue} : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %p {mt3k.prologue}
}

// -----

// Two prologue offloads of one key.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{first offloaded here}}
  %p = mt3k.offload %a to host "s" {mt3k.prologue} : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %p {mt3k.prologue}
  // expected-error @+1 {{key 's' is offloaded more than once}}
  %q = mt3k.offload %a to host "s" {mt3k.prologue} : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %q {mt3k.prologue}
}
