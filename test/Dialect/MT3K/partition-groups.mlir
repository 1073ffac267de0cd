// RUN: ratrain-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The partition groups of hierarchical ZeRO (docs/schedule.md,
// "Partitioning"): data_inside and data_across name their network level;
// no other group has one.

// CHECK: mt3k.group @dp_inside0 data_inside size 2 level 0
// CHECK: mt3k.group @dp_across0 data_across size 4 level 0
// CHECK: mt3k.all_gather %{{.+}} -> %{{.+}} on @dp_across0 ring wire int8
// CHECK: mt3k.reduce_scatter avg %{{.+}} -> %{{.+}} on @dp_inside0 ring wire int4
mt3k.machine "m" ddr 1048576 gsm 65536 am 4096 cores 4 dma_channels 2 alignment 64
mt3k.group @dp data_parallel size 8
mt3k.group @dp_inside0 data_inside size 2 level 0
mt3k.group @dp_across0 data_across size 4 level 0
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xf32>
  %c = mt3k.buffer "c" at 1024 : !mt3k.buffer<ddr, 32xf32>
  %t = mt3k.all_gather %a -> %b on @dp_across0 ring wire int8 : !mt3k.buffer<ddr, 16xf32> -> !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
  %u = mt3k.reduce_scatter avg %b -> %c on @dp_inside0 ring wire int4 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<ddr, 32xf32>
  mt3k.wait %u
}

// -----

// expected-error @+1 {{a data_inside group names the network level it partitions the data-parallel group at ('level L')}}
mt3k.group @dp_inside0 data_inside size 2

// -----

// expected-error @+1 {{only data_inside and data_across groups have a level}}
mt3k.group @dp data_parallel size 8 level 1

// -----

// expected-error @+1 {{level 4 exceeds the runtime's network levels (0 to 3)}}
mt3k.group @dp_across4 data_across size 2 level 4
