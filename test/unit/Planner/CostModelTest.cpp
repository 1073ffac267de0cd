//===- CostModelTest.cpp - Alpha-beta collectives, rooflines, step time ---===//

#include "ratrain/Planner/CostModel.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace ratrain;

namespace {

/// 4 nodes of 4 clusters; round numbers so expectations are hand-computed.
MachineModel testMachine() {
  MachineModel m;
  m.name = "test";
  m.nodes = 4;
  m.clustersPerNode = 4;
  m.cluster.cores = 24;
  m.cluster.ddrBytes = 20000000000;
  m.cluster.gsmBytes = 6291456;
  m.cluster.amBytesPerCore = 786432;
  m.cluster.ddrBandwidth = 100e9;
  m.cluster.dmaBandwidth = 100e9;
  m.cluster.peakFlopsF16 = 1e13;
  m.cluster.peakFlopsF32 = 5e12;
  m.cluster.efficiency = {0.5, 0.5, 0.4, 0.5};
  m.network.intraNode = {50e9, 2e-6};
  m.network.interNode = {10e9, 5e-6};
  m.network.nodeInjectionBandwidth = 20e9;
  m.network.collective = CollectiveAlgorithm::Hierarchical;
  return m;
}

ModelConfig testModel() {
  ModelConfig m;
  m.name = "synthetic";
  m.numLayers = 8;
  m.hidden = 1024;
  m.numHeads = 16;
  m.numKVHeads = 16;
  m.ffnHidden = 4096;
  m.vocab = 256;
  m.seqLen = 2048;
  m.dtype = DType::BF16;
  return m;
}

TEST(CostModel, PointToPoint) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  EXPECT_DOUBLE_EQ(costs.pointToPoint(1000000, LinkClass::IntraNode),
                   2e-6 + 1e6 / 50e9);
  EXPECT_DOUBLE_EQ(costs.pointToPoint(1000000, LinkClass::InterNode),
                   5e-6 + 1e6 / 10e9);
  EXPECT_EQ(costs.pipelineMessageBytes(2), 2048 * 2 * 1024 * 2);
}

TEST(CostModel, CollectivesInsideOneNode) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  const int64_t bytes = 4000000;
  // Ring all-reduce: 2(k-1) steps of alpha + B/(k bw) = 6 * 2.2e-5.
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Ring, bytes, 4),
              1.32e-4, 1e-12);
  // Reduce-scatter and all-gather: k-1 steps.
  EXPECT_NEAR(costs.collective(CollectiveKind::ReduceScatter,
                               CollectiveAlgorithm::Ring, bytes, 4),
              6.6e-5, 1e-12);
  EXPECT_NEAR(costs.collective(CollectiveKind::AllGather,
                               CollectiveAlgorithm::Ring, bytes, 4),
              6.6e-5, 1e-12);
  // Inside a node hierarchical is the ring.
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce, bytes, 4), 1.32e-4,
              1e-12);
  // Binomial tree all-reduce: 2 log2(k) (alpha + B/bw) = 4 * 8.2e-5.
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Tree, bytes, 4),
              3.28e-4, 1e-12);
  EXPECT_EQ(costs.collective(CollectiveKind::AllReduce, bytes, 1), 0);
}

TEST(CostModel, InNetworkCollectivesSpeedUpTheirLevel) {
  // Reduction 2x and multicast 4x faster on the intra-node level.
  MachineModel machine = testMachine();
  machine.network.inNetwork = {0, 2.0, 4.0};
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  const int64_t bytes = 4000000;
  // Ring inside a node: the 3 reduce-scatter steps (6.6e-5) at half the
  // time, the 3 all-gather steps (6.6e-5) at a quarter.
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Ring, bytes, 4),
              3.3e-5 + 1.65e-5, 1e-12);
  EXPECT_NEAR(costs.collective(CollectiveKind::ReduceScatter,
                               CollectiveAlgorithm::Ring, bytes, 4),
              3.3e-5, 1e-12);
  EXPECT_NEAR(costs.collective(CollectiveKind::AllGather,
                               CollectiveAlgorithm::Ring, bytes, 4),
              1.65e-5, 1e-12);
  // Tree: reduce to the root (2 * 8.2e-5) / 2, broadcast / 4.
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Tree, bytes, 4),
              8.2e-5 + 4.1e-5, 1e-12);
  // Hierarchical over 4 nodes: only the intra-node phases gain (the inter
  // all-reduce stays 3.3e-4).
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Hierarchical, bytes, 16),
              3.3e-5 + 3.3e-4 + 1.65e-5, 1e-12);
  // On the inter-node level instead: the inter phase gains (reduce-scatter
  // half 1.65e-4 / 2, all-gather half / 4), the intra phases do not.
  machine.network.inNetwork = {1, 2.0, 4.0};
  CostModel across(model, machine);
  EXPECT_NEAR(across.collective(CollectiveKind::AllReduce,
                                CollectiveAlgorithm::Hierarchical, bytes, 16),
              6.6e-5 + 1.65e-4 / 2 + 1.65e-4 / 4 + 6.6e-5, 1e-12);
  EXPECT_NEAR(across.collective(CollectiveKind::AllReduce,
                                CollectiveAlgorithm::Ring, bytes, 4),
              1.32e-4, 1e-12);
}

TEST(CostModel, CollectivesAcrossNodes) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  const int64_t bytes = 4000000;
  // Hierarchical over 16 = 4 nodes x 4: intra RS 3 * (2e-6 + 1e6/50e9) =
  // 6.6e-5; inter ring all-reduce of B/4 over 4 nodes, 4 streams sharing
  // 20e9 -> 5e9 each: 6 * (5e-6 + 2.5e5/5e9) = 3.3e-4; intra AG 6.6e-5.
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Hierarchical, bytes, 16),
              4.62e-4, 1e-12);
  EXPECT_NEAR(costs.collective(CollectiveKind::ReduceScatter,
                               CollectiveAlgorithm::Hierarchical, bytes, 16),
              6.6e-5 + 1.65e-4, 1e-12);
  // Flat ring over 16: 30 steps of max alpha + B/16 over the slowest link
  // (10e9): 30 * (5e-6 + 2.5e-5) = 9e-4.
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Ring, bytes, 16),
              9e-4, 1e-12);
  // Tree over 16: 2 * 4 * (5e-6 + 4e6/1e10) = 3.24e-3.
  EXPECT_NEAR(costs.collective(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Tree, bytes, 16),
              3.24e-3, 1e-12);
  // Small messages: the tree's log(k) latency beats the ring's 2(k-1).
  EXPECT_LT(costs.collective(CollectiveKind::AllReduce,
                             CollectiveAlgorithm::Tree, 64, 16),
            costs.collective(CollectiveKind::AllReduce,
                             CollectiveAlgorithm::Ring, 64, 16));
}

