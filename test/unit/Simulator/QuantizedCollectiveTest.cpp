//===- QuantizedCollectiveTest.cpp - qwZ / qgZ steps of planCollective ----===//
//
// Quantized all-gather (qwZ) and reduce-scatter (qgZ) on 2 x 2 x 2 levels
// and flat, by hand: the payload of every step (scales of ragged blocks
// included), the levels, the codec traffic and its time, and the payload per
// element against the planner's wireBytesPerElement.
//
//===----------------------------------------------------------------------===//

#include "TestMachine.h"

#include "ratrain/Planner/MemoryModel.h"
#include "ratrain/Simulator/Simulator.h"

#include "gtest/gtest.h"

#include <array>
#include <vector>

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

/// 6 bf16 elements per member of 2 x 2 x 2, int8 or int4 blocks of 4.
CollectiveSpec quantized(CollectiveKind kind, CollectiveAlgorithm algorithm,
                         WireFormat wire) {
  CollectiveSpec s;
  s.kind = kind;
  s.algorithm = algorithm;
  s.groupSize = 8;
  s.membersPerNode = 4;
  s.membersPerLevel = {2, 2, 2, 1};
  s.elementBytes = 2;
  s.bytes = 8 * 6 * 2;
  s.wire = wire;
  s.wireBlock = 4;
  return s;
}

std::vector<std::pair<unsigned, double>> steps(const CollectiveSpec &s) {
  std::vector<std::pair<unsigned, double>> out;
  for (const CollectiveStep &step : planCollective(s))
    out.push_back({step.level, step.bytes});
  return out;
}

using Steps = std::vector<std::pair<unsigned, double>>;

TEST(QuantizedCollective, PayloadBytes) {
  // 6 elements in blocks of 4: 2 scales (8 B) + 6 int8 codes or 3 bytes of
  // int4 codes; 7 int4 elements round up to 4 bytes.
  EXPECT_EQ(wirePayloadBytes(WireFormat::Int8, 6, 2, 4), 14.0);
  EXPECT_EQ(wirePayloadBytes(WireFormat::Int4, 6, 2, 4), 11.0);
  EXPECT_EQ(wirePayloadBytes(WireFormat::Int4, 7, 2, 4), 12.0);
  EXPECT_EQ(wirePayloadBytes(WireFormat::Native, 6, 2, 4), 12.0);
  // Whole blocks: exactly the planner's bytes per element.
  for (WireFormat wire : {WireFormat::Int8, WireFormat::Int4})
    EXPECT_DOUBLE_EQ(wirePayloadBytes(wire, 2560, 2, 256) / 2560,
                     wireBytesPerElement(wire, 2, 256));
}

TEST(QuantizedCollective, HierarchicalAllGatherIsQwZ) {
  // Outermost first; a level sends what was gathered outside it: 1, 2, 4
  // member payloads of 14 B.
  EXPECT_EQ(
      steps(quantized(CollectiveKind::AllGather,
                      CollectiveAlgorithm::Hierarchical, WireFormat::Int8)),
      (Steps{{2, 14}, {1, 28}, {0, 56}}));
  EXPECT_EQ(
      steps(quantized(CollectiveKind::AllGather,
                      CollectiveAlgorithm::Hierarchical, WireFormat::Int4)),
      (Steps{{2, 11}, {1, 22}, {0, 44}}));
}

TEST(QuantizedCollective, HierarchicalReduceScatterIsQgZ) {
  // Innermost first; the chunk for the one peer of a level holds the
  // blocks of the members outside it, quantized as one: 24, 12, 6
  // elements.
  EXPECT_EQ(
      steps(quantized(CollectiveKind::ReduceScatter,
                      CollectiveAlgorithm::Hierarchical, WireFormat::Int8)),
      (Steps{{0, 6 * 4 + 24}, {1, 3 * 4 + 12}, {2, 2 * 4 + 6}}));
  EXPECT_EQ(
      steps(quantized(CollectiveKind::ReduceScatter,
                      CollectiveAlgorithm::Hierarchical, WireFormat::Int4)),
      (Steps{{0, 6 * 4 + 12}, {1, 3 * 4 + 6}, {2, 2 * 4 + 3}}));
}

TEST(QuantizedCollective, FlatRunsOnePhaseAtTheOuterLevel) {
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree})
    for (CollectiveKind kind :
         {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
      Steps want(7, {2, 14});
      EXPECT_EQ(steps(quantized(kind, algorithm, WireFormat::Int8)), want);
    }
  // Every member sends across the nodes at once.
  std::vector<CollectiveStep> plan =
      planCollective(quantized(CollectiveKind::ReduceScatter,
                               CollectiveAlgorithm::Ring, WireFormat::Int8));
  EXPECT_EQ(plan[0].streams[0], 2);
  EXPECT_EQ(plan[0].streams[1], 4);
}

TEST(QuantizedCollective, AllReduceIgnoresTheWire) {
  CollectiveSpec q =
      quantized(CollectiveKind::AllReduce, CollectiveAlgorithm::Hierarchical,
                WireFormat::Int8);
  CollectiveSpec native = q;
  native.wire = WireFormat::Native;
  EXPECT_EQ(steps(q), steps(native));
}

TEST(QuantizedCollective, CodecTimeIsMemoryBound) {
  MachineModel machine = makeTestMachine();
  machine.clustersPerNode = 4;
  machine.network.levels = {{"chip", 2, {8.0, 0.25}, 0},
                            {"node", 2, {4.0, 0.5}, 0},
                            {"system", 0, {2.0, 1.0}, 0}};
  machine.syncNetworkView();
  CollectiveSpec ag =
      quantized(CollectiveKind::AllGather, CollectiveAlgorithm::Hierarchical,
                WireFormat::Int8);
  // No DDR bandwidth in the machine: no codec time.
  double bare = collectiveTime(ag, machine);
  EXPECT_DOUBLE_EQ(bare, 1.0 + 14.0 / 2 + 0.5 + 28.0 / 4 + 0.25 + 56.0 / 8);
  machine.cluster.ddrBandwidth = 100;
  machine.cluster.efficiency.memoryBound = 0.5;
  EXPECT_DOUBLE_EQ(codecBandwidth(machine), 50.0);
  // Quantize 6 elements (12 B read, 14 B written), decode 8 payloads
  // (8 x 14 B read, 8 x 12 B written).
  double codec = 12 + 14 + 8 * (14 + 12);
  std::vector<CollectiveStep> plan = planCollective(ag);
  EXPECT_DOUBLE_EQ(plan[0].codecBytes, codec);
  EXPECT_DOUBLE_EQ(collectiveTime(ag, machine), bare + codec / 50.0);
  // The engine charges the same delay.
  SimProgram program;
  program.dataParallel = 8;
  program.stages.resize(1);
  Token token = program.stages[0].addCollective(ag, "qwZ");
  program.stages[0].addWait(token);
  SimOptions options;
  options.iterations = 1;
  SimReport report = expectOk(simulate(program, machine, options));
  EXPECT_NEAR(report.stepTime, bare + codec / 50.0, 1e-9);
}

} // namespace
