//===- ScheduleBench.cpp - Speed of plan -> expand -> schedule -> assign --===//
//
// Runs the whole compiler front half for LLaMA-2-7B on 1024 MT-3000
// clusters (examples/machines/mt3000.yaml, global batch 1024 sequences):
// --ratrain-plan, --ratrain-expand-1f1b, --ratrain-schedule-lifecycle,
// --ratrain-assign-buffers, --ratrain-verify-schedule, once per lifecycle
// policy (the planner's free choice, and a fixed 8-stage pipeline), and
// checks the target of issue #4 (< 2 s for the whole pipeline).
// The baseline, measured in the same run, is the planner pass alone: the
// ratios say what the four schedule passes add to planning. Also prints
// the size of the produced schedule (stages, ops by kind, buffers) and the
// assigned peak DDR against the planner's prediction.
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainDialect.h"
#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"
#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/Planner.h"
#include "ratrain/Target/ImportHFConfig.h"
#include "ratrain/Transforms/PassUtils.h"
#include "ratrain/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <map>

using namespace mlir;
using namespace ratrain;

namespace {

constexpr int64_t kClusters = 1024;
constexpr int64_t kGlobalBatch = 1024;

const std::string &machinePath() {
  static std::string path =
      std::string(RATRAIN_EXAMPLES_DIR) + "/machines/mt3000.yaml";
  return path;
}

const ModelConfig &llama7b() {
  static ModelConfig model = [] {
    llvm::Expected<ModelConfig> m = loadHFConfig(
        std::string(RATRAIN_EXAMPLES_DIR) + "/models/llama-2-7b.json");
    if (!m) {
      llvm::errs() << llvm::toString(m.takeError()) << "\n";
      std::exit(1);
    }
    return *m;
  }();
  return model;
}

/// Seconds of each pass of one run.
struct PipelineTimes {
  double plan = 0, expand = 0, schedule = 0, assign = 0, verify = 0;
  double total() const { return plan + expand + schedule + assign + verify; }
};

/// Runs `pass` on `module`; exits on failure (the benchmark needs every
/// step to succeed).
double timePass(MLIRContext &context, ModuleOp module,
                std::unique_ptr<Pass> pass) {
  PassManager pm(&context);
  pm.addPass(std::move(pass));
  auto start = std::chrono::steady_clock::now();
  if (failed(pm.run(module))) {
    llvm::errs() << "error: the schedule pipeline failed\n";
    std::exit(1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// plan -> expand -> schedule -> assign -> verify on a fresh module.
/// `pipelineDepth` 0 lets the planner choose.
PipelineTimes runPipeline(MLIRContext &context, const std::string &policy,
                          int64_t pipelineDepth,
                          OwningOpRef<ModuleOp> &module) {
  module = buildModelModule(llama7b(), &context, machinePath());
  PipelineTimes times;
  RATrainPlanOptions plan;
  plan.clusters = kClusters;
  plan.globalBatch = kGlobalBatch;
  plan.policy = policy;
  plan.pipelineDepth = pipelineDepth;
  times.plan = timePass(context, *module, createRATrainPlan(plan));
  times.expand = timePass(context, *module, createRATrainExpand1F1B());
  RATrainScheduleLifecycleOptions lifecycle;
  lifecycle.policy = policy;
  times.schedule =
      timePass(context, *module, createRATrainScheduleLifecycle(lifecycle));
  times.assign = timePass(context, *module, createRATrainAssignBuffers());
  times.verify = timePass(context, *module, createRATrainVerifySchedule());
  return times;
}

void BM_SchedulePipeline(benchmark::State &state, const std::string &policy,
                         int64_t pipelineDepth) {
  MLIRContext context;
  context.getOrLoadDialect<RATrainDialect>();
  context.disableMultithreading();
  PipelineTimes sum;
  int64_t runs = 0;
  for (auto _ : state) {
    OwningOpRef<ModuleOp> module;
    PipelineTimes t = runPipeline(context, policy, pipelineDepth, module);
    sum.plan += t.plan;
    sum.expand += t.expand;
    sum.schedule += t.schedule;
    sum.assign += t.assign;
    sum.verify += t.verify;
    ++runs;
    benchmark::DoNotOptimize(module.get());
  }
  state.counters["plan_s"] = sum.plan / runs;
  state.counters["expand_s"] = sum.expand / runs;
  state.counters["schedule_s"] = sum.schedule / runs;
  state.counters["assign_s"] = sum.assign / runs;
  state.counters["verify_s"] = sum.verify / runs;
  state.counters["total_s"] = sum.total() / runs;
}

/// One run per policy with a report of the schedule.
void report(const std::string &policy, int64_t pipelineDepth) {
  MLIRContext context;
  context.getOrLoadDialect<RATrainDialect>();
  context.disableMultithreading();
  OwningOpRef<ModuleOp> module;
  // Warm up once (first-touch allocations), then measure.
  runPipeline(context, policy, pipelineDepth, module);
  PipelineTimes t = runPipeline(context, policy, pipelineDepth, module);

  ModelOp model = *module->getOps<ModelOp>().begin();
  PipelineOp pipeline = *module->getOps<PipelineOp>().begin();
  PlanAttr plan = pipeline.getPlan();
  std::map<std::string, int64_t> opCounts;
  int64_t ops = 0, buffers = 0, maxPeak = 0, maxArena = 0;
  for (StageOp stage : pipeline.getStages()) {
    for (Operation &op : stage.getBody().front()) {
      ++opCounts[op.getName().getStringRef().str()];
      ++ops;
    }
    StageBufferAnalysis analyzed(stage);
    buffers += analyzed.getBuffers().size();
    maxPeak = std::max<int64_t>(
        maxPeak, RATrainDialect::PeakBytesAttrHelper(stage->getContext())
                     .getAttr(stage)
                     .getInt());
    maxArena = std::max<int64_t>(
        maxArena, RATrainDialect::ArenaBytesAttrHelper(stage->getContext())
                      .getAttr(stage)
                      .getInt());
  }
  llvm::outs() << llvm::formatv(
      "\nLLaMA-2-7B @ {0} clusters, policy {1}, {2}: {3}\n", kClusters, policy,
      pipelineDepth ? "pp fixed" : "free search",
      model.getPlan() ? toParallelConfig(*model.getPlan()).describe()
                      : std::string());
  llvm::outs() << llvm::formatv(
      "  plan {0:f2} ms, expand {1:f2} ms, schedule {2:f2} ms, assign {3:f2} "
      "ms, verify {4:f2} ms; total {5:f2} ms (target < 2 s: {6})\n",
      1e3 * t.plan, 1e3 * t.expand, 1e3 * t.schedule, 1e3 * t.assign,
      1e3 * t.verify, 1e3 * t.total(), t.total() < 2.0 ? "met" : "MISSED");
  double schedulePasses = t.expand + t.schedule + t.assign + t.verify;
  llvm::outs() << llvm::formatv(
      "  ratio vs baseline (planner alone, {0:f2} ms): whole pipeline {1:f2}x, "
      "schedule passes add {2:f2}x\n",
      1e3 * t.plan, t.total() / t.plan, schedulePasses / t.plan);
  llvm::outs() << llvm::formatv(
      "  schedule: {0} stages x {1} micro-batches, {2} ops, {3} buffers\n",
      plan.getPp(), plan.getMicroBatches(), ops, buffers);
  llvm::outs() << "  ops:";
  for (auto &[name, count] : opCounts)
    llvm::outs() << " " << StringRef(name).drop_front(strlen("ratrain.")) << "="
                 << count;
  llvm::outs() << "\n";
  llvm::outs() << llvm::formatv(
      "  DDR per cluster: assigned peak {0}, arena {1}, planner's prediction "
      "{2}, capacity {3}\n",
      formatBytes(maxPeak), formatBytes(maxArena),
      formatBytes(plan.getPeakBytes()),
      formatBytes(
          RATrainDialect::CapacityBytesAttrHelper(pipeline->getContext())
              .getAttr(pipeline)
              .getInt()));
}

} // namespace

BENCHMARK_CAPTURE(BM_SchedulePipeline, ratrain, std::string("ratrain"), 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK_CAPTURE(BM_SchedulePipeline, gpu_style, std::string("gpu-style"), 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK_CAPTURE(BM_SchedulePipeline, ratrain_pp8, std::string("ratrain"), 8)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  report("ratrain", 0);
  report("gpu-style", 0);
  report("ratrain", 8);
  return 0;
}
