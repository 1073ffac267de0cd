//===- ShardingTest.cpp - Partitioned ZeRO collectives in FromPlan --------===//
//
// The simulator's pricing of the sharding policies (ShardingPolicy) on
// frontier.yaml (levels: the 2 GCDs of an MI250X, the 4 MI250X of a node,
// the nodes) with dp 16 = 2 x 4 x 2: the group, levels, bytes and wire of
// every ZeRO collective of flat, zero++ and three-level, by hand from the
// layer's parameters; three-level sends fewer bytes between nodes than flat
// and zero++; bad policies are errors naming the limit.
//
//===----------------------------------------------------------------------===//

#include "TestMachine.h"

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/Simulator.h"
#include "ratrain/Simulator/SyntheticSchedule.h"

#include "gtest/gtest.h"

#include <map>
#include <string>

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

MachineModel loadFrontier() {
  return expectOk(
      loadMachineModel(RATRAIN_EXAMPLES_DIR "/machines/frontier.yaml"));
}

ModelConfig loadModel() {
  HFImportOptions options;
  options.seqLen = 1024;
  return expectOk(loadHFConfig(
      std::string(RATRAIN_EXAMPLES_DIR "/models/llama-2-7b.json"), options));
}

constexpr int64_t kDP = 16, kMicroBatches = 4;

ParallelConfig config(const char *preset,
                      WireFormat weights = WireFormat::Native,
                      WireFormat grads = WireFormat::Native) {
  ParallelConfig c =
      ParallelConfig::balanced(loadModel().numLayers, 1, kDP, 1, kMicroBatches,
                               RecomputePolicy::Full, ZeroStage::Parameters);
  c.sharding = *shardingPreset(preset, 3);
  c.sharding.weightWire = weights;
  c.sharding.gradWire = grads;
  return c;
}

/// The collectives of stage 0 by label prefix ("primary all-gather L0" ->
/// "primary all-gather").
struct Found {
  int64_t count = 0;
  CollectiveSpec spec;
};
std::map<std::string, Found> collectives(const SimProgram &program,
                                         int64_t layer) {
  std::map<std::string, Found> found;
  const StageProgram &stage = program.stages[0];
  std::string suffix = " L" + std::to_string(layer);
  for (size_t i = 0; i < stage.size(); ++i) {
    if (stage.getTask(i).kind != TaskKind::Collective)
      continue;
    std::string label = stage.getLabel(i).str();
    size_t at = label.find(suffix);
    if (at == std::string::npos ||
        (at + suffix.size() < label.size() && label[at + suffix.size()] != ' '))
      continue;
    Found &f = found[label.substr(0, at)];
    ++f.count;
    f.spec = stage.getTask(i).collective;
  }
  return found;
}

/// Bytes one member sends per iteration at each level, over every ZeRO
/// collective of stage 0.
std::array<double, 4> bytesPerLevel(const SimProgram &program,
                                    const MachineModel &machine) {
  std::array<double, 4> bytes{};
  for (const Task &task : program.stages[0].getTasks())
    if (task.kind == TaskKind::Collective)
      for (const CollectiveStep &step :
           planCollective(resolveLevels(task.collective, machine)))
        bytes[step.level] += step.bytes;
  return bytes;
}

int64_t layerParams(const ParallelConfig &c) {
  // A middle layer: no embedding or head folded in.
  ModelConfig model = loadModel();
  int64_t params = stageParams(model, c, 0);
  return (params + c.stages[0].numLayers - 1) / c.stages[0].numLayers;
}

using Levels = std::array<int64_t, 4>;

