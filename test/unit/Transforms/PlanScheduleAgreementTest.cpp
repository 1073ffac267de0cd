//===- PlanScheduleAgreementTest.cpp - Planner and schedule agree ---------===//
//
// Whatever the planner accepts, the schedule pipeline must schedule, assign
// under the cap and verify, and each stage's assigned peak
// (`ratrain.peak_bytes`) must stay at or below the planner's prediction for
// that stage (computeStageMemory under the plan's lifecycle policy), within
// kToleranceBytesPerLayer per owned model layer: the memory model shards a
// stage's parameters as one block (ceil(P / d)) while the buffers shard
// each layer (sum of ceil(P_k / d)), which rounds up by less than 16 bytes
// per layer (2 B view rounding is exact; master 4, Adam 8, gradient shard 2
// bytes per rounded-up parameter, plus the streamed states' chunk shares).
//
// Plans come from the planner itself: the --ratrain-plan pass (which calls
// planTraining) on random small models and machines, with and without a
// forced offload policy or ZeRO stage, and on the 12 paper cases (4 models x
// {64, 256, 1024} clusters of examples/machines/mt3000.yaml, global batch
// 1024).
//
// ZeRO-2 counts what the schedule keeps live: with m > 1 every owned
// layer's full gradient until its reduce-scatter, with m = 1 the shards plus
// the two largest items' full gradients (the reduce-scatter of one layer
// overlaps the next layer's backward). Every plan must agree.
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainDialect.h"
#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/BufferSizes.h"
#include "ratrain/Analysis/ModelAndPlan.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/MemoryModel.h"
#include "ratrain/Planner/Planner.h"
#include "ratrain/Target/ImportHFConfig.h"
#include "ratrain/Transforms/PassUtils.h"
#include "ratrain/Transforms/Passes.h"
#include "ratrain/Transforms/SchedulePipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace mlir;
using namespace ratrain;

namespace {

/// Allowed excess of an assigned stage peak over the planner's prediction,
/// per model layer the stage owns (see the file comment).
constexpr int64_t kToleranceBytesPerLayer = 16;

/// What one plan-and-schedule run found.
struct Outcome {
  bool planned = false;   ///< the planner found a plan
  bool scheduled = false; ///< the pipeline succeeded
  std::string plan;       ///< the plan, described
  std::string diagnostics;
  /// Per stage: (assigned peak, planner's prediction).
  SmallVector<std::pair<int64_t, int64_t>> stages;
  /// Stages over the prediction (beyond the tolerance), described.
  std::string disagreements;
  /// Per stage: the largest sum of reloaded (streamed) state bytes live at
  /// one position, and the planner's offload window.
  SmallVector<std::pair<int64_t, int64_t>> windows;
  /// Per stage: the rounding tolerance.
  SmallVector<int64_t> tolerances;
};

class PlanScheduleAgreementTest : public ::testing::Test {
protected:
  PlanScheduleAgreementTest() { context.getOrLoadDialect<RATrainDialect>(); }
  void TearDown() override {
    for (const std::string &path : temporaries)
      llvm::sys::fs::remove(path);
  }

  /// Writes `yaml` to a temporary machine file.
  std::string writeMachine(const std::string &yaml) {
    int fd;
    llvm::SmallString<128> path;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("machine", "yaml", fd, path));
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << yaml;
    temporaries.push_back(path.str().str());
    return path.str().str();
  }