TEST(CostModel, RooflineAndMemoryBoundKernels) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  // Compute bound: 2 * 4096^3 FLOPs at 1e13 * 0.5.
  EXPECT_NEAR(costs.gemmSeconds(4096, 4096, 4096),
              2.0 * 4096 * 4096 * 4096 / 5e12, 1e-12);
  // Memory bound (one row): 2 bytes * (4096 + 4096^2 + 4096) at 100e9*0.5.
  EXPECT_NEAR(costs.gemmSeconds(1, 4096, 4096),
              2.0 * (4096 + 4096.0 * 4096 + 4096) / 50e9, 1e-12);
  // Adam: 26 bytes/param; cast: 6 bytes/param; both at 50e9.
  EXPECT_NEAR(costs.optimizerUpdate(1000000000), 0.52, 1e-12);
  // A gradient in two parts (the reduce-scatter left its last reduction to
  // the update): the own part is read too, 2 more bytes.
  EXPECT_NEAR(costs.optimizerUpdate(1000000000, /*ownPart=*/true), 0.56, 1e-12);
  EXPECT_NEAR(costs.viewCast(1000000000), 0.12, 1e-12);
}

TEST(CostModel, UpdatesRunAtTheOptimizersOwnRates) {
  // The optimizer's measured rates price the update (every cluster
  // updating: the planner's case); memory_bound still prices the rest.
  MachineModel machine = testMachine();
  machine.cluster.optimizerBandwidth = 20e9;
  machine.cluster.optimizerBandwidthAlone = 30e9;
  ModelConfig model = testModel(); // bf16
  {
    CostModel costs(model, machine);
    // No 16-bit pair: the fp32 one prices a bf16 model's update too.
    EXPECT_NEAR(costs.optimizerUpdate(1000000000), 26.0 / 20, 1e-12);
    EXPECT_NEAR(costs.viewCast(1000000000), 0.12, 1e-12);
  }
  machine.cluster.optimizerBandwidthF16 = 13e9;
  machine.cluster.optimizerBandwidthAloneF16 = 26e9;
  {
    CostModel costs(model, machine);
    EXPECT_NEAR(costs.optimizerUpdate(1000000000), 2.0, 1e-12);
    EXPECT_NEAR(costs.optimizerUpdate(1000000000, /*ownPart=*/true), 28.0 / 13,
                1e-12);
  }
  ModelConfig fp32 = model;
  fp32.dtype = DType::F32;
  CostModel costs(fp32, machine);
  EXPECT_NEAR(costs.optimizerUpdate(1000000000), 28.0 / 20, 1e-12);
}

TEST(CostModel, LayerElementwiseKernelsRunAtTheirOwnRate) {
  ModelConfig model = testModel(); // bf16, h 1024, 16 x 64 heads, ffn 4096
  // Per token, 2 bytes an element: forward two RMSNorms (2 x 2h), RoPE on q
  // and k (2 x 2048) and SwiGLU (3 x ffn); backward the norms (2 x 3h),
  // RoPE, SwiGLU (5 x ffn) and two residual-gradient adds (2 x 3h).
  const double forward = 2.0 * 2048 * (4 * 1024 + 2 * 2048 + 3 * 4096);
  const double backward =
      2.0 * 2048 * (6 * 1024 + 2 * 2048 + 5 * 4096 + 6 * 1024);
  MachineModel machine = testMachine();
  CostModel plain(model, machine);
  EXPECT_DOUBLE_EQ(plain.layerElementwiseBytes(1, false), forward);
  EXPECT_DOUBLE_EQ(plain.layerElementwiseBytes(2, true), 2 * backward);
  // Without a measured rate they stream at ddr_bandwidth x memory_bound
  // (50e9); with one, at the model type's rate (the fp32 one for a 16-bit
  // model when the file has no _f16 rate).
  EXPECT_NEAR(plain.layerElementwiseSeconds(1, false), forward / 50e9, 1e-12);
  MachineModel measured = testMachine();
  measured.cluster.elementwiseBandwidth = 20e9;
  {
    CostModel costs(model, measured);
    EXPECT_NEAR(costs.layerElementwiseSeconds(1, true), backward / 20e9, 1e-12);
  }
  measured.cluster.elementwiseBandwidthF16 = 10e9;
  CostModel costs(model, measured);
  EXPECT_NEAR(costs.layerElementwiseSeconds(1, false), forward / 10e9, 1e-12);
  // The layer's times change by exactly that.
  EXPECT_NEAR(costs.layerForward(1) - plain.layerForward(1),
              forward / 10e9 - forward / 50e9, 1e-9);
  EXPECT_NEAR(costs.layerBackward(1) - plain.layerBackward(1),
              backward / 10e9 - backward / 50e9, 1e-9);
  // An fp32 model: 4 bytes an element, at the fp32 rate.
  ModelConfig fp32 = model;
  fp32.dtype = DType::F32;
  CostModel fp32Costs(fp32, measured);
  EXPECT_NEAR(fp32Costs.layerElementwiseSeconds(1, false), 2 * forward / 20e9,
              1e-12);
  // ALiBi rotates nothing.
  ModelConfig alibi = model;
  alibi.positions = PositionEncoding::Alibi;
  EXPECT_DOUBLE_EQ(layerElementwiseBytes(alibi, 1, false),
                   forward - 2.0 * 2048 * 2 * 2048);
}

