//===- FromPlanTest.cpp - Simulator against the planner's cost model ------===//
//
// The simulator and the planner share their pieces: a collective alone on
// idle links must cost what CostModel::collective says, and a plan's
// simulated step must agree with the planner's closed-form prediction where
// that prediction is exact (equal stages, nothing to overlap).
//
//===----------------------------------------------------------------------===//

#include "TestMachine.h"

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/Simulator.h"

#include "gtest/gtest.h"

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

MachineModel loadMt3000() {
  return expectOk(
      loadMachineModel(RATRAIN_EXAMPLES_DIR "/machines/mt3000.yaml"));
}

ModelConfig loadModel(const char *file) {
  HFImportOptions options;
  options.seqLen = 4096;
  return expectOk(loadHFConfig(
      std::string(RATRAIN_EXAMPLES_DIR "/models/") + file, options));
}

TEST(FromPlan, CollectivesAgreeWithTheCostModel) {
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  CostModel costs(model, machine);
  const int64_t bytes = 400 << 20;
  for (int64_t k : {2, 4, 8, 64, 256}) {
    // DP groups of k contiguous clusters: min(k, clusters per node) per node.
    int64_t perNode = std::min(k, machine.clustersPerNode);
    for (CollectiveAlgorithm algorithm :
         {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree,
          CollectiveAlgorithm::Hierarchical}) {
      for (CollectiveKind kind :
           {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
            CollectiveKind::AllGather}) {
        CollectiveSpec spec;
        spec.kind = kind;
        spec.bytes = bytes;
        spec.groupSize = k;
        spec.membersPerNode = perNode;
        spec.algorithm = algorithm;
        double expected = costs.collective(kind, algorithm, bytes, k);
        EXPECT_NEAR(collectiveTime(spec, machine), expected, 1e-9 * expected)
            << "k=" << k << " " << stringifyAlgorithm(algorithm).str() << " "
            << stringifyCollectiveKind(kind).str();
        // And the engine reproduces the closed form.
        SimProgram program;
        program.stages.emplace_back("s");
        program.stages[0].addWait(program.stages[0].addCollective(spec, "c"));
        SimOptions options;
        options.iterations = 1;
        SimReport report = expectOk(simulate(program, machine, options));
        EXPECT_NEAR(report.stepTime, expected, 1e-9 * expected);
      }
    }
  }
}

TEST(FromPlan, GpuStyleStepMatchesThePlannerWithoutContention) {
  // Equal stages, no recompute differences: the pipeline formula is exact;
  // the simulator differs only by the node injection sharing of pipeline
  // messages (4 replicas per node), which the planner's p2p term ignores.
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  ParallelConfig config = ParallelConfig::balanced(
      model.numLayers, 4, 8, 1, 16, RecomputePolicy::Full, ZeroStage::None);
  PlanProgramOptions options;
  options.policy = LifecyclePolicy::GpuStyle;
  SimProgram program =
      expectOk(buildProgramFromPlan(model, machine, config, options));
  SimReport report = expectOk(simulate(program, machine));
  StepTime predicted =
      predictStepTime(CostModel(model, machine), config, options.policy);
  EXPECT_NEAR(report.stepTime, predicted.total, 0.01 * predicted.total);
  EXPECT_DOUBLE_EQ(report.tokensPerIteration, 8.0 * 16 * 4096);
  EXPECT_EQ(report.clusters, 32);
  // Peak DDR: the memory model's total for every stage, counted for a
  // gpu-style runtime.
  std::vector<StageMemory> memory = computeMemory(
      model, config,
      MemoryOptions::forMachine(machine, LifecyclePolicy::GpuStyle));
  for (size_t s = 0; s < memory.size(); ++s)
    EXPECT_EQ(report.stageReports[s].peakDdrBytes, memory[s].total())
        << "stage " << s;
}

TEST(FromPlan, RATrainPolicyIsNotSlowerAndHidesLifecycle) {
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  ParallelConfig config = ParallelConfig::balanced(
      model.numLayers, 4, 64, 1, 4, RecomputePolicy::Full, ZeroStage::None);
  PlanProgramOptions options;
  options.policy = LifecyclePolicy::GpuStyle;
  SimReport gpu = expectOk(
      simulate(expectOk(buildProgramFromPlan(model, machine, config, options)),
               machine));
  options.policy = LifecyclePolicy::RATrain;
  SimReport ratrain = expectOk(
      simulate(expectOk(buildProgramFromPlan(model, machine, config, options)),
               machine));
  EXPECT_LT(ratrain.stepTime, gpu.stepTime);
  unsigned allReduce = static_cast<unsigned>(CommKind::AllReduce);
  EXPECT_LT(ratrain.maxExposed[allReduce], gpu.maxExposed[allReduce]);
}

