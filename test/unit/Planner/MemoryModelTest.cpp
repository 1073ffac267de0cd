//===- MemoryModelTest.cpp - Memory model vs hand-computed values ---------===//
//
// Every expected number below is computed by hand from the standard
// formulas (16 bytes/param; ZeRO-1 4 + 12/d, ZeRO-2 2 + 14/d; activations
// sbh(34 + 5as/h), 34sbh, 2sbh; p - i micro-batches in flight) for a small
// synthetic model, not by calling the code under test.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Planner/MemoryModel.h"
#include "ratrain/Model/HFConfig.h"

#include "gtest/gtest.h"

using namespace ratrain;

namespace {

/// L=8, h=1024, a=16 (MHA), ffn=4096, vocab=32000, s=2048, bf16.
/// paramsPerLayer = 4h^2 + 3h*ffn + 2h = 4194304 + 12582912 + 2048
///                = 16779264; embedding = 32768000; head = 32769024.
ModelConfig synthetic() {
  ModelConfig m;
  m.name = "synthetic";
  m.numLayers = 8;
  m.hidden = 1024;
  m.numHeads = 16;
  m.numKVHeads = 16;
  m.ffnHidden = 4096;
  m.vocab = 32000;
  m.seqLen = 2048;
  m.maxPositions = 4096;
  m.dtype = DType::BF16;
  return m;
}

constexpr int64_t kLayerParams = 16779264;
constexpr int64_t kEmbedding = 32768000;
constexpr int64_t kHead = 32769024;
// s=2048, b=2, h=1024, a=16: sbh = 4194304.
constexpr int64_t kNoneB2 = 34 * 4194304LL + 5LL * 16 * 2048 * 2048 * 2;
constexpr int64_t kSelectiveB2 = 34 * 4194304LL; // 142606336
constexpr int64_t kFullB2 = 2 * 4194304LL;       // 8388608

TEST(MemoryModel, ParameterCountsMatchTheModel) {
  ModelConfig m = synthetic();
  ASSERT_FALSE(bool(m.validate()));
  EXPECT_EQ(m.paramsPerLayer(), kLayerParams);
  EXPECT_EQ(m.embeddingParams(), kEmbedding);
  EXPECT_EQ(m.headParams(), kHead);
  ParallelConfig c =
      ParallelConfig::balanced(8, 2, 1, 1, 4, RecomputePolicy::None);
  EXPECT_EQ(stageParams(m, c, 0), 4 * kLayerParams + kEmbedding);
  EXPECT_EQ(stageParams(m, c, 1), 4 * kLayerParams + kHead);
}

TEST(MemoryModel, LlamaTwoSevenBParameters) {
  llvm::Expected<ModelConfig> m = loadHFConfig(
      std::string(RATRAIN_EXAMPLES_DIR) + "/models/llama-2-7b.json");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->totalParams(), 6738415616);
}

TEST(MemoryModel, SixteenBytesPerParamWithoutZero) {
  ModelConfig m = synthetic();
  ParallelConfig c =
      ParallelConfig::balanced(8, 2, 1, 1, 4, RecomputePolicy::Full);
  StageMemory s = computeStageMemory(m, c, 0);
  int64_t p = 4 * kLayerParams + kEmbedding; // 99885056
  EXPECT_EQ(s.params, 99885056);
  EXPECT_EQ(s.parameterViews, 2 * p);
  EXPECT_EQ(s.masterWeights, 4 * p);
  EXPECT_EQ(s.optimizerStates, 8 * p);
  EXPECT_EQ(s.gradients, 2 * p);
  EXPECT_EQ(s.modelStates(), 16 * 99885056LL); // 1598160896
}

TEST(MemoryModel, ZeroOneShardsMasterAndOptimizer) {
  ModelConfig m = synthetic();
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 8, 1, 4, RecomputePolicy::Full, ZeroStage::Optimizer);
  StageMemory s = computeStageMemory(m, c, 0);
  // 4 + 12/8 bytes per param: 5.5 * 99885056.
  EXPECT_EQ(s.parameterViews, 2 * 99885056LL);
  EXPECT_EQ(s.gradients, 2 * 99885056LL);
  EXPECT_EQ(s.masterWeights, 4 * 12485632LL);
  EXPECT_EQ(s.optimizerStates, 8 * 12485632LL);
  EXPECT_EQ(s.modelStates(), 549367808);
}

TEST(MemoryModel, ZeroTwoShardsTheGradientOfASingleMicroBatch) {
  ModelConfig m = synthetic();
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 8, 1, 1, RecomputePolicy::Full, ZeroStage::Gradients);
  StageMemory s = computeStageMemory(m, c, 0);
  // m = 1: each layer is reduce-scattered right after its only backward,
  // overlapping the next layer's backward, so the shards (2/8 bytes per
  // param) plus the two largest items' full gradients (the embedding and a
  // decoder layer on stage 0) are live; they are the reduce-scatter inputs.
  int64_t largestTwo = kEmbedding + kLayerParams;
  EXPECT_EQ(s.gradients, 2 * (12485632LL + largestTwo));
  EXPECT_EQ(s.modelStates(), 374568960 + 2 * largestTwo);
  // p2p 4 * sbh * 2 bytes (b = 1), no separate staging.
  EXPECT_EQ(s.communicationBuffers, 16777216LL);
}