  /// Plans `config` with the --ratrain-plan pass, then runs the schedule
  /// pipeline under the same policy and compares each stage.
  Outcome run(const ModelConfig &config, const std::string &machinePath,
              int64_t clusters, int64_t globalBatch, const std::string &policy,
              const std::string &offload = "", int64_t zero = -1) {
    Outcome outcome;
    OwningOpRef<ModuleOp> module =
        buildModelModule(config, &context, machinePath);
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      outcome.diagnostics += diag.str() + "\n";
      return success();
    });
    {
      PassManager pm(&context);
      RATrainPlanOptions options;
      options.clusters = clusters;
      options.globalBatch = globalBatch;
      options.policy = policy;
      options.offload = offload;
      options.zero = zero;
      pm.addPass(createRATrainPlan(options));
      if (failed(pm.run(*module)))
        return outcome; // the planner has no plan: nothing to agree on
    }
    outcome.planned = true;
    ModelOp model = *module->getOps<ModelOp>().begin();
    PlanAttr plan = *model.getPlan();
    ParallelConfig parallel = toParallelConfig(plan);
    outcome.plan = parallel.describe();

    PassManager pm(&context);
    SchedulePipelineOptions options;
    options.policy = policy;
    buildSchedulePipeline(pm, options);
    if (failed(pm.run(*module)))
      return outcome;
    outcome.scheduled = true;

    llvm::Expected<MachineModel> machine = loadMachineModel(machinePath);
    EXPECT_TRUE(bool(machine));
    if (!machine) {
      llvm::consumeError(machine.takeError());
      return outcome;
    }
    MemoryOptions memoryOptions =
        MemoryOptions::forMachine(*machine, *parseLifecyclePolicy(policy));
    std::vector<StageMemory> predicted =
        computeMemory(getModelConfig(model), parallel, memoryOptions);
    BufferSizes sizes(model, plan, MemoryOptions::forMachine(*machine));
    PipelineOp pipeline = *module->getOps<PipelineOp>().begin();
    for (StageOp stage : pipeline.getStages()) {
      int64_t index = stage.getStage();
      int64_t assigned =
          RATrainDialect::PeakBytesAttrHelper(stage->getContext())
              .getAttr(stage)
              .getInt();
      int64_t expected = predicted[index].total();
      outcome.stages.push_back({assigned, expected});
      outcome.tolerances.push_back(kToleranceBytesPerLayer *
                                   stage.getNumLayers());
      int64_t tolerance = kToleranceBytesPerLayer * stage.getNumLayers();
      std::string excess =
          llvm::formatv("stage {0}: assigned {1} > planner {2} (+{3}); ", index,
                        assigned, expected, assigned - expected);
      if (assigned > expected + tolerance)
        outcome.disagreements += excess;

      // The streamed states live at once never exceed the planner's window
      // (reloaded activations count with the activations).
      StageBufferAnalysis buffers(stage);
      buffers.size(sizes);
      int64_t window = 0;
      for (int64_t position = -1; position <= buffers.getStepEnd();
           ++position) {
        int64_t live = 0;
        for (const StageBuffer &buffer : buffers.getBuffers())
          if (buffer.kind == BufferKind::Reloaded &&
              !isa<ActivationType>(buffer.type) && buffer.liveAt(position))
            live += buffer.bytes;
        window = std::max(window, live);
      }
      outcome.windows.push_back({window, predicted[index].offloadWindow});
    }
    return outcome;
  }

  /// Checks an outcome: planned plans schedule and agree.
  void check(const Outcome &outcome, const std::string &where) {
    if (!outcome.planned)
      return;
    ++planned;
    EXPECT_TRUE(outcome.scheduled) << where << " " << outcome.plan << ":\n"
                                   << outcome.diagnostics;
    EXPECT_TRUE(outcome.disagreements.empty())
        << where << " " << outcome.plan << ": " << outcome.disagreements;
    for (auto [index, window] : llvm::enumerate(outcome.windows))
      EXPECT_LE(window.first, window.second + outcome.tolerances[index])
          << where << " " << outcome.plan << " stage " << index
          << ": streamed states exceed the offload window";
    if (outcome.scheduled)
      ++agreed;
  }

  static std::string firstLine(const std::string &text) {
    return text.substr(0, text.find('\n'));
  }

  MLIRContext context;
  std::vector<std::string> temporaries;
  int planned = 0, agreed = 0;
};

