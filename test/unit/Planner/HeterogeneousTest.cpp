//===- HeterogeneousTest.cpp - Plans for classes of clusters --------------===//
//
// planTraining on machines with classes of clusters (Heterogeneous.cpp):
// the uneven layouts beat the even one where micro-batches can be dealt,
// every layout fits each class's DDR, forced shares, and errors that name
// the class and the stage.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/Planner.h"

#include "gtest/gtest.h"

#include <numeric>

using namespace ratrain;

namespace {

ModelConfig loadModel(llvm::StringRef name) {
  llvm::Expected<ModelConfig> m = loadHFConfig(
      std::string(RATRAIN_EXAMPLES_DIR) + "/models/" + name.str() + ".json");
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return {};
  }
  return *m;
}

MachineModel loadMachine(llvm::StringRef name) {
  llvm::Expected<MachineModel> m = loadMachineModel(
      std::string(RATRAIN_EXAMPLES_DIR) + "/machines/" + name.str() + ".yaml");
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return {};
  }
  return *m;
}

PlanRequest paperRequest(const MachineModel &machine) {
  PlanRequest request;
  request.clusters = machine.totalClusters();
  request.globalBatch = 1024;
  request.activationOffload = PlanRequest::ActivationOffloadMode::None;
  request.topK = 3;
  return request;
}

int64_t sum(llvm::ArrayRef<int64_t> values) {
  return std::accumulate(values.begin(), values.end(), int64_t(0));
}

} // namespace

/// Baichuan2-13B on 512 full and 512 half MT-3000 clusters, 4 sequences
/// per cluster: the best layout gives the full class's replicas more
/// micro-batches, keeps the global batch, fits DDR, and beats the even
/// layout by at least 1.3x.
TEST(Heterogeneous, UnevenSharesBeatTheEvenLayout) {
  ModelConfig model = loadModel("baichuan2-13b");
  MachineModel machine = loadMachine("mt3000-mixed");
  ASSERT_TRUE(machine.heterogeneous());
  PlanRequest request = paperRequest(machine);
  request.globalBatch = 4096;

  request.classLayout = PlanRequest::ClassLayout::Even;
  llvm::Expected<PlanResult> even = planTraining(model, machine, request);
  ASSERT_TRUE(bool(even)) << llvm::toString(even.takeError());
  const Plan &evenBest = even->plans.front();
  EXPECT_TRUE(evenBest.config.replicaMicroBatches.empty());
  EXPECT_NE(evenBest.layout.find("even:"), std::string::npos);

  request.classLayout = PlanRequest::ClassLayout::Search;
  llvm::Expected<PlanResult> free = planTraining(model, machine, request);
  ASSERT_TRUE(bool(free)) << llvm::toString(free.takeError());
  const Plan &best = free->plans.front();
  const ParallelConfig &c = best.config;
  EXPECT_FALSE(bool(c.validate(model))) << c.describe();
  EXPECT_EQ(c.globalBatch(), 4096) << c.describe();
  EXPECT_GE(evenBest.time.total / best.time.total, 1.3)
      << best.layout << " vs " << evenBest.layout;
  for (const StageMemory &memory : best.memory)
    EXPECT_LE(memory.total(), machine.cluster.ddrBytes);
  if (!c.replicaMicroBatches.empty()) {
    // Replica-major: the first replicas are on the full class.
    EXPECT_TRUE(c.replicaMajor);
    EXPECT_GT(c.replicaMicroBatches.front(), c.replicaMicroBatches.back());
    EXPECT_EQ(sum(c.replicaMicroBatches) * c.microBatchSize, 4096);
    EXPECT_NE(best.layout.find("on class 'full'"), std::string::npos);
  }
}

/// The stages layout gives the full class's stages more layers.
TEST(Heterogeneous, StagesLayoutSplitsByCompute) {
  ModelConfig model = loadModel("baichuan2-13b");
  MachineModel machine = loadMachine("mt3000-mixed");
  PlanRequest request = paperRequest(machine);
  request.classLayout = PlanRequest::ClassLayout::Stages;
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  const ParallelConfig &c = result->plans.front().config;
  EXPECT_FALSE(c.replicaMajor);
  EXPECT_TRUE(c.replicaMicroBatches.empty());
  int64_t half = c.pipelineStages / 2, full = 0, slow = 0;
  for (int64_t s = 0; s < c.pipelineStages; ++s)
    (s < half ? full : slow) += c.stages[s].numLayers;
  EXPECT_GT(full, slow) << c.describe();
  EXPECT_EQ(full + slow, model.numLayers);
}