TEST(MemoryModel, ZeroTwoAccumulatesFullGradientsOverMicroBatches) {
  ModelConfig m = synthetic();
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 8, 1, 4, RecomputePolicy::Full, ZeroStage::Gradients);
  StageMemory s = computeStageMemory(m, c, 0);
  // m = 4: a layer's gradient is ready only after its last micro-batch, so
  // every layer accumulates its full 16-bit gradient until its
  // reduce-scatter; the shards it keeps are separate: 2 * (P + P/8).
  EXPECT_EQ(s.gradients, 2 * (99885056LL + 12485632LL));
  EXPECT_EQ(s.modelStates(), 2 * 99885056LL + 14 * 12485632LL + 2 * 99885056LL);
  // The accumulation buffers are the reduce-scatter inputs: no bucket.
  EXPECT_EQ(s.communicationBuffers, 16777216LL);
}

TEST(MemoryModel, ZeroThreeShardsTheViewsAndKeepsTwoGathered) {
  ModelConfig m = synthetic();
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 8, 1, 4, RecomputePolicy::Full, ZeroStage::Parameters);
  StageMemory s = computeStageMemory(m, c, 0);
  // Stage 0: 4 layers and the embedding, 99885056 params, 12485632 per
  // rank. The views are sharded too, plus the full views of the two
  // largest items gathered at a time (the embedding and a layer).
  EXPECT_EQ(s.gatheredItems[0], kEmbedding);
  EXPECT_EQ(s.gatheredItems[1], kLayerParams);
  EXPECT_EQ(s.parameterViews, 2 * (12485632LL + kEmbedding + kLayerParams));
  EXPECT_EQ(s.masterWeights, 4 * 12485632LL);
  EXPECT_EQ(s.optimizerStates, 8 * 12485632LL);
  // Gradients as ZeRO-2 with m = 4.
  EXPECT_EQ(s.gradients, 2 * (99885056LL + 12485632LL));
  // No lowering view or master shards: the assigned view is the shard.
  EXPECT_EQ(s.zeroShards, 0);
}

TEST(MemoryModel, ShardsRoundUp) {
  ModelConfig m = synthetic();
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 3, 1, 4, RecomputePolicy::Full, ZeroStage::Gradients);
  StageMemory s = computeStageMemory(m, c, 1);
  int64_t p = 4 * kLayerParams + kHead; // 99886080 = 3 * 33295360
  EXPECT_EQ(p, 99886080);
  EXPECT_EQ(s.optimizerStates, 8 * 33295360LL);
  c.dataParallel = 9; // 99886080 / 9 = 11098453.33 -> 11098454
  s = computeStageMemory(m, c, 1);
  EXPECT_EQ(s.masterWeights, 4 * 11098454LL);
}

TEST(MemoryModel, LayerActivationFormulas) {
  ModelConfig m = synthetic();
  EXPECT_EQ(kNoneB2, 813694976);
  EXPECT_EQ(layerActivationBytes(m, 2, RecomputePolicy::None), kNoneB2);
  EXPECT_EQ(layerActivationBytes(m, 2, RecomputePolicy::Selective),
            kSelectiveB2);
  EXPECT_EQ(layerActivationBytes(m, 2, RecomputePolicy::Full), kFullB2);
  // Linear in the micro-batch size.
  EXPECT_EQ(layerActivationBytes(m, 1, RecomputePolicy::Full), 4194304);
  // Fused attention keeps 4asb bytes of FP32 row statistics instead of the
  // 5as^2b bytes of scores: 142606336 + 4*16*2048*2.
  MemoryOptions fused;
  fused.fusedAttention = true;
  EXPECT_EQ(layerActivationBytes(m, 2, RecomputePolicy::None, fused),
            142868480);
  EXPECT_EQ(layerActivationBytes(m, 2, RecomputePolicy::Full, fused), kFullB2);
  // FP32 activations are twice the 16-bit formula.
  m.dtype = DType::F32;
  EXPECT_EQ(layerActivationBytes(m, 2, RecomputePolicy::Full), 2 * kFullB2);
}

TEST(MemoryModel, DeferredBytesOfASplitBackward) {
  ModelConfig model = synthetic();
  int64_t w = getDTypeBytes(model.dtype);
  for (int64_t b : {1, 2}) {
    int64_t T = model.seqLen * b, h = model.hidden, f = model.ffnHidden;
    int64_t q = model.numHeads * model.headDim(), kv = model.kvDim();
    // dy, dgate, dup, dxn2, dres, dq, dk, dv, dxn1 (all 64-byte multiples).
    EXPECT_EQ(deferredBytes(model, b, LayerRole::Decoder),
              T * w * (4 * h + 2 * f + q + 2 * kv));
    DecoderDeferredLayout layout =
        decoderDeferredLayout(LayerShape::of(model, b), w);
    EXPECT_EQ(layout.dy, 0);
    EXPECT_EQ(layout.dxn1 + T * h * w, layout.bytes);
    // The head's final-norm output gradient, the embedding's output
    // gradient.
    EXPECT_EQ(deferredBytes(model, b, LayerRole::Head), T * h * w);
    EXPECT_EQ(deferredBytes(model, b, LayerRole::Embedding), T * h * w);
  }
}