TEST(FromPlan, PartialSynchronizationAveragesEachLayerInItsPhase) {
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  ParallelConfig config = ParallelConfig::balanced(
      model.numLayers, 4, 64, 1, 4, RecomputePolicy::Full, ZeroStage::None);
  SimReport every = expectOk(simulate(
      expectOk(buildProgramFromPlan(model, machine, config)), machine));
  config.syncPeriod = 4;
  for (LifecyclePolicy policy :
       {LifecyclePolicy::RATrain, LifecyclePolicy::GpuStyle}) {
    PlanProgramOptions options;
    options.policy = policy;
    SimProgram program =
        expectOk(buildProgramFromPlan(model, machine, config, options));
    EXPECT_EQ(program.longestPeriod(), 4u);
    // No gradient sync; one averaging of the fp32 masters per layer, the
    // stage's 8 layers spread over the 4 phases.
    for (const StageProgram &stage : program.stages) {
      int64_t averagings = 0;
      std::vector<int64_t> perPhase(4, 0);
      for (size_t i = 0; i < stage.size(); ++i) {
        const Task &task = stage.getTask(i);
        if (task.kind != TaskKind::Collective)
          continue;
        EXPECT_EQ(task.period, 4u) << stage.getLabel(i).str();
        EXPECT_EQ(task.collective.kind, CollectiveKind::AllReduce);
        ++averagings;
        ++perPhase[task.phase];
      }
      EXPECT_EQ(averagings, 8);
      EXPECT_EQ(perPhase, std::vector<int64_t>(4, 2));
    }
    SimOptions simOptions;
    simOptions.iterations = 5;
    SimReport partial = expectOk(simulate(program, machine, simOptions));
    unsigned allReduce = static_cast<unsigned>(CommKind::AllReduce);
    if (policy == LifecyclePolicy::RATrain) {
      // A quarter of twice the bytes per step: less exposed than the
      // all-reduce of every gradient every step.
      EXPECT_LE(partial.maxExposed[allReduce], every.maxExposed[allReduce]);
      EXPECT_LE(partial.stepTime, every.stepTime * 1.001);
    }
  }
}

TEST(FromPlan, OffloadedStatesMatchTheMemoryModelAndCostModel) {
  MachineModel machine = loadMt3000();
  ASSERT_TRUE(machine.offload.present());
  ModelConfig model = loadModel("llama-2-7b.json");
  ParallelConfig config = ParallelConfig::balanced(
      model.numLayers, 4, 8, 1, 8, RecomputePolicy::Full, ZeroStage::Gradients);
  config.offload = OffloadPolicy::OptimizerStates;
  SimProgram program = expectOk(buildProgramFromPlan(model, machine, config));
  // Every offload transfer costs what the cost model says when alone.
  CostModel costs(model, machine);
  const Task *transfer = nullptr;
  for (const Task &task : program.stages[1].getTasks())
    if (task.kind == TaskKind::Offload)
      transfer = &task;
  ASSERT_NE(transfer, nullptr);
  SimProgram single;
  single.stages.emplace_back("s");
  single.stages[0].addWait(
      single.stages[0].addOffloadTransfer(transfer->bytes, "one"));
  SimOptions options;
  options.iterations = 1;
  double expected = costs.offloadTransfer(transfer->bytes);
  EXPECT_NEAR(expectOk(simulate(single, machine, options)).stepTime, expected,
              1e-9 * expected);
  // Peak DDR per stage is the memory model's (offloaded states excluded).
  SimReport report = expectOk(simulate(program, machine));
  std::vector<StageMemory> memory =
      computeMemory(model, config, MemoryOptions::forMachine(machine));
  for (size_t s = 0; s < memory.size(); ++s)
    EXPECT_EQ(report.stageReports[s].peakDdrBytes, memory[s].total())
        << "stage " << s;
}