/// Forced shares on a homogeneous machine: dp and the micro-batch size
/// follow from them; bad shares are errors that say why.
TEST(Heterogeneous, ForcedShares) {
  ModelConfig model = loadModel("tiny-llama");
  MachineModel host = loadMachine("host");
  llvm::Expected<MachineModel> four = oversubscribe(host, 2);
  ASSERT_TRUE(bool(four)) << llvm::toString(four.takeError());
  PlanRequest request;
  request.clusters = 4;
  request.globalBatch = 8;
  request.pipelineStages = 2;
  ASSERT_FALSE(bool(applyDpSharesOption("3,1", request)));
  llvm::Expected<PlanResult> result = planTraining(model, *four, request);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  const ParallelConfig &c = result->plans.front().config;
  EXPECT_EQ(c.dataParallel, 2);
  EXPECT_EQ(c.microBatchSize, 2);
  EXPECT_EQ(c.numMicroBatches, 3);
  EXPECT_EQ(c.replicaMicroBatches, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(c.globalBatch(), 8);
  EXPECT_NE(c.describe().find("dp-shares=3,1"), std::string::npos);

  ASSERT_FALSE(bool(applyDpSharesOption("3,2", request)));
  llvm::Expected<PlanResult> odd = planTraining(model, *four, request);
  ASSERT_FALSE(bool(odd));
  EXPECT_NE(llvm::toString(odd.takeError())
                .find("global batch of 8 sequences is not a multiple of the "
                      "shares' 5 micro-batches"),
            std::string::npos);

  llvm::Error bad = applyDpSharesOption("3,0", request);
  ASSERT_TRUE(bool(bad));
  EXPECT_NE(llvm::toString(std::move(bad)).find("dp-shares: expected"),
            std::string::npos);
  llvm::Error layout = applyClassLayoutOption("diagonal", request);
  ASSERT_TRUE(bool(layout));
  EXPECT_NE(llvm::toString(std::move(layout)).find("class-layout: expected"),
            std::string::npos);
}

/// A class too small for any candidate: the error names it and the stage.
TEST(Heterogeneous, InfeasibleNamesTheClassAndTheStage) {
  ModelConfig model = loadModel("llama-2-70b");
  MachineModel machine = loadMachine("mt3000-mixed");
  machine.classes[1].cluster.ddrBytes = 4'000'000'000;
  machine.offload = OffloadTierSpec();
  PlanRequest request = paperRequest(machine);
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  ASSERT_FALSE(bool(result));
  std::string message = llvm::toString(result.takeError());
  EXPECT_NE(message.find("no plan fits class 'half' (4.0 GB of DDR"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("stage "), std::string::npos) << message;

  // A fast class with less DDR than the plan that fitted: the planner
  // finds another that fits both classes, or names the class that does not.
  ModelConfig tiny = loadModel("tiny-llama");
  llvm::Expected<MachineModel> mixed =
      oversubscribe(loadMachine("host-mixed"), 2);
  ASSERT_TRUE(bool(mixed)) << llvm::toString(mixed.takeError());
  PlanRequest forced;
  forced.clusters = 4;
  forced.globalBatch = 8;
  forced.pipelineStages = 2;
  ASSERT_FALSE(bool(applyDpSharesOption("3,1", forced)));
  llvm::Expected<PlanResult> fits = planTraining(tiny, *mixed, forced);
  ASSERT_TRUE(bool(fits)) << llvm::toString(fits.takeError());
  int64_t cap = fits->plans.front().peakBytes() - 1;
  mixed->classes[0].cluster.ddrBytes = cap;
  llvm::Expected<PlanResult> tight = planTraining(tiny, *mixed, forced);
  if (tight) {
    for (const StageMemory &memory : tight->plans.front().memory)
      EXPECT_LE(memory.total(), cap);
  } else {
    std::string text = llvm::toString(tight.takeError());
    EXPECT_NE(text.find("class 'fast'"), std::string::npos) << text;
    EXPECT_NE(text.find("stage "), std::string::npos) << text;
  }
}

/// The whole machine or nothing, and 1F1B only.
TEST(Heterogeneous, RequestLimits) {
  ModelConfig model = loadModel("baichuan2-13b");
  MachineModel machine = loadMachine("mt3000-mixed");
  PlanRequest request = paperRequest(machine);
  request.clusters = 512;
  llvm::Expected<PlanResult> part = planTraining(model, machine, request);
  ASSERT_FALSE(bool(part));
  EXPECT_NE(llvm::toString(part.takeError()).find("it is planned whole"),
            std::string::npos);
  request = paperRequest(machine);
  ASSERT_FALSE(bool(applyScheduleOption("zbv", 0, request)));
  llvm::Expected<PlanResult> zbv = planTraining(model, machine, request);
  ASSERT_FALSE(bool(zbv));
  EXPECT_NE(llvm::toString(zbv.takeError()).find("1f1b schedule only"),
            std::string::npos);
}
