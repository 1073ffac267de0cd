//===- CollectiveLevelsTest.cpp - Collectives over N network levels -------===//
//
// planCollective on three levels (2 x 2 x 2 and uneven ones): the per-level
// bytes of every kind and algorithm, skipped one-member levels, and the
// simulated time against collectiveTime with shared injection per level.
//
//===----------------------------------------------------------------------===//

#include "TestMachine.h"

#include "ratrain/Simulator/Simulator.h"

#include "gtest/gtest.h"

#include <array>
#include <cmath>

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

/// 4 nodes of 2 chips of 2 clusters: chip 8 B/s (0.25 s), node 4 B/s (0.5 s,
/// 6 B/s injection per chip), system 2 B/s (1 s).
MachineModel threeLevelMachine() {
  MachineModel machine = makeTestMachine();
  machine.clustersPerNode = 4;
  machine.network.levels = {{"chip", 2, {8.0, 0.25}, 6.0},
                            {"node", 2, {4.0, 0.5}, 0},
                            {"system", 0, {2.0, 1.0}, 0}};
  machine.syncNetworkView();
  return machine;
}

CollectiveSpec spec(CollectiveKind kind, CollectiveAlgorithm algorithm,
                    double bytes, std::array<int64_t, 4> members) {
  CollectiveSpec s;
  s.kind = kind;
  s.algorithm = algorithm;
  s.bytes = static_cast<int64_t>(bytes);
  s.membersPerLevel = members;
  s.groupSize = members[0] * members[1] * members[2] * members[3];
  s.membersPerNode = members[0] * members[1];
  return s;
}

std::array<double, 4> bytesPerLevel(const CollectiveSpec &s) {
  std::array<double, 4> bytes{};
  for (const CollectiveStep &step : planCollective(s))
    bytes[step.level] += step.bytes;
  return bytes;
}

TEST(CollectiveLevels, HierarchicalThreeLevels) {
  const double n = 800;
  std::array<int64_t, 4> m{2, 2, 2, 1};
  // All-reduce: RS n over 2 (n/2 at level 0), RS n/2 over 2 (n/4 at 1),
  // AR n/4 over 2 (2 x n/8 at 2), then the all-gathers back.
  std::vector<CollectiveStep> steps = planCollective(
      spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Hierarchical, n, m));
  ASSERT_EQ(steps.size(), 6u);
  unsigned levels[] = {0, 1, 2, 2, 1, 0};
  double bytes[] = {n / 2, n / 4, n / 8, n / 8, n / 4, n / 2};
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].level, levels[i]) << i;
    EXPECT_DOUBLE_EQ(steps[i].bytes, bytes[i]) << i;
  }
  // At level 2 the 2 members of a chip and the 4 of a node inject at once.
  EXPECT_EQ(steps[2].streams[0], 2);
  EXPECT_EQ(steps[2].streams[1], 4);
  EXPECT_EQ(steps[1].streams[0], 2);
  EXPECT_EQ(steps[0].streams[0], 1);
  // Reduce-scatter and all-gather: the halves.
  for (CollectiveKind kind :
       {CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
    std::array<double, 4> got =
        bytesPerLevel(spec(kind, CollectiveAlgorithm::Hierarchical, n, m));
    EXPECT_DOUBLE_EQ(got[0], n / 2);
    EXPECT_DOUBLE_EQ(got[1], n / 4);
    EXPECT_DOUBLE_EQ(got[2], n / 8);
  }
  std::vector<CollectiveStep> gather = planCollective(
      spec(CollectiveKind::AllGather, CollectiveAlgorithm::Hierarchical, n, m));
  EXPECT_EQ(gather.front().level, 2u);
  EXPECT_EQ(gather.back().level, 0u);
}

