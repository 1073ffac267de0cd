//===- Format.cpp - Plan tables, breakdowns and JSON ----------------------===//

#include "ratrain/Planner/Planner.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>

using namespace ratrain;

std::string ratrain::formatBytes(int64_t bytes) {
  double value = double(bytes);
  if (std::abs(value) >= 1e9)
    return llvm::formatv("{0:f1} GB", value / 1e9).str();
  if (std::abs(value) >= 1e6)
    return llvm::formatv("{0:f1} MB", value / 1e6).str();
  if (std::abs(value) >= 1e3)
    return llvm::formatv("{0:f1} KB", value / 1e3).str();
  return llvm::formatv("{0} B", bytes).str();
}

std::string ratrain::formatSeconds(double seconds) {
  if (seconds >= 1)
    return llvm::formatv("{0:f2} s", seconds).str();
  if (seconds >= 1e-3)
    return llvm::formatv("{0:f1} ms", seconds * 1e3).str();
  return llvm::formatv("{0:f1} us", seconds * 1e6).str();
}

std::string ratrain::formatLayerSplit(const ParallelConfig &config) {
  // Runs of equal stages as <layers>x<stages>: "3x2,2x28,1x2".
  std::string text;
  size_t i = 0;
  while (i < config.stages.size()) {
    size_t j = i;
    while (j < config.stages.size() &&
           config.stages[j].numLayers == config.stages[i].numLayers)
      ++j;
    if (!text.empty())
      text += ",";
    text += std::to_string(config.stages[i].numLayers);
    if (j - i > 1)
      text += "x" + std::to_string(j - i);
    i = j;
  }
  return text;
}

/// Per-stage values as runs of equal ones, <value>x<stages> joined by
/// commas ("selectivex2,nonex6"), or the one value when all are equal
/// ("none"); "" for no stages.
static std::string formatStageRuns(llvm::ArrayRef<std::string> values) {
  if (values.empty())
    return "";
  if (llvm::all_equal(values))
    return values.front();
  std::string text;
  size_t i = 0;
  while (i < values.size()) {
    size_t j = i;
    while (j < values.size() && values[j] == values[i])
      ++j;
    if (!text.empty())
      text += ",";
    text += values[i] + "x" + std::to_string(j - i);
    i = j;
  }
  return text;
}

std::string ratrain::formatRecompute(const ParallelConfig &config) {
  std::vector<std::string> values;
  for (RecomputePolicy r : config.recompute)
    values.push_back(stringifyRecomputePolicy(r).str());
  return formatStageRuns(values);
}

std::string ratrain::formatActivationOffload(const ParallelConfig &config) {
  std::vector<std::string> values;
  for (int64_t s = 0; s < config.numVirtualStages(); ++s)
    values.push_back(std::to_string(config.offloadedLayers(s)));
  return values.empty() ? "0" : formatStageRuns(values);
}

std::string ratrain::formatDpShares(const ParallelConfig &config) {
  std::vector<std::string> values;
  for (int64_t m : config.replicaMicroBatches)
    values.push_back(std::to_string(m));
  if (values.empty())
    return std::to_string(config.numMicroBatches);
  // Runs of equal shares as MxN, single ones as M: "3,1", "13x64,3x64".
  std::string text;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j < values.size() && values[j] == values[i])
      ++j;
    text += (text.empty() ? "" : ",") + values[i] +
            (j - i > 1 ? "x" + std::to_string(j - i) : "");
    i = j;
  }
  return text;
}

std::string ratrain::describeStageMemory(const StageMemory &memory,
                                         int64_t capBytes) {
  auto fields = memory.fields();
  std::stable_sort(
      fields.begin(), fields.end(),
      [](const auto &a, const auto &b) { return a.second > b.second; });
  std::string text =
      llvm::formatv("stage {0} needs {1} of {2}", memory.stage,
                    formatBytes(memory.total()), formatBytes(capBytes))
          .str();
  bool firstField = true;
  for (const auto &[name, bytes] : fields) {
    if (bytes == 0)
      continue;
    text += firstField ? ": " : ", ";
    firstField = false;
    text += name.str() + " " + formatBytes(bytes);
  }
  return text;
}

/// True when the plan's schedule is not non-interleaved 1F1B.
static bool hasSchedule(const ParallelConfig &c) {
  return c.schedule != schedule::ScheduleKind::OneFOneB || c.virtualStages != 1;
}

/// A config's sharding policy for tables: "flat", or the partition levels
/// and quantized wires: "w0 g1" (weight partition at level 0, gradient
/// partition at level 1; "-" for none), "+qw8" (int8 weight gathers),
/// "+qg4" (int4 gradient reduce-scatters).
static std::string describeSharding(const ParallelConfig &c) {
  const ShardingPolicy &s = c.sharding;
  std::string text = "flat";
  if (s.weightLevel >= 0 || s.gradLevel >= 0)
    text = "w" +
           (s.weightLevel >= 0 ? std::to_string(s.weightLevel)
                               : std::string("-")) +
           " g" +
           (s.gradLevel >= 0 ? std::to_string(s.gradLevel) : std::string("-"));
  if (s.weightWire != WireFormat::Native)
    text += "+qw" + std::string(s.weightWire == WireFormat::Int8 ? "8" : "4");
  if (s.gradWire != WireFormat::Native)
    text += "+qg" + std::string(s.gradWire == WireFormat::Int8 ? "8" : "4");
  return text;
}