TEST(CostModel, UpdatesAverageWhereTheStagesGroupSyncsOnARing) {
  // CostModel keeps a reference to its machine: one machine per model.
  MachineModel hierarchicalMachine = testMachine();
  hierarchicalMachine.clustersPerNode = 3;
  MachineModel ringMachine = hierarchicalMachine, treeMachine = ringMachine;
  ringMachine.network.collective = CollectiveAlgorithm::Ring;
  treeMachine.network.collective = CollectiveAlgorithm::Tree;
  ModelConfig model = testModel(); // bf16
  CostModel hierarchical(model, hierarchicalMachine);
  CostModel ring(model, ringMachine);
  CostModel tree(model, treeMachine);
  // dp 2 on nodes of 3: stage 0 (clusters 0, 1) stays in node 0, stage 1
  // (clusters 2, 3) spans nodes 0 and 1 and syncs hierarchically, as the
  // lowering emits it.
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 2, 1, 4, RecomputePolicy::None, ZeroStage::Optimizer);
  EXPECT_TRUE(hierarchical.syncsOnRing(false));
  EXPECT_FALSE(hierarchical.syncsOnRing(true));
  EXPECT_TRUE(hierarchical.averagesInUpdate(c, 0));
  EXPECT_FALSE(hierarchical.averagesInUpdate(c, 1));
  // A ring machine's group that spans nodes syncs hierarchically too.
  EXPECT_TRUE(ring.averagesInUpdate(c, 0));
  EXPECT_FALSE(ring.averagesInUpdate(c, 1));
  // A tree never leaves the average to the update.
  EXPECT_FALSE(tree.averagesInUpdate(c, 0));
  // Nor does ZeRO-2 leave it (the full gradient is released at the sync's
  // wait).
  c.zero = ZeroStage::Gradients;
  EXPECT_FALSE(ring.averagesInUpdate(c, 0));
}

TEST(CostModel, AttentionRunsAtTheF32PeakWhereItsKernelsComputeInF32) {
  MachineModel machine = testMachine();
  MachineModel f32Attention = testMachine();
  f32Attention.cluster.attentionAtF32Peak = true;
  ModelConfig model = testModel(); // bf16; attention compute-bound at s 2048
  // Only the attention changes: its FLOPs at half the peak (5e12 instead of
  // 1e13, efficiencies 0.5 forward and 0.4 backward), 2.5x as many backward.
  double flops = model.attentionFlopsPerToken() * 2048 * 4;
  double forward = CostModel(model, f32Attention).layerForward(4) -
                   CostModel(model, machine).layerForward(4);
  EXPECT_NEAR(forward, flops / (5e12 * 0.5) - flops / (1e13 * 0.5),
              1e-9 * forward);
  double backward = CostModel(model, f32Attention).layerBackward(4) -
                    CostModel(model, machine).layerBackward(4);
  EXPECT_NEAR(backward, 2.5 * flops / (5e12 * 0.4) - 2.5 * flops / (1e13 * 0.4),
              1e-9 * backward);
  // GEMMs keep the 16-bit peak; an fp32 model is unchanged.
  EXPECT_NEAR(CostModel(model, f32Attention).gemmSeconds(4096, 4096, 4096),
              2.0 * 4096 * 4096 * 4096 / 5e12, 1e-12);
  model.dtype = DType::F32;
  EXPECT_DOUBLE_EQ(CostModel(model, f32Attention).layerForward(4),
                   CostModel(model, machine).layerForward(4));
}

TEST(CostModel, SixteenBitAttentionUsesItsOwnEfficiencies) {
  MachineModel machine = testMachine();
  MachineModel own = testMachine();
  own.cluster.efficiency.attentionForwardF16 = 0.6;
  own.cluster.efficiency.attentionBackwardF16 = 0.5;
  ModelConfig model = testModel(); // bf16; attention compute-bound at s 2048
  // The bf16 model's attention moves from 1e13 * 0.5 / 0.4 to 1e13 * 0.6 /
  // 0.5; everything else is the same.
  double flops = model.attentionFlopsPerToken() * 2048 * 4;
  double forward = CostModel(model, machine).layerForward(4) -
                   CostModel(model, own).layerForward(4);
  EXPECT_NEAR(forward, flops / (1e13 * 0.5) - flops / (1e13 * 0.6),
              1e-9 * forward);
  double backward = CostModel(model, machine).layerBackward(4) -
                    CostModel(model, own).layerBackward(4);
  EXPECT_NEAR(backward, 2.5 * flops / (1e13 * 0.4) - 2.5 * flops / (1e13 * 0.5),
              1e-9 * backward);
  // attention_peak: f32 keeps pricing it at the fp32 peak with the fp32
  // efficiencies; an fp32 model never reads the 16-bit ones.
  MachineModel ownAtF32 = own;
  ownAtF32.cluster.attentionAtF32Peak = true;
  machine.cluster.attentionAtF32Peak = true;
  EXPECT_DOUBLE_EQ(CostModel(model, ownAtF32).layerForward(4),
                   CostModel(model, machine).layerForward(4));
  model.dtype = DType::F32;
  EXPECT_DOUBLE_EQ(CostModel(model, own).layerBackward(4),
                   CostModel(model, testMachine()).layerBackward(4));
}