TEST(MemoryModel, OneFOneBInFlightMicroBatches) {
  ParallelConfig c =
      ParallelConfig::balanced(8, 4, 1, 2, 8, RecomputePolicy::None);
  EXPECT_EQ(inFlightMicroBatches(c, 0), 4);
  EXPECT_EQ(inFlightMicroBatches(c, 1), 3);
  EXPECT_EQ(inFlightMicroBatches(c, 3), 1);
  c.numMicroBatches = 2; // fewer micro-batches than stages
  EXPECT_EQ(inFlightMicroBatches(c, 0), 2);
  EXPECT_EQ(inFlightMicroBatches(c, 2), 2);
  EXPECT_EQ(inFlightMicroBatches(c, 3), 1);
}

TEST(MemoryModel, StageActivationsAreLayersTimesInFlight) {
  ModelConfig m = synthetic();
  ParallelConfig c =
      ParallelConfig::balanced(8, 4, 1, 2, 8, RecomputePolicy::None);
  c.recompute = {RecomputePolicy::None, RecomputePolicy::Selective,
                 RecomputePolicy::Full, RecomputePolicy::None};
  std::vector<StageMemory> mem = computeMemory(m, c);
  ASSERT_EQ(mem.size(), 4u);
  EXPECT_EQ(mem[0].activations, 2 * 4 * kNoneB2);
  EXPECT_EQ(mem[1].activations, 2 * 3 * kSelectiveB2);
  EXPECT_EQ(mem[2].activations, 2 * 2 * kFullB2);
  EXPECT_EQ(mem[3].activations, 2 * 1 * kNoneB2);
  // Recompute transients: nothing, the scores (5as^2b = 671088640), one
  // whole layer.
  EXPECT_EQ(mem[0].recomputeBuffer, 0);
  EXPECT_EQ(mem[1].recomputeBuffer, 671088640);
  EXPECT_EQ(mem[2].recomputeBuffer, kNoneB2);
}

TEST(MemoryModel, UnevenLayerRanges) {
  ModelConfig m = synthetic();
  ParallelConfig c =
      ParallelConfig::balanced(8, 3, 1, 1, 6, RecomputePolicy::Full);
  c.stages = {{0, 1}, {1, 3}, {4, 4}};
  ASSERT_FALSE(bool(c.validate(m)));
  std::vector<StageMemory> mem = computeMemory(m, c);
  // 2sbh at b=1 is 4194304 bytes.
  EXPECT_EQ(mem[0].activations, 1 * 3 * 4194304LL);
  EXPECT_EQ(mem[1].activations, 3 * 2 * 4194304LL);
  EXPECT_EQ(mem[2].activations, 4 * 1 * 4194304LL);
  EXPECT_EQ(mem[0].params, kLayerParams + kEmbedding);
  EXPECT_EQ(mem[1].params, 3 * kLayerParams);
  EXPECT_EQ(mem[2].params, 4 * kLayerParams + kHead);
}

TEST(MemoryModel, EmbeddingHeadAndBuffers) {
  ModelConfig m = synthetic();
  ParallelConfig c = ParallelConfig::balanced(
      8, 4, 8, 2, 8, RecomputePolicy::Full, ZeroStage::Gradients);
  std::vector<StageMemory> mem = computeMemory(m, c);
  // Stage 0: int32 token ids of 4 micro-batches, s*b = 4096 each.
  EXPECT_EQ(mem[0].embeddingHeadActivations, 4 * 4096 * 4);
  EXPECT_EQ(mem[1].embeddingHeadActivations, 0);
  // Last stage, one micro-batch: norm in/out 2*2*sbh + logits 2*s*b*V +
  // FP32 softmax 4*s*b*V + int32 labels 4*s*b.
  EXPECT_EQ(mem[3].embeddingHeadActivations,
            16777216LL + 786432000LL + 16384LL);
  // p2p: 4 * sbh * 2 bytes; with m = 8 ZeRO-2 accumulates full gradients,
  // which are the reduce-scatter inputs (no separate bucket).
  EXPECT_EQ(mem[0].communicationBuffers, 33554432LL);
  EXPECT_EQ(mem[1].communicationBuffers, 33554432LL);
  // Workspace: max(2 * s*b*ffn * 2, s*b*(h + 2kv) * 4) = max(67108864,
  // 50331648).
  EXPECT_EQ(mem[1].kernelWorkspace, 67108864);
  // Total is the sum of the fields.
  int64_t sum = 0;
  for (auto &[name, bytes] : mem[2].fields())
    sum += bytes;
  EXPECT_EQ(mem[2].total(), sum);
  // Without ZeRO-2 and DP no bucket; with one stage no p2p buffers.
  ParallelConfig single =
      ParallelConfig::balanced(8, 1, 1, 2, 8, RecomputePolicy::Full);
  EXPECT_EQ(computeStageMemory(m, single, 0).communicationBuffers, 0);
}

TEST(MemoryModel, FloatThirtyTwoTrainingKeepsSixteenBytes) {
  ModelConfig m = synthetic();
  m.dtype = DType::F32;
  ParallelConfig c =
      ParallelConfig::balanced(8, 1, 1, 1, 1, RecomputePolicy::Full);
  StageMemory s = computeStageMemory(m, c, 0);
  EXPECT_EQ(s.masterWeights, 0);
  EXPECT_EQ(s.modelStates(), 16 * s.params);
}

