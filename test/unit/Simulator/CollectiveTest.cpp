//===- CollectiveTest.cpp - Collectives against their closed forms -------===//
//
// A single stage issues one collective and waits for it; the simulated step
// time must equal the algorithm's alpha-beta formula. The latency term is one
// link latency per step: ring all-reduce over k members costs
//   2(k-1)/k * n / bw + 2(k-1) * latency.
//
//===----------------------------------------------------------------------===//

#include "TestMachine.h"

#include "ratrain/Simulator/Simulator.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

/// Simulates one stage that runs `spec` and waits for it.
double simulateCollective(const CollectiveSpec &spec,
                          const MachineModel &machine) {
  SimProgram program;
  program.stages.emplace_back("only");
  Token token = program.stages[0].addCollective(spec, "c");
  program.stages[0].addWait(token);
  SimOptions options;
  options.iterations = 1;
  SimReport report = expectOk(simulate(program, machine, options));
  EXPECT_NEAR(report.stageReports[0]
                  .exposed[static_cast<unsigned>(getCommKind(spec.kind))],
              report.stepTime, 1e-9 * report.stepTime);
  return report.stepTime;
}

CollectiveSpec spec(CollectiveKind kind, CollectiveAlgorithm algorithm,
                    int64_t bytes, int64_t k, int64_t membersPerNode) {
  CollectiveSpec s;
  s.kind = kind;
  s.algorithm = algorithm;
  s.bytes = bytes;
  s.groupSize = k;
  s.membersPerNode = membersPerNode;
  return s;
}

class RingAllReduce : public ::testing::TestWithParam<int64_t> {};

TEST_P(RingAllReduce, MatchesAlphaBetaFormula) {
  MachineModel machine = makeTestMachine();
  const int64_t k = GetParam();
  const double n = 1200;
  // Inside one node: intra-node link.
  {
    const LinkSpec &link = machine.network.intraNode;
    double expected =
        2.0 * (k - 1) / k * n / link.bandwidth + 2.0 * (k - 1) * link.latency;
    double simulated = simulateCollective(
        spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, n, k, k),
        machine);
    EXPECT_NEAR(simulated, expected, 1e-9 * expected) << "k=" << k;
  }
  // One member per node: every step crosses the inter-node link.
  {
    const LinkSpec &link = machine.network.interNode;
    double expected =
        2.0 * (k - 1) / k * n / link.bandwidth + 2.0 * (k - 1) * link.latency;
    double simulated = simulateCollective(
        spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, n, k, 1),
        machine);
    EXPECT_NEAR(simulated, expected, 1e-9 * expected) << "k=" << k;
  }
}

INSTANTIATE_TEST_SUITE_P(GroupSizes, RingAllReduce,
                         ::testing::Values(2, 3, 4, 8, 16, 64));

TEST(Collectives, RingReduceScatterAndAllGatherAreHalfAnAllReduce) {
  MachineModel machine = makeTestMachine();
  const LinkSpec &link = machine.network.intraNode;
  const int64_t k = 6;
  const double n = 600;
  double expected = (k - 1.0) / k * n / link.bandwidth + (k - 1) * link.latency;
  for (CollectiveKind kind :
       {CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
    double simulated = simulateCollective(
        spec(kind, CollectiveAlgorithm::Ring, n, k, k), machine);
    EXPECT_NEAR(simulated, expected, 1e-9 * expected)
        << stringifyCollectiveKind(kind).str();
  }
}

TEST(Collectives, InNetworkReductionAndMulticastSpeedUpTheirLevel) {
  // The intra-node level reduces 2x and multicasts 4x faster: a ring
  // all-reduce inside a node is its reduce-scatter half / 2 plus its
  // all-gather half / 4, simulated and in closed form (collectiveTime); a
  // ring over nodes (the inter-node level) is unchanged.
  MachineModel machine = makeTestMachine();
  machine.network.inNetwork = {0, 2.0, 4.0};
  const LinkSpec &link = machine.network.intraNode;
  const int64_t k = 4;
  const double n = 1200;
  double half = (k - 1.0) / k * n / link.bandwidth + (k - 1) * link.latency;
  CollectiveSpec inside =
      spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, n, k, k);
  double expected = half / 2 + half / 4;
  EXPECT_NEAR(simulateCollective(inside, machine), expected, 1e-9 * expected);
  EXPECT_NEAR(collectiveTime(inside, machine), expected, 1e-9 * expected);
  CollectiveSpec gather =
      spec(CollectiveKind::AllGather, CollectiveAlgorithm::Ring, n, k, k);
  EXPECT_NEAR(simulateCollective(gather, machine), half / 4, 1e-9 * half);

  const LinkSpec &across = machine.network.interNode;
  double flat =
      2.0 * (k - 1) / k * n / across.bandwidth + 2.0 * (k - 1) * across.latency;
  EXPECT_NEAR(simulateCollective(spec(CollectiveKind::AllReduce,
                                      CollectiveAlgorithm::Ring, n, k, 1),
                                 machine),
              flat, 1e-9 * flat);
}

TEST(Collectives, TreeAllReduceIsReducePlusBroadcast) {
  MachineModel machine = makeTestMachine();
  const LinkSpec &link = machine.network.interNode;
  const double n = 100;
  for (int64_t k : {2, 5, 8, 9}) {
    double levels = std::ceil(std::log2(static_cast<double>(k)));
    double expected = 2 * levels * (link.latency + n / link.bandwidth);
    double simulated = simulateCollective(
        spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Tree, n, k, 1),
        machine);
    EXPECT_NEAR(simulated, expected, 1e-9 * expected) << "k=" << k;
  }
}