TEST(CostModel, AttentionUsesTheMeasuredFitOfItsTypeAndDirection) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel(); // bf16, 16 heads of 64, s 2048
  const int64_t b = 2;
  const double tokens = 2048.0 * b;
  const double flops = model.attentionFlopsPerToken() * tokens;
  const double scores = 16 * 2048.0 * 2048.0 / 2 * b, rows = 16 * tokens;
  EXPECT_DOUBLE_EQ(model.attentionScoresPerToken() * tokens, scores);
  EXPECT_DOUBLE_EQ(flops, 4 * scores * 64);
  double plainForward = CostModel(model, machine).layerForward(b);
  double plainBackward = CostModel(model, machine).layerBackward(b);
  // A forward fit for 16-bit operands: the forward's attention moves from
  // the roofline at efficiency 0.5 to the fit; the backward keeps its own.
  const KernelTimeFit forwardFit{0.7, 4e-10, 2e-6, 5e-8};
  machine.cluster.attentionForwardFit.f16 = forwardFit;
  double fitted = flops / (1e13 * 0.7) + 4e-10 * scores + 5e-8 * rows + 2e-6;
  EXPECT_NEAR(CostModel(model, machine).layerForward(b) - plainForward,
              fitted - flops / (1e13 * 0.5), 1e-12);
  EXPECT_DOUBLE_EQ(CostModel(model, machine).layerBackward(b), plainBackward);
  // Narrow heads: the same FLOPs in 32-wide heads have twice the scores and
  // rows, so the fit prices them longer; the plain efficiency cannot tell.
  ModelConfig narrow = model;
  narrow.headDimension = 32;
  narrow.numHeads = 32;
  narrow.numKVHeads = 32;
  EXPECT_DOUBLE_EQ(narrow.attentionFlopsPerToken(),
                   model.attentionFlopsPerToken());
  EXPECT_NEAR(CostModel(narrow, machine).layerForward(b) -
                  CostModel(model, machine).layerForward(b),
              4e-10 * scores + 5e-8 * rows, 1e-12);
  EXPECT_DOUBLE_EQ(CostModel(narrow, testMachine()).layerForward(b),
                   plainForward);
  // The backward's fit: 2.5x the forward's FLOPs, the same scores and rows.
  const KernelTimeFit backwardFit{0.5, 6e-10, 0, 1.5e-7};
  machine.cluster.attentionBackwardFit.f16 = backwardFit;
  fitted = 2.5 * flops / (1e13 * 0.5) + 6e-10 * scores + 1.5e-7 * rows;
  EXPECT_NEAR(CostModel(model, machine).layerBackward(b) - plainBackward,
              fitted - 2.5 * flops / (1e13 * 0.4), 1e-12);
  // An fp32 model, and a machine whose attention computes in fp32, read the
  // fp32 fits (none here: the roofline at the fp32 peak).
  ModelConfig fp32 = model;
  fp32.dtype = DType::F32;
  EXPECT_DOUBLE_EQ(CostModel(fp32, machine).layerForward(b),
                   CostModel(fp32, testMachine()).layerForward(b));
  machine.cluster.attentionForwardFit.f32 = forwardFit;
  fitted = flops / (5e12 * 0.7) + 4e-10 * scores + 5e-8 * rows + 2e-6;
  EXPECT_NEAR(CostModel(fp32, machine).layerForward(b) -
                  CostModel(fp32, testMachine()).layerForward(b),
              fitted - flops / (5e12 * 0.5), 1e-12);
  MachineModel atF32 = machine;
  atF32.cluster.attentionAtF32Peak = true;
  MachineModel plainAtF32 = testMachine();
  plainAtF32.cluster.attentionAtF32Peak = true;
  EXPECT_NEAR(CostModel(model, atF32).layerForward(b) -
                  CostModel(model, plainAtF32).layerForward(b),
              fitted - flops / (5e12 * 0.5), 1e-12);
}

TEST(CostModel, GemmUsesTheMeasuredFitOfItsOperandType) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel(); // bf16
  double plain = CostModel(model, machine).gemmSeconds(256, 688, 256);
  machine.cluster.gemmFit.f16 = {0.8, 2e-10, 3e-6};
  double flops = 2.0 * 256 * 688 * 256;
  double elements = 256.0 * 256 + 256.0 * 688 + 256.0 * 688;
  EXPECT_NEAR(CostModel(model, machine).gemmSeconds(256, 688, 256),
              flops / (1e13 * 0.8) + 2e-10 * elements + 3e-6, 1e-15);
  EXPECT_NE(CostModel(model, machine).gemmSeconds(256, 688, 256), plain);
  // An fp32 model without an fp32 fit keeps the plain roofline.
  model.dtype = DType::F32;
  machine.cluster.gemmFit.f16 = {};
  double plain32 = CostModel(model, machine).gemmSeconds(256, 688, 256);
  machine.cluster.gemmFit.f16 = {0.8, 2e-10, 3e-6};
  EXPECT_DOUBLE_EQ(CostModel(model, machine).gemmSeconds(256, 688, 256),
                   plain32);
  machine.cluster.gemmFit.f32 = {0.9, 4e-10, 2e-6};
  EXPECT_NEAR(CostModel(model, machine).gemmSeconds(256, 688, 256),
              flops / (5e12 * 0.9) + 4e-10 * elements + 2e-6, 1e-15);
}

TEST(CostModel, MeasuredGemmsPriceTheirOwnCallsOnly) {
  MachineModel machine = testMachine();
  machine.cluster.gemmFit.f16 = {0.8, 2e-10, 3e-6};
  ModelConfig model = testModel(); // bf16, 2048 tokens, h 1024, ffn 4096
  const CostModel fitted(model, machine);
  // The up projection's forward (NT 2048 x 4096 x 1024), its input gradient
  // (NN 2048 x 1024 x 4096) and its weight gradient (TN 4096 x 1024 x 2048),
  // measured with 16-bit operands.
  machine.cluster.gemmMeasured.f16 = {{GemmForm::NT, 2048, 4096, 1024, 1e-3},
                                      {GemmForm::NN, 2048, 1024, 4096, 2e-3},
                                      {GemmForm::TN, 4096, 1024, 2048, 3e-3}};
  const CostModel measured(model, machine);
  EXPECT_EQ(measured.gemmSeconds(2048, 4096, 1024, GemmForm::NT), 1e-3);
  EXPECT_EQ(measured.gemmSeconds(2048, 1024, 4096, GemmForm::NN), 2e-3);
  // Another form or shape: the fit.
  EXPECT_EQ(measured.gemmSeconds(2048, 4096, 1024, GemmForm::NN),
            fitted.gemmSeconds(2048, 4096, 1024, GemmForm::NN));
  EXPECT_EQ(measured.gemmSeconds(2048, 1024, 1024, GemmForm::NT),
            fitted.gemmSeconds(2048, 1024, 1024, GemmForm::NT));
  // A layer calls gate and up alike (two of each), down once with the
  // transposed shape: the forward moves by twice the NT call's difference.
  double nt = fitted.gemmSeconds(2048, 4096, 1024, GemmForm::NT);
  EXPECT_NEAR(measured.layerForward(1) - fitted.layerForward(1),
              2 * (1e-3 - nt), 1e-12);
  double nn = fitted.gemmSeconds(2048, 1024, 4096, GemmForm::NN);
  double tn = fitted.gemmSeconds(4096, 1024, 2048, GemmForm::TN);
  EXPECT_NEAR(measured.layerBackwardWeight(1) - fitted.layerBackwardWeight(1),
              2 * (3e-3 - tn), 1e-12);
  EXPECT_NEAR(measured.layerBackward(1) - fitted.layerBackward(1),
              2 * (2e-3 - nn) + 2 * (3e-3 - tn), 1e-12);
  // fp32 operands look up the f32 list, which is empty.
  model.dtype = DType::F32;
  EXPECT_EQ(CostModel(model, machine).layerForward(1),
            CostModel(model, testMachine()).layerForward(1));
  // Another micro-batch size has other shapes.
  model.dtype = DType::BF16;
  EXPECT_EQ(CostModel(model, machine).layerForward(2), fitted.layerForward(2));
}