TEST(MemoryModel, BalancedSplitAndValidation) {
  ModelConfig m = synthetic();
  m.numLayers = 10;
  ParallelConfig c =
      ParallelConfig::balanced(10, 4, 2, 1, 8, RecomputePolicy::Selective);
  ASSERT_EQ(c.stages.size(), 4u);
  EXPECT_EQ(c.stages[0].numLayers, 2);
  EXPECT_EQ(c.stages[1].numLayers, 3);
  EXPECT_EQ(c.stages[2].numLayers, 3);
  EXPECT_EQ(c.stages[3].numLayers, 2);
  EXPECT_EQ(c.stages[3].firstLayer, 8);
  EXPECT_FALSE(bool(c.validate(m)));
  EXPECT_EQ(c.globalBatch(), 16);
  EXPECT_EQ(c.describe(),
            "pp=4 dp=2 mbs=1 m=8 zero=0 layers=2,3x2,2 recompute=selective");

  ParallelConfig gap = c;
  gap.stages[2].firstLayer = 6;
  std::string error = llvm::toString(gap.validate(m));
  EXPECT_NE(error.find("stage 2 starts at layer 6, expected 5"),
            std::string::npos)
      << error;
  ParallelConfig shortCover = c;
  shortCover.stages[3].numLayers = 1;
  EXPECT_NE(llvm::toString(shortCover.validate(m)).find("cover 9 layers"),
            std::string::npos);
  ParallelConfig policies = c;
  policies.recompute.pop_back();
  EXPECT_NE(llvm::toString(policies.validate(m)).find("3 recompute policies"),
            std::string::npos);
}

// Stage 0 of a 2-stage split of the synthetic model: 4 layers + embedding,
// P = 99885056 params; the embedding (32768000) is its largest update item.

TEST(MemoryModel, GpuStyleKeepsFP32GradientsAndAWorkspace) {
  ModelConfig m = synthetic();
  ParallelConfig c =
      ParallelConfig::balanced(8, 2, 1, 1, 4, RecomputePolicy::Full);
  MemoryOptions gpu;
  gpu.lifecycle = LifecyclePolicy::GpuStyle;
  StageMemory s = computeStageMemory(m, c, 0, gpu);
  StageMemory r = computeStageMemory(m, c, 0);
  const int64_t p = 99885056;
  // 2 (view) + 4 (FP32 gradient) + 12 (master, m, v) = 18 bytes/param.
  EXPECT_EQ(s.gradients, 4 * p);
  EXPECT_EQ(s.modelStates(), 18 * p);
  // The optimizer's FP32 temporary for every parameter of the stage.
  EXPECT_EQ(s.optimizerWorkspace, 4 * p);
  // ratrain: 16 bytes/param, no whole-stage workspace.
  EXPECT_EQ(r.modelStates(), 16 * p);
  EXPECT_EQ(r.optimizerWorkspace, 0);
  EXPECT_EQ(s.total() - r.total(), 2 * p + 4 * p);
  EXPECT_EQ(s.activations, r.activations);
}

TEST(MemoryModel, GpuStyleZeroShardsOnlyMasterAndOptimizer) {
  ModelConfig m = synthetic();
  MemoryOptions gpu;
  gpu.lifecycle = LifecyclePolicy::GpuStyle;
  const int64_t p = 99885056, shard = 12485632; // P / 8
  for (ZeroStage zero : {ZeroStage::Optimizer, ZeroStage::Gradients}) {
    ParallelConfig c =
        ParallelConfig::balanced(8, 2, 8, 1, 4, RecomputePolicy::Full, zero);
    StageMemory s = computeStageMemory(m, c, 0, gpu);
    // The flat FP32 gradient buffer of the whole stage stays until the
    // boundary's reduce-scatter, even with ZeRO-2: 6 + 16/d bytes/param.
    EXPECT_EQ(s.gradients, 4 * p);
    EXPECT_EQ(s.masterWeights, 4 * shard);
    EXPECT_EQ(s.optimizerStates, 8 * shard);
    EXPECT_EQ(s.optimizerWorkspace, 4 * shard);
    // The reduce-scatter runs in place on it: only the p2p buffers.
    EXPECT_EQ(s.communicationBuffers, 33554432LL / 2);
  }
  // ratrain ZeRO-2 of one micro-batch for comparison: 2 + 14/d and the two
  // largest items' full gradients (embedding and a decoder layer).
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 8, 1, 1, RecomputePolicy::Full, ZeroStage::Gradients);
  StageMemory r = computeStageMemory(m, c, 0);
  EXPECT_EQ(r.modelStates(),
            2 * p + 14 * shard + 2 * (kEmbedding + kLayerParams));
  EXPECT_EQ(r.communicationBuffers, 33554432LL / 2);
}