TEST(Collectives, TreeReduceScatterAndAllGather) {
  MachineModel machine = makeTestMachine();
  const LinkSpec &link = machine.network.intraNode;
  const double n = 160;
  const int64_t k = 8; // 3 levels
  // Reduce: 3 steps of n; scatter: n/2 + n/4 + n/8 = 7n/8.
  double expected = 6 * link.latency + (3 * n + 7 * n / 8) / link.bandwidth;
  for (CollectiveKind kind :
       {CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
    double simulated = simulateCollective(
        spec(kind, CollectiveAlgorithm::Tree, n, k, k), machine);
    EXPECT_NEAR(simulated, expected, 1e-9 * expected)
        << stringifyCollectiveKind(kind).str();
  }
}

TEST(Collectives, HierarchicalAllReduce) {
  MachineModel machine = makeTestMachine();
  const LinkSpec &intra = machine.network.intraNode;
  const LinkSpec &inter = machine.network.interNode;
  const double n = 960;
  const int64_t k = 16, c = 4, g = k / c;
  // Intra-node reduce-scatter and all-gather over c members, inter-node ring
  // all-reduce of the n/c shard over g nodes.
  double expected = 2 * (c - 1) * (intra.latency + n / c / intra.bandwidth) +
                    2 * (g - 1) * (inter.latency + n / k / inter.bandwidth);
  double simulated =
      simulateCollective(spec(CollectiveKind::AllReduce,
                              CollectiveAlgorithm::Hierarchical, n, k, c),
                         machine);
  EXPECT_NEAR(simulated, expected, 1e-9 * expected);
  EXPECT_NEAR(collectiveTime(spec(CollectiveKind::AllReduce,
                                  CollectiveAlgorithm::Hierarchical, n, k, c),
                             machine),
              expected, 1e-9 * expected);
}

TEST(Collectives, HierarchicalInterNodePhaseSharesNodeInjection) {
  // 4 members per node inject together: each gets min(2, 4 / 4) = 1 B/s.
  MachineModel machine = makeTestMachine();
  machine.network.nodeInjectionBandwidth = 4;
  const LinkSpec &intra = machine.network.intraNode;
  const LinkSpec &inter = machine.network.interNode;
  const double n = 960;
  const int64_t k = 16, c = 4, g = k / c;
  double expected = 2 * (c - 1) * (intra.latency + n / c / intra.bandwidth) +
                    2 * (g - 1) * (inter.latency + n / k / 1.0);
  CollectiveSpec s = spec(CollectiveKind::AllReduce,
                          CollectiveAlgorithm::Hierarchical, n, k, c);
  EXPECT_NEAR(simulateCollective(s, machine), expected, 1e-9 * expected);
  EXPECT_NEAR(collectiveTime(s, machine), expected, 1e-9 * expected);
  // A flat ring has one cluster per node on the inter-node link: 2 B/s.
  CollectiveSpec ring =
      spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, n, k, c);
  double ringExpected =
      2.0 * (k - 1) / k * n / inter.bandwidth + 2.0 * (k - 1) * inter.latency;
  EXPECT_NEAR(simulateCollective(ring, machine), ringExpected,
              1e-9 * ringExpected);
}

TEST(Collectives, HierarchicalReduceScatterAndAllGather) {
  MachineModel machine = makeTestMachine();
  const LinkSpec &intra = machine.network.intraNode;
  const LinkSpec &inter = machine.network.interNode;
  const double n = 960;
  const int64_t k = 8, c = 2, g = k / c;
  double expected = (c - 1) * (intra.latency + n / c / intra.bandwidth) +
                    (g - 1) * (inter.latency + n / k / inter.bandwidth);
  for (CollectiveKind kind :
       {CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
    double simulated = simulateCollective(
        spec(kind, CollectiveAlgorithm::Hierarchical, n, k, c), machine);
    EXPECT_NEAR(simulated, expected, 1e-9 * expected)
        << stringifyCollectiveKind(kind).str();
  }
}

TEST(Collectives, HierarchicalDegeneratesToRing) {
  MachineModel machine = makeTestMachine();
  for (int64_t c : {1, 8}) {
    CollectiveSpec hier = spec(CollectiveKind::AllReduce,
                               CollectiveAlgorithm::Hierarchical, 800, 8, c);
    CollectiveSpec ring =
        spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 800, 8, c);
    EXPECT_DOUBLE_EQ(simulateCollective(hier, machine),
                     simulateCollective(ring, machine))
        << "members per node " << c;
  }
}

TEST(Collectives, GroupOfOneCostsNothing) {
  MachineModel machine = makeTestMachine();
  EXPECT_EQ(planCollective(spec(CollectiveKind::AllReduce,
                                CollectiveAlgorithm::Ring, 100, 1, 1))
                .size(),
            0u);
  EXPECT_EQ(simulateCollective(spec(CollectiveKind::AllReduce,
                                    CollectiveAlgorithm::Tree, 100, 1, 1),
                               machine),
            0.0);
}

TEST(Collectives, StepsMoveTheTextbookVolume) {
  // Ring all-reduce sends 2(k-1)/k * n per member.
  std::vector<CollectiveStep> steps = planCollective(
      spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 1000, 10, 10));
  ASSERT_EQ(steps.size(), 18u);
  double volume = 0;
  for (const CollectiveStep &step : steps) {
    volume += step.bytes;
    EXPECT_EQ(step.level, 0u);
  }
  EXPECT_NEAR(volume, 2.0 * 9 / 10 * 1000, 1e-9);
}

} // namespace