TEST(FromPlan, ZeroThreeGathersTheViewsBeforeEveryUse) {
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  const int64_t p = 4, m = 4;
  for (LifecyclePolicy policy :
       {LifecyclePolicy::RATrain, LifecyclePolicy::GpuStyle}) {
    ParallelConfig config =
        ParallelConfig::balanced(model.numLayers, p, 64, 1, m,
                                 RecomputePolicy::Full, ZeroStage::Parameters);
    PlanProgramOptions options;
    options.policy = policy;
    SimProgram program =
        expectOk(buildProgramFromPlan(model, machine, config, options));
    // One all-gather of a layer's full view per forward and per backward
    // (with its recompute), none after the update; gradients are
    // reduce-scattered.
    for (int64_t s = 0; s < p; ++s) {
      int64_t gathers = 0, scatters = 0;
      for (const Task &task : program.stages[s].getTasks()) {
        if (task.kind != TaskKind::Collective)
          continue;
        if (task.collective.kind == CollectiveKind::AllGather) {
          ++gathers;
          EXPECT_EQ(task.collective.groupSize, 64);
        }
        scatters += task.collective.kind == CollectiveKind::ReduceScatter;
      }
      EXPECT_EQ(gathers, 2 * m * config.stages[s].numLayers) << "stage " << s;
      EXPECT_GT(scatters, 0) << "stage " << s;
    }
    // The sharded views take less DDR than ZeRO-2's full ones, at the
    // price of the per-use gathers.
    SimReport zero3 = expectOk(simulate(program, machine));
    config.zero = ZeroStage::Gradients;
    SimReport zero2 = expectOk(simulate(
        expectOk(buildProgramFromPlan(model, machine, config, options)),
        machine));
    for (int64_t s = 0; s < p; ++s)
      EXPECT_LT(zero3.stageReports[s].peakDdrBytes,
                zero2.stageReports[s].peakDdrBytes)
          << "stage " << s;
  }
}

TEST(FromPlan, InterleavedChunksPriceTheUpdatesOfTheirRank) {
  // dp 3 on MT-3000's nodes of 4 clusters: rank 0's group (clusters 0-2)
  // stays in a node and syncs on a ring, so its updates read their own part
  // (the average in the update); rank 1's (clusters 3-5) spans two nodes and
  // syncs hierarchically. Interleaved, chunks 0 and 2 run on rank 0 and 1
  // and 3 on rank 1: a chunk numbered as a rank (clusters 6-8, 9-11) would
  // get the other answer for chunks 2 and 3.
  MachineModel machine = loadMt3000();
  ASSERT_EQ(machine.clustersPerNode, 4);
  HFImportOptions options;
  options.seqLen = 256;
  ModelConfig model = expectOk(
      loadHFConfig(RATRAIN_EXAMPLES_DIR "/models/tiny-llama.json", options));
  ParallelConfig config = ParallelConfig::balanced(
      model.numLayers, 4, 3, 1, 4, RecomputePolicy::None, ZeroStage::Optimizer);
  config.pipelineStages = 2;
  config.virtualStages = 2;
  config.schedule = schedule::ScheduleKind::Interleaved1F1B;
  CostModel costs(model, machine);
  ASSERT_TRUE(costs.averagesInUpdate(config, 0));
  ASSERT_FALSE(costs.averagesInUpdate(config, 1));
  Synthetic1F1BConfig synthetic =
      expectOk(planToSyntheticConfig(model, machine, config));
  ASSERT_EQ(synthetic.perStage.size(), 4u);
  for (int64_t chunk = 0; chunk < 4; ++chunk) {
    int64_t params = stageParams(model, config, chunk);
    int64_t layers = config.stages[chunk].numLayers;
    int64_t updated = ((params + layers - 1) / layers + 2) / 3;
    EXPECT_DOUBLE_EQ(synthetic.perStage[chunk].updateSeconds,
                     costs.optimizerUpdate(updated, chunk % 2 == 0))
        << "chunk " << chunk;
  }
}

TEST(FromPlan, InvalidConfigIsAnError) {
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  ParallelConfig config = ParallelConfig::balanced(
      model.numLayers, 4, 8, 1, 16, RecomputePolicy::Full, ZeroStage::None);
  config.stages.pop_back();
  EXPECT_FALSE(
      expectError(buildProgramFromPlan(model, machine, config)).empty());
}

} // namespace
