//===- PlannerTest.cpp - Plan search on the shipped models ----------------===//

#include "ratrain/Planner/Planner.h"
#include "ratrain/Model/HFConfig.h"

#include "gtest/gtest.h"

#include <functional>

using namespace ratrain;

namespace {

ModelConfig loadModel(const char *name) {
  llvm::Expected<ModelConfig> m = loadHFConfig(
      std::string(RATRAIN_EXAMPLES_DIR) + "/models/" + name + ".json");
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

/// Checks the invariants of a successful result.
void checkResult(const ModelConfig &model, const MachineModel &machine,
                 const PlanRequest &request, const PlanResult &result) {
  ASSERT_FALSE(result.plans.empty());
  EXPECT_LE(int64_t(result.plans.size()), request.topK);
  EXPECT_GE(result.candidatesEvaluated, int64_t(result.plans.size()));
  EXPECT_GE(result.feasiblePlans, int64_t(result.plans.size()));
  double previous = 0;
  for (const Plan &plan : result.plans) {
    const ParallelConfig &c = plan.config;
    EXPECT_FALSE(bool(c.validate(model))) << c.describe();
    EXPECT_EQ(c.clusters(), request.clusters);
    EXPECT_EQ(c.globalBatch(), request.globalBatch);
    ASSERT_EQ(plan.memory.size(), size_t(c.pipelineStages));
    // Every stage under the cap (and the offload tier), and the breakdown
    // is what the policy's memory model says for this config.
    std::vector<StageMemory> again = computeMemory(
        model, c, MemoryOptions::forMachine(machine, request.policy));
    for (int64_t i = 0; i < c.pipelineStages; ++i) {
      EXPECT_LE(plan.memory[i].total(), machine.cluster.ddrBytes)
          << c.describe() << " stage " << i;
      EXPECT_LE(plan.memory[i].offloadedBytes, machine.offloadBytesPerCluster())
          << c.describe() << " stage " << i;
      EXPECT_EQ(plan.memory[i].total(), again[i].total());
      EXPECT_EQ(plan.memory[i].offloadedBytes, again[i].offloadedBytes);
    }
    EXPECT_GE(plan.time.total, previous);
    previous = plan.time.total;
    EXPECT_NEAR(plan.tokensPerSecond,
                double(request.globalBatch) * model.seqLen / plan.time.total,
                1e-6 * plan.tokensPerSecond);
  }
}

struct Case {
  const char *model;
  int64_t clusters;
};

class ShippedModels : public ::testing::TestWithParam<Case> {};

TEST_P(ShippedModels, PlansFitTwentyGigabytes) {
  ModelConfig model = loadModel(GetParam().model);
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = GetParam().clusters;
  request.globalBatch = 1024;
  request.topK = 3;
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  checkResult(model, machine, request, *result);
}

TEST_P(ShippedModels, GpuStylePlansFitTheirOwnMemoryModel) {
  ModelConfig model = loadModel(GetParam().model);
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = GetParam().clusters;
  request.globalBatch = 1024;
  request.topK = 3;
  request.policy = LifecyclePolicy::GpuStyle;
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  if (!result) {
    // gpu-style may not fit at all; then it must say so.
    std::string error = llvm::toString(result.takeError());
    EXPECT_NE(error.find("policy gpu-style); closest: "), std::string::npos)
        << error;
    return;
  }
  checkResult(model, machine, request, *result);
}

INSTANTIATE_TEST_SUITE_P(
    MT3000, ShippedModels,
    ::testing::Values(Case{"llama-2-7b", 64}, Case{"llama-2-7b", 256},
                      Case{"llama-2-7b", 1024}, Case{"baichuan2-13b", 64},
                      Case{"baichuan2-13b", 256}, Case{"baichuan2-13b", 1024},
                      Case{"qwen2.5-32b", 64}, Case{"qwen2.5-32b", 256},
                      Case{"qwen2.5-32b", 1024}, Case{"llama-2-70b", 64},
                      Case{"llama-2-70b", 256}, Case{"llama-2-70b", 1024}),
    [](const ::testing::TestParamInfo<Case> &info) {
      std::string name = info.param.model;
      for (char &ch : name)
        if (!isalnum(static_cast<unsigned char>(ch)))
          ch = '_';
      return name + "_" + std::to_string(info.param.clusters);
    });

TEST(Planner, SeventyBOnSixtyFourClustersNeedsOffload) {
  // 69e9 params * 16 B / 64 clusters is 17.2 GB before any activation; with
  // ZeRO-1/2 and pipeline stages of whole layers no split fits in DDR alone.
  // With optimizer states (and master weights) in the offload tier it does.
  ModelConfig model = loadModel("llama-2-70b");
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 64;
  request.globalBatch = 1024;
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  checkResult(model, machine, request, *result);
  for (const Plan &plan : result->plans) {
    EXPECT_NE(plan.config.offload, OffloadPolicy::None);
    EXPECT_GT(plan.peakOffloadedBytes(), 0);
    EXPECT_GT(plan.time.offload, 0);
  }

  // Without offload: infeasible, and the message says what is missing.
  request.offload = OffloadPolicy::None;
  result = planTraining(model, machine, request);
  ASSERT_FALSE(bool(result));
  std::string error = llvm::toString(result.takeError());
  EXPECT_NE(error.find("no plan for llama-2-70b fits 20.0 GB per cluster"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("closest: pp="), std::string::npos) << error;
  EXPECT_NE(error.find(" needs "), std::string::npos) << error;
  EXPECT_NE(error.find(" of 20.0 GB: "), std::string::npos) << error;
  EXPECT_NE(error.find("optimizer states"), std::string::npos) << error;

  // A machine without a tier says that it has none.
  machine.offload = {};
  request.offload.reset();
  result = planTraining(model, machine, request);
  ASSERT_FALSE(bool(result));
  error = llvm::toString(result.takeError());
  EXPECT_NE(error.find("the machine file has no offload tier"),
            std::string::npos)
      << error;
  // Forcing offload without a tier is an error.
  request.offload = OffloadPolicy::OptimizerStates;
  result = planTraining(model, machine, request);
  ASSERT_FALSE(bool(result));
  EXPECT_NE(llvm::toString(result.takeError()).find("has no offload tier"),
            std::string::npos);
}

TEST(Planner, PrefersNoOffloadWhenItFits) {
  // LLaMA-2-7B fits without offload; offload plans appear only when they
  // are faster than the same combination without.
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 1024;
  request.globalBatch = 1024;
  request.topK = 1;
  llvm::Expected<PlanResult> searched = planTraining(model, machine, request);
  request.offload = OffloadPolicy::None;
  llvm::Expected<PlanResult> none = planTraining(model, machine, request);
  ASSERT_TRUE(bool(searched) && bool(none));
  EXPECT_LE(searched->plans[0].time.total, none->plans[0].time.total);
  if (searched->plans[0].config.offload != OffloadPolicy::None)
    EXPECT_LT(searched->plans[0].time.total, none->plans[0].time.total);
}

TEST(Planner, TierTooSmallIsNamed) {
  // A 1 GB tier per node cannot hold 70B's states on 64 clusters.
  ModelConfig model = loadModel("llama-2-70b");
  MachineModel machine = loadMT3000();
  machine.offload.bytesPerNode = 1000000000;
  PlanRequest request;
  request.clusters = 64;
  request.globalBatch = 1024;
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  ASSERT_FALSE(bool(result));
  std::string error = llvm::toString(result.takeError());
  EXPECT_NE(error.find("closest: "), std::string::npos) << error;
  EXPECT_NE(error.find(" needs "), std::string::npos) << error;
}

TEST(Planner, GpuStyleMemoryForcesDeeperPipelinesOrMoreRecompute) {
  // 70B on 1024 clusters: the best ratrain plan does not fit gpu-style's
  // memory (FP32 gradient buffer + whole-stage optimizer workspace), so the
  // gpu-style plan is a different, slower one.
  ModelConfig model = loadModel("llama-2-70b");
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 1024;
  request.globalBatch = 1024;
  request.topK = 1;
  llvm::Expected<PlanResult> rat = planTraining(model, machine, request);
  request.policy = LifecyclePolicy::GpuStyle;
  llvm::Expected<PlanResult> gpu = planTraining(model, machine, request);
  ASSERT_TRUE(bool(rat)) << llvm::toString(rat.takeError());
  ASSERT_TRUE(bool(gpu)) << llvm::toString(gpu.takeError());
  Plan ratUnderGpu = evaluatePlan(model, machine, rat->plans[0].config,
                                  LifecyclePolicy::GpuStyle);
  EXPECT_GT(ratUnderGpu.peakBytes(), machine.cluster.ddrBytes);
  EXPECT_LE(gpu->plans[0].peakBytes(), machine.cluster.ddrBytes);
  auto recomputed = [](const ParallelConfig &c) {
    int64_t n = 0;
    for (size_t i = 0; i < c.stages.size(); ++i)
      if (c.recompute[i] != RecomputePolicy::None)
        n += c.stages[i].numLayers;
    return n;
  };
  const ParallelConfig &g = gpu->plans[0].config, &r = rat->plans[0].config;
  EXPECT_TRUE(g.pipelineStages > r.pipelineStages ||
              recomputed(g) > recomputed(r) || g.offload > r.offload)
      << g.describe() << " vs " << r.describe();
  EXPECT_GT(gpu->plans[0].time.total, rat->plans[0].time.total);
}

TEST(Planner, InfeasibleCapNamesTheLargestParts) {
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 8;
  request.globalBatch = 64;
  request.memoryCapBytes = 2000000000;
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  ASSERT_FALSE(bool(result));
  std::string error = llvm::toString(result.takeError());
  EXPECT_NE(error.find("fits 2.0 GB per cluster"), std::string::npos) << error;
  EXPECT_NE(error.find("of 2.0 GB: "), std::string::npos) << error;
}

TEST(Planner, MemoryBoundNeverPrunesAFeasiblePlan) {
  MachineModel machine = loadMT3000();
  for (LifecyclePolicy policy :
       {LifecyclePolicy::RATrain, LifecyclePolicy::GpuStyle})
    for (const char *name : {"llama-2-7b", "qwen2.5-32b", "llama-2-70b"}) {
      ModelConfig model = loadModel(name);
      for (int64_t clusters : {64, 256}) {
        PlanRequest request;
        request.policy = policy;
        request.clusters = clusters;
        request.globalBatch = 512;
        request.topK = 1000;
        llvm::Expected<PlanResult> pruned =
            planTraining(model, machine, request);
        request.pruneByMemoryBound = false;
        llvm::Expected<PlanResult> full = planTraining(model, machine, request);
        ASSERT_EQ(bool(pruned), bool(full)) << name << " @" << clusters;
        if (!pruned) {
          llvm::consumeError(pruned.takeError());
          llvm::consumeError(full.takeError());
          continue;
        }
        EXPECT_EQ(full->combinationsPruned, 0);
        EXPECT_GE(full->candidatesEvaluated, pruned->candidatesEvaluated);
        EXPECT_EQ(full->feasiblePlans, pruned->feasiblePlans)
            << name << " @" << clusters;
        EXPECT_DOUBLE_EQ(full->plans[0].time.total,
                         pruned->plans[0].time.total);
      }
    }
}

TEST(Planner, ConstraintsAreHonoured) {
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 256;
  request.globalBatch = 512;
  request.pipelineStages = 8;
  request.zero = ZeroStage::Optimizer;
  request.recompute = RecomputePolicy::Full;
  request.microBatchSize = 1;
  request.topK = 10;
  llvm::Expected<PlanResult> result = planTraining(model, machine, request);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  checkResult(model, machine, request, *result);
  for (const Plan &plan : result->plans) {
    EXPECT_EQ(plan.config.pipelineStages, 8);
    EXPECT_EQ(plan.config.dataParallel, 32);
    EXPECT_EQ(plan.config.microBatchSize, 1);
    EXPECT_EQ(plan.config.numMicroBatches, 16);
    EXPECT_EQ(plan.config.zero, ZeroStage::Optimizer);
    for (RecomputePolicy r : plan.config.recompute)
      EXPECT_EQ(r, RecomputePolicy::Full);
  }
}

TEST(Planner, RejectsMalformedRequests) {
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  auto error = [&](PlanRequest request) {
    llvm::Expected<PlanResult> result = planTraining(model, machine, request);
    if (result)
      return std::string("<success>");
    return llvm::toString(result.takeError());
  };
  PlanRequest ok;
  ok.clusters = 64;
  ok.globalBatch = 64;
  PlanRequest r = ok;
  r.clusters = 0;
  EXPECT_NE(error(r).find("clusters must be positive"), std::string::npos);
  r = ok;
  r.globalBatch = -1;
  EXPECT_NE(error(r).find("global batch must be positive"), std::string::npos);
  r = ok;
  r.clusters = 1 << 20;
  EXPECT_NE(error(r).find("clusters requested"), std::string::npos);
  r = ok;
  r.pipelineStages = 4;
  r.dataParallel = 4;
  EXPECT_NE(error(r).find("is not 64 clusters"), std::string::npos);
  r = ok;
  r.pipelineStages = 64;
  EXPECT_NE(error(r).find("exceeds the 32 layers"), std::string::npos);
  r = ok;
  r.globalBatch = 3; // no dp in {1..64} divides 3 with pp*dp = 64
  r.pipelineStages = 2;
  EXPECT_NE(error(r).find("not a multiple of the data-parallel width"),
            std::string::npos)
      << error(r);
}

TEST(Planner, RATrainPolicyIsNeverSlowerThanGpuStyle) {
  ModelConfig model = loadModel("baichuan2-13b");
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 256;
  request.globalBatch = 512;
  request.topK = 1;
  request.policy = LifecyclePolicy::GpuStyle;
  llvm::Expected<PlanResult> gpu = planTraining(model, machine, request);
  request.policy = LifecyclePolicy::RATrain;
  llvm::Expected<PlanResult> rat = planTraining(model, machine, request);
  ASSERT_TRUE(bool(gpu) && bool(rat));
  EXPECT_LE(rat->plans[0].time.total, gpu->plans[0].time.total);
  // The same config under both policies: ratrain exposes less.
  Plan same = evaluatePlan(model, machine, gpu->plans[0].config,
                           LifecyclePolicy::RATrain);
  EXPECT_LT(same.time.exposedLifecycle, gpu->plans[0].time.exposedLifecycle);
}

/// 8 layers of h = 1024, s = 2048, bf16: small enough for an exhaustive
/// search.
static ModelConfig smallModel() {
  ModelConfig model;
  model.name = "small";
  model.numLayers = 8;
  model.hidden = 1024;
  model.numHeads = 16;
  model.numKVHeads = 16;
  model.ffnHidden = 2816;
  model.vocab = 32000;
  model.seqLen = 2048;
  model.dtype = DType::BF16;
  return model;
}

/// Exhaustive search (every composition of the layers, every per-stage
/// policy vector) on a small model, to check that the split heuristic finds
/// the optimum or comes close.
TEST(Planner, MatchesExhaustiveSearchOnASmallModel) {
  ModelConfig model = smallModel();
  MachineModel machine = loadMT3000();
  const int64_t clusters = 8, globalBatch = 32;
  const RecomputePolicy policies[] = {
      RecomputePolicy::None, RecomputePolicy::Selective, RecomputePolicy::Full};
  // A tier that holds some but not all of the states, so that offload is a
  // real choice.
  machine.offload.bytesPerNode = 4 * 600000000LL;
  for (LifecyclePolicy lifecycle :
       {LifecyclePolicy::RATrain, LifecyclePolicy::GpuStyle})
    for (int64_t cap :
         // The smallest cap leaves the gpu-style runtime (with the
         // lowering's temporaries and ZeRO shards counted) a few plans.
         {int64_t(3500000000), int64_t(1800000000), int64_t(1300000000)}) {
      MemoryOptions options = MemoryOptions::forMachine(machine, lifecycle);
      // The sharding policies the planner searches for this lifecycle.
      PlanRequest lifecycleRequest;
      lifecycleRequest.policy = lifecycle;
      double best = std::numeric_limits<double>::infinity();
      int64_t exhaustive = 0;
      for (int64_t p : {1, 2, 4, 8}) {
        int64_t d = clusters / p, perReplica = globalBatch / d;
        for (int64_t b = 1; b <= perReplica; ++b) {
          if (perReplica % b)
            continue;
          for (ZeroStage zero : {ZeroStage::None, ZeroStage::Optimizer,
                                 ZeroStage::Gradients, ZeroStage::Parameters}) {
            if (d == 1 && zero != ZeroStage::None)
              continue;
            for (const ShardingPolicy &sharding : searchedShardingPolicies(
                     lifecycleRequest, zero, d, options.levelClusters))
              for (OffloadPolicy offload :
                   {OffloadPolicy::None, OffloadPolicy::OptimizerStates,
                    OffloadPolicy::MasterAndOptimizer}) {
                ParallelConfig c = ParallelConfig::balanced(
                    8, p, d, b, perReplica / b, RecomputePolicy::None, zero);
                c.offload = offload;
                c.sharding = sharding;
                // All compositions of 8 layers into p stages.
                std::function<void(int64_t, int64_t)> split =
                    [&](int64_t stage, int64_t next) {
                      if (stage == p - 1) {
                        c.stages[stage] = {next, 8 - next};
                        if (8 - next < 1)
                          return;
                        // All policy vectors.
                        int64_t vectors = 1;
                        for (int64_t i = 0; i < p; ++i)
                          vectors *= 3;
                        for (int64_t v = 0; v < vectors; ++v) {
                          int64_t code = v;
                          bool fits = true;
                          for (int64_t i = 0; i < p && fits; ++i) {
                            c.recompute[i] = policies[code % 3];
                            code /= 3;
                            StageMemory mem =
                                computeStageMemory(model, c, i, options);
                            fits = mem.total() <= cap &&
                                   mem.offloadedBytes <=
                                       machine.offloadBytesPerCluster();
                          }
                          if (!fits)
                            continue;
                          ++exhaustive;
                          Plan plan =
                              evaluatePlan(model, machine, c, lifecycle);
                          best = std::min(best, plan.time.total);
                        }
                        return;
                      }
                      for (int64_t n = 1; next + n <= 8 - (p - 1 - stage);
                           ++n) {
                        c.stages[stage] = {next, n};
                        split(stage + 1, next + n);
                      }
                    };
                split(0, 0);
              }
          }
        }
      }
      PlanRequest request;
      request.clusters = clusters;
      request.globalBatch = globalBatch;
      request.memoryCapBytes = cap;
      request.policy = lifecycle;
      // The exhaustive space has no activation offload (searched below).
      request.activationOffload = PlanRequest::ActivationOffloadMode::None;
      llvm::Expected<PlanResult> result = planTraining(model, machine, request);
      ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
      ASSERT_GT(exhaustive, 0);
      double found = result->plans[0].time.total;
      // Never better than the optimum (it is one of the exhaustive configs),
      // and within 0.5% of it (on this model it finds the optimum exactly).
      EXPECT_GE(found, best * (1 - 1e-12)) << "cap " << cap;
      EXPECT_LE(found, best * 1.005) << "cap " << cap;
      EXPECT_LT(result->candidatesEvaluated, exhaustive);
    }
}

TEST(Planner, ActivationOffloadReplacesRecomputeWhereItIsFaster) {
  ModelConfig model = smallModel();
  MachineModel machine = loadMT3000();
  PlanRequest request;
  request.clusters = 8;
  request.globalBatch = 32;
  request.memoryCapBytes = 1300000000; // tight: the plans recompute
  request.activationOffload = PlanRequest::ActivationOffloadMode::None;
  llvm::Expected<PlanResult> without = planTraining(model, machine, request);
  ASSERT_TRUE(bool(without)) << llvm::toString(without.takeError());
  const Plan &recomputing = without->plans[0];
  ASSERT_TRUE(llvm::any_of(recomputing.config.recompute, [](RecomputePolicy r) {
    return r != RecomputePolicy::None;
  })) << recomputing.config.describe();

  // A large, fast tier: offloading the activations of recomputed layers
  // removes their recompute, and the transfers hide under the computes.
  machine.offload.bytesPerNode = int64_t(1) << 40;
  machine.offload.bandwidth = 1e12;
  request.activationOffload = PlanRequest::ActivationOffloadMode::None;
  llvm::Expected<PlanResult> baseline = planTraining(model, machine, request);
  ASSERT_TRUE(bool(baseline)) << llvm::toString(baseline.takeError());
  request.activationOffload = PlanRequest::ActivationOffloadMode::Search;
  llvm::Expected<PlanResult> searched = planTraining(model, machine, request);
  ASSERT_TRUE(bool(searched)) << llvm::toString(searched.takeError());
  const Plan &best = searched->plans[0];
  EXPECT_TRUE(best.config.offloadsActivations()) << best.config.describe();
  EXPECT_LT(best.time.total, baseline->plans[0].time.total);
  EXPECT_LE(best.peakBytes(), request.memoryCapBytes);
  EXPECT_LE(best.peakOffloadedBytes(), machine.offloadBytesPerCluster());
  // An offloaded layer does no recompute: the slowest stage's recompute
  // shrinks.
  EXPECT_LT(best.time.recompute, baseline->plans[0].time.recompute);

  // A tier too slow to hide anything: never chosen.
  machine.offload.bandwidth = 1e3;
  llvm::Expected<PlanResult> slow = planTraining(model, machine, request);
  ASSERT_TRUE(bool(slow)) << llvm::toString(slow.takeError());
  EXPECT_FALSE(slow->plans[0].config.offloadsActivations())
      << slow->plans[0].config.describe();

  // Counts name the stages of a fixed pipeline depth.
  ASSERT_FALSE(bool(applyActivationOffloadOption("2,2", request)));
  llvm::Expected<PlanResult> free = planTraining(model, machine, request);
  ASSERT_FALSE(bool(free));
  EXPECT_NE(
      llvm::toString(free.takeError()).find("need a fixed pipeline depth"),
      std::string::npos);
  request.pipelineStages = 4;
  llvm::Expected<PlanResult> mismatch = planTraining(model, machine, request);
  ASSERT_FALSE(bool(mismatch));
  EXPECT_NE(llvm::toString(mismatch.takeError())
                .find("gives 2 counts for pp * virtual stages = 4"),
            std::string::npos);
  request.pipelineStages = 2;
  llvm::Expected<PlanResult> counted = planTraining(model, machine, request);
  ASSERT_TRUE(bool(counted)) << llvm::toString(counted.takeError());
  EXPECT_EQ(counted->plans[0].config.activationOffload,
            (std::vector<int64_t>{2, 2}));
  request.pipelineStages.reset();

  // Forced without a tier: an error naming the tier.
  machine.offload = OffloadTierSpec();
  request.activationOffload = PlanRequest::ActivationOffloadMode::All;
  llvm::Expected<PlanResult> none = planTraining(model, machine, request);
  ASSERT_FALSE(bool(none));
  EXPECT_NE(llvm::toString(none.takeError()).find("no offload tier"),
            std::string::npos);
}

TEST(Planner, ActivationOffloadOption) {
  PlanRequest request;
  using Mode = PlanRequest::ActivationOffloadMode;
  ASSERT_FALSE(bool(applyActivationOffloadOption("all", request)));
  EXPECT_EQ(request.activationOffload, Mode::All);
  ASSERT_FALSE(bool(applyActivationOffloadOption("2,0", request)));
  EXPECT_EQ(request.activationOffload, Mode::Counts);
  EXPECT_EQ(request.activationOffloadCounts, (std::vector<int64_t>{2, 0}));
  ASSERT_FALSE(bool(applyActivationOffloadOption("", request)));
  EXPECT_EQ(request.activationOffload, Mode::Search);
  llvm::Error bad = applyActivationOffloadOption("2,x", request);
  ASSERT_TRUE(bool(bad));
  EXPECT_NE(llvm::toString(std::move(bad)).find("act-offload: expected"),
            std::string::npos);
}

TEST(Planner, FormattingHelpers) {
  EXPECT_EQ(formatBytes(23400000000), "23.4 GB");
  EXPECT_EQ(formatBytes(512000000), "512.0 MB");
  EXPECT_EQ(formatBytes(12), "12 B");
  EXPECT_EQ(formatSeconds(1.234), "1.23 s");
  EXPECT_EQ(formatSeconds(0.0456), "45.6 ms");
  StageMemory m;
  m.stage = 0;
  m.activations = 14100000000;
  m.masterWeights = 4200000000;
  m.parameterViews = 2100000000;
  EXPECT_EQ(describeStageMemory(m, 20000000000),
            "stage 0 needs 20.4 GB of 20.0 GB: activations 14.1 GB, master "
            "weights 4.2 GB, parameter views 2.1 GB");
  ParallelConfig c =
      ParallelConfig::balanced(10, 4, 1, 1, 4, RecomputePolicy::Full);
  c.recompute[3] = RecomputePolicy::None;
  EXPECT_EQ(formatLayerSplit(c), "2,3x2,2");
  EXPECT_EQ(formatRecompute(c), "fullx3,nonex1");
}

} // namespace

TEST(Planner, SearchedShardingPolicies) {
  const int64_t levels[] = {4, 4096};
  PlanRequest request;
  // ZeRO-1: flat only; ZeRO-2: flat and three-level's gradients at the chip
  // (zero++'s gradient level 1 holds the whole group: the flat
  // reduce-scatter); ZeRO-3 also the chip weight partition.
  EXPECT_EQ(searchedShardingPolicies(request, ZeroStage::Optimizer, 256, levels)
                .size(),
            1u);
  std::vector<ShardingPolicy> two =
      searchedShardingPolicies(request, ZeroStage::Gradients, 256, levels);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].gradLevel, 0);
  for (const ShardingPolicy &policy : two)
    EXPECT_EQ(policy.weightLevel, -1);
  std::vector<ShardingPolicy> three =
      searchedShardingPolicies(request, ZeroStage::Parameters, 256, levels);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_TRUE(three[0].isDefault());
  ShardingPolicy zeroPP = *shardingPreset("zero++", 2);
  zeroPP.gradLevel = -1;
  EXPECT_EQ(three[1], zeroPP);
  EXPECT_EQ(three[2], *shardingPreset("three-level", 2));
  for (const ShardingPolicy &policy : three)
    EXPECT_EQ(policy.weightWire, WireFormat::Native);
  // Quantized wires only on request: 3 x 2 x 3 at ZeRO-3, 2 x 3 at ZeRO-2.
  request.allowQuantized = true;
  EXPECT_EQ(
      searchedShardingPolicies(request, ZeroStage::Parameters, 256, levels)
          .size(),
      18u);
  EXPECT_EQ(searchedShardingPolicies(request, ZeroStage::Gradients, 256, levels)
                .size(),
            6u);
  // dp = 2 inside a chip of 4: the chip level holds the whole group.
  request.allowQuantized = false;
  for (const ShardingPolicy &policy :
       searchedShardingPolicies(request, ZeroStage::Parameters, 2, levels))
    EXPECT_EQ(policy.weightLevel, -1);
  // gpu-style syncs whole stages at the boundary: flat only.
  request.policy = LifecyclePolicy::GpuStyle;
  EXPECT_EQ(
      searchedShardingPolicies(request, ZeroStage::Parameters, 256, levels),
      std::vector<ShardingPolicy>{ShardingPolicy()});
  request.policy = LifecyclePolicy::RATrain;
  // Fixed: that policy where the stage allows it, nothing otherwise.
  request.sharding = *shardingPreset("three-level", 2);
  EXPECT_EQ(
      searchedShardingPolicies(request, ZeroStage::Parameters, 256, levels),
      std::vector<ShardingPolicy>{*request.sharding});
  EXPECT_TRUE(
      searchedShardingPolicies(request, ZeroStage::Gradients, 256, levels)
          .empty());
}