/// "zbv v=2", "1f1b".
static std::string describeSchedule(const ParallelConfig &c) {
  std::string text = schedule::stringifyScheduleKind(c.schedule).str();
  if (c.virtualStages != 1)
    text += " v=" + std::to_string(c.virtualStages);
  return text;
}

void ratrain::printPlanTable(llvm::raw_ostream &os,
                             llvm::ArrayRef<Plan> plans) {
  bool schedules = llvm::any_of(
      plans, [](const Plan &plan) { return hasSchedule(plan.config); });
  bool sharding = llvm::any_of(plans, [](const Plan &plan) {
    return !plan.config.sharding.isDefault();
  });
  os << llvm::formatv("{0,4} {1,4} {2,5} {3,4} {4,5} {5,4} {6,-9} {7,-14} "
                      "{8,-20} {9,9} {10,7} {11,10} {12,10} {13,11}",
                      "rank", "pp", "dp", "mbs", "m", "zero", "offload",
                      "layers", "recompute", "peak", "bubble", "exposed",
                      "step", "tokens/s");
  bool activations = llvm::any_of(plans, [](const Plan &plan) {
    return plan.config.offloadsActivations();
  });
  os << (sharding ? "  sharding" : "") << (activations ? "  act-offload" : "")
     << (schedules ? "  schedule\n" : "\n");
  int64_t rank = 1;
  for (const Plan &plan : plans) {
    const ParallelConfig &c = plan.config;
    os << llvm::formatv(
        "{0,4} {1,4} {2,5} {3,4} {4,5} {5,4} {6,-9} {7,-14} {8,-20} {9,9} "
        "{10,6:f1}% {11,10} {12,10} {13,11:f1}",
        rank++, c.pipelineStages, c.dataParallel, c.microBatchSize,
        c.numMicroBatches, stringifyZeroStage(c.zero),
        stringifyOffloadPolicy(c.offload), formatLayerSplit(c),
        formatRecompute(c), formatBytes(plan.peakBytes()),
        100.0 * plan.time.bubbleFraction(),
        formatSeconds(plan.time.exposedLifecycle),
        formatSeconds(plan.time.total), plan.tokensPerSecond);
    if (sharding)
      os << (schedules || activations
                 ? llvm::formatv("  {0,-8}", describeSharding(c)).str()
                 : "  " + describeSharding(c));
    if (activations)
      os << (schedules
                 ? llvm::formatv("  {0,-11}", formatActivationOffload(c)).str()
                 : "  " + formatActivationOffload(c));
    os << (schedules ? "  " + describeSchedule(c) + "\n" : std::string("\n"));
  }
  // Machines with classes of clusters: each plan's layout and why.
  for (auto [i, plan] : llvm::enumerate(plans))
    if (!plan.layout.empty())
      os << llvm::formatv("{0,4}: {1}", i + 1, plan.layout) << "\n";
}

void ratrain::printStageBreakdown(llvm::raw_ostream &os, const Plan &plan,
                                  int64_t capBytes) {
  os << llvm::formatv("{0,5} {1,6} {2,-9} {3,9} {4,9} {5,9} {6,9} {7,9} "
                      "{8,9} {9,9} {10,9} {11,9} {12,9} {13,9} {14,9} {15,9} "
                      "{16,9} {17,9} {18,5} {19,9}\n",
                      "stage", "layers", "recompute", "views", "master",
                      "optim", "grads", "activ", "recomp", "emb/head",
                      "workspace", "comm", "optim-ws", "offl-win", "layer-tmp",
                      "outbox", "zero-shd", "total", "fits", "offloaded");
  for (const StageMemory &m : plan.memory) {
    // A rank's layers and policies: its chunks' (one for 1F1B).
    int64_t numLayers = 0;
    std::string recompute;
    for (int64_t c = 0; c < plan.config.numVirtualStages(); ++c) {
      if (chunkRank(plan.config, c) != m.stage)
        continue;
      numLayers += plan.config.stages[c].numLayers;
      if (!recompute.empty())
        recompute += "+";
      recompute += stringifyRecomputePolicy(plan.config.recompute[c]).str();
    }
    os << llvm::formatv(
        "{0,5} {1,6} {2,-9} {3,9} {4,9} {5,9} {6,9} {7,9} {8,9} {9,9} "
        "{10,9} {11,9} {12,9} {13,9} {14,9} {15,9} {16,9} {17,9} {18,5} "
        "{19,9}\n",
        m.stage, numLayers, recompute, formatBytes(m.parameterViews),
        formatBytes(m.masterWeights), formatBytes(m.optimizerStates),
        formatBytes(m.gradients), formatBytes(m.activations),
        formatBytes(m.recomputeBuffer), formatBytes(m.embeddingHeadActivations),
        formatBytes(m.kernelWorkspace), formatBytes(m.communicationBuffers),
        formatBytes(m.optimizerWorkspace), formatBytes(m.offloadWindow),
        formatBytes(m.layerTemporaries), formatBytes(m.outgoingMessages),
        formatBytes(m.zeroShards), formatBytes(m.total()),
        m.total() <= capBytes ? "yes" : "NO", formatBytes(m.offloadedBytes));
  }
}