TEST(MemoryModel, OffloadOptimizerStates) {
  ModelConfig m = synthetic();
  ParallelConfig c =
      ParallelConfig::balanced(8, 2, 1, 1, 4, RecomputePolicy::Full);
  c.offload = OffloadPolicy::OptimizerStates;
  StageMemory s = computeStageMemory(m, c, 0);
  StageMemory none = computeStageMemory(
      m, ParallelConfig::balanced(8, 2, 1, 1, 4, RecomputePolicy::Full), 0);
  const int64_t p = 99885056;
  EXPECT_EQ(s.optimizerStates, 0);
  EXPECT_EQ(s.masterWeights, 4 * p);
  EXPECT_EQ(s.offloadedBytes, 8 * p);
  // Two buffers of the largest item's m and v: 2 * 8 * 32768000.
  EXPECT_EQ(s.offloadWindow, 524288000);
  EXPECT_EQ(s.total(), none.total() - 8 * p + 524288000);
  // A middle stage's largest item is a decoder layer.
  ParallelConfig four =
      ParallelConfig::balanced(8, 4, 1, 1, 4, RecomputePolicy::Full);
  four.offload = OffloadPolicy::OptimizerStates;
  EXPECT_EQ(computeStageMemory(m, four, 1).offloadWindow, 2 * 8 * kLayerParams);
  EXPECT_EQ(computeStageMemory(m, four, 1).offloadedBytes,
            8 * 2 * kLayerParams);
  // Streaming in 64 MB chunks: two chunks in DDR.
  MemoryOptions chunked;
  chunked.offloadChunkBytes = 64000000;
  EXPECT_EQ(computeStageMemory(m, c, 0, chunked).offloadWindow, 128000000);
}

TEST(MemoryModel, OffloadedActivationsLeaveAWindowInDDR) {
  ModelConfig m = synthetic();
  // 4 stages of 2 layers, b = 2, m = 8, full recompute: stage 0 holds 4
  // micro-batches in flight, stage 3 one.
  ParallelConfig c =
      ParallelConfig::balanced(8, 4, 1, 2, 8, RecomputePolicy::Full);
  StageMemory recompute0 = computeStageMemory(m, c, 0);
  StageMemory recompute3 = computeStageMemory(m, c, 3);
  c.activationOffload = {2, 1, 0, 1};
  ASSERT_FALSE(bool(c.validate(m)));
  StageMemory s0 = computeStageMemory(m, c, 0);
  // Both layers x 4 in flight = 8 full activations in the tier, at most 5
  // of them in DDR; no input of theirs stored.
  EXPECT_EQ(s0.activations, 5 * kNoneB2);
  EXPECT_EQ(s0.offloadedActivations, 8 * kNoneB2);
  EXPECT_EQ(s0.offloadedBytes, 8 * kNoneB2);
  EXPECT_EQ(s0.total(), recompute0.total() - 2 * 4 * kFullB2 + 5 * kNoneB2);
  // Stage 1: one of its two layers, 3 in flight: 3 full ones (under the
  // window), the other layer's 3 inputs.
  StageMemory s1 = computeStageMemory(m, c, 1);
  EXPECT_EQ(s1.activations, 3 * kNoneB2 + 3 * kFullB2);
  EXPECT_EQ(s1.offloadedBytes, 3 * kNoneB2);
  EXPECT_EQ(computeStageMemory(m, c, 2).offloadedBytes, 0);
  // Stage 3: one layer, one in flight.
  StageMemory s3 = computeStageMemory(m, c, 3);
  EXPECT_EQ(s3.activations, recompute3.activations - kFullB2 + kNoneB2);
  EXPECT_EQ(s3.offloadedBytes, kNoneB2);
  // Offloaded activations share the tier with offloaded optimizer states.
  c.offload = OffloadPolicy::OptimizerStates;
  EXPECT_EQ(computeStageMemory(m, c, 1).offloadedBytes,
            3 * kNoneB2 + 8 * 2 * kLayerParams);
  // More offloaded layers than the stage has is invalid.
  c.activationOffload = {3, 0, 0, 0};
  llvm::Error invalid = c.validate(m);
  EXPECT_TRUE(bool(invalid));
  llvm::consumeError(std::move(invalid));
  EXPECT_NE(c.describe().find(" act-offload=3x1,0x3"), std::string::npos)
      << c.describe();
}

TEST(MemoryModel, OffloadMasterAndOptimizerWithZero) {
  ModelConfig m = synthetic();
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 8, 1, 4, RecomputePolicy::Full, ZeroStage::Optimizer);
  c.offload = OffloadPolicy::MasterAndOptimizer;
  StageMemory s = computeStageMemory(m, c, 0);
  // 12 bytes of the 1/8 shard (12485632 params) leave DDR; views and
  // gradients stay.
  EXPECT_EQ(s.masterWeights, 0);
  EXPECT_EQ(s.optimizerStates, 0);
  EXPECT_EQ(s.offloadedBytes, 12 * 12485632LL);
  EXPECT_EQ(s.modelStates(), 4 * 99885056LL);
  // Window: two buffers of the embedding's shard, 12 * 32768000 / 8.
  EXPECT_EQ(s.offloadWindow, 2 * 12 * 4096000LL);
  EXPECT_EQ(c.describe(), "pp=2 dp=8 mbs=1 m=4 zero=1 layers=4x2 "
                          "recompute=full offload=master");
  // FP32 training: the master is the parameter itself and stays.
  m.dtype = DType::F32;
  EXPECT_EQ(offloadedBytesPerParam(m, OffloadPolicy::MasterAndOptimizer), 8);
  EXPECT_EQ(computeStageMemory(m, c, 0).offloadedBytes, 8 * 12485632LL);
}

