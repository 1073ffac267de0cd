//===- Planner.cpp - Resource-aware training-plan search ------------------===//
//
// The search, per (pipeline depth p, data-parallel width d, micro-batch size
// b, ZeRO stage) combination (the micro-batch count follows from the global
// batch):
//  1. prune the combination when a lower bound of its peak stage memory
//     (model states spread evenly, full recompute) exceeds the cap;
//  2. choose the stage split that minimizes the slowest 1F1B slot subject to
//     every stage fitting the cap, by bisection on the slot time T: stage i
//     can take at most n_i(T) layers (the most layers for which some
//     recompute policy fits in memory and keeps the slot under T); T is
//     feasible when sum_i n_i(T) >= L;
//  3. give each stage the least-recompute policy that fits;
//  4. evaluate that plan and the evenly split plan (memory of every stage,
//     predicted step time) and keep the fastest that fit.
// Each combination is tried with every offload policy (none first); an
// offload plan is kept only when it is faster than the combination's best
// plan with less offload. Memory is counted with the policy's own model
// (gpu-style: FP32 gradient buffer and whole-stage optimizer workspace).
// Per-stage recompute policy choice is exact given the split: a stage's
// memory depends only on its own policy and less recompute never makes the
// step slower.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Planner/Planner.h"
#include "Heterogeneous.h"
#include "ScheduleSearch.h"
#include "ratrain/Model/Limits.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

using namespace ratrain;

int64_t Plan::peakBytes() const {
  int64_t peak = 0;
  for (const StageMemory &m : memory)
    peak = std::max(peak, m.total());
  return peak;
}

int64_t Plan::peakStage() const {
  int64_t best = 0;
  for (size_t i = 0; i < memory.size(); ++i)
    if (memory[i].total() > memory[best].total())
      best = int64_t(i);
  return best;
}

int64_t Plan::peakOffloadedBytes() const {
  int64_t peak = 0;
  for (const StageMemory &m : memory)
    peak = std::max(peak, m.offloadedBytes);
  return peak;
}

Plan ratrain::evaluatePlan(const ModelConfig &model,
                           const MachineModel &machine,
                           const ParallelConfig &config,
                           LifecyclePolicy policy) {
  Plan plan;
  plan.config = config;
  plan.memory =
      computeMemory(model, config, MemoryOptions::forMachine(machine, policy));
  CostModel costs(model, machine);
  plan.time = predictStepTime(costs, config, policy);
  plan.tokensPerSecond =
      plan.time.total > 0
          ? double(config.globalBatch()) * model.seqLen / plan.time.total
          : 0;
  return plan;
}

Plan ratrain::evaluatePlan(const ModelConfig &model,
                           const MachineModel &machine,
                           const ParallelConfig &config, LifecyclePolicy policy,
                           const schedule::PipelineSchedule &schedule) {
  if (config.schedule == schedule::ScheduleKind::OneFOneB &&
      config.virtualStages == 1)
    return evaluatePlan(model, machine, config, policy);
  Plan plan;
  plan.config = config;
  MemoryOptions options = MemoryOptions::forMachine(machine, policy);
  std::vector<double> act, deferred;
  scheduleWeights(model, config, options, act, deferred);
  schedule::ScheduleMemory counts =
      schedule::scheduleMemory(schedule, act, deferred);
  for (int64_t r = 0; r < config.pipelineStages; ++r)
    plan.memory.push_back(computeRankMemory(model, config, r, counts, options));
  CostModel costs(model, machine);
  plan.time = predictStepTime(costs, config, policy, schedule);
  plan.tokensPerSecond =
      plan.time.total > 0
          ? double(config.globalBatch()) * model.seqLen / plan.time.total
          : 0;
  return plan;
}

std::vector<ShardingPolicy>
ratrain::searchedShardingPolicies(const PlanRequest &request, ZeroStage zero,
                                  int64_t d,
                                  llvm::ArrayRef<int64_t> levelClusters) {
  auto allowed = [&](const ShardingPolicy &policy) {
    if (policy.weightLevel >= 0 || policy.weightWire != WireFormat::Native)
      if (zero < ZeroStage::Parameters)
        return false;
    if (policy.gradLevel >= 0 || policy.gradWire != WireFormat::Native)
      if (zero < ZeroStage::Gradients)
        return false;
    return true;
  };
  if (request.sharding) {
    if (!allowed(*request.sharding))
      return {};
    return {*request.sharding};
  }
  // A gpu-style runtime syncs whole stages at the iteration boundary: no
  // partitions.
  if (request.policy == LifecyclePolicy::GpuStyle)
    return {ShardingPolicy()};
  std::vector<ShardingPolicy> result;
  auto add = [&](ShardingPolicy policy) {
    if (allowed(policy) && !llvm::is_contained(result, policy))
      result.push_back(policy);
  };
  const int64_t numLevels = int64_t(levelClusters.size());
  std::vector<ShardingPolicy> bases;
  for (llvm::StringRef name : {"flat", "zero++", "three-level"}) {
    std::optional<ShardingPolicy> preset = shardingPreset(name, numLevels);
    if (!preset)
      continue;
    if (zero < ZeroStage::Parameters)
      preset->weightLevel = -1;
    if (zero < ZeroStage::Gradients)
      preset->gradLevel = -1;
    if (d <= 1)
      preset->weightLevel = preset->gradLevel = -1;
    if (!isRegularPartitionLevel(levelClusters, d, preset->weightLevel) ||
        !isRegularPartitionLevel(levelClusters, d, preset->gradLevel))
      continue;
    // A secondary partition over the whole group is no partition, and a
    // gradient partition over it the one reduce-scatter over the group.
    if (preset->weightLevel >= 0 &&
        partitionGroupMembers(levelClusters, d, preset->weightLevel) >= d)
      preset->weightLevel = -1;
    if (preset->gradLevel >= 0 &&
        partitionGroupMembers(levelClusters, d, preset->gradLevel) >= d)
      preset->gradLevel = -1;
    bases.push_back(*preset);
    add(*preset);
  }
  if (request.allowQuantized && d > 1)
    for (const ShardingPolicy &base : bases)
      for (WireFormat weight : {WireFormat::Native, WireFormat::Int8})
        for (WireFormat grad :
             {WireFormat::Native, WireFormat::Int8, WireFormat::Int4}) {
          ShardingPolicy policy = base;
          policy.weightWire = weight;
          policy.gradWire = grad;
          add(policy);
        }
  return result;
}