TEST(Sharding, ZeroPlusPlusGroups) {
  MachineModel machine = loadFrontier();
  ParallelConfig c = config("zero++", WireFormat::Int8, WireFormat::Int4);
  SimProgram program = expectOk(buildProgramFromPlan(loadModel(), machine, c));
  const int64_t p = layerParams(c);
  std::map<std::string, Found> found = collectives(program, 1);
  // Secondary partition at the node (8 GCDs): the first use gathers the
  // 1/8 shard across the 2 nodes; the 8 such gathers of a node run at once.
  ASSERT_EQ(found["primary all-gather"].count, 1);
  const CollectiveSpec &primary = found["primary all-gather"].spec;
  EXPECT_EQ(primary.groupSize, 2);
  EXPECT_EQ(primary.membersPerLevel, (Levels{1, 1, 2, 1}));
  EXPECT_EQ(primary.concurrentGroups, (Levels{2, 8, 8, 8}));
  EXPECT_EQ(primary.bytes, 2 * ((p + 7) / 8));
  EXPECT_EQ(primary.wire, WireFormat::Int8);
  // Every use (forward, backward) inside the node.
  EXPECT_EQ(found["view all-gather"].count, 2 * kMicroBatches);
  EXPECT_EQ(found["view all-gather"].spec.membersPerLevel,
            (Levels{2, 4, 1, 1}));
  EXPECT_EQ(found["view all-gather"].spec.bytes, 2 * p);
  // Gradients: after the last micro-batch over all 16 at once, int4; no
  // sync across (the level holds the whole group).
  EXPECT_EQ(found["grad reduce-scatter"].count, 1);
  const CollectiveSpec &scatter = found["grad reduce-scatter"].spec;
  EXPECT_EQ(scatter.membersPerLevel, (Levels{2, 4, 2, 1}));
  EXPECT_EQ(scatter.bytes, 2 * p);
  EXPECT_EQ(scatter.wire, WireFormat::Int4);
  EXPECT_EQ(found.count("grad sync"), 0u);
  EXPECT_TRUE(expectOk(simulate(program, machine)).stepTime > 0);
}

TEST(Sharding, ThreeLevelGroups) {
  MachineModel machine = loadFrontier();
  ParallelConfig c = config("three-level");
  SimProgram program = expectOk(buildProgramFromPlan(loadModel(), machine, c));
  const int64_t p = layerParams(c);
  std::map<std::string, Found> found = collectives(program, 1);
  // Weights partitioned over the GCD pair: the first use gathers the half
  // across the 8 MI250X, every use inside the pair.
  const CollectiveSpec &primary = found["primary all-gather"].spec;
  EXPECT_EQ(found["primary all-gather"].count, 1);
  EXPECT_EQ(primary.membersPerLevel, (Levels{1, 4, 2, 1}));
  EXPECT_EQ(primary.concurrentGroups, (Levels{2, 2, 2, 2}));
  EXPECT_EQ(primary.bytes, 2 * ((p + 1) / 2));
  EXPECT_EQ(found["view all-gather"].spec.membersPerLevel,
            (Levels{2, 1, 1, 1}));
  // Gradients: after the last micro-batch inside the node into a partition
  // of 1/8, then the partition across the nodes (once each per layer).
  EXPECT_EQ(found["grad reduce-scatter"].count, 1);
  EXPECT_EQ(found["grad reduce-scatter"].spec.membersPerLevel,
            (Levels{2, 4, 1, 1}));
  ASSERT_EQ(found["grad sync"].count, 1);
  const CollectiveSpec &sync = found["grad sync"].spec;
  EXPECT_EQ(sync.membersPerLevel, (Levels{1, 1, 2, 1}));
  EXPECT_EQ(sync.bytes, 2 * ((p + 7) / 8));
  EXPECT_EQ(sync.elementBytes, 2);
  EXPECT_EQ(sync.kind, CollectiveKind::ReduceScatter);
  EXPECT_TRUE(expectOk(simulate(program, machine)).stepTime > 0);
}