TEST(MemoryModel, ParsesNames) {
  EXPECT_EQ(parseOffloadPolicy("optimizer"), OffloadPolicy::OptimizerStates);
  EXPECT_EQ(parseOffloadPolicy("master"), OffloadPolicy::MasterAndOptimizer);
  EXPECT_EQ(parseOffloadPolicy("all"), std::nullopt);
  EXPECT_EQ(stringifyOffloadPolicy(OffloadPolicy::None), "none");
  EXPECT_EQ(parseRecomputePolicy("selective"), RecomputePolicy::Selective);
  EXPECT_EQ(parseRecomputePolicy("some"), std::nullopt);
  EXPECT_EQ(parseZeroStage("2"), ZeroStage::Gradients);
  EXPECT_EQ(parseZeroStage("zero3"), ZeroStage::Parameters);
  EXPECT_EQ(stringifyZeroStage(ZeroStage::Parameters), "3");
  EXPECT_EQ(parseZeroStage("4"), std::nullopt);
  EXPECT_EQ(stringifyRecomputePolicy(RecomputePolicy::Full), "full");
}

// What the mt3k lowering appends to the assigned arena, by hand for the
// synthetic model at b = 1 (T = 2048, h = q = kv = 1024, ffn = 4096, w = 2).
TEST(MemoryModel, LoweringScratchByHand) {
  ModelConfig m = synthetic();
  LoweringScratch scratch = LoweringScratch::of(LayerShape::of(m, 1), 2);
  EXPECT_EQ(scratch.stream, 2048 * 1024 * 2);  // T h w
  EXPECT_EQ(scratch.ones, 0);                  // no q/k/v bias
  EXPECT_EQ(scratch.r1, 2048 * 4096 * 2);      // T ffn w
  EXPECT_EQ(scratch.r2, 2048 * 1024 * 2);      // T h w
  EXPECT_EQ(scratch.w, 2 * 2048 * 4096 * 2);   // 2 T ffn w
  EXPECT_EQ(scratch.message, 2048 * 1024 * 2); // T h w

  // x, xn1, q, k, v, o, x2, xn2 (8 T h w), gate, up (2 T ffn w), 1/rms x 2
  // (2 T 4), lse (T a 4); every slot a multiple of 64.
  constexpr int64_t kLayout =
      8 * 4194304LL + 2 * 16777216LL + 2 * 8192 + 2048 * 16 * 4;
  EXPECT_EQ(decoderActivationLayout(LayerShape::of(m, 1), 2, 0).bytes, kLayout);
  // hact is stored when the buffer has room for it.
  DecoderActivationLayout withHact =
      decoderActivationLayout(LayerShape::of(m, 1), 2, kLayout + 16777216);
  EXPECT_EQ(withHact.hact, kLayout);
  EXPECT_EQ(withHact.bytes, kLayout + 16777216);

  // pp = 4, m = 4, no ZeRO: the kernel workspace (2 T ffn w) holds
  // scratch.w; layer temporaries = 64 + stream + r1 + r2 (+ the forward
  // layout under full recompute); outboxes: 2 per direction sent.
  ParallelConfig c =
      ParallelConfig::balanced(8, 4, 1, 1, 4, RecomputePolicy::None);
  int64_t temporaries = 64 + 4194304 + 16777216 + 4194304;
  StageMemory first = computeStageMemory(m, c, 0);
  EXPECT_EQ(first.kernelWorkspace, 33554432);
  EXPECT_EQ(first.layerTemporaries, temporaries);
  EXPECT_EQ(first.outgoingMessages, 2 * 4194304);
  EXPECT_EQ(first.zeroShards, 0);
  EXPECT_EQ(computeStageMemory(m, c, 1).outgoingMessages, 4 * 4194304);
  EXPECT_EQ(computeStageMemory(m, c, 3).outgoingMessages, 2 * 4194304);
  c.recompute.assign(4, RecomputePolicy::Full);
  EXPECT_EQ(computeStageMemory(m, c, 1).layerTemporaries,
            temporaries + kLayout);
  // One micro-batch: one slot per direction.
  ParallelConfig one =
      ParallelConfig::balanced(8, 4, 1, 1, 1, RecomputePolicy::None);
  EXPECT_EQ(computeStageMemory(m, one, 1).outgoingMessages, 2 * 4194304);
}

