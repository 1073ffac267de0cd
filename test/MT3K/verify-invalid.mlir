// RUN: ratrain-opt %s -split-input-file -verify-diagnostics --mt3k-verify

// One case per message of --mt3k-verify: tokens and hazards (from the
// async-hazard analysis), offload keys, pipeline traffic across programs.
// The operation verifiers' messages are in test/Dialect/MT3K/invalid.mlir.
// Capacities: DDR 1 MiB, GSM 64 KiB, AM 4 KiB per core, 4 cores, 2 DMA
// channels, 64-byte alignment.

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<gsm, 64xf32>
  // expected-error @+1 {{token is never waited on}}
  %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.group @pp pipeline size 2
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{token is never waited on}}
  %t = mt3k.send %a to 1 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<gsm, 64xf32>
  %half = mt3k.view %b[128] : !mt3k.buffer<gsm, 64xf32> to !mt3k.buffer<gsm, 32xf32>
  // expected-note @+1 {{asynchronous operation started here}}
  %t = mt3k.dma %a -> %b : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
  // expected-error @+1 {{'mt3k.elementwise' op reads gsm bytes [128, 256) of buffer 'b' that an unfinished 'mt3k.dma' writes; wait on its token first}}
  mt3k.elementwise scale ins(%half : !mt3k.buffer<gsm, 32xf32>) outs(%half : !mt3k.buffer<gsm, 32xf32>) scale 2.0
  mt3k.wait %t
}

// -----

// A group slot's block is known at run time only: it may be any block of
// its source, so a write into the slot conflicts with a transfer of any
// part of the source (and views of one slot compare by their offsets in it,
// in insert-waits.mlir).
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %last = mt3k.view %a[192] : !mt3k.buffer<ddr, 64xf32> to !mt3k.buffer<ddr, 16xf32>
  %own = mt3k.group_slot %a on @dp : !mt3k.buffer<ddr, 64xf32> to !mt3k.buffer<ddr, 16xf32>
  // expected-note @+1 {{asynchronous operation started here}}
  %t0 = mt3k.send %last to 1 on @dp tag 0 : !mt3k.buffer<ddr, 16xf32>
  // expected-error @+1 {{'mt3k.fill' op writes ddr bytes [0, 256) of buffer 'a' that an unfinished 'mt3k.send' reads; wait on its token first}}
  mt3k.fill %own, 0.0 : !mt3k.buffer<ddr, 16xf32>
  mt3k.wait %t0
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 4
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{asynchronous operation started here}}
  %t0 = mt3k.send %a to 1 on @dp tag 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.fill' op writes ddr bytes [0, 256) of buffer 'a' that an unfinished 'mt3k.send' reads; wait on its token first}}
  mt3k.fill %a, 0.0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 0 : !mt3k.buffer<am, 64xf32>
  // expected-note @+1 {{asynchronous operation started here}}
  %t0 = mt3k.dma %a -> %b core 1 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<am, 64xf32>
  // expected-error @+1 {{'mt3k.dma' op writes am bytes [0, 256) of buffer 'b' that an unfinished 'mt3k.dma' writes; wait on its token first (token %2, write-after-write)}}
  %t1 = mt3k.dma %a -> %b core 1 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<am, 64xf32>
  mt3k.wait %t0, %t1
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{first offloaded here}}
  %t0 = mt3k.offload %a to host "k" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
  // expected-error @+1 {{key 'k' is offloaded more than once}}
  %t1 = mt3k.offload %a to host "k" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t1
}

// -----

