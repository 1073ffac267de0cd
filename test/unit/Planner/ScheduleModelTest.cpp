//===- ScheduleModelTest.cpp - Memory, time and plans per schedule -------===//
//
// The memory model, the cost model and the planner under the schedules other
// than non-interleaved 1F1B: ZB-H1 holds 1F1B's activations, ZBV no more,
// interleaved 1F1B more; ZB-H1 has a smaller bubble than 1F1B on the same
// config; the planner's `auto` search is never slower than its best 1F1B
// plan and every plan it returns fits the cap.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/Planner.h"

#include "gtest/gtest.h"

using namespace ratrain;
using schedule::ScheduleKind;

namespace {

ModelConfig loadModel(const char *name) {
  HFImportOptions options;
  options.seqLen = 4096;
  llvm::Expected<ModelConfig> m = loadHFConfig(
      std::string(RATRAIN_EXAMPLES_DIR) + "/models/" + name + ".json", options);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return {};
  }
  return *m;
}

MachineModel loadMT3000() {
  llvm::Expected<MachineModel> m = loadMachineModel(
      std::string(RATRAIN_EXAMPLES_DIR) + "/machines/mt3000.yaml");
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return {};
  }
  return *m;
}

/// `base` re-split into p * v even chunks under `kind`.
ParallelConfig withSchedule(const ModelConfig &model,
                            const ParallelConfig &base, ScheduleKind kind,
                            int64_t v) {
  ParallelConfig config = ParallelConfig::balanced(
      model.numLayers, base.pipelineStages * v, base.dataParallel,
      base.microBatchSize, base.numMicroBatches, base.recompute.front(),
      base.zero);
  config.pipelineStages = base.pipelineStages;
  config.schedule = kind;
  config.virtualStages = v;
  return config;
}

schedule::ScheduleMemory liveCounts(const ModelConfig &model,
                                    const ParallelConfig &config) {
  llvm::Expected<schedule::PipelineSchedule> generated =
      schedule::generateSchedule(config.schedule, config.pipelineStages,
                                 config.virtualStages, config.numMicroBatches);
  EXPECT_TRUE(bool(generated)) << llvm::toString(generated.takeError());
  std::vector<double> act, deferred;
  scheduleWeights(model, config, {}, act, deferred);
  return schedule::scheduleMemory(*generated, act, deferred);
}

TEST(ScheduleCostModel, BackwardSplitsIntoInputAndWeightParts) {
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  CostModel costs(model, machine);
  for (int64_t b : {1, 2, 4}) {
    double full = costs.layerBackward(b);
    EXPECT_NEAR(costs.layerBackwardInput(b) + costs.layerBackwardWeight(b),
                full, 1e-12 * full);
    EXPECT_GT(costs.layerBackwardWeight(b), 0.2 * full);
    EXPECT_GT(costs.layerBackwardInput(b), costs.layerBackwardWeight(b));
    double head = costs.headBackward(b);
    EXPECT_NEAR(costs.headBackwardInput(b) + costs.headBackwardWeight(b), head,
                1e-12 * head);
  }
}

TEST(ScheduleMemoryModel, ZBH1HoldsTheActivationsOf1F1B) {
  ModelConfig model = loadModel("llama-2-7b");
  ParallelConfig base = ParallelConfig::balanced(model.numLayers, 4, 8, 1, 8,
                                                 RecomputePolicy::Selective);
  ParallelConfig zb = base;
  zb.schedule = ScheduleKind::ZBH1;
  ASSERT_FALSE(bool(zb.validate(model)));
  schedule::ScheduleMemory counts = liveCounts(model, zb);
  std::vector<StageMemory> one = computeMemory(model, base);
  std::vector<StageMemory> zbMemory = computeMemory(model, zb);
  ASSERT_EQ(zbMemory.size(), 4u);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(counts.peakActivations[r][r], inFlightMicroBatches(base, r))
        << "rank " << r;
    // The same model states; activations at least 1F1B's (plus what an I
    // keeps for its deferred W).
    EXPECT_EQ(zbMemory[r].modelStates(), one[r].modelStates());
    EXPECT_GE(zbMemory[r].activations, one[r].activations);
  }
}