TEST(CostModel, LayerGemmCallsAreTheRuntimesCalls) {
  // The tiny LLaMA (h 256, 4 heads, 2 KV heads, ffn 688, vocab 256, 256
  // tokens): the calls of a pp 2 step's trace (runtime `gemm16` events).
  ModelConfig model = testModel();
  model.hidden = 256;
  model.numHeads = 4;
  model.numKVHeads = 2;
  model.ffnHidden = 688;
  model.seqLen = 256;
  auto text = [](llvm::ArrayRef<GemmCall> calls) {
    std::string out;
    for (const GemmCall &c : calls)
      out += (stringifyGemmForm(c.form) + " " + std::to_string(c.m) + "x" +
              std::to_string(c.n) + "x" + std::to_string(c.k) + "*" +
              std::to_string(c.count) + " ")
                 .str();
    return out;
  };
  EXPECT_EQ(text(layerGemmCalls(model, 1, GemmPass::Forward)),
            "NT 256x256x256*1 NT 256x256x256*1 NT 256x128x256*2 "
            "NT 256x688x256*2 NT 256x256x688*1 ");
  EXPECT_EQ(text(layerGemmCalls(model, 1, GemmPass::BackwardInput)),
            "NN 256x256x256*1 NN 256x256x256*1 NN 256x256x128*2 "
            "NN 256x256x688*2 NN 256x688x256*1 ");
  EXPECT_EQ(text(layerGemmCalls(model, 2, GemmPass::BackwardWeight)),
            "TN 256x256x512*1 TN 256x256x512*1 TN 128x256x512*2 "
            "TN 688x256x512*2 TN 256x688x512*1 ");
  EXPECT_EQ(text({headGemmCall(model, 1, GemmPass::Forward)}),
            "NT 256x256x256*1 ");
  // Distinct over passes and micro-batch sizes: 12 shapes of micro-batch 1
  // (the head's are among the layers'), 12 of micro-batch 2.
  EXPECT_EQ(distinctGemmCalls(model, {1}).size(), 12u);
  EXPECT_EQ(distinctGemmCalls(model, {1, 2}).size(), 24u);
}

TEST(CostModel, LayerCosts) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  double f = costs.layerForward(1);
  EXPECT_GT(f, 0);
  // Forward matmul FLOPs at the GEMM rate bound the forward from below.
  double tokens = 2048;
  EXPECT_GT(f, model.layerMatmulFlopsPerToken() * tokens / 5e12);
  // Linear-ish in the micro-batch size (compute bound here).
  EXPECT_NEAR(costs.layerForward(2) / f, 2.0, 0.05);
  // Backward is about twice the forward.
  double ratio = costs.layerBackward(1) / f;
  EXPECT_GT(ratio, 1.8);
  EXPECT_LT(ratio, 3.0);
  EXPECT_EQ(costs.layerRecompute(1, RecomputePolicy::None), 0);
  EXPECT_DOUBLE_EQ(costs.layerRecompute(1, RecomputePolicy::Full), f);
  double selective = costs.layerRecompute(1, RecomputePolicy::Selective);
  EXPECT_GT(selective, 0);
  EXPECT_LT(selective, f);
  EXPECT_GT(costs.headForward(1), 0);
  EXPECT_GT(costs.headBackward(1), costs.headForward(1));
  EXPECT_GT(costs.embeddingBackward(1), costs.embeddingForward(1));
}

TEST(CostModel, SplitBackwardPartsSumToTheBackward) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  for (int64_t b : {1, 2, 4}) {
    // The weight part is the seven dW GEMMs, about half the GEMM work; the
    // input part the rest (dX GEMMs, attention backward, elementwise).
    double input = costs.layerBackwardInput(b);
    double weight = costs.layerBackwardWeight(b);
    EXPECT_GT(input, 0);
    EXPECT_GT(weight, 0);
    EXPECT_LT(weight, input);
    EXPECT_NEAR(input + weight, costs.layerBackward(b),
                1e-12 * costs.layerBackward(b));
    EXPECT_GT(costs.headBackwardWeight(b), 0);
    EXPECT_NEAR(costs.headBackwardInput(b) + costs.headBackwardWeight(b),
                costs.headBackward(b), 1e-12 * costs.headBackward(b));
    EXPECT_EQ(costs.embeddingBackwardInput(b), 0);
    EXPECT_EQ(costs.embeddingBackwardWeight(b), costs.embeddingBackward(b));
  }
}

TEST(CostModel, OneFOneBPipelineAndBubble) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  ParallelConfig c =
      ParallelConfig::balanced(8, 4, 1, 1, 12, RecomputePolicy::None);
  StepTime t = predictStepTime(costs, c, LifecyclePolicy::GpuStyle);
  ASSERT_EQ(t.stages.size(), 4u);
  double sum = 0, slowest = 0;
  for (const StageTiming &s : t.stages) {
    double slot = s.forward + s.backward + 2 * s.p2p;
    sum += slot;
    slowest = std::max(slowest, slot);
    EXPECT_GT(s.p2p, 0);
  }
  EXPECT_NEAR(t.pipeline, sum + 11 * slowest, 1e-12 * t.pipeline);
  // Nearly equal stages (the byte-vocabulary head is cheap): the bubble is
  // (p-1)/(m+p-1) = 3/15.
  EXPECT_NEAR(t.bubbleFraction(), 0.2, 0.01);
  // dp = 1: no sync; gpu-style still pays update + cast at the boundary.
  for (const StageTiming &s : t.stages)
    EXPECT_EQ(s.syncSeconds, 0);
  double tail = 0;
  for (const StageTiming &s : t.stages)
    tail = std::max(tail, s.updateSeconds + s.castSeconds);
  EXPECT_NEAR(t.total, t.pipeline + tail, 1e-12 * t.total);

  // Full recompute adds one forward per layer to every backward.
  ParallelConfig full = c;
  full.recompute.assign(4, RecomputePolicy::Full);
  StepTime tf = predictStepTime(costs, full, LifecyclePolicy::GpuStyle);
  EXPECT_NEAR(tf.stages[1].backward - t.stages[1].backward,
              2 * costs.layerForward(1), 1e-12);
  EXPECT_GT(tf.recompute, 0);
  EXPECT_EQ(t.recompute, 0);
}