// The offload store is memory too: offloading a key overwrites what a
// reload still reads.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xf32>
  %t0 = mt3k.offload %a to host "k" {mt3k.prologue} : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0 {mt3k.prologue}
  // expected-note @+1 {{asynchronous operation started here}}
  %t1 = mt3k.reload %b from host "k" : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.offload' op writes key 'k' of the host store that an unfinished 'mt3k.reload' reads; wait on its token first (token %3, write-after-read)}}
  %t2 = mt3k.offload %a to host "k" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t1, %t2
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %t0 = mt3k.offload %a to storage "k" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
  // expected-error @+1 {{key 'k' has no earlier offload to host}}
  %t1 = mt3k.reload %a from host "k" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t1
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.view %a[0] : !mt3k.buffer<ddr, 64xf32> to !mt3k.buffer<ddr, 32xf32>
  %t0 = mt3k.offload %b to host "k" : !mt3k.buffer<ddr, 32xf32>
  mt3k.wait %t0
  // expected-error @+1 {{reloads 256 bytes, but key 'k' holds 128}}
  %t1 = mt3k.reload %a from host "k" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t1
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{offloaded here}}
  %t0 = mt3k.offload %a to host "k" : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{reloads key 'k' before its offload is waited on}}
  %t1 = mt3k.reload %b from host "k" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0, %t1
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 3
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %t0 = mt3k.send %a to 1 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.send' op to stage 1 with tag 7 on @pp has no matching 'mt3k.recv' in program @s1}}
  %t1 = mt3k.send %a to 1 on @pp tag 7 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0, %t1
}
mt3k.program @s1 stage 1 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %t0 = mt3k.recv %a from 0 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 3
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.send' op sends 256 bytes, but the matching recv receives 128}}
  %t0 = mt3k.send %a to 1 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}
mt3k.program @s1 stage 1 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 32xf32>
  // expected-note @+1 {{received here}}
  %t0 = mt3k.recv %a from 0 on @pp tag 0 : !mt3k.buffer<ddr, 32xf32>
  mt3k.wait %t0
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 3
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %t0 = mt3k.send %a to 1 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}
mt3k.program @s1 stage 1 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %t0 = mt3k.recv %a from 0 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
  // expected-error @+1 {{'mt3k.recv' op from stage 0 with tag 0 on @pp has no matching 'mt3k.send' in program @s0}}
  %t1 = mt3k.recv %a from 0 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t1
}

// -----

// A one-sided put lands where the matching receive's buffer is.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 2
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.send' op puts at byte 512 of the peer's arena, but the matching recv's buffer is at byte 256}}
  %t0 = mt3k.send %a to 1 on @pp tag 0 put at 512 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}
mt3k.program @s1 stage 1 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 128xf32>
  %b = mt3k.view %a[256] : !mt3k.buffer<ddr, 128xf32> to !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{received here}}
  %t0 = mt3k.recv %b from 0 on @pp tag 0 one_sided : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}

// -----

// Both sides agree on how the message travels.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 2
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.send' op is two-sided, but its matching recv is one_sided}}
  %t0 = mt3k.send %a to 1 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}
mt3k.program @s1 stage 1 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{received here}}
  %t0 = mt3k.recv %a from 0 on @pp tag 0 one_sided : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}

// -----

// Puts reach the DDR arenas of pipeline groups only.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 2
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.send' op is one-sided on @dp, which is not a pipeline group (the runtime exposes the DDR arenas of pipeline groups only)}}
  %t0 = mt3k.send %a to 1 on @dp tag 0 put at 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}

// -----

// Every stage takes part in each collective on a pipeline group: the same
// all-reduce on both stages (through differently shaped views) is fine.
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 2
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %t0 = mt3k.all_reduce sum %a -> %a on @pp ring : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
  mt3k.barrier @pp
}
mt3k.program @s1 stage 1 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x8xf32>
  %t0 = mt3k.all_reduce sum %a -> %a on @pp ring : !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %t0
  mt3k.barrier @pp
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 2
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-note @+1 {{collective #0 of program @s0}}
  %t0 = mt3k.all_reduce sum %a -> %a on @pp ring : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}
mt3k.program @s1 stage 1 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // expected-error @+1 {{'mt3k.all_reduce' op is collective #0 on pipeline group @pp, but differs from that of program @s0: every stage takes part in the same collectives}}
  %t0 = mt3k.all_reduce max %a -> %a on @pp ring : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
}

// -----

mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @pp pipeline size 2
mt3k.group @dp data_parallel size 2
mt3k.program @s0 stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  // Data-parallel collectives stay within a stage: not compared.
  %t0 = mt3k.all_reduce sum %a -> %a on @dp ring : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t0
  // expected-error @+1 {{'mt3k.barrier' op is collective #0 on pipeline group @pp, but program @s1 has no such collective}}
  mt3k.barrier @pp
}
mt3k.program @s1 stage 1 {
}