TEST(CollectiveLevels, UnevenLevelsAndSkippedLevels) {
  const double n = 1200;
  // 3 x 1 x 4: level 1 has one member and is skipped.
  std::array<double, 4> got =
      bytesPerLevel(spec(CollectiveKind::AllReduce,
                         CollectiveAlgorithm::Hierarchical, n, {3, 1, 4, 1}));
  EXPECT_DOUBLE_EQ(got[0], 2 * 2.0 / 3 * n);
  EXPECT_DOUBLE_EQ(got[1], 0);
  EXPECT_DOUBLE_EQ(got[2], 2 * 3.0 / 4 * n / 3);
  // One spanned level: the ring there.
  std::array<double, 4> one =
      bytesPerLevel(spec(CollectiveKind::ReduceScatter,
                         CollectiveAlgorithm::Hierarchical, n, {1, 4, 1, 1}));
  EXPECT_DOUBLE_EQ(one[1], 3.0 / 4 * n);
  EXPECT_DOUBLE_EQ(one[0] + one[2], 0);
}

TEST(CollectiveLevels, RingAndTreeUseTheOutermostLevelSpanned) {
  const double n = 800;
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
        CollectiveKind::AllGather}) {
    for (CollectiveAlgorithm algorithm :
         {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree}) {
      for (std::array<int64_t, 4> m : {std::array<int64_t, 4>{2, 2, 2, 1},
                                       std::array<int64_t, 4>{2, 3, 1, 1}}) {
        unsigned outer = m[2] > 1 ? 2 : 1;
        for (const CollectiveStep &step :
             planCollective(spec(kind, algorithm, n, m))) {
          EXPECT_EQ(step.level, outer);
          EXPECT_EQ(step.streams[0], 1);
        }
      }
    }
  }
  // Tree all-reduce over 6 members: 2 * ceil(log2 6) = 6 steps of n.
  std::array<double, 4> tree = bytesPerLevel(spec(
      CollectiveKind::AllReduce, CollectiveAlgorithm::Tree, n, {2, 3, 1, 1}));
  EXPECT_DOUBLE_EQ(tree[1], 6 * n);
}

TEST(CollectiveLevels, TwoLevelShorthandIsUnchanged) {
  // membersPerNode alone (levels not given) plans as levels {c, k / c}.
  CollectiveSpec legacy;
  legacy.kind = CollectiveKind::AllReduce;
  legacy.algorithm = CollectiveAlgorithm::Hierarchical;
  legacy.bytes = 960;
  legacy.groupSize = 16;
  legacy.membersPerNode = 4;
  CollectiveSpec levels =
      spec(CollectiveKind::AllReduce, CollectiveAlgorithm::Hierarchical, 960,
           {4, 4, 1, 1});
  std::vector<CollectiveStep> a = planCollective(legacy),
                              b = planCollective(levels);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].level, b[i].level);
    EXPECT_DOUBLE_EQ(a[i].bytes, b[i].bytes);
    EXPECT_EQ(a[i].streams, b[i].streams);
  }
  MachineModel machine = makeTestMachine();
  EXPECT_DOUBLE_EQ(collectiveTime(legacy, machine),
                   collectiveTime(levels, machine));
}

double simulateCollective(const CollectiveSpec &s,
                          const MachineModel &machine) {
  SimProgram program;
  program.stages.emplace_back("only");
  Token token = program.stages[0].addCollective(s, "c");
  program.stages[0].addWait(token);
  SimOptions options;
  options.iterations = 1;
  return expectOk(simulate(program, machine, options)).stepTime;
}