/// A host's ranks move their collectives' data with their own cores
/// (network.core_copy_bandwidth): the step gains the busiest rank's ring
/// bytes at that rate and its reductions' bytes (3x) at ddr_bandwidth, under
/// every policy and schedule; nothing without the key or without data
/// parallelism.
TEST(CostModel, CoreCopiesAddTheBusiestRanksRingBytes) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  MachineModel host = machine;
  host.network.coreCopyBandwidth = 10e9;
  CostModel plain(model, machine), copying(model, host);
  const double rate = 10e9, ddr = 100e9, w = 2;
  for (ZeroStage zero :
       {ZeroStage::None, ZeroStage::Optimizer, ZeroStage::Parameters}) {
    SCOPED_TRACE(int(zero));
    ParallelConfig c =
        ParallelConfig::balanced(8, 1, 2, 1, 4, RecomputePolicy::None, zero);
    // d = 2: each ring pass is one step of half the bytes.
    const double chunk = double(stageParams(model, c, 0)) * w / 2;
    const double reduce = chunk / rate + 3 * chunk / ddr;
    const double gather = chunk / rate;
    double expected = reduce + gather; // all-reduce, or RS + view gather
    if (zero == ZeroStage::Parameters)
      expected = reduce + 2 * 4 * gather; // a gather per forward, backward
    EXPECT_NEAR(coreCopySeconds(copying, c), expected, 1e-12);
    EXPECT_EQ(coreCopySeconds(plain, c), 0);
    for (LifecyclePolicy policy :
         {LifecyclePolicy::GpuStyle, LifecyclePolicy::RATrain}) {
      StepTime with = predictStepTime(copying, c, policy);
      StepTime without = predictStepTime(plain, c, policy);
      EXPECT_NEAR(with.coreCopy, expected, 1e-12);
      EXPECT_NEAR(with.total - without.total, expected, 1e-9);
    }
  }
  // pp 2 x dp 2 under ZB-H1 (the generated-schedule path): the rank whose
  // stage holds the most parameters.
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 2, 1, 4, RecomputePolicy::None, ZeroStage::Optimizer);
  c.schedule = schedule::ScheduleKind::ZBH1;
  double busiest = 0;
  for (int64_t s = 0; s < 2; ++s) {
    const double chunk = double(stageParams(model, c, s)) * w / 2;
    busiest = std::max(busiest, 2 * chunk / rate + 3 * chunk / ddr);
  }
  StepTime with = predictStepTime(copying, c, LifecyclePolicy::RATrain);
  StepTime without = predictStepTime(plain, c, LifecyclePolicy::RATrain);
  EXPECT_NEAR(with.coreCopy, busiest, 1e-12);
  EXPECT_NEAR(with.total - without.total, busiest, 1e-9);
  // No data parallelism: nothing to copy.
  EXPECT_EQ(coreCopySeconds(copying, ParallelConfig::balanced(
                                         8, 2, 1, 1, 4, RecomputePolicy::None)),
            0);
}

TEST(CostModel, LifecycleOverlapHidesSyncAndUpdate) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  for (ZeroStage zero : {ZeroStage::None, ZeroStage::Optimizer}) {
    ParallelConfig c =
        ParallelConfig::balanced(8, 4, 4, 1, 8, RecomputePolicy::None, zero);
    StepTime gpu = predictStepTime(costs, c, LifecyclePolicy::GpuStyle);
    StepTime rat = predictStepTime(costs, c, LifecyclePolicy::RATrain);
    EXPECT_DOUBLE_EQ(gpu.pipeline, rat.pipeline);
    EXPECT_GT(gpu.exposedLifecycle, 0);
    EXPECT_GE(rat.exposedLifecycle, 0);
    EXPECT_LT(rat.total, gpu.total);
    // gpu-style exposes exactly the slowest stage's whole lifecycle.
    double tail = 0;
    for (const StageTiming &s : gpu.stages)
      tail = std::max(tail, s.syncSeconds + s.updateSeconds + s.castSeconds +
                                s.allGatherSeconds);
    EXPECT_NEAR(gpu.exposedLifecycle, tail, 1e-12);
    if (zero == ZeroStage::Optimizer)
      EXPECT_GT(gpu.stages[0].allGatherSeconds, 0);
  }
}

TEST(CostModel, OffloadTransfer) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  // No tier: offloading is impossible.
  EXPECT_TRUE(std::isinf(CostModel(model, machine).offloadTransfer(1000)));
  EXPECT_EQ(CostModel(model, machine).offloadTransfer(0), 0);
  machine.offload = {OffloadTierKind::Host, 64000000000, 10e9, 1e-5, 0};
  CostModel costs(model, machine);
  // 1 GB at 10 GB/s + 10 us.
  EXPECT_NEAR(costs.offloadTransfer(1000000000), 0.1 + 1e-5, 1e-15);
  // In 300 MB chunks: 4 transfers, 4 latencies.
  machine.offload.chunkBytes = 300000000;
  EXPECT_NEAR(CostModel(model, machine).offloadTransfer(1000000000), 0.1 + 4e-5,
              1e-15);
}

