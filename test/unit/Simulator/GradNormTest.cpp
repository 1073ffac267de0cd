//===- GradNormTest.cpp - The global gradient norm of a clipped step ------===//
//
// appendGlobalNorm (lib/Simulator/GradNorm.cpp) makes every stage wait for
// the slowest one's gradients before its updates, through a binomial tree of
// messages; a plan that clips is priced by the planner and simulated with it.
//
//===----------------------------------------------------------------------===//

#include "TestMachine.h"

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/CostModel.h"
#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/Simulator.h"
#include "ratrain/Simulator/Synthetic1F1B.h"

#include "gtest/gtest.h"

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

/// Stage s computes s + 1 seconds, then (with `clip`) joins the global norm,
/// then updates for 1 s; messages take exactly 1 s (latency only).
SimProgram stagesWithNorm(int64_t stages, bool clip) {
  SimProgram program;
  for (int64_t s = 0; s < stages; ++s) {
    program.stages.emplace_back("stage " + std::to_string(s));
    StageProgram &stage = program.stages.back();
    stage.addCompute(ComputeKind::Backward, double(s + 1), 0, "backward");
    if (clip)
      appendGlobalNorm(stage, s, stages, CollectiveSpec(), 0,
                       LinkClass::IntraNode);
    stage.addCompute(ComputeKind::Update, 1, 0, "update");
  }
  return program;
}

MachineModel oneSecondMessages() {
  MachineModel machine = makeTestMachine();
  machine.network.intraNode = {1e15, 1.0};
  return machine;
}

TEST(GradNorm, EveryStageWaitsForTheSlowestThroughTheTree) {
  SimOptions options;
  options.iterations = 1;
  // Without the norm the slowest stage (3 s) ends the step after its update.
  SimReport plain = expectOk(
      simulate(stagesWithNorm(3, false), oneSecondMessages(), options));
  EXPECT_NEAR(plain.stepTime, 4.0, 1e-9);
  // 3 stages: stage 1 sends its sum to stage 0 at 2 (arrives 3), stage 2 at
  // 3 (arrives 4); stage 0 has both at 4 and broadcasts (arrives 5); stages
  // 1 and 2 update [5, 6].
  SimReport clipped =
      expectOk(simulate(stagesWithNorm(3, true), oneSecondMessages(), options));
  EXPECT_NEAR(clipped.stepTime, 6.0, 1e-9);
  // 5 stages: 3 -> 2 (arrives 5), 2 -> 0 and 4 -> 0 (arrive 6); stage 0
  // broadcasts to 4, 2 and 1 (arrive 7), 2 forwards to 3 (arrives 8), which
  // updates [8, 9]: rounds of the tree (its depth is log2 of the stages),
  // not one message per stage.
  SimReport five =
      expectOk(simulate(stagesWithNorm(5, true), oneSecondMessages(), options));
  EXPECT_NEAR(five.stepTime, 9.0, 1e-9);
}

TEST(GradNorm, ClippingIsPricedByThePlannerAndTheSimulator) {
  MachineModel machine =
      expectOk(loadMachineModel(RATRAIN_EXAMPLES_DIR "/machines/mt3000.yaml"));
  HFImportOptions importOptions;
  importOptions.seqLen = 4096;
  ModelConfig model = expectOk(loadHFConfig(
      RATRAIN_EXAMPLES_DIR "/models/llama-2-7b.json", importOptions));
  ParallelConfig config = ParallelConfig::balanced(
      model.numLayers, 4, 8, 1, 8, RecomputePolicy::Full, ZeroStage::Optimizer);
  ParallelConfig clipped = config;
  clipped.maxGradNorm = 1.0;
  CostModel costs(model, machine);
  for (LifecyclePolicy policy :
       {LifecyclePolicy::RATrain, LifecyclePolicy::GpuStyle}) {
    double before = predictStepTime(costs, config, policy).total;
    double after = predictStepTime(costs, clipped, policy).total;
    EXPECT_GT(after, before) << stringifyLifecyclePolicy(policy).str();
    // The barrier, not a second step: well under 1% here.
    EXPECT_LT(after, before * 1.01) << stringifyLifecyclePolicy(policy).str();

    PlanProgramOptions options;
    options.policy = policy;
    SimOptions sim;
    sim.iterations = 3;
    SimReport plain = expectOk(simulate(
        expectOk(buildProgramFromPlan(model, machine, config, options)),
        machine, sim));
    SimReport norm = expectOk(simulate(
        expectOk(buildProgramFromPlan(model, machine, clipped, options)),
        machine, sim));
    EXPECT_GT(norm.stepTime, plain.stepTime)
        << stringifyLifecyclePolicy(policy).str();
    EXPECT_LT(norm.stepTime, plain.stepTime * 1.01)
        << stringifyLifecyclePolicy(policy).str();
  }
}

} // namespace
