//===- SimulatorBench.cpp - Simulating LLaMA-2-70B on 1024 clusters -------===//
//
// Builds the 1F1B program of LLaMA-2-70B on 1024 MT-3000 clusters
// (examples/models/llama-2-70b.json, examples/machines/mt3000.yaml) for
// several pipeline depths and micro-batch counts, with costs from the cost
// model, and simulates three iterations. The acceptance target is < 10 s for
// building plus simulating; each run reports `of_budget`, its time as a
// fraction of those 10 s, and the throughput in simulated tasks per second
// against the smallest configuration measured in the same run.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/MemoryModel.h"
#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/Simulator.h"

#include "benchmark/benchmark.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>

using namespace ratrain;
using namespace ratrain::sim;

namespace {

constexpr double kBudgetSeconds = 10.0;

const ModelConfig &llama70b() {
  static ModelConfig model = [] {
    HFImportOptions options;
    options.seqLen = 4096;
    llvm::Expected<ModelConfig> loaded = loadHFConfig(
        RATRAIN_SOURCE_DIR "/examples/models/llama-2-70b.json", options);
    if (!loaded) {
      llvm::errs() << "error: " << llvm::toString(loaded.takeError()) << "\n";
      std::exit(1);
    }
    return *loaded;
  }();
  return model;
}

const MachineModel &mt3000() {
  static MachineModel machine = [] {
    llvm::Expected<MachineModel> loaded =
        loadMachineModel(RATRAIN_SOURCE_DIR "/examples/machines/mt3000.yaml");
    if (!loaded) {
      llvm::errs() << "error: " << llvm::toString(loaded.takeError()) << "\n";
      std::exit(1);
    }
    return *loaded;
  }();
  return machine;
}

SimProgram buildProgram(int64_t stages, int64_t microBatches,
                        LifecyclePolicy policy) {
  ParallelConfig config = ParallelConfig::balanced(
      llama70b().numLayers, stages, 1024 / stages, /*microBatchSize=*/1,
      microBatches, RecomputePolicy::Full, ZeroStage::Optimizer);
  PlanProgramOptions options;
  options.policy = policy;
  llvm::Expected<SimProgram> program =
      buildProgramFromPlan(llama70b(), mt3000(), config, options);
  if (!program) {
    llvm::errs() << "error: " << llvm::toString(program.takeError()) << "\n";
    std::exit(1);
  }
  return std::move(*program);
}

/// Tasks per second of the smallest configuration, measured first.
double baselineTasksPerSecond = 0;

void BM_Llama70B1024(benchmark::State &state) {
  const int64_t stages = state.range(0), microBatches = state.range(1);
  const LifecyclePolicy policy =
      state.range(2) ? LifecyclePolicy::RATrain : LifecyclePolicy::GpuStyle;
  SimReport report;
  size_t tasks = 0;
  double seconds = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    SimProgram program = buildProgram(stages, microBatches, policy);
    tasks = program.totalTasks();
    llvm::Expected<SimReport> result = simulate(program, mt3000());
    if (!result) {
      state.SkipWithError(llvm::toString(result.takeError()).c_str());
      return;
    }
    report = std::move(*result);
    seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }
  double tasksPerSecond = tasks * report.iterations / seconds;
  if (baselineTasksPerSecond == 0)
    baselineTasksPerSecond = tasksPerSecond;
  state.counters["tasks_per_iter"] = static_cast<double>(tasks);
  state.counters["events"] = static_cast<double>(report.events);
  state.counters["of_budget"] = seconds / kBudgetSeconds;
  state.counters["tasks_per_s_vs_first"] =
      tasksPerSecond / baselineTasksPerSecond;
  state.counters["sim_step_s"] = report.stepTime;
  state.counters["sim_tokens_per_s"] = report.tokensPerSecond;
  state.counters["sim_mfu_pct"] = report.mfu * 100;
}

} // namespace

// {stages, micro-batches, policy (0 gpu-style, 1 ratrain)}; dp = 1024 / pp.
BENCHMARK(BM_Llama70B1024)
    ->ArgNames({"pp", "m", "ratrain"})
    ->Args({16, 64, 1})
    ->Args({16, 64, 0})
    ->Args({32, 256, 1})
    ->Args({80, 512, 1})
    ->Args({80, 512, 0})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

BENCHMARK_MAIN();