/// A storage tier's host cache: the cached share moves at its bandwidth;
/// the states offloaded in the prologue fill it before the activations.
TEST(CostModel, OffloadHostCache) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  machine.offload = {OffloadTierKind::Storage, 64000000000, 2e9, 1e-5, 0};
  machine.offload.hostCacheBytesPerNode = 0;
  // Without a cache the share is ignored.
  EXPECT_NEAR(CostModel(model, machine).offloadTransfer(1000000000, 1.0),
              0.5 + 1e-5, 1e-12);
  machine.offload.hostCacheBytesPerNode = 8000000000 * machine.clustersPerNode;
  machine.offload.hostCacheBandwidth = 10e9;
  CostModel costs(model, machine);
  // All cached: 1 GB at 10 GB/s; half: 0.05 s + 0.25 s + a latency.
  EXPECT_NEAR(costs.offloadTransfer(1000000000, 1.0), 0.1, 1e-12);
  EXPECT_NEAR(costs.offloadTransfer(1000000000, 0.5), 0.05 + 0.25 + 1e-5,
              1e-12);
  ParallelConfig c = ParallelConfig::balanced(
      8, 2, 1, 1, 4, RecomputePolicy::None, ZeroStage::None);
  c.offload = OffloadPolicy::OptimizerStates;
  c.activationOffload = {2, 2};
  TierCacheShares shares = tierCacheShares(costs, c, 0);
  int64_t states = 8 * stageParams(model, c, 0);
  EXPECT_NEAR(shares.states, std::min(1.0, 8e9 / double(states)), 1e-12);
  if (states < 8000000000)
    EXPECT_GT(shares.activations, 0);
  else
    EXPECT_EQ(shares.activations, 0);
  // A cache of 0 bytes holds nothing.
  machine.offload.hostCacheBytesPerNode = 0;
  machine.offload.hostCacheBandwidth = 0;
  TierCacheShares none = tierCacheShares(CostModel(model, machine), c, 0);
  EXPECT_EQ(none.states, 0);
  EXPECT_EQ(none.activations, 0);
}

TEST(CostModel, OffloadIsExposedWholeByGpuStyleAndHiddenByRATrain) {
  MachineModel machine = testMachine();
  machine.offload = {OffloadTierKind::Host, 64000000000, 10e9, 1e-5, 0};
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  ParallelConfig c = ParallelConfig::balanced(
      8, 4, 4, 1, 8, RecomputePolicy::None, ZeroStage::Optimizer);
  StepTime gpuNone = predictStepTime(costs, c, LifecyclePolicy::GpuStyle);
  StepTime ratNone = predictStepTime(costs, c, LifecyclePolicy::RATrain);
  c.offload = OffloadPolicy::MasterAndOptimizer;
  StepTime gpu = predictStepTime(costs, c, LifecyclePolicy::GpuStyle);
  StepTime rat = predictStepTime(costs, c, LifecyclePolicy::RATrain);
  // Stage 1 (2 decoder layers, 1/4 shard each): reload + write-back of
  // 12 * ceil(P_layer / 4) bytes per layer.
  int64_t shard = (model.paramsPerLayer() + 3) / 4;
  double item = 1e-5 + 12.0 * shard / 10e9;
  EXPECT_NEAR(gpu.stages[1].offloadSeconds, 2 * 2 * item, 1e-12);
  EXPECT_EQ(gpuNone.stages[1].offloadSeconds, 0);
  // gpu-style: the boundary phase grows by the whole traffic.
  double tail = 0;
  for (const StageTiming &s : gpu.stages)
    tail = std::max(tail, s.syncSeconds + s.updateSeconds + s.castSeconds +
                              s.allGatherSeconds + s.offloadSeconds);
  EXPECT_NEAR(gpu.exposedLifecycle, tail, 1e-12);
  EXPECT_GT(gpu.total, gpuNone.total);
  EXPECT_GT(gpu.offload, 0);
  // ratrain: the pipeline is the same; offload adds at most its traffic
  // and is partly hidden (this model's updates are short).
  EXPECT_DOUBLE_EQ(rat.pipeline, ratNone.pipeline);
  EXPECT_GE(rat.total, ratNone.total);
  EXPECT_LT(rat.total - ratNone.total, gpu.total - gpuNone.total);
  EXPECT_LT(rat.total, gpu.total);

  // A fast tier is hidden entirely under ratrain, never under gpu-style.
  machine.offload.bandwidth = 1e15;
  machine.offload.latency = 0;
  CostModel fast(model, machine);
  EXPECT_DOUBLE_EQ(predictStepTime(fast, c, LifecyclePolicy::RATrain).total,
                   ratNone.total);
  EXPECT_GT(predictStepTime(fast, c, LifecyclePolicy::GpuStyle).total,
            gpuNone.total);

  // A very slow tier: every write-back must finish within one iteration.
  machine.offload.bandwidth = 1e6;
  CostModel slow(model, machine);
  StepTime crawl = predictStepTime(slow, c, LifecyclePolicy::RATrain);
  for (const StageTiming &s : crawl.stages)
    EXPECT_GE(crawl.total, s.offloadSeconds);
}

TEST(CostModel, PipelineLinkFollowsPlacement) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  ParallelConfig inNode =
      ParallelConfig::balanced(8, 4, 1, 1, 8, RecomputePolicy::None);
  EXPECT_EQ(costs.pipelineLink(inNode), LinkClass::IntraNode);
  ParallelConfig across =
      ParallelConfig::balanced(8, 4, 2, 1, 8, RecomputePolicy::None);
  EXPECT_EQ(costs.pipelineLink(across), LinkClass::InterNode);
  EXPECT_EQ(parseLifecyclePolicy("gpu-style"), LifecyclePolicy::GpuStyle);
  EXPECT_EQ(parseLifecyclePolicy("ratrain"), LifecyclePolicy::RATrain);
  EXPECT_EQ(parseLifecyclePolicy("x"), std::nullopt);
}

} // namespace

/// ZeRO-3 at pp=1 dp=16 on the test machine (4 nodes of 4: levels node,
/// system).
static ParallelConfig zeroThree(ShardingPolicy sharding) {
  ParallelConfig c = ParallelConfig::balanced(
      8, 1, 16, 1, 4, RecomputePolicy::None, ZeroStage::Parameters);
  c.sharding = sharding;
  return c;
}