void ratrain::printPlanJSON(llvm::raw_ostream &os, const PlanResult &result) {
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("policy", stringifyLifecyclePolicy(result.policy));
    json.attribute("memory_cap_bytes", result.memoryCapBytes);
    json.attribute("offload_cap_bytes", result.offloadCapBytes);
    json.attribute("candidates_evaluated", result.candidatesEvaluated);
    json.attribute("combinations_visited", result.combinationsVisited);
    json.attribute("combinations_pruned", result.combinationsPruned);
    json.attribute("stage_evaluations", result.stageEvaluations);
    json.attribute("feasible_plans", result.feasiblePlans);
    json.attributeArray("plans", [&] {
      for (const Plan &plan : result.plans) {
        const ParallelConfig &c = plan.config;
        json.object([&] {
          json.attribute("pp", c.pipelineStages);
          json.attribute("dp", c.dataParallel);
          json.attribute("micro_batch_size", c.microBatchSize);
          json.attribute("micro_batches", c.numMicroBatches);
          json.attribute("zero", int64_t(c.zero));
          json.attribute("offload", stringifyOffloadPolicy(c.offload));
          if (!c.sharding.isDefault()) {
            json.attribute("weight_partition", c.sharding.weightLevel);
            json.attribute("grad_partition", c.sharding.gradLevel);
            json.attribute("weight_wire",
                           stringifyWireFormat(c.sharding.weightWire));
            json.attribute("grad_wire",
                           stringifyWireFormat(c.sharding.gradWire));
          }
          if (hasSchedule(c)) {
            json.attribute("schedule",
                           schedule::stringifyScheduleKind(c.schedule));
            json.attribute("virtual_stages", c.virtualStages);
            json.attributeArray("virtual_stage_layers", [&] {
              for (size_t i = 0; i < c.stages.size(); ++i)
                json.object([&] {
                  json.attribute("first_layer", c.stages[i].firstLayer);
                  json.attribute("num_layers", c.stages[i].numLayers);
                  json.attribute("recompute",
                                 stringifyRecomputePolicy(c.recompute[i]));
                  json.attribute("rank", chunkRank(c, int64_t(i)));
                });
            });
          }
          if (!c.replicaMicroBatches.empty())
            json.attributeArray("dp_shares", [&] {
              for (int64_t m : c.replicaMicroBatches)
                json.value(m);
            });
          if (c.replicaMajor)
            json.attribute("rank_order", "replica-major");
          if (!plan.layout.empty())
            json.attribute("layout", plan.layout);
          json.attributeArray("stages", [&] {
            for (size_t i = 0; i < plan.memory.size(); ++i) {
              const StageMemory &m = plan.memory[i];
              json.object([&] {
                if (!hasSchedule(c)) {
                  json.attribute("first_layer", c.stages[i].firstLayer);
                  json.attribute("num_layers", c.stages[i].numLayers);
                  json.attribute("recompute",
                                 stringifyRecomputePolicy(c.recompute[i]));
                }
                json.attribute("params", m.params);
                json.attributeObject("memory_bytes", [&] {
                  json.attribute("parameter_views", m.parameterViews);
                  json.attribute("master_weights", m.masterWeights);
                  json.attribute("optimizer_states", m.optimizerStates);
                  json.attribute("gradients", m.gradients);
                  json.attribute("activations", m.activations);
                  json.attribute("recompute_buffer", m.recomputeBuffer);
                  json.attribute("embedding_head_activations",
                                 m.embeddingHeadActivations);
                  json.attribute("kernel_workspace", m.kernelWorkspace);
                  json.attribute("communication_buffers",
                                 m.communicationBuffers);
                  json.attribute("optimizer_workspace", m.optimizerWorkspace);
                  json.attribute("offload_window", m.offloadWindow);
                  json.attribute("layer_temporaries", m.layerTemporaries);
                  json.attribute("outgoing_messages", m.outgoingMessages);
                  json.attribute("zero_shards", m.zeroShards);
                  json.attribute("total", m.total());
                });
                json.attribute("offloaded_bytes", m.offloadedBytes);
              });
            }
          });
          json.attribute("peak_bytes", plan.peakBytes());
          json.attribute("step_seconds", plan.time.total);
          json.attribute("pipeline_seconds", plan.time.pipeline);
          json.attribute("bubble_fraction", plan.time.bubbleFraction());
          json.attribute("exposed_lifecycle_seconds",
                         plan.time.exposedLifecycle);
          json.attribute("offload_seconds", plan.time.offload);
          json.attribute("core_copy_seconds", plan.time.coreCopy);
          json.attribute("tokens_per_second", plan.tokensPerSecond);
        });
      }
    });
  });
  os << "\n";
}