namespace {

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      small.push_back(i);
      if (i != n / i)
        large.push_back(n / i);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

/// The search state for one (p, d, b, zero) combination.
class CombinationSolver {
public:
  CombinationSolver(const ModelConfig &model, const CostModel &costs,
                    const std::vector<RecomputePolicy> &policies, int64_t p,
                    int64_t d, int64_t b, int64_t m, ZeroStage zero,
                    OffloadPolicy offload, int64_t cap, int64_t tierCap,
                    const MemoryOptions &options, int64_t &stageEvaluations)
      : model(model), policies(policies), p(p), d(d), b(b), m(m), zero(zero),
        offload(offload), cap(cap), tierCap(tierCap), options(options),
        stageEvaluations(stageEvaluations) {
    double f = costs.layerForward(b), bw = costs.layerBackward(b);
    for (RecomputePolicy policy : policies)
      perLayer.push_back(f + bw + costs.layerRecompute(b, policy));
    double c = 0;
    if (p > 1) {
      ParallelConfig shape;
      shape.pipelineStages = p;
      shape.dataParallel = d;
      c = costs.pointToPoint(costs.pipelineMessageBytes(b),
                             costs.pipelineLink(shape));
    }
    extras.assign(p, 2 * c);
    extras[0] += costs.embeddingForward(b) + costs.embeddingBackward(b);
    extras[p - 1] += costs.headForward(b) + costs.headBackward(b);
  }

  StageMemory memory(int64_t stage, int64_t layers, size_t policy) const {
    ++stageEvaluations;
    return computeStageMemory(model, stage, p, d, b, m, {0, layers},
                              policies[policy], zero, offload, options);
  }

  /// DDR under `memoryCap` and, when `checkTier`, the offloaded states
  /// under the tier's share per cluster.
  bool fits(const StageMemory &mem, int64_t memoryCap, bool checkTier) const {
    return mem.total() <= memoryCap &&
           (!checkTier || mem.offloadedBytes <= tierCap);
  }

  double slot(int64_t stage, int64_t layers, size_t policy) const {
    return extras[stage] + layers * perLayer[policy];
  }

  /// The most layers (0..L) stage `stage` can hold under policy `policy`
  /// within `memoryCap` bytes (memory grows with the layer count).
  int64_t maxLayersInMemory(int64_t stage, size_t policy, int64_t memoryCap,
                            bool checkTier = true) const {
    int64_t lo = 0, hi = model.numLayers;
    if (!fits(memory(stage, 1, policy), memoryCap, checkTier))
      return 0;
    lo = 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (fits(memory(stage, mid, policy), memoryCap, checkTier))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }

  /// Fills memLimit[stage][policy] for a memory cap.
  void computeMemoryLimits(int64_t memoryCap) {
    memLimit.assign(p, std::vector<int64_t>(policies.size(), 0));
    for (int64_t i = 0; i < p; ++i)
      for (size_t k = 0; k < policies.size(); ++k)
        memLimit[i][k] = maxLayersInMemory(i, k, memoryCap);
  }

  /// Layers stage i can take with slot time <= T, over all policies.
  int64_t maxLayers(int64_t i, double T) const {
    int64_t best = 0;
    for (size_t k = 0; k < policies.size(); ++k) {
      int64_t byMemory = memLimit[i][k];
      if (byMemory == 0)
        continue;
      double room = T - extras[i];
      int64_t byTime = room < 0
                           ? 0
                           : int64_t(std::min<double>(
                                 std::floor(room / perLayer[k] * (1 + 1e-12)),
                                 double(model.numLayers)));
      best = std::max(best, std::min(byMemory, byTime));
    }
    return best;
  }

