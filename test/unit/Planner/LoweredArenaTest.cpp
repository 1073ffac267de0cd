//===- LoweredArenaTest.cpp - Planned stages fit once lowered -------------===//
//
// Every plan the planner accepts must lower, and each lowered stage's DDR
// arena (`mt3k.program ... ddr_arena N`: the assigned arena plus the
// lowering's scratch area) must be at most the planner's prediction for that
// stage (computeStageMemory under the plan's lifecycle policy, which counts
// the lowering's layer temporaries, outgoing messages and ZeRO shards).
//
// Plans come from the --ratrain-plan pass on examples/machines/mt3000.yaml
// with 1024 clusters and global batch 1024: LLaMA-2-7B with pp chosen by the
// planner and forced to 2 and 4, Qwen2.5-32B (a SwiGLU FFN 5.4x wider than
// h with 8 K/V heads: the lowering's activation layout is larger than
// 34sbh) and LLaMA-2-70B, under both lifecycle policies where the plan is
// lowerable (optimizer-state offload plans are not lowered yet: LLaMA-2-70B
// under gpu-style is planned with offload=none).
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KOps.h"
#include "RATrain/RATrainDialect.h"
#include "RATrain/RATrainOps.h"
#include "ratrain/Conversion/Passes.h"
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

#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace mlir;
using namespace ratrain;

namespace {

std::string examplePath(const std::string &relative) {
  return std::string(RATRAIN_EXAMPLES_DIR) + "/" + relative;
}

/// One case: a model on mt3000 @ 1024 clusters, global batch 1024.
struct Case {
  const char *model;
  int64_t pp; ///< -1: the planner chooses
  const char *policy;
  const char *offload = ""; ///< forced offload policy ("": the planner's)
};

class LoweredArenaTest : public ::testing::TestWithParam<Case> {
protected:
  LoweredArenaTest() {
    context.getOrLoadDialect<RATrainDialect>();
    context.getOrLoadDialect<mt3k::MT3KDialect>();
  }
  MLIRContext context;
};

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string name =
      llvm::formatv("{0}_pp{1}_{2}", info.param.model,
                    info.param.pp < 0 ? std::string("auto")
                                      : std::to_string(info.param.pp),
                    info.param.policy)
          .str() +
      (*info.param.offload ? std::string("_offload_") + info.param.offload
                           : std::string());
  for (char &c : name)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

TEST_P(LoweredArenaTest, LoweredArenaFitsPlannedPeak) {
  const Case &c = GetParam();
  std::string machinePath = examplePath("machines/mt3000.yaml");
  llvm::Expected<ModelConfig> config =
      loadHFConfig(examplePath(std::string("models/") + c.model + ".json"));
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  llvm::Expected<MachineModel> machine = loadMachineModel(machinePath);
  ASSERT_TRUE(bool(machine)) << llvm::toString(machine.takeError());

  OwningOpRef<ModuleOp> module =
      buildModelModule(*config, &context, machinePath);
  ASSERT_TRUE(module);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });

  PassManager pm(&context);
  RATrainPlanOptions planOptions;
  planOptions.clusters = 1024;
  planOptions.globalBatch = 1024;
  planOptions.policy = c.policy;
  if (c.pp > 0)
    planOptions.pipelineDepth = c.pp;
  planOptions.offload = c.offload;
  pm.addPass(createRATrainPlan(planOptions));
  SchedulePipelineOptions scheduleOptions;
  scheduleOptions.policy = c.policy;
  buildSchedulePipeline(pm, scheduleOptions);
  ASSERT_TRUE(succeeded(pm.run(*module))) << diagnostics;

  // The plan, read before the lowering replaces the ratrain ops.
  ModelOp model = *module->getOps<ModelOp>().begin();
  ParallelConfig parallel = toParallelConfig(*model.getPlan());
  MemoryOptions memoryOptions =
      MemoryOptions::forMachine(*machine, *parseLifecyclePolicy(c.policy));
  std::vector<StageMemory> predicted =
      computeMemory(*config, parallel, memoryOptions);

  PassManager lower(&context);
  lower.addPass(createRATrainLowerToMT3K());
  ASSERT_TRUE(succeeded(lower.run(*module)))
      << "the planner's plan " << parallel.describe() << " does not lower:\n"
      << diagnostics;

  int64_t programs = 0;
  for (auto program : module->getOps<mt3k::ProgramOp>()) {
    ++programs;
    int64_t stage = program.getStage();
    ASSERT_LT(stage, int64_t(predicted.size()));
    ASSERT_TRUE(program.getDdrArena().has_value());
    int64_t arena = int64_t(*program.getDdrArena());
    int64_t planned = predicted[stage].total();
    EXPECT_LE(arena, planned)
        << parallel.describe() << " stage " << stage << ": lowered arena "
        << arena << " > planned " << planned << " (+" << arena - planned << ")";
    std::printf("  stage %2lld: lowered %12lld planned %12lld ratio %.4f\n",
                static_cast<long long>(stage), static_cast<long long>(arena),
                static_cast<long long>(planned),
                double(arena) / double(planned));
  }
  EXPECT_EQ(programs, parallel.pipelineStages);
}

const Case kCases[] = {
    {"llama-2-7b", -1, "ratrain"},
    {"llama-2-7b", 2, "ratrain"},
    {"llama-2-7b", 4, "ratrain"},
    {"llama-2-7b", -1, "gpu-style"},
    {"llama-2-7b", 4, "gpu-style"},
    {"qwen2.5-32b", -1, "ratrain"},
    {"qwen2.5-32b", -1, "gpu-style"},
    {"llama-2-70b", -1, "ratrain"},
    // The planner's gpu-style plan offloads master weights (not lowered).
    {"llama-2-70b", -1, "gpu-style", "none"},
};

INSTANTIATE_TEST_SUITE_P(MT3000At1024, LoweredArenaTest,
                         ::testing::ValuesIn(kCases), caseName);

} // namespace