// ZeRO: per item (8 layers, embedding, head on a single stage) a gradient
// and a view shard of w floor(n / d) bytes; ZeRO-2 under the layer-level
// lifecycle keeps its gradient shards in `gradients`.
TEST(MemoryModel, LoweringZeroShardsByHand) {
  ModelConfig m = synthetic();
  int64_t perItem = 8 * (kLayerParams / 4) * 2 + (kEmbedding / 4) * 2 +
                    (kHead / 4) * 2; // 99885568, slots 64-aligned already
  ParallelConfig c = ParallelConfig::balanced(
      8, 1, 4, 1, 4, RecomputePolicy::None, ZeroStage::Optimizer);
  // A 16-bit view shard is the rank's block of the view (mt3k.group_slot):
  // only the gradient shards.
  EXPECT_EQ(computeStageMemory(m, c, 0).zeroShards, perItem);
  // A quantized weight wire (or a partition) keeps the view shard's region.
  c.sharding.weightWire = WireFormat::Int8;
  EXPECT_EQ(computeStageMemory(m, c, 0).zeroShards, 2 * perItem);
  c.sharding = ShardingPolicy();
  c.zero = ZeroStage::Gradients;
  EXPECT_EQ(computeStageMemory(m, c, 0).zeroShards, 0);
  MemoryOptions gpu;
  gpu.lifecycle = LifecyclePolicy::GpuStyle;
  EXPECT_EQ(computeStageMemory(m, c, 0, gpu).zeroShards, perItem);
  // An FP32 model's view shard is its master shard: nothing more, and with
  // the default policy it is the rank's block of the view (only the 4-byte
  // gradient shards).
  ZeroShardSizes f32 = ZeroShardSizes::of(kLayerParams, 4, 4);
  EXPECT_EQ(f32.viewShard, (kLayerParams / 4) * 4);
  EXPECT_EQ(f32.gradShard, (kLayerParams / 4) * 4);
  ModelConfig single = m;
  single.dtype = DType::F32;
  c.zero = ZeroStage::Optimizer;
  EXPECT_EQ(computeStageMemory(single, c, 0).zeroShards, 2 * perItem);
  c.sharding.weightWire = WireFormat::Int8;
  EXPECT_EQ(computeStageMemory(single, c, 0).zeroShards, 4 * perItem);
}

// A SwiGLU FFN of 8h with 2 K/V heads of 16: 34sbh undercounts what the
// lowering stores; none and selective are sized to its layout.
TEST(MemoryModel, WideFFNActivationsMatchTheLoweringLayout) {
  ModelConfig m = synthetic();
  m.numKVHeads = 2; // kv = 128
  m.ffnHidden = 8192;
  // x, xn1, x2, xn2 (4 T h w), q, o (2 T h w), k, v (2 T 128 w), gate, up
  // (2 T 8192 w), 1/rms x 2, lse.
  constexpr int64_t kLayout = 4 * 4194304LL + 2 * 4194304LL + 2 * 524288LL +
                              2 * 33554432LL + 2 * 8192 + 2048 * 16 * 4;
  static_assert(kLayout > 34LL * 2048 * 1024, "wider than 34sbh");
  MemoryOptions fused;
  fused.fusedAttention = true;
  EXPECT_EQ(layerActivationBytes(m, 1, RecomputePolicy::Selective), kLayout);
  EXPECT_EQ(layerActivationBytes(m, 1, RecomputePolicy::None, fused), kLayout);
  EXPECT_EQ(layerActivationBytes(m, 1, RecomputePolicy::Full), 2 * 2048 * 1024);
  // The standard width keeps the Korthikanti numbers.
  EXPECT_EQ(layerActivationBytes(synthetic(), 2, RecomputePolicy::Selective),
            kSelectiveB2);
}

} // namespace

TEST(MemoryModel, ShardingPresetsAndWireFormats) {
  // Three levels (chip, node, system): ZeRO++ partitions the weights at the
  // node level and reduce-scatters gradients over the whole group; seed
  // 002's three-level keeps weights on the chip and gradients in the node.
  std::optional<ShardingPolicy> zpp = shardingPreset("zero++", 3);
  ASSERT_TRUE(zpp);
  EXPECT_EQ(zpp->weightLevel, 1);
  EXPECT_EQ(zpp->gradLevel, 2);
  std::optional<ShardingPolicy> three = shardingPreset("three-level", 3);
  ASSERT_TRUE(three);
  EXPECT_EQ(three->weightLevel, 0);
  EXPECT_EQ(three->gradLevel, 1);
  EXPECT_TRUE(shardingPreset("flat", 1)->isDefault());
  EXPECT_FALSE(shardingPreset("zero++", 1));
  EXPECT_FALSE(shardingPreset("four-level", 3));
  ShardingPolicy quantized = *zpp;
  quantized.weightWire = WireFormat::Int8;
  quantized.gradWire = WireFormat::Int4;
  EXPECT_EQ(quantized.describe(), " weight-partition=1 grad-partition=2 "
                                  "weight-wire=int8 grad-wire=int4");
  EXPECT_EQ(ShardingPolicy().describe(), "");
  EXPECT_EQ(parseWireFormat("int4"), WireFormat::Int4);
  EXPECT_EQ(parseWireFormat("fp8"), std::nullopt);
  EXPECT_DOUBLE_EQ(wireBytesPerElement(WireFormat::Int8, 2, 256), 1.015625);
  EXPECT_DOUBLE_EQ(wireBytesPerElement(WireFormat::Native, 2), 2.0);
}