TEST(ScheduleMemoryModel, ZBVHoldsNoMoreAndInterleavedMore) {
  ModelConfig model = loadModel("llama-2-7b");
  ParallelConfig base = ParallelConfig::balanced(model.numLayers, 4, 8, 1, 8,
                                                 RecomputePolicy::Full);
  std::vector<StageMemory> one = computeMemory(model, base);
  ParallelConfig zbv = withSchedule(model, base, ScheduleKind::ZBV, 2);
  ParallelConfig interleaved =
      withSchedule(model, base, ScheduleKind::Interleaved1F1B, 2);
  ASSERT_FALSE(bool(zbv.validate(model)));
  ASSERT_FALSE(bool(interleaved.validate(model)));
  std::vector<StageMemory> v = computeMemory(model, zbv);
  std::vector<StageMemory> il = computeMemory(model, interleaved);
  // Rank 0 holds the most under 1F1B: p micro-batches of its layers.
  schedule::ScheduleMemory zbvCounts = liveCounts(model, zbv);
  schedule::ScheduleMemory ilCounts = liveCounts(model, interleaved);
  auto chunkLayerMicroBatches = [&](const ParallelConfig &config,
                                    const schedule::ScheduleMemory &counts,
                                    int64_t rank) {
    int64_t sum = 0;
    for (int64_t c = 0; c < config.numVirtualStages(); ++c)
      if (chunkRank(config, c) == rank)
        sum += config.stages[c].numLayers * counts.peakActivations[rank][c];
    return sum;
  };
  int64_t oneRank0 = base.stages[0].numLayers * inFlightMicroBatches(base, 0);
  EXPECT_LE(chunkLayerMicroBatches(zbv, zbvCounts, 0), oneRank0);
  EXPECT_GT(chunkLayerMicroBatches(interleaved, ilCounts, 0), oneRank0);
  EXPECT_GT(il[0].activations, one[0].activations);
  // Every rank holds all of its chunks' model states, and the ranks together
  // the whole model.
  int64_t paramsV = 0, paramsOne = 0;
  for (int64_t r = 0; r < 4; ++r) {
    paramsV += v[r].params;
    paramsOne += one[r].params;
  }
  EXPECT_EQ(paramsV, paramsOne);
}

TEST(ScheduleCostModel, ZBH1HasASmallerBubbleThan1F1B) {
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  CostModel costs(model, machine);
  ParallelConfig base = ParallelConfig::balanced(model.numLayers, 8, 4, 1, 16,
                                                 RecomputePolicy::Selective);
  ParallelConfig zb = base;
  zb.schedule = ScheduleKind::ZBH1;
  StepTime one = predictStepTime(costs, base, LifecyclePolicy::RATrain);
  StepTime split = predictStepTime(costs, zb, LifecyclePolicy::RATrain);
  EXPECT_GT(one.bubbleFraction(), 0.2);
  EXPECT_LT(split.bubbleFraction(), one.bubbleFraction());
  // The same with 1F1B's schedule simulated on the same action costs.
  llvm::Expected<schedule::PipelineSchedule> oneSchedule =
      schedule::generateSchedule(ScheduleKind::OneFOneB, 8, 1, 16);
  ASSERT_TRUE(bool(oneSchedule)) << llvm::toString(oneSchedule.takeError());
  StepTime simulatedOne =
      predictStepTime(costs, base, LifecyclePolicy::RATrain, *oneSchedule);
  EXPECT_LT(split.bubbleFraction(), simulatedOne.bubbleFraction());
  EXPECT_LT(split.pipeline, simulatedOne.pipeline);
  EXPECT_LT(split.pipeline, one.pipeline);
  EXPECT_GE(split.total, split.pipeline);
  // The pipeline still does all the work: at least the slowest rank's.
  double rank0 = 16 * (one.stages[0].forward + one.stages[0].backward);
  EXPECT_GE(split.pipeline, rank0);
}