/// A machine with `ddrBytes` per cluster and optionally an offload tier.
std::string machineYaml(int64_t nodes, int64_t clustersPerNode,
                        int64_t ddrBytes, bool fused, int64_t offloadBytes,
                        int64_t chunkBytes) {
  std::string yaml =
      llvm::formatv(R"(name: random
nodes: {0}
clusters_per_node: {1}
cluster:
  cores: 4
  ddr_bytes: {2}
  gsm_bytes: 6291456
  am_bytes_per_core: 786432
  ddr_bandwidth: 50e9
  dma_bandwidth: 50e9
  dma_channels: 4
  peak_flops_f16: 10e12
  peak_flops_f32: 5e12
  fused_attention: {3}
  efficiency:
    gemm: 0.7
    attention_forward: 0.6
    attention_backward: 0.5
    memory_bound: 0.8
network:
  intra_node:
    bandwidth: 50e9
    latency: 2e-6
  inter_node:
    bandwidth: 2e9
    latency: 5e-6
  collective: hierarchical
)",
                    nodes, clustersPerNode, ddrBytes, fused ? "true" : "false")
          .str();
  if (offloadBytes > 0)
    yaml += llvm::formatv(R"(offload:
  kind: host
  bytes_per_node: {0}
  bandwidth: 8e9
  latency: 10e-6
  chunk_bytes: {1}
)",
                          offloadBytes, chunkBytes)
                .str();
  return yaml;
}

TEST_F(PlanScheduleAgreementTest, RandomPlannerPlansScheduleUnderTheirPeak) {
  std::mt19937_64 rng(20261122);
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  constexpr int kScenarios = 120;
  for (int i = 0; i < kScenarios; ++i) {
    ModelConfig config;
    config.name = "random";
    config.family = ModelFamily::Llama;
    config.numLayers = uniform(2, 12);
    config.numHeads = 4;
    config.hidden = 64 * uniform(1, 3);
    config.numKVHeads = uniform(0, 1) ? 4 : 2;
    config.ffnHidden = 172 * uniform(1, 2);
    config.vocab = 128 * uniform(1, 4);
    config.seqLen = 32 * uniform(1, 4);
    config.maxPositions = 256;
    const DType dtypes[] = {DType::BF16, DType::F16, DType::F32};
    config.dtype = dtypes[uniform(0, 2)];
    config.tieEmbeddings = uniform(0, 3) == 0;

    int64_t clustersPerNode = uniform(1, 4);
    int64_t nodes = uniform(1, 8);
    int64_t clusters = clustersPerNode * nodes;
    // DDR from a quarter to four times the replicated model states spread
    // over the clusters: from needing deep pipelines, ZeRO, recompute or
    // offload to fitting easily.
    int64_t states = 16 * config.totalParams();
    int64_t ddr = std::max<int64_t>(
        states / clusters * uniform(25, 400) / 100 + (4 << 20), 1 << 20);
    bool tier = uniform(0, 1);
    int64_t chunk = uniform(0, 1) ? 0 : 64 * 1024 * uniform(1, 8);
    std::string machine =
        writeMachine(machineYaml(nodes, clustersPerNode, ddr, uniform(0, 1),
                                 tier ? 64 * states : 0, chunk));
    int64_t globalBatch = clusters * (int64_t(1) << uniform(0, 3));
    std::string policy = uniform(0, 2) ? "ratrain" : "gpu-style";
    const char *offloads[] = {"", "", "none", "optimizer", "master"};
    std::string offload = tier ? offloads[uniform(0, 4)] : "";
    int64_t zero = uniform(0, 3) == 0 ? uniform(0, 3) : -1;

    std::string where = llvm::formatv(
        "scenario {0} (decoders={1} h={2} dtype={3} clusters={4} ddr={5} "
        "policy={6} offload={7} zero={8} chunk={9})",
        i, config.numLayers, config.hidden, stringifyDType(config.dtype),
        clusters, ddr, policy, offload.empty() ? "search" : offload, zero,
        chunk);
    check(run(config, machine, clusters, globalBatch, policy, offload, zero),
          where);
    if (HasFailure())
      return;
  }
  // The draws must exercise the planner: most requests have a plan.
  EXPECT_GE(planned, kScenarios / 2);
  EXPECT_GT(agreed, 0);
  std::cout << planned << " of " << kScenarios << " requests planned, "
            << agreed << " scheduled and agreed\n";
}