TEST(MemoryModel, PartitionGroupMembersFollowThePlacement) {
  // Levels of 4 clusters (chip), 16 (node), the machine (64).
  const int64_t levels[] = {4, 16, 64};
  EXPECT_EQ(partitionGroupMembers(levels, 8, 0), 4);
  EXPECT_EQ(partitionGroupMembers(levels, 8, 1), 8);
  EXPECT_EQ(partitionGroupMembers(levels, 8, 2), 8);
  EXPECT_EQ(partitionGroupMembers(levels, 8, -1), 8);
  EXPECT_EQ(partitionGroupMembers(levels, 2, 0), 2);
  EXPECT_EQ(partitionGroupMembers(levels, 32, 1), 16);
  EXPECT_TRUE(isRegularPartitionLevel(levels, 32, 0));
  // Groups of 6 straddle the chips of 4: the gcd, and not regular.
  EXPECT_EQ(partitionGroupMembers(levels, 6, 0), 2);
  EXPECT_FALSE(isRegularPartitionLevel(levels, 6, 0));
  // No level table: the whole group.
  EXPECT_EQ(partitionGroupMembers({}, 8, 0), 8);
}

/// Stage 0 of pp=2 dp=8 m=4 on levels of 4 / 16 / 64 clusters: 4 layers
/// and the embedding, 99885056 params, 12485632 per rank (shard 1/8).
static StageMemory
partitioned(ZeroStage zero, ShardingPolicy sharding,
            LifecyclePolicy lifecycle = LifecyclePolicy::RATrain) {
  ParallelConfig c =
      ParallelConfig::balanced(8, 2, 8, 1, 4, RecomputePolicy::Full, zero);
  c.sharding = sharding;
  MemoryOptions options;
  options.lifecycle = lifecycle;
  options.levelClusters = {4, 16, 64};
  return computeStageMemory(synthetic(), c, 0, options);
}

TEST(MemoryModel, SecondaryWeightPartitionAddsOneOverGOfTheViews) {
  StageMemory flat = partitioned(ZeroStage::Parameters, {});
  EXPECT_EQ(flat.parameterViews, 2 * (12485632LL + kEmbedding + kLayerParams));
  // Weights at level 0: g = 4 members per chip keep 1/4 of every item's
  // view: 4 * 16779264 / 4 + 32768000 / 4 = 24971264 params.
  ShardingPolicy chip;
  chip.weightLevel = 0;
  StageMemory hpz = partitioned(ZeroStage::Parameters, chip);
  EXPECT_EQ(hpz.parameterViews, flat.parameterViews + 2 * 24971264LL);
  EXPECT_EQ(hpz.total(), flat.total() + 2 * 24971264LL);
  EXPECT_EQ(hpz.gradients, flat.gradients);
  // At level 1 the node holds the whole group of 8: the secondary is the
  // primary shard, nothing more.
  ShardingPolicy node;
  node.weightLevel = 1;
  EXPECT_EQ(partitioned(ZeroStage::Parameters, node).parameterViews,
            flat.parameterViews);
  // Below ZeRO-3 there is no weight partition.
  EXPECT_EQ(partitioned(ZeroStage::Gradients, chip).parameterViews,
            partitioned(ZeroStage::Gradients, {}).parameterViews);
}

TEST(MemoryModel, GradientPartitionAddsTheSynchronizingPartitions) {
  // Flat ZeRO-3 with m = 4: the full 16-bit gradients accumulate, plus the
  // shards: 2 * (99885056 + 12485632).
  StageMemory flat = partitioned(ZeroStage::Parameters, {});
  EXPECT_EQ(flat.gradients, 2 * (99885056LL + 12485632LL));
  // Gradients at level 0 (g = 4): the same accumulation, and after the last
  // micro-batch the partitions of 1/4 of the two items synchronizing at a
  // time (the two largest: embedding and a layer) between the reduce-scatter
  // inside the chip and the one across the chips.
  ShardingPolicy chip;
  chip.gradLevel = 0;
  StageMemory three = partitioned(ZeroStage::Parameters, chip);
  EXPECT_EQ(three.gradients, flat.gradients + 2 * ((kEmbedding + 3) / 4 +
                                                   (kLayerParams + 3) / 4));
  EXPECT_EQ(partitioned(ZeroStage::Gradients, chip).gradients,
            partitioned(ZeroStage::Gradients, {}).gradients +
                2 * ((kEmbedding + 3) / 4 + (kLayerParams + 3) / 4));
  // At the outermost level (ZeRO++, g = 8 = d) the reduce-scatter spans the
  // whole group at once: no partition.
  ShardingPolicy outer;
  outer.gradLevel = 2;
  EXPECT_EQ(partitioned(ZeroStage::Gradients, outer).gradients,
            partitioned(ZeroStage::Gradients, {}).gradients);
  // ZeRO-1 and the gpu-style runtime are unchanged.
  EXPECT_EQ(partitioned(ZeroStage::Optimizer, chip).gradients,
            partitioned(ZeroStage::Optimizer, {}).gradients);
  EXPECT_EQ(partitioned(ZeroStage::Gradients, chip, LifecyclePolicy::GpuStyle)
                .gradients,
            4 * 99885056LL);
  // Three-level on this machine: weights at the chip, gradients at the
  // node, which holds the whole group of 8: only the weight term.
  ShardingPolicy both;
  both.weightLevel = 0;
  both.gradLevel = 1;
  StageMemory s = partitioned(ZeroStage::Parameters, both);
  EXPECT_EQ(s.parameterViews, flat.parameterViews + 2 * 24971264LL);
  EXPECT_EQ(s.gradients, flat.gradients);
}