TEST(ScheduleCostModel, SimulatedOneFOneBAgreesWithTheClosedForm) {
  // The closed form charges two message times per micro-batch on the
  // critical path; the simulated schedule overlaps transfers. Without
  // transfers (p2p in the slot only) they agree on equal stages.
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  CostModel costs(model, machine);
  ParallelConfig config = ParallelConfig::balanced(model.numLayers, 4, 8, 1, 8,
                                                   RecomputePolicy::None);
  StepTime closed = predictStepTime(costs, config, LifecyclePolicy::RATrain);
  llvm::Expected<schedule::PipelineSchedule> s =
      schedule::generateSchedule(ScheduleKind::OneFOneB, 4, 1, 8);
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  schedule::ActionCosts actionCosts = scheduleActionCosts(costs, config);
  schedule::ScheduleTiming timing = schedule::simulateSchedule(*s, actionCosts);
  // Within the p2p terms: 2 c per micro-batch on the slowest stage.
  EXPECT_LE(timing.makespan, closed.pipeline * (1 + 1e-9));
  EXPECT_GE(timing.makespan, closed.pipeline -
                                 (2.0 * 8 + 2.0 * 3) * actionCosts.transfer -
                                 1e-9 * closed.pipeline);
}

TEST(SchedulePlanner, AutoIsNeverSlowerThanTheBest1F1BPlan) {
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 32;
  request.globalBatch = 64;
  request.topK = 20;
  llvm::Expected<PlanResult> one = planTraining(model, machine, request);
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  request.searchSchedules = true;
  llvm::Expected<PlanResult> any = planTraining(model, machine, request);
  ASSERT_TRUE(bool(any)) << llvm::toString(any.takeError());
  ASSERT_FALSE(any->plans.empty());
  EXPECT_LE(any->plans.front().time.total,
            one->plans.front().time.total * (1 + 1e-12));
  for (const Plan &plan : any->plans) {
    EXPECT_FALSE(bool(plan.config.validate(model))) << plan.config.describe();
    ASSERT_EQ(int64_t(plan.memory.size()), plan.config.pipelineStages);
    EXPECT_LE(plan.peakBytes(), machine.cluster.ddrBytes)
        << plan.config.describe();
  }
}

class EveryKind : public ::testing::TestWithParam<ScheduleKind> {};

TEST_P(EveryKind, PlansFitTheCap) {
  // Sequences of 2048 tokens: every kind has plans under 20 GB, their peaks
  // close to the cap (ZBV's deferred W parts need the shorter sequences).
  ModelConfig model = loadModel("llama-2-7b");
  model.seqLen = 2048;
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 128;
  request.globalBatch = 512;
  request.topK = 5;
  request.schedule = GetParam();
  request.memoryCapBytes = machine.cluster.ddrBytes;
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  ASSERT_FALSE(result->plans.empty());
  for (const Plan &plan : result->plans) {
    EXPECT_EQ(plan.config.schedule, GetParam());
    EXPECT_FALSE(bool(plan.config.validate(model))) << plan.config.describe();
    std::vector<StageMemory> again =
        computeMemory(model, plan.config, MemoryOptions::forMachine(machine));
    ASSERT_EQ(again.size(), plan.memory.size());
    for (size_t r = 0; r < again.size(); ++r) {
      EXPECT_LE(plan.memory[r].total(), request.memoryCapBytes)
          << plan.config.describe() << " rank " << r;
      EXPECT_EQ(plan.memory[r].total(), again[r].total());
    }
    EXPECT_GT(plan.tokensPerSecond, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, EveryKind,
    ::testing::Values(ScheduleKind::OneFOneB, ScheduleKind::ZBH1,
                      ScheduleKind::ZBV, ScheduleKind::Interleaved1F1B),
    [](const auto &info) {
      std::string name = schedule::stringifyScheduleKind(info.param).str();
      for (char &ch : name)
        if (!isalnum(static_cast<unsigned char>(ch)))
          ch = '_';
      return name;
    });

TEST(SchedulePlanner, RejectsABadScheduleOption) {
  PlanRequest request;
  llvm::Error err = applyScheduleOption("gpipe", 0, request);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("gpipe"), std::string::npos);
  ASSERT_FALSE(bool(applyScheduleOption("auto", 0, request)));
  EXPECT_TRUE(request.searchSchedules);
  ASSERT_FALSE(bool(applyScheduleOption("zbv", 2, request)));
  EXPECT_EQ(request.schedule, ScheduleKind::ZBV);
  EXPECT_EQ(request.virtualStages, 2);
}

} // namespace