TEST(Sharding, ThreeLevelSendsFewerBytesBetweenNodes) {
  MachineModel machine = loadFrontier();
  ModelConfig model = loadModel();
  auto outer = [&](const ParallelConfig &c) {
    return bytesPerLevel(expectOk(buildProgramFromPlan(model, machine, c)),
                         machine)[2];
  };
  double flat = outer(config("flat"));
  double zeroPP = outer(config("zero++"));
  double three = outer(config("three-level"));
  EXPECT_GT(flat, 0);
  EXPECT_LT(zeroPP, flat);
  // Per layer: zero++ gathers P/8 across the nodes once and
  // reduce-scatters the gradient over all 16 once (its hierarchical
  // decomposition sends 2P/16 between the nodes); three-level gathers P/8
  // once and reduce-scatters its 2P/8 partition across the 2 nodes once
  // (P/8): the same P/4 between the nodes.
  EXPECT_NEAR(three, zeroPP, 1e-9 * zeroPP);
  // Quantized: fewer still.
  EXPECT_LT(outer(config("three-level", WireFormat::Int8, WireFormat::Int4)),
            three);
  EXPECT_LT(outer(config("zero++", WireFormat::Int8, WireFormat::Int4)),
            zeroPP);
  // Flat by hand: per layer and micro-batch a forward and a backward
  // all-gather of 2P over 2 x 4 x 2, each sending (2 - 1) x 2P / 16 between
  // the nodes; one reduce-scatter of the 2P gradient after the last
  // micro-batch, as much.
  ParallelConfig c = config("flat");
  const int64_t p = layerParams(c);
  EXPECT_GT(flat, 0);
  double perLayer = (2.0 * kMicroBatches + 1) * 2.0 * double(p) / 16.0;
  EXPECT_NEAR(flat / double(c.stages[0].numLayers), perLayer,
              0.05 * perLayer); // the first and last layers hold more
}

TEST(Sharding, ScheduleBuilderAgreesWithThe1F1BBuilder) {
  // Any schedule's builder, on the 1F1B action list, gives the 1F1B
  // builder's step under every policy (pp 2 x dp 16 on frontier.yaml).
  MachineModel machine = loadFrontier();
  ModelConfig model = loadModel();
  for (const char *preset : {"flat", "zero++", "three-level"})
    for (LifecyclePolicy policy :
         {LifecyclePolicy::RATrain, LifecyclePolicy::GpuStyle}) {
      ParallelConfig c = ParallelConfig::balanced(
          model.numLayers, 2, kDP, 1, kMicroBatches, RecomputePolicy::Full,
          ZeroStage::Parameters);
      c.sharding = *shardingPreset(preset, 3);
      c.sharding.weightWire = WireFormat::Int8;
      c.sharding.gradWire = WireFormat::Int4;
      PlanProgramOptions options;
      options.policy = policy;
      Synthetic1F1BConfig synthetic =
          expectOk(planToSyntheticConfig(model, machine, c, options));
      schedule::PipelineSchedule oneF1B = expectOk(schedule::generateSchedule(
          schedule::ScheduleKind::OneFOneB, 2, 1, kMicroBatches));
      SimReport direct =
          expectOk(simulate(buildSynthetic1F1B(synthetic), machine));
      SimReport generic = expectOk(
          simulate(buildSyntheticSchedule(synthetic, oneF1B), machine));
      EXPECT_NEAR(generic.stepTime, direct.stepTime, 1e-9 * direct.stepTime)
          << preset << " " << stringifyLifecyclePolicy(policy).str();
    }
}

TEST(Sharding, BadPoliciesAreErrors) {
  MachineModel machine = loadFrontier();
  ModelConfig model = loadModel();
  ParallelConfig c = config("zero++");
  c.zero = ZeroStage::Gradients;
  EXPECT_NE(expectError(buildProgramFromPlan(model, machine, c))
                .find("a weight partition (level 1) needs ZeRO-3"),
            std::string::npos);
  c = config("flat");
  c.sharding.gradLevel = 3;
  EXPECT_NE(expectError(buildProgramFromPlan(model, machine, c))
                .find("gradient partition level 3: machine 'frontier' has "
                      "network levels 0..2"),
            std::string::npos);
}

} // namespace