  bool feasible(double T) const {
    int64_t total = 0;
    for (int64_t i = 0; i < p; ++i) {
      int64_t n = maxLayers(i, T);
      if (n < 1)
        return false;
      total += n;
    }
    return total >= model.numLayers;
  }

  /// The least-recompute policy of stage i that fits memory with n layers
  /// (policies are ordered least recompute first); nullopt if none fits.
  std::optional<size_t> bestPolicy(int64_t i, int64_t n) const {
    for (size_t k = 0; k < policies.size(); ++k)
      if (memLimit[i][k] >= n)
        return k;
    return std::nullopt;
  }

  /// The split minimizing the slowest slot with every stage under the cap;
  /// nullopt when no split fits.
  std::optional<ParallelConfig> solveMinMaxSplit() {
    if (p > model.numLayers)
      return std::nullopt;
    computeMemoryLimits(cap);
    // An upper bound: any stage holding every layer under the slowest
    // policy.
    double hi = 0;
    for (int64_t i = 0; i < p; ++i)
      for (size_t k = 0; k < policies.size(); ++k)
        hi = std::max(hi, slot(i, model.numLayers, k));
    hi = hi * 1.01 + 1e-9;
    if (!feasible(hi))
      return std::nullopt;
    double lo = 0;
    for (int iter = 0; iter < 60 && hi - lo > 1e-9 * hi; ++iter) {
      double mid = 0.5 * (lo + hi);
      if (feasible(mid))
        hi = mid;
      else
        lo = mid;
    }
    std::vector<int64_t> n(p);
    int64_t total = 0;
    for (int64_t i = 0; i < p; ++i)
      total += n[i] = maxLayers(i, hi);
    // Remove the excess one layer at a time where it shortens the sum of
    // the slots most (every slot already fits under `hi`, so the slowest
    // slot cannot grow; the sum is the pipeline's fill and drain). A stage
    // whose layer count needs recompute gains the recompute of every layer
    // back when a layer leaves it; ties go to the slowest slot.
    auto slotOf = [&](int64_t i, int64_t layers) {
      std::optional<size_t> k = bestPolicy(i, layers);
      return k ? slot(i, layers, *k) : std::numeric_limits<double>::infinity();
    };
    while (total > model.numLayers) {
      int64_t pick = -1;
      double bestGain = -1, bestSlot = -1;
      for (int64_t i = 0; i < p; ++i) {
        if (n[i] <= 1)
          continue;
        double now = slotOf(i, n[i]);
        double gain = now - slotOf(i, n[i] - 1);
        if (gain > bestGain * (1 + 1e-12) ||
            (gain >= bestGain * (1 - 1e-12) && now > bestSlot)) {
          pick = i;
          bestGain = gain;
          bestSlot = now;
        }
      }
      if (pick < 0)
        break;
      --n[pick];
      --total;
    }
    if (total != model.numLayers)
      return std::nullopt;
    return makeConfig(n);
  }

  /// The even split with the least-recompute policy that fits per stage;
  /// nullopt when some stage fits under no policy.
  std::optional<ParallelConfig> evenSplit() {
    if (p > model.numLayers)
      return std::nullopt;
    ParallelConfig even = ParallelConfig::balanced(model.numLayers, p, d, b, m,
                                                   policies.front(), zero);
    even.offload = offload;
    even.sharding = options.sharding;
    std::vector<int64_t> n;
    for (const StageLayers &s : even.stages)
      n.push_back(s.numLayers);
    if (memLimit.empty())
      computeMemoryLimits(cap);
    return makeConfig(n);
  }