/// Offload plans: every policy forced on a machine with a tier, so that
/// the streaming window is exercised on every draw.
TEST_F(PlanScheduleAgreementTest, OffloadPlansStreamThroughTheWindow) {
  std::mt19937_64 rng(7);
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  int offloaded = 0;
  for (int i = 0; i < 40; ++i) {
    ModelConfig config;
    config.name = "offload";
    config.family = ModelFamily::Llama;
    config.numLayers = uniform(2, 10);
    config.numHeads = 4;
    config.hidden = 128;
    config.numKVHeads = 4;
    config.ffnHidden = 344;
    config.vocab = 256;
    config.seqLen = 64;
    config.maxPositions = 128;
    config.dtype = uniform(0, 3) ? DType::BF16 : DType::F32;
    int64_t clusters = 4 * uniform(1, 4);
    int64_t states = 16 * config.totalParams();
    int64_t ddr = states / clusters + (8 << 20);
    int64_t chunk = uniform(0, 1) ? 0 : 128 * 1024;
    std::string machine = writeMachine(
        machineYaml(clusters / 4, 4, ddr, true, 64 * states, chunk));
    std::string offload = uniform(0, 1) ? "optimizer" : "master";
    std::string policy = uniform(0, 1) ? "ratrain" : "gpu-style";
    Outcome outcome =
        run(config, machine, clusters, clusters * 2, policy, offload);
    std::string where =
        llvm::formatv("offload scenario {0} ({1}, {2}, chunk {3})", i, offload,
                      policy, chunk);
    ASSERT_TRUE(outcome.planned) << where << "\n" << outcome.diagnostics;
    check(outcome, where);
    if (outcome.scheduled)
      for (auto [index, window] : llvm::enumerate(outcome.windows))
        if (window.first > 0)
          ++offloaded;
    if (HasFailure())
      return;
  }
  EXPECT_GT(offloaded, 0);
}

/// The 12 paper cases on MT-3000, both policies.
TEST_F(PlanScheduleAgreementTest, PaperCasesOnMT3000) {
  const char *models[] = {"llama-2-7b", "baichuan2-13b", "qwen2.5-32b",
                          "llama-2-70b"};
  std::string machine =
      std::string(RATRAIN_SOURCE_DIR) + "/examples/machines/mt3000.yaml";
  for (const char *name : models) {
    llvm::Expected<ModelConfig> config = loadHFConfig(
        std::string(RATRAIN_SOURCE_DIR) + "/examples/models/" + name + ".json");
    ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
    for (int64_t clusters : {64, 256, 1024}) {
      std::string where = llvm::formatv("{0} @ {1} clusters", name, clusters);
      Outcome outcome = run(*config, machine, clusters, 1024, "ratrain");
      EXPECT_TRUE(outcome.planned) << where << "\n" << outcome.diagnostics;
      check(outcome, where);
      int64_t assigned = 0, predicted = 0;
      for (auto [a, p] : outcome.stages) {
        assigned = std::max(assigned, a);
        predicted = std::max(predicted, p);
      }
      std::cout << where << ": " << outcome.plan << ": planner peak "
                << predicted << ", assigned peak " << assigned << " "
                << (outcome.scheduled && outcome.disagreements.empty() ? "agree"
                                                                       : "FAIL")
                << "\n";
    }
  }
}

} // namespace