TEST(CollectiveLevels, SimulatedTimeMatchesTheClosedForm) {
  MachineModel machine = threeLevelMachine();
  const double n = 800;
  // Hierarchical all-reduce over 2 x 2 x 2: level 0 steps at 8 B/s; level 1
  // steps share the chip's 6 B/s injection between its 2 members (3 B/s,
  // below the 4 B/s node link); level 2 steps get min(2 B/s system link,
  // 3 B/s).
  double expected =
      2 * (0.25 + n / 2 / 8) + 2 * (0.5 + n / 4 / 3) + 2 * (1.0 + n / 8 / 2);
  CollectiveSpec s = spec(CollectiveKind::AllReduce,
                          CollectiveAlgorithm::Hierarchical, n, {2, 2, 2, 1});
  EXPECT_NEAR(collectiveTime(s, machine), expected, 1e-9 * expected);
  EXPECT_NEAR(simulateCollective(s, machine), expected, 1e-9 * expected);
  // A flat ring over the 8: 14 steps of n/8 on the system link (one member
  // per chip injects at a time: min(2, 6)).
  CollectiveSpec ring = spec(CollectiveKind::AllReduce,
                             CollectiveAlgorithm::Ring, n, {2, 2, 2, 1});
  double ringExpected = 14 * (1.0 + n / 8 / 2);
  EXPECT_NEAR(collectiveTime(ring, machine), ringExpected, 1e-9 * ringExpected);
  EXPECT_NEAR(simulateCollective(ring, machine), ringExpected,
              1e-9 * ringExpected);
  // The shorthand spec (4 members per node, 2 nodes) resolves at the node
  // level (level 1) and above it.
  CollectiveSpec legacy = ring;
  legacy.membersPerLevel = {};
  legacy.membersPerNode = 4;
  legacy.algorithm = CollectiveAlgorithm::Hierarchical;
  CollectiveSpec resolved = resolveLevels(legacy, machine);
  EXPECT_EQ(resolved.membersPerLevel, (std::array<int64_t, 4>{1, 4, 2, 1}));
  EXPECT_NEAR(simulateCollective(legacy, machine),
              collectiveTime(legacy, machine), 1e-9);
}

TEST(CollectiveLevels, SpecBeyondTheMachineIsAnError) {
  MachineModel machine = makeTestMachine(); // two levels
  SimProgram program;
  program.stages.emplace_back("only");
  program.stages[0].addCollective(spec(CollectiveKind::AllReduce,
                                       CollectiveAlgorithm::Ring, 100,
                                       {1, 2, 2, 1}),
                                  "c");
  std::string error = expectError(simulate(program, machine));
  EXPECT_NE(error.find("spans network level 2, but machine 'test' has 2 "
                       "levels"),
            std::string::npos)
      << error;
  // Members per level that do not multiply to the group size.
  CollectiveSpec bad = spec(CollectiveKind::AllReduce,
                            CollectiveAlgorithm::Ring, 100, {2, 2, 1, 1});
  bad.groupSize = 8;
  bad.membersPerNode = 2;
  SimProgram wrong;
  wrong.stages.emplace_back("only");
  wrong.stages[0].addCollective(bad, "c");
  error = expectError(simulate(wrong, machine));
  EXPECT_NE(error.find("their product must be the size"), std::string::npos)
      << error;
}

TEST(CollectiveLevels, GroupLevelsOfContiguousAndStridedGroups) {
  llvm::Expected<MachineModel> frontier = loadMachineModel(
      std::string(RATRAIN_EXAMPLES_DIR) + "/machines/frontier.yaml");
  ASSERT_TRUE(bool(frontier)) << llvm::toString(frontier.takeError());
  using M = std::array<int64_t, 4>;
  EXPECT_EQ(groupLevels(*frontier, 16), (M{2, 4, 2, 1}));
  EXPECT_EQ(groupLevels(*frontier, 8), (M{2, 4, 1, 1}));
  EXPECT_EQ(groupLevels(*frontier, 2), (M{2, 1, 1, 1}));
  EXPECT_EQ(groupLevels(*frontier, 4), (M{2, 2, 1, 1}));
  // One member per node (stride 8), two per node at stride 4.
  EXPECT_EQ(groupLevels(*frontier, 4, 8), (M{1, 1, 4, 1}));
  EXPECT_EQ(groupLevels(*frontier, 8, 2), (M{1, 4, 2, 1}));
  // Uneven: groups of 3 straddle MI250X and node boundaries (clusters 6, 7,
  // 8): everything between nodes; 6 x 4 (stride 4) as 2 per node, 12 nodes.
  EXPECT_EQ(groupLevels(*frontier, 3), (M{1, 1, 3, 1}));
  EXPECT_EQ(groupLevels(*frontier, 12, 4), (M{1, 2, 6, 1}));
  // On the shorthand: {c, nodes}.
  MachineModel two = makeTestMachine();
  EXPECT_EQ(groupLevels(two, 8), (M{4, 2, 1, 1}));
  EXPECT_EQ(groupLevels(two, 2, 4), (M{1, 2, 1, 1}));
}

} // namespace