TEST(CostModel, LevelCollectivesMatchTheHierarchicalOne) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  int64_t bytes = int64_t(1) << 28;
  llvm::SmallVector<int64_t, 4> all = costs.dataParallelLevels(16);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], 4);
  EXPECT_EQ(all[1], 4);
  // Native, over the whole group: the two-level hierarchical collective.
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce})
    EXPECT_NEAR(
        costs.levelCollective(kind, bytes, all),
        costs.collective(kind, CollectiveAlgorithm::Hierarchical, bytes, 16),
        1e-12);
  llvm::SmallVector<int64_t, 4> inside = costs.dataParallelLevels(16, 0, true);
  llvm::SmallVector<int64_t, 4> across = costs.dataParallelLevels(16, 0, false);
  EXPECT_EQ(inside[0], 4);
  EXPECT_EQ(inside[1], 1);
  EXPECT_EQ(across[0], 1);
  EXPECT_EQ(across[1], 4);
  // Inside a node: a ring over the intra-node links.
  EXPECT_NEAR(costs.levelCollective(CollectiveKind::AllGather, bytes, inside),
              3 * (2e-6 + double(bytes) / 4 / 50e9), 1e-12);
}

TEST(CostModel, PartitionsMoveFewerOuterBytesThanFlat) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  int64_t params = model.paramsPerLayer();
  ItemCommunication flat = itemCommunication(costs, zeroThree({}), params);
  ShardingPolicy threeLevel = *shardingPreset("three-level", 2);
  ASSERT_EQ(threeLevel.weightLevel, 0);
  ASSERT_EQ(threeLevel.gradLevel, 0);
  ItemCommunication three =
      itemCommunication(costs, zeroThree(threeLevel), params);
  // Flat: every gather crosses the nodes; the same first and later.
  EXPECT_GT(flat.gatherRepeat, 0);
  EXPECT_DOUBLE_EQ(flat.gatherFirst, flat.gatherRepeat);
  // hpZ at the node: later gathers stay inside it (cheaper); the first
  // gathers the 1/4 secondary shard across the nodes first.
  EXPECT_LT(three.gatherRepeat, flat.gatherRepeat);
  EXPECT_GT(three.gatherFirst, three.gatherRepeat);
  // Gradients: inside the node into the partition, then only the
  // partition (1/4 of the item) crosses the nodes; the two in sequence.
  int64_t bytes = params * 2;
  double inside =
      costs.levelCollective(CollectiveKind::ReduceScatter, bytes,
                            costs.dataParallelLevels(16, 0, /*inside=*/true));
  double across = costs.levelCollective(
      CollectiveKind::ReduceScatter, (bytes + 3) / 4,
      costs.dataParallelLevels(16, 0, /*inside=*/false), WireFormat::Native,
      /*parallelGroups=*/4);
  EXPECT_GT(inside, 0);
  EXPECT_GT(across, 0);
  EXPECT_DOUBLE_EQ(three.gradSync, inside + across);
  // Once per step that is the hierarchical reduce-scatter's own
  // decomposition: as fast as the flat sync, no faster.
  EXPECT_NEAR(three.gradSync, flat.gradSync, 1e-9 * flat.gradSync);
  // ZeRO++ (gradients over the whole group): one reduce-scatter, the flat
  // one.
  ItemCommunication zpp =
      itemCommunication(costs, zeroThree(*shardingPreset("zero++", 2)), params);
  EXPECT_DOUBLE_EQ(zpp.gradSync, flat.gradSync);
  // Later gathers of hpZ: the flat gather minus its inter-node part.
  EXPECT_DOUBLE_EQ(zpp.gatherRepeat, three.gatherRepeat);
}

TEST(CostModel, QuantizedWiresAreCheaperOnASlowNetwork) {
  MachineModel machine = testMachine();
  // A network much slower than DDR (as on GPU clusters), so that the
  // codec's DDR passes cost less than the bytes they save.
  machine.network.interNode = {1e9, 5e-6};
  machine.network.nodeInjectionBandwidth = 2e9;
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  int64_t params = model.paramsPerLayer();
  ShardingPolicy native = *shardingPreset("zero++", 2);
  ShardingPolicy int8 = native;
  int8.weightWire = WireFormat::Int8;
  int8.gradWire = WireFormat::Int8;
  ShardingPolicy int4 = int8;
  int4.gradWire = WireFormat::Int4;
  ItemCommunication n = itemCommunication(costs, zeroThree(native), params);
  ItemCommunication q8 = itemCommunication(costs, zeroThree(int8), params);
  ItemCommunication q4 = itemCommunication(costs, zeroThree(int4), params);
  EXPECT_LT(q8.gatherFirst, n.gatherFirst);
  EXPECT_LT(q8.gradSync, n.gradSync);
  EXPECT_LT(q4.gradSync, q8.gradSync);
  // The wire bytes alone: int8 moves 1 + 4/256 bytes per bf16 element.
  llvm::SmallVector<int64_t, 4> across = costs.dataParallelLevels(16, 0, false);
  int64_t bytes = int64_t(1) << 28;
  double nativeAcross =
      costs.levelCollective(CollectiveKind::AllGather, bytes, across);
  double codec =
      costs.memoryBoundSeconds(double(bytes) / 4 / 2 * (2 + 1 + 4.0 / 256)) +
      costs.memoryBoundSeconds(double(bytes) / 2 * (1 + 4.0 / 256 + 2));
  double quantizedAcross = costs.levelCollective(
      CollectiveKind::AllGather, bytes, across, WireFormat::Int8);
  EXPECT_NEAR(quantizedAcross - codec,
              3 * 5e-6 + (nativeAcross - 3 * 5e-6) * (1 + 4.0 / 256) / 2, 1e-9);
}

TEST(CostModel, PartialSynchronizationPricesTheAveragedMastersPerStep) {
  MachineModel machine = testMachine();
  ModelConfig model = testModel();
  CostModel costs(model, machine);
  ParallelConfig config;
  config.pipelineStages = 1;
  config.dataParallel = 16;
  int64_t params = model.paramsPerLayer();
  double gradient =
      itemCommunication(costs, config, params).gradSync; // bf16 all-reduce
  EXPECT_DOUBLE_EQ(gradient,
                   costs.collective(CollectiveKind::AllReduce, params * 2, 16));
  // Every 4 steps, the fp32 masters: a quarter of a 4-byte all-reduce.
  config.syncPeriod = 4;
  double averaged = itemCommunication(costs, config, params).gradSync;
  EXPECT_DOUBLE_EQ(averaged,
                   costs.collective(CollectiveKind::AllReduce, params * 4, 16) /
                       4);
  EXPECT_LT(averaged, gradient);
}