TEST(Planner, FixedShardingIsReturned) {
  ModelConfig model = loadModel("llama-2-7b");
  MachineModel machine = loadMT3000();
  for (const char *name : {"flat", "zero++", "three-level"}) {
    PlanRequest request;
    request.clusters = 256;
    request.globalBatch = 512;
    request.zero = ZeroStage::Parameters;
    request.sharding = *shardingPreset(name, 2);
    request.sharding->gradWire = WireFormat::Int8;
    request.topK = 3;
    llvm::Expected<PlanResult> result = planTraining(model, machine, request);
    ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
    for (const Plan &plan : result->plans) {
      EXPECT_EQ(plan.config.sharding, *request.sharding) << name;
      // The memory of the plan is that of its policy.
      std::vector<StageMemory> memory =
          computeMemory(model, plan.config, MemoryOptions::forMachine(machine));
      for (size_t i = 0; i < memory.size(); ++i)
        EXPECT_EQ(memory[i].total(), plan.memory[i].total());
    }
  }
  PlanRequest bad;
  bad.clusters = 256;
  bad.globalBatch = 512;
  bad.sharding = ShardingPolicy();
  bad.sharding->weightLevel = 1;
  llvm::Expected<PlanResult> result = planTraining(model, machine, bad);
  ASSERT_FALSE(bool(result));
  EXPECT_NE(llvm::toString(result.takeError())
                .find("weight partition level 1 is not an inner network "
                      "level of machine 'mt3000' (levels 0..0"),
            std::string::npos);
}

