// ZeRO programs register their parameters for checkpoints tensor by tensor:
// each tensor of a layer (ratrain.dp_shard_tensors "name:offset:numel:init")
// becomes one ratrain::rt::emit::addShardParam with its HF shape (from the view's
// init_param), its offset and size in the flattened layer, the layer shard
// size and the layer's master, m and v shards; the helper picks this data
// rank's piece at run time.
// RUN: ratrain-translate --mt3k-to-cpp %s | FileCheck %s

module {
  mt3k.machine "test" ddr 1048576 gsm 65536 am 16384 cores 2 dma_channels 2 alignment 64
  mt3k.group @dp data_parallel size 2

  // CHECK-LABEL: void ratrain_stage0(
  // CHECK-SAME: ratrain::rt::Runtime & [[RT:v[0-9]+]], ratrain::rt::Session & [[S:v[0-9]+]]) {
  mt3k.program @stage0 stage 0 ddr_arena 1048576 {
    // CHECK: [[VA:v[0-9]+]] = ratrain::rt::emit::ddr([[RT]], 0, 64,
    %va = mt3k.buffer "l.a" at 0 : !mt3k.buffer<ddr, 4x8xbf16>
    // CHECK: [[VB:v[0-9]+]] = ratrain::rt::emit::ddr([[RT]], 64, 16,
    %vb = mt3k.buffer "l.b" at 64 : !mt3k.buffer<ddr, 8xbf16>
    // CHECK: [[M:v[0-9]+]] = ratrain::rt::emit::ddr([[RT]], 128, 80,
    %master = mt3k.buffer "l.master" at 128 : !mt3k.buffer<ddr, 20xf32>
    // CHECK: [[MM:v[0-9]+]] = ratrain::rt::emit::ddr([[RT]], 256, 80,
    %m = mt3k.buffer "l.m" at 256 : !mt3k.buffer<ddr, 20xf32>
    // CHECK: [[MV:v[0-9]+]] = ratrain::rt::emit::ddr([[RT]], 384, 80,
    %v = mt3k.buffer "l.v" at 384 : !mt3k.buffer<ddr, 20xf32>
    mt3k.init_param normal %va "l.a" std 2.000000e-02 : !mt3k.buffer<ddr, 4x8xbf16>
    mt3k.init_param ones %vb "l.b" : !mt3k.buffer<ddr, 8xbf16>
    mt3k.init_param normal %master "l" std 2.000000e-02 {dp_shard = 20 : i64, dp_shard_tensors = ["l.a:0:32:normal", "l.b:32:8:ones"]} : !mt3k.buffer<ddr, 20xf32>
    mt3k.init_param zeros %m "l.exp_avg" {dp_shard = 20 : i64} : !mt3k.buffer<ddr, 20xf32>
    mt3k.init_param zeros %v "l.exp_avg_sq" {dp_shard = 20 : i64} : !mt3k.buffer<ddr, 20xf32>
    // CHECK-NOT: ratrain::rt::emit::addParam(
    // CHECK: ratrain::rt::emit::addShardParam([[S]], [[RT]], "l.a", std::vector<int64_t>{4, 8}, 0, 32, 20, [[M]], [[MM]], [[MV]], [[VA]]);
    // CHECK-NEXT: ratrain::rt::emit::addShardParam([[S]], [[RT]], "l.b", std::vector<int64_t>{8}, 32, 8, 20, [[M]], [[MM]], [[MV]], [[VB]]);
    // CHECK-NOT: ratrain::rt::emit::addParam(
    // CHECK: for (ratrain::rt::emit::start([[S]]); [[S]].beginStep();) {
    mt3k.barrier @dp
  }
}
