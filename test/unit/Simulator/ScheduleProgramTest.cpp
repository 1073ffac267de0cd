//===- ScheduleProgramTest.cpp - Programs of any pipeline schedule --------===//
//
// buildSyntheticSchedule on the generated schedules: the 1F1B action list
// gives the step of the hand-written 1F1B generator; a ZB-H1 plan simulates
// faster than its 1F1B plan; every schedule kind's plan program runs, its
// peak DDR stays within the memory model's, and its step is close to the
// planner's prediction.
//
//===----------------------------------------------------------------------===//

#include "TestMachine.h"

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/Simulator.h"
#include "ratrain/Simulator/SyntheticSchedule.h"

#include "gtest/gtest.h"

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;
using schedule::ScheduleKind;

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

TEST(SyntheticSchedule, OneFOneBActionListMatchesThe1F1BGenerator) {
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  ParallelConfig config = ParallelConfig::balanced(model.numLayers, 4, 8, 1, 8,
                                                   RecomputePolicy::Selective,
                                                   ZeroStage::Optimizer);
  for (LifecyclePolicy policy :
       {LifecyclePolicy::RATrain, LifecyclePolicy::GpuStyle}) {
    PlanProgramOptions options;
    options.policy = policy;
    Synthetic1F1BConfig synthetic =
        expectOk(planToSyntheticConfig(model, machine, config, options));
    schedule::PipelineSchedule oneF1B =
        expectOk(schedule::generateSchedule(ScheduleKind::OneFOneB, 4, 1, 8));
    SimReport direct =
        expectOk(simulate(buildSynthetic1F1B(synthetic), machine));
    SimReport generic =
        expectOk(simulate(buildSyntheticSchedule(synthetic, oneF1B), machine));
    EXPECT_NEAR(generic.stepTime, direct.stepTime, 1e-9 * direct.stepTime)
        << stringifyLifecyclePolicy(policy).str();
    for (size_t s = 0; s < direct.stageReports.size(); ++s)
      EXPECT_EQ(generic.stageReports[s].peakDdrBytes,
                direct.stageReports[s].peakDdrBytes);
  }
}

TEST(SyntheticSchedule, ZBH1SimulatesFasterThan1F1B) {
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  ParallelConfig config = ParallelConfig::balanced(model.numLayers, 8, 4, 1, 16,
                                                   RecomputePolicy::Selective);
  SimReport one = expectOk(simulate(
      expectOk(buildProgramFromPlan(model, machine, config)), machine));
  config.schedule = ScheduleKind::ZBH1;
  SimReport zb = expectOk(simulate(
      expectOk(buildProgramFromPlan(model, machine, config)), machine));
  EXPECT_LT(zb.stepTime, one.stepTime);
}

class EveryKind
    : public ::testing::TestWithParam<std::pair<ScheduleKind, int>> {};

TEST_P(EveryKind, PlanProgramRunsWithinTheMemoryModel) {
  MachineModel machine = loadMt3000();
  ModelConfig model = loadModel("llama-2-7b.json");
  auto [kind, v] = GetParam();
  ParallelConfig config = ParallelConfig::balanced(model.numLayers, 4 * v, 8, 1,
                                                   8, RecomputePolicy::Full);
  config.pipelineStages = 4;
  config.schedule = kind;
  config.virtualStages = v;
  ASSERT_FALSE(bool(config.validate(model)));
  SimProgram program = expectOk(buildProgramFromPlan(model, machine, config));
  ASSERT_EQ(program.stages.size(), 4u);
  SimReport report = expectOk(simulate(program, machine));
  std::vector<StageMemory> memory =
      computeMemory(model, config, MemoryOptions::forMachine(machine));
  for (size_t r = 0; r < memory.size(); ++r)
    EXPECT_LE(report.stageReports[r].peakDdrBytes, memory[r].total())
        << "rank " << r;
  StepTime predicted = predictStepTime(CostModel(model, machine), config,
                                       LifecyclePolicy::RATrain);
  EXPECT_NEAR(report.stepTime, predicted.total, 0.05 * predicted.total);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, EveryKind,
    ::testing::Values(std::make_pair(ScheduleKind::ZBH1, 1),
                      std::make_pair(ScheduleKind::ZBV, 2),
                      std::make_pair(ScheduleKind::Interleaved1F1B, 2),
                      std::make_pair(ScheduleKind::Interleaved1F1B, 4)),
    [](const auto &info) {
      std::string name =
          schedule::stringifyScheduleKind(info.param.first).str() + "_v" +
          std::to_string(info.param.second);
      for (char &ch : name)
        if (!isalnum(static_cast<unsigned char>(ch)))
          ch = '_';
      return name;
    });

} // namespace