  /// The split that minimizes the largest stage memory with the
  /// least-memory policy (for diagnostics), and that memory.
  ParallelConfig leastMemorySplit() {
    size_t leanest = policies.size() - 1; // most recompute
    auto peakFor = [&](const std::vector<int64_t> &n) {
      int64_t peak = 0;
      for (int64_t i = 0; i < p; ++i)
        peak = std::max(peak, memory(i, n[i], leanest).total());
      return peak;
    };
    ParallelConfig even = ParallelConfig::balanced(model.numLayers, p, d, b, m,
                                                   policies[leanest], zero);
    even.offload = offload;
    even.sharding = options.sharding;
    std::vector<int64_t> best;
    for (const StageLayers &s : even.stages)
      best.push_back(s.numLayers);
    int64_t lo = 0, hi = peakFor(best);
    // Bisection on the memory cap: stage i takes up to n_i(M) layers.
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      std::vector<int64_t> n(p);
      int64_t total = 0;
      bool ok = true;
      for (int64_t i = 0; i < p && ok; ++i) {
        n[i] = maxLayersInMemory(i, leanest, mid, /*checkTier=*/false);
        ok = n[i] >= 1;
        total += n[i];
      }
      if (ok && total >= model.numLayers) {
        // Trim the excess from the last stages that have spare layers.
        for (int64_t i = p - 1; i >= 0 && total > model.numLayers; --i) {
          int64_t cut = std::min(n[i] - 1, total - model.numLayers);
          n[i] -= cut;
          total -= cut;
        }
        best = n;
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    ParallelConfig config = even;
    int64_t next = 0;
    for (int64_t i = 0; i < p; ++i) {
      config.stages[i] = {next, best[i]};
      next += best[i];
    }
    return config;
  }

private:
  std::optional<ParallelConfig> makeConfig(const std::vector<int64_t> &n) {
    ParallelConfig config;
    config.pipelineStages = p;
    config.dataParallel = d;
    config.microBatchSize = b;
    config.numMicroBatches = m;
    config.zero = zero;
    config.offload = offload;
    config.sharding = options.sharding;
    int64_t next = 0;
    for (int64_t i = 0; i < p; ++i) {
      std::optional<size_t> k = bestPolicy(i, n[i]);
      if (!k)
        return std::nullopt;
      config.stages.push_back({next, n[i]});
      config.recompute.push_back(policies[*k]);
      next += n[i];
    }
    return config;
  }

  const ModelConfig &model;
  const std::vector<RecomputePolicy> &policies;
  int64_t p, d, b, m;
  ZeroStage zero;
  OffloadPolicy offload;
  int64_t cap, tierCap;
  MemoryOptions options;
  int64_t &stageEvaluations;
  std::vector<double> perLayer; ///< per policy: f + bw + recompute
  std::vector<double> extras;   ///< per stage: embedding/head + 2 p2p
  std::vector<std::vector<int64_t>> memLimit;
};

} // namespace

llvm::Expected<PlanResult> ratrain::planTraining(const ModelConfig &model0,
                                                 const MachineModel &machine,
                                                 const PlanRequest &request) {
  if (request.clusters < 1)
    return makeError(
        llvm::formatv("clusters must be positive, got {0}", request.clusters));
  if (request.globalBatch < 1)
    return makeError(llvm::formatv("global batch must be positive, got {0}",
                                   request.globalBatch));
  if (request.clusters > limits::kMaxClusters)
    return makeError(llvm::formatv("{0} clusters exceed the limit of {1}",
                                   request.clusters, limits::kMaxClusters));
  if (request.globalBatch > limits::kMaxGlobalBatch)
    return makeError(llvm::formatv("global batch {0} exceeds the limit of {1} "
                                   "sequences",
                                   request.globalBatch,
                                   limits::kMaxGlobalBatch));
  if (request.topK < 1)
    return makeError(
        llvm::formatv("top must be positive, got {0}", request.topK));
  if (request.seqLen < 0)
    return makeError(llvm::formatv("sequence length must be positive, got {0}",
                                   request.seqLen));
  ModelConfig model = model0;
  if (request.seqLen > 0)
    model.seqLen = request.seqLen;
  if (llvm::Error err = model.validate())
    return std::move(err);
  if (llvm::Error err = machine.validate())
    return std::move(err);
  if (planner::needsHeterogeneousPlanning(machine, request))
    return planner::planHeterogeneous(model, machine, request);

  if (request.clusters > machine.totalClusters())
    return makeError(llvm::formatv(
        "{0} clusters requested, machine '{1}' has {2} ({3} nodes x {4})",
        request.clusters, machine.name, machine.totalClusters(), machine.nodes,
        machine.clustersPerNode));
  int64_t cap = request.memoryCapBytes > 0 ? request.memoryCapBytes
                                           : machine.cluster.ddrBytes;
  auto checkFixed = [&](const char *what,
                        std::optional<int64_t> value) -> llvm::Error {
    if (value && *value < 1)
      return makeError(
          llvm::formatv("{0} must be positive, got {1}", what, *value));
    if (value && *value > limits::kMaxClusters)
      return makeError(llvm::formatv("{0} {1} exceeds the limit of {2}", what,
                                     *value, limits::kMaxClusters));
    return llvm::Error::success();
  };
  if (llvm::Error err = checkFixed("pp", request.pipelineStages))
    return std::move(err);
  if (llvm::Error err = checkFixed("dp", request.dataParallel))
    return std::move(err);
  if (llvm::Error err = checkFixed("micro-batch size", request.microBatchSize))
    return std::move(err);
  if (request.pipelineStages && request.dataParallel &&
      *request.pipelineStages * *request.dataParallel != request.clusters)
    return makeError(llvm::formatv("pp={0} x dp={1} is not {2} clusters",
                                   *request.pipelineStages,
                                   *request.dataParallel, request.clusters));
  if (request.pipelineStages && *request.pipelineStages > model.numLayers)
    return makeError(llvm::formatv("pp={0} exceeds the {1} layers of {2}",
                                   *request.pipelineStages, model.numLayers,
                                   model.name));

  if (request.sharding) {
    int64_t numLevels = int64_t(machine.networkLevels().size());
    const ShardingPolicy &fixed = *request.sharding;
    if (fixed.weightLevel < -1 || fixed.weightLevel >= numLevels - 1)
      return makeError(llvm::formatv(
          "weight partition level {0} is not an inner network level of "
          "machine '{1}' (levels 0..{2}, or -1 for none)",
          fixed.weightLevel, machine.name, numLevels - 2));
    if (fixed.gradLevel < -1 || fixed.gradLevel >= numLevels)
      return makeError(llvm::formatv(
          "gradient partition level {0} is not a network level of machine "
          "'{1}' (levels 0..{2}, or -1 for none)",
          fixed.gradLevel, machine.name, numLevels - 1));
  }

  std::vector<RecomputePolicy> policies;
  if (request.recompute)
    policies = {*request.recompute};
  else
    policies = {RecomputePolicy::None, RecomputePolicy::Selective,
                RecomputePolicy::Full};

  // Partial synchronization averages whole masters kept in DDR.
  if (request.syncPeriod > 1) {
    if (request.zero && *request.zero != ZeroStage::None)
      return makeError(llvm::formatv(
          "sync period {0} (partial synchronization) needs ZeRO-0: each "
          "replica keeps and updates whole masters",
          request.syncPeriod));
    if (request.offload &&
        *request.offload == OffloadPolicy::MasterAndOptimizer)
      return makeError(llvm::formatv(
          "sync period {0} (partial synchronization) averages masters in "
          "DDR: it cannot offload them (offload={1}; offload=optimizer "
          "keeps them in DDR)",
          request.syncPeriod, stringifyOffloadPolicy(*request.offload)));
  }
  int64_t tierCap = machine.offloadBytesPerCluster();
  using ActivationOffloadMode = PlanRequest::ActivationOffloadMode;
  bool forcesActivationOffload =
      request.activationOffload == ActivationOffloadMode::All ||
      (request.activationOffload == ActivationOffloadMode::Counts &&
       llvm::any_of(request.activationOffloadCounts,
                    [](int64_t k) { return k > 0; }));
  if (forcesActivationOffload && tierCap <= 0)
    return makeError(llvm::formatv(
        "activation offload requested, but machine '{0}' has no offload tier "
        "(offload.bytes_per_node)",
        machine.name));
  // Counts name the stages of one pipeline depth.
  if (request.activationOffload == ActivationOffloadMode::Counts &&
      forcesActivationOffload) {
    int64_t counts = int64_t(request.activationOffloadCounts.size());
    int64_t v = request.virtualStages.value_or(1);
    if (!request.pipelineStages)
      return makeError(llvm::formatv(
          "activation offload counts ({0} stages) need a fixed pipeline depth "
          "(pp); or use act-offload=all",
          counts));
    if (counts != *request.pipelineStages * v)
      return makeError(llvm::formatv(
          "activation offload gives {0} counts for pp * virtual stages = {1}",
          counts, *request.pipelineStages * v));
  }
  std::vector<OffloadPolicy> offloads;
  if (request.offload) {
    if (*request.offload != OffloadPolicy::None && tierCap <= 0)
      return makeError(llvm::formatv(
          "offload={0} requested, but machine '{1}' has no offload tier "
          "(offload.bytes_per_node)",
          stringifyOffloadPolicy(*request.offload), machine.name));
    offloads = {*request.offload};
  } else if (tierCap > 0 && request.syncPeriod > 1) {
    offloads = {OffloadPolicy::None, OffloadPolicy::OptimizerStates};
  } else if (tierCap > 0) {
    offloads = {OffloadPolicy::None, OffloadPolicy::OptimizerStates,
                OffloadPolicy::MasterAndOptimizer};
  } else {
    offloads = {OffloadPolicy::None};
  }

  // The schedule kinds and virtual stages to try.
  using schedule::ScheduleKind;
  struct ScheduleChoice {
    ScheduleKind kind;
    int64_t v;
  };
  std::vector<ScheduleChoice> scheduleChoices;
  if (request.virtualStages && *request.virtualStages < 1)
    return makeError(llvm::formatv("virtual stages must be positive, got {0}",
                                   *request.virtualStages));
  if (request.searchSchedules) {
    scheduleChoices = {{ScheduleKind::OneFOneB, 1},
                       {ScheduleKind::ZBH1, 1},
                       {ScheduleKind::ZBV, 2}};
    // A fixed v >= 2 applies to the interleaved schedule.
    if (request.virtualStages && *request.virtualStages >= 2)
      scheduleChoices.push_back(
          {ScheduleKind::Interleaved1F1B, *request.virtualStages});
    else
      scheduleChoices.insert(scheduleChoices.end(),
                             {{ScheduleKind::Interleaved1F1B, 2},
                              {ScheduleKind::Interleaved1F1B, 4}});
  } else {
    ScheduleKind kind = request.schedule.value_or(ScheduleKind::OneFOneB);
    if (kind == ScheduleKind::Custom)
      return makeError("the planner generates its schedules; a custom "
                       "schedule cannot be planned");
    if (kind == ScheduleKind::Interleaved1F1B && !request.virtualStages) {
      scheduleChoices = {{kind, 2}, {kind, 4}};
    } else {
      int64_t v =
          request.virtualStages.value_or(kind == ScheduleKind::ZBV ? 2 : 1);
      if (llvm::Error err = validateScheduleShape(kind, 1, v, 1))
        return std::move(err);
      scheduleChoices = {{kind, v}};
    }
  }
  bool plan1F1B = llvm::any_of(scheduleChoices, [](const ScheduleChoice &c) {
    return c.kind == ScheduleKind::OneFOneB;
  });
  planner::ScheduleCache scheduleCache;

  CostModel costs(model, machine);
  MemoryOptions memoryOptions =
      MemoryOptions::forMachine(machine, request.policy);
  PlanResult result;
  result.memoryCapBytes = cap;
  result.offloadCapBytes = tierCap;
  result.policy = request.policy;
  std::vector<Plan> feasible;

  // The closest infeasible candidate, for the diagnostic.
  std::optional<ParallelConfig> closest;
  double closestPeak = std::numeric_limits<double>::infinity();
  std::string structuralReason;

  // Memory that every stage split of a combination must exceed somewhere.
  auto lowerBound = [&](int64_t p, int64_t d, int64_t b, int64_t m,
                        ZeroStage zero, OffloadPolicy offload,
                        const MemoryOptions &options) {
    RecomputePolicy leanest = policies.back();
    // Model states and activations of an even spread (per-layer costs are
    // the same on every stage; activations at least one in flight). The
    // offload window and the buffers are not per layer and left out.
    StageMemory one =
        computeStageMemory(model, /*stage=*/1, p + 2, d, b,
                           /*m=*/1, {0, 1}, leanest, zero, offload, options);
    const int64_t w = getDTypeBytes(model.dtype);
    const int64_t layer = model.paramsPerLayer();
    const bool layerLifecycle = options.lifecycle != LifecyclePolicy::GpuStyle;
    ++result.stageEvaluations;
    // Under ZeRO-2 a stage also holds up to two full item gradients (m = 1)
    // or all of them (m > 1); per layer only the shard is certain (a
    // gradient partition only adds the partitions of the items
    // synchronizing).
    int64_t gradients = one.gradients;
    if (zero >= ZeroStage::Gradients && layerLifecycle)
      gradients = std::min<int64_t>(gradients, w * ((layer + d - 1) / d));
    // Under ZeRO-3 only the view shard (and a secondary weight partition's
    // shard) is per layer (the two gathered views are not).
    int64_t views = one.parameterViews;
    if (zero >= ZeroStage::Parameters) {
      views = w * ((layer + d - 1) / d);
      int64_t g = partitionGroupMembers(options.levelClusters, d,
                                        options.sharding.weightLevel);
      if (options.sharding.weightLevel >= 0 && g < d)
        views += w * ((layer + g - 1) / g);
    }
    double states = double(one.modelStates() - one.gradients + gradients -
                           one.parameterViews + views + one.optimizerWorkspace);
    double perLayer = states + double(one.activations);
    double extra = double(model.embeddingParams() + model.headParams()) *
                   states / double(model.paramsPerLayer());
    (void)m;
    // Slack for the per-stage rounding of shards (at most a few bytes per
    // layer), so that the bound never exceeds the true peak.
    double slack = 64.0 * (model.numLayers + 2);
    return int64_t((perLayer * model.numLayers + extra - slack) / double(p));
  };

  std::vector<int64_t> ppChoices =
      request.pipelineStages ? std::vector<int64_t>{*request.pipelineStages}
                             : divisors(request.clusters);
  for (int64_t p : ppChoices) {
    if (request.clusters % p != 0 || p > model.numLayers)
      continue;
    int64_t d = request.clusters / p;
    if (request.dataParallel && *request.dataParallel != d)
      continue;
    if (request.globalBatch % d != 0) {
      structuralReason = llvm::formatv("global batch {0} is not a multiple of "
                                       "the data-parallel width",
                                       request.globalBatch)
                             .str();
      continue;
    }
    int64_t perReplica = request.globalBatch / d;
    std::vector<int64_t> bChoices =
        request.microBatchSize ? std::vector<int64_t>{*request.microBatchSize}
                               : divisors(perReplica);
    for (int64_t b : bChoices) {
      if (perReplica % b != 0) {
        structuralReason =
            llvm::formatv("micro-batch size {0} does not divide the {1} "
                          "sequences per replica",
                          b, perReplica)
                .str();
        continue;
      }
      int64_t m = perReplica / b;
      if (m > limits::kMaxMicroBatches) {
        structuralReason =
            llvm::formatv("micro-batch size {0} gives {1} micro-batches, "
                          "more than the limit of {2}",
                          b, m, limits::kMaxMicroBatches)
                .str();
        continue;
      }
      // The schedule's size (#ratrain.plan checks it per stage and in all):
      // model layers x m, and the smallest largest stage x m.
      int64_t modelLayers = model.numLayers + 2;
      if (modelLayers * m > limits::kMaxScheduleSize ||
          (modelLayers + p - 1) / p * m > limits::kMaxStageScheduleSize) {
        structuralReason =
            llvm::formatv("micro-batch size {0} gives {1} micro-batches of "
                          "{2} layers on {3} stages, more than the schedule "
                          "limits of {4} (layer, micro-batch) pairs in all "
                          "and {5} per stage",
                          b, m, modelLayers, p, limits::kMaxScheduleSize,
                          limits::kMaxStageScheduleSize)
                .str();
        continue;
      }
      std::vector<ZeroStage> zeros;
      if (request.zero)
        zeros = {*request.zero};
      else if (d == 1 || request.syncPeriod > 1)
        zeros = {ZeroStage::None};
      else
        zeros = {ZeroStage::None, ZeroStage::Optimizer, ZeroStage::Gradients,
                 ZeroStage::Parameters};
      // Baichuan2's NormHead reads the head's view after its last backward,
      // when ZeRO-3 has released the gathered copy, and a tied LM head reads
      // the embedding's full view: the lowering refuses both (a fixed
      // zero=3 is planned and left to the lowering's error).
      if ((model.normHead || model.tieEmbeddings) && !request.zero)
        llvm::erase(zeros, ZeroStage::Parameters);
      for (ZeroStage zero : zeros) {
        std::vector<ShardingPolicy> shardings = searchedShardingPolicies(
            request, zero, d, memoryOptions.levelClusters);
        for (const ShardingPolicy &sharding : shardings) {
          MemoryOptions options = memoryOptions;
          options.sharding = sharding;
          // The fastest feasible plan of this (p, d, b, zero, sharding) with
          // less offload: an offload plan must beat it.
          double bestWithLessOffload = std::numeric_limits<double>::infinity();
          for (OffloadPolicy offload : offloads) {
            ++result.combinationsVisited;
            CombinationSolver solver(model, costs, policies, p, d, b, m, zero,
                                     offload, cap, tierCap, options,
                                     result.stageEvaluations);
            bool pruned = request.pruneByMemoryBound &&
                          lowerBound(p, d, b, m, zero, offload, options) > cap;
            std::vector<ParallelConfig> candidates;
            if (!pruned) {
              if (std::optional<ParallelConfig> c = solver.solveMinMaxSplit())
                candidates.push_back(std::move(*c));
              if (std::optional<ParallelConfig> c = solver.evenSplit())
                if (candidates.empty() || c->stages != candidates[0].stages ||
                    c->recompute != candidates[0].recompute)
                  candidates.push_back(std::move(*c));
            } else {
              ++result.combinationsPruned;
            }
            // The other schedule kinds: zb-h1 on the 1F1B splits, the
            // interleaved and V schedules on even splits into p * v chunks;
            // each with the least recompute that fits its schedule.
            std::vector<
                std::pair<ParallelConfig, const schedule::PipelineSchedule *>>
                toEvaluate;
            if (plan1F1B)
              for (ParallelConfig &config : candidates)
                toEvaluate.push_back({config, nullptr});
            for (const ScheduleChoice &choice : scheduleChoices) {
              // Without a pipeline every schedule is 1F1B.
              if (pruned || choice.kind == ScheduleKind::OneFOneB || p == 1)
                continue;
              const schedule::PipelineSchedule *sched =
                  scheduleCache.get(choice.kind, p, choice.v, m);
              if (!sched || p * choice.v > model.numLayers)
                continue;
              std::vector<ParallelConfig> starts;
              if (choice.kind == ScheduleKind::ZBH1) {
                starts = candidates;
              } else {
                // Each rank keeps the layer count of a 1F1B split, shared out
                // over its chunks.
                for (const ParallelConfig &split : candidates)
                  if (std::optional<ParallelConfig> chunked =
                          planner::chunkSplit(split, choice.kind, choice.v,
                                              policies.front()))
                    starts.push_back(std::move(*chunked));
              }
              for (ParallelConfig &start : starts) {
                start.schedule = choice.kind;
                start.virtualStages = choice.v;
                start.offload = offload;
                start.sharding = sharding;
                if (std::optional<ParallelConfig> fitted =
                        planner::fitRecompute(model, start, policies, *sched,
                                              options, {cap, tierCap},
                                              result.stageEvaluations))
                  toEvaluate.push_back({std::move(*fitted), sched});
              }
            }
            // Activation offload: forced on every candidate, or searched
            // beside each 1F1B candidate.
            if (request.activationOffload == ActivationOffloadMode::Search &&
                tierCap > 0) {
              size_t planned = toEvaluate.size();
              for (size_t k = 0; k < planned; ++k)
                if (!toEvaluate[k].second)
                  if (std::optional<ParallelConfig> offloading =
                          planner::searchActivationOffload(
                              model, costs, toEvaluate[k].first, options, cap,
                              tierCap, result.stageEvaluations))
                    toEvaluate.push_back({std::move(*offloading), nullptr});
            } else if (forcesActivationOffload) {
              // A split backward keeps a reloaded activation until its
              // deferred weight part: those schedules do not offload.
              llvm::erase_if(toEvaluate, [](const auto &entry) {
                return entry.first.schedule == ScheduleKind::ZBH1 ||
                       entry.first.schedule == ScheduleKind::ZBV;
              });
              for (auto &[config, sched] : toEvaluate) {
                int64_t n = config.numVirtualStages();
                config.activationOffload.assign(n, 0);
                for (int64_t c = 0; c < n; ++c)
                  config.activationOffload[c] =
                      request.activationOffload == ActivationOffloadMode::All
                          ? config.stages[c].numLayers
                      : c < int64_t(request.activationOffloadCounts.size())
                          ? request.activationOffloadCounts[c]
                          : 0;
              }
              // Counts fit the splits with one per stage and no more
              // offloaded layers than a stage has.
              if (request.activationOffload == ActivationOffloadMode::Counts)
                llvm::erase_if(toEvaluate, [&](const auto &entry) {
                  const ParallelConfig &config = entry.first;
                  if (int64_t(request.activationOffloadCounts.size()) !=
                      config.numVirtualStages())
                    return true;
                  for (int64_t c = 0; c < config.numVirtualStages(); ++c)
                    if (config.activationOffload[c] >
                        config.stages[c].numLayers)
                      return true;
                  return false;
                });
            }
            bool anyCandidate = !toEvaluate.empty();
            double bestHere = std::numeric_limits<double>::infinity();
            for (auto &[config, sched] : toEvaluate) {
              ++result.candidatesEvaluated;
              config.maxGradNorm = request.maxGradNorm;
              config.transfers = request.transfers;
              config.syncPeriod = request.syncPeriod;
              Plan plan =
                  sched ? evaluatePlan(model, machine, config, request.policy,
                                       *sched)
                        : evaluatePlan(model, machine, config, request.policy);
              if (plan.peakBytes() > cap || plan.peakOffloadedBytes() > tierCap)
                continue;
              ++result.feasiblePlans;
              // Prefer no (or less) offload unless offloading is faster.
              if (plan.time.total < bestWithLessOffload) {
                bestHere = std::min(bestHere, plan.time.total);
                feasible.push_back(std::move(plan));
              }
            }
            bestWithLessOffload = std::min(bestWithLessOffload, bestHere);
            // Remember the candidate that comes closest to fitting: the
            // smallest worst ratio of DDR (and offload tier) to its cap;
            // under the first policy searched (flat, or the fixed one).
            if (!anyCandidate && feasible.empty() &&
                sharding == shardings.front()) {
              ParallelConfig lean = solver.leastMemorySplit();
              double peak = 0;
              for (int64_t i = 0; i < p; ++i) {
                StageMemory mem =
                    computeStageMemory(model, lean, i, memoryOptions);
                peak = std::max(peak, double(mem.total()) / double(cap));
                if (mem.offloadedBytes > 0)
                  peak =
                      std::max(peak, tierCap > 0 ? double(mem.offloadedBytes) /
                                                       double(tierCap)
                                                 : 1e300);
              }
              if (peak < closestPeak) {
                closestPeak = peak;
                closest = std::move(lean);
              }
            }
          }
        }
      }
    }
  }

  if (feasible.empty()) {
    if (!closest) {
      std::string reason = structuralReason.empty()
                               ? "no pipeline depth / data-parallel width / "
                                 "micro-batch size matches the constraints"
                               : structuralReason;
      return makeError(llvm::formatv("no plan for {0} on {1} clusters with "
                                     "global batch {2}: {3}",
                                     model.name, request.clusters,
                                     request.globalBatch, reason));
    }
    Plan plan = evaluatePlan(model, machine, *closest, request.policy);
    const StageMemory &worst = plan.memory[plan.peakStage()];
    std::string tier;
    if (closest->offload != OffloadPolicy::None) {
      int64_t offloaded = plan.peakOffloadedBytes();
      tier = llvm::formatv("; the {0} offload tier holds {1} of {2} per "
                           "cluster{3}",
                           stringifyOffloadTierKind(machine.offload.kind),
                           formatBytes(offloaded), formatBytes(tierCap),
                           offloaded > tierCap ? " (too small)" : "")
                 .str();
    } else if (tierCap <= 0 && !request.offload) {
      tier = "; the machine file has no offload tier";
    }
    // A schedule other than 1F1B: its plans were derived from these 1F1B
    // splits and did not fit either.
    std::string kinds;
    if (!plan1F1B) {
      kinds = ", schedule ";
      for (const ScheduleChoice &choice : scheduleChoices) {
        if (&choice != &scheduleChoices.front())
          kinds += "/";
        kinds += schedule::stringifyScheduleKind(choice.kind).str() +
                 (choice.v > 1 ? " v=" + std::to_string(choice.v) : "");
      }
    }
    return makeError(llvm::formatv(
        "no plan for {0} fits {1} per cluster on {2} clusters (global batch "
        "{3}, sequence length {4}, policy {5}{9}); closest{10}: {6}; {7}{8}",
        model.name, formatBytes(cap), request.clusters, request.globalBatch,
        model.seqLen, stringifyLifecyclePolicy(request.policy),
        closest->describe(), describeStageMemory(worst, cap), tier, kinds,
        plan1F1B ? "" : " (under 1F1B)"));
  }

  // Fastest first; at equal step time less offload first.
  std::stable_sort(feasible.begin(), feasible.end(),
                   [](const Plan &a, const Plan &b) {
                     if (a.time.total != b.time.total)
                       return a.time.total < b.time.total;
                     return a.config.offload < b.config.offload;
                   });
  if (int64_t(feasible.size()) > request.topK)
    feasible.resize(request.topK);
  result.plans = std::move(feasible);
  return result;
}