TEST(Planner, FreeShardingIsNeverSlowerThanFlat) {
  MachineModel machine = loadMT3000();
  for (const char *name : {"llama-2-7b", "qwen2.5-32b"})
    for (int64_t clusters : {64, 256})
      for (bool quantized : {false, true}) {
        ModelConfig model = loadModel(name);
        PlanRequest request;
        request.clusters = clusters;
        request.globalBatch = 512;
        request.topK = 1;
        request.allowQuantized = quantized;
        llvm::Expected<PlanResult> free = planTraining(model, machine, request);
        request.sharding = ShardingPolicy();
        llvm::Expected<PlanResult> flat = planTraining(model, machine, request);
        ASSERT_TRUE(bool(free)) << llvm::toString(free.takeError());
        ASSERT_TRUE(bool(flat)) << llvm::toString(flat.takeError());
        EXPECT_LE(free->plans[0].time.total, flat->plans[0].time.total)
            << name << " @" << clusters;
        EXPECT_GE(free->combinationsVisited, flat->combinationsVisited);
        if (!quantized)
          for (const Plan &plan : free->plans) {
            EXPECT_EQ(plan.config.sharding.weightWire, WireFormat::Native);
            EXPECT_EQ(plan.config.sharding.gradWire, WireFormat::Native);
          }
      }
}
