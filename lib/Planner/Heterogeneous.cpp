//===- Heterogeneous.cpp - Plans for classes of clusters ------------------===//
//
// Grolar plans pipeline and ZeRO data parallelism over pooled accelerators
// of different generations; HexiScale partitions asymmetrically, uneven
// layers per stage and uneven batch shares per replica. Here the planner's
// even candidates (planned on the slowest class with the least DDR of any)
// are laid out three ways on a machine with classes of clusters
// (MachineModel::classes) and each is priced class by class with the cost
// and memory models of MachineModel::classMachine:
//  - even: every rank the same work, as a planner blind to the classes
//    would run it; the slowest class sets the pace;
//  - replicas: replica-major ranks put each replica inside one class, and
//    each replica runs as many micro-batches as finish by a common time
//    (ParallelConfig::replicaMicroBatches; the gradient average is weighted
//    by the shares in the lowering);
//  - stages: stage-major ranks put each stage inside one class, and the
//    decoder layers are split in proportion to the classes' compute, then
//    balanced stage by stage on the cost model.
//
//===----------------------------------------------------------------------===//

#include "Heterogeneous.h"

#include "ratrain/Model/Limits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <numeric>

using namespace ratrain;
using namespace ratrain::planner;

namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The machine's classes, each priced as a machine of its own.
struct Classes {
  Classes(const MachineModel &machine, int64_t requestCap) : machine(machine) {
    if (machine.classes.empty()) {
      machines.push_back(machine);
      names.push_back(machine.name);
    } else {
      for (int64_t c = 0; c < int64_t(machine.classes.size()); ++c) {
        machines.push_back(machine.classMachine(c));
        names.push_back(machine.classes[c].name);
      }
    }
    for (int64_t c = 0; c < size(); ++c) {
      caps.push_back(requestCap > 0 ? requestCap
                                    : machines[c].cluster.ddrBytes);
      if (speed(c) < speed(slowest))
        slowest = c;
      if (caps[c] < caps[leastMemory])
        leastMemory = c;
    }
  }
  int64_t size() const { return int64_t(machines.size()); }
  double speed(int64_t c) const { return machines[c].cluster.peakFlopsF16; }
  int64_t classOfCluster(int64_t cluster) const {
    return machine.classes.empty() ? 0 : machine.classOfCluster(cluster);
  }

  const MachineModel &machine;
  std::vector<MachineModel> machines;
  std::vector<std::string> names;
  std::vector<int64_t> caps;
  int64_t slowest = 0;
  int64_t leastMemory = 0;
};

/// The candidate that missed the caps by the least, for the error when no
/// layout fits.
struct Misfit {
  double ratio = 0; ///< needed / cap of its worst stage (0: none yet)
  std::string text;
  void note(const ParallelConfig &config, const StageMemory &memory,
            int64_t cap, llvm::StringRef className, int64_t stage) {
    double r = double(memory.total()) / double(std::max<int64_t>(cap, 1));
    if (ratio > 0 && r >= ratio)
      return;
    ratio = r;
    text = llvm::formatv("{0}: class '{1}' (stage {2}): {3}", config.describe(),
                         className, stage, describeStageMemory(memory, cap))
               .str();
  }
};

/// Whether every stage of `plan`, run by class `c`, fits that class's DDR
/// and offload tier; notes the worst stage otherwise.
bool fitsClass(const Plan &plan, const Classes &classes, int64_t c,
               Misfit &misfit, llvm::ArrayRef<int64_t> stages = {}) {
  int64_t tier = classes.machines[c].offloadBytesPerCluster();
  for (int64_t s = 0; s < int64_t(plan.memory.size()); ++s) {
    if (!stages.empty() && !llvm::is_contained(stages, s))
      continue;
    const StageMemory &memory = plan.memory[s];
    if (memory.total() > classes.caps[c] ||
        (memory.offloadedBytes > 0 && memory.offloadedBytes > tier)) {
      misfit.note(plan.config, memory, classes.caps[c], classes.names[c], s);
      return false;
    }
  }
  return true;
}

double tokensPerSecond(const ModelConfig &model, const ParallelConfig &config,
                       double seconds) {
  return seconds > 0
             ? double(config.globalBatch()) * double(model.seqLen) / seconds
             : 0;
}

/// "0-3" or "5".
std::string formatRange(int64_t first, int64_t last) {
  return first == last ? std::to_string(first)
                       : llvm::formatv("{0}-{1}", first, last).str();
}

/// The runs of consecutive indices in [0, n) that `same(i, first)` keeps
/// together, each described by `describe(first, last)`, joined by ", ".
template <typename Same, typename Describe>
std::string describeRuns(int64_t n, Same same, Describe describe) {
  std::string text;
  for (int64_t first = 0; first < n;) {
    int64_t last = first;
    while (last + 1 < n && same(last + 1, first))
      ++last;
    text += (text.empty() ? "" : ", ") + describe(first, last);
    first = last + 1;
  }
  return text;
}

/// A 1F1B config whose stages run on different classes, priced: stage s's
/// timing from the machine of class timeClass[s], its memory checked
/// against the DDR of class memoryClass[s]; the pipeline of those stages
/// plus the largest exposed lifecycle of any class.
struct PricedStages {
  Plan plan;
  std::vector<double> work; ///< F + B + 2 p2p per stage
  bool fits = false;
};
PricedStages priceStages(const ModelConfig &model, const Classes &classes,
                         const ParallelConfig &config,
                         llvm::ArrayRef<int64_t> timeClass,
                         llvm::ArrayRef<int64_t> memoryClass,
                         LifecyclePolicy policy, Misfit &misfit) {
  PricedStages result;
  std::vector<Plan> perClass;
  for (int64_t c = 0; c < classes.size(); ++c)
    perClass.push_back(
        evaluatePlan(model, classes.machines[c], config, policy));
  Plan &plan = result.plan;
  plan = perClass[timeClass[0]];
  plan.config = config;
  double sumWork = 0, maxWork = 0, exposed = 0, recompute = 0;
  result.fits = true;
  for (int64_t s = 0; s < config.pipelineStages; ++s) {
    const Plan &own = perClass[timeClass[s]];
    plan.time.stages[s] = own.time.stages[s];
    plan.memory[s] = perClass[memoryClass[s]].memory[s];
    const StageTiming &t = own.time.stages[s];
    double work = t.forward + t.backward + 2 * t.p2p;
    result.work.push_back(work);
    sumWork += work;
    maxWork = std::max(maxWork, work);
    recompute = std::max(recompute, t.recompute);
    result.fits &= fitsClass(perClass[memoryClass[s]], classes, memoryClass[s],
                             misfit, {s});
  }
  for (const Plan &own : perClass)
    exposed = std::max(exposed, own.time.exposedLifecycle);
  int64_t m = config.numMicroBatches;
  plan.time.pipeline = sumWork + double(m - 1) * maxWork;
  plan.time.bubble = plan.time.pipeline - double(m) * maxWork;
  plan.time.exposedLifecycle = exposed;
  plan.time.recompute = recompute;
  plan.time.total = plan.time.pipeline + exposed;
  plan.tokensPerSecond = tokensPerSecond(model, config, plan.time.total);
  return result;
}

/// The even layout of `base`: every rank the same work, stage-major. A
/// stage runs at the pace of the slowest class among its clusters and must
/// fit the least DDR among them.
std::optional<Plan> evenLayout(const ModelConfig &model, const Classes &classes,
                               const Plan &base, LifecyclePolicy policy,
                               Misfit &misfit) {
  const ParallelConfig &config = base.config;
  int64_t pp = config.pipelineStages, dp = config.dataParallel;
  std::vector<int64_t> timeClass(pp), memoryClass(pp);
  for (int64_t s = 0; s < pp; ++s) {
    int64_t slowest = -1, least = -1;
    for (int64_t r = 0; r < dp; ++r) {
      int64_t c = classes.classOfCluster(config.clusterOf(s, r));
      if (slowest < 0 || classes.speed(c) < classes.speed(slowest))
        slowest = c;
      if (least < 0 || classes.caps[c] < classes.caps[least])
        least = c;
    }
    timeClass[s] = slowest;
    memoryClass[s] = least;
  }
  PricedStages priced = priceStages(model, classes, config, timeClass,
                                    memoryClass, policy, misfit);
  if (!priced.fits)
    return std::nullopt;
  std::string paces = describeRuns(
      pp,
      [&](int64_t s, int64_t first) {
        return timeClass[s] == timeClass[first];
      },
      [&](int64_t s, int64_t end) {
        return llvm::formatv("stage{0} {1} at class '{2}'", end > s ? "s" : "",
                             formatRange(s, end), classes.names[timeClass[s]])
            .str();
      });
  priced.plan.layout =
      llvm::formatv("even: every replica runs m = {0} and the stages split "
                    "the layers as on a homogeneous machine; each stage at "
                    "the pace of its slowest cluster ({1})",
                    config.numMicroBatches, paces)
          .str();
  return std::move(priced.plan);
}

/// The replicas layout of `base`: replica-major ranks, each replica inside
/// one class (every class count a multiple of pp); `forced` shares, or
/// shares chosen so that every replica finishes by the smallest common
/// time.
std::optional<Plan> replicasLayout(const ModelConfig &model,
                                   const Classes &classes, const Plan &base,
                                   LifecyclePolicy policy,
                                   llvm::ArrayRef<int64_t> forced,
                                   double evenSeconds, Misfit &misfit) {
  ParallelConfig config = base.config;
  int64_t pp = config.pipelineStages, dp = config.dataParallel;
  for (const ClusterClass &cls : classes.machine.classes)
    if (cls.count % pp != 0)
      return std::nullopt;
  // Uneven shares average gradients every step; partition levels are laid
  // out over consecutive clusters, which replica-major ranks are not.
  if (config.syncPeriod != 1 || config.sharding.weightLevel >= 0 ||
      config.sharding.gradLevel >= 0)
    return std::nullopt;
  config.replicaMajor = true;
  config.replicaMicroBatches.clear();
  int64_t total = forced.empty() ? base.config.totalMicroBatches()
                                 : std::accumulate(forced.begin(), forced.end(),
                                                   int64_t(0));
  std::vector<int64_t> replicaClass(dp);
  for (int64_t r = 0; r < dp; ++r)
    replicaClass[r] = classes.classOfCluster(r * pp);

  // Class c's replica with m micro-batches, priced on class c.
  std::map<std::pair<int64_t, int64_t>, Plan> priced;
  auto price = [&](int64_t c, int64_t m) -> const Plan & {
    auto [it, inserted] = priced.try_emplace({c, m});
    if (inserted) {
      ParallelConfig one = config;
      one.numMicroBatches = m;
      it->second = evaluatePlan(model, classes.machines[c], one, policy);
    }
    return it->second;
  };
  auto seconds = [&](int64_t c, int64_t m) { return price(c, m).time.total; };

  std::vector<int64_t> shares(forced.begin(), forced.end());
  if (shares.empty()) {
    // The most micro-batches a replica of class c finishes within tau (at
    // most the schedule limit).
    int64_t most = std::min<int64_t>(total, limits::kMaxMicroBatches);
    auto capacity = [&](int64_t c, double tau) -> int64_t {
      if (seconds(c, 1) > tau)
        return 0;
      int64_t lo = 1, hi = most;
      while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (seconds(c, mid) <= tau)
          lo = mid;
        else
          hi = mid - 1;
      }
      return lo;
    };
    std::vector<int64_t> replicasOfClass(classes.size(), 0);
    for (int64_t r = 0; r < dp; ++r)
      ++replicasOfClass[replicaClass[r]];
    auto fits = [&](double tau) {
      int64_t taken = 0;
      for (int64_t c = 0; c < classes.size(); ++c)
        if (replicasOfClass[c])
          taken += replicasOfClass[c] * std::max<int64_t>(1, capacity(c, tau));
      return taken >= total;
    };
    double lo = 0, hi = 0;
    for (int64_t c = 0; c < classes.size(); ++c)
      hi = std::max(hi, seconds(c, most));
    if (!fits(hi))
      return std::nullopt; // more than the schedule limit per replica
    for (int i = 0; i < 48 && hi - lo > 1e-9 * hi; ++i) {
      double mid = (lo + hi) / 2;
      (fits(mid) ? hi : lo) = mid;
    }
    for (int64_t r = 0; r < dp; ++r)
      shares.push_back(std::max<int64_t>(1, capacity(replicaClass[r], hi)));
    // Hand back the surplus from the replicas that finish last.
    int64_t surplus =
        std::accumulate(shares.begin(), shares.end(), int64_t(0)) - total;
    while (surplus > 0) {
      int64_t latest = -1;
      for (int64_t r = 0; r < dp; ++r)
        if (shares[r] > 1 &&
            (latest < 0 || seconds(replicaClass[r], shares[r]) >
                               seconds(replicaClass[latest], shares[latest])))
          latest = r;
      if (latest < 0)
        return std::nullopt; // more replicas than micro-batches
      --shares[latest];
      --surplus;
    }
    if (surplus < 0)
      return std::nullopt;
  }

  int64_t largest = *std::max_element(shares.begin(), shares.end());
  config.numMicroBatches = largest;
  if (llvm::any_of(shares, [&](int64_t m) { return m != largest; }))
    config.replicaMicroBatches = shares;
  else if (forced.empty())
    return std::nullopt; // the even layout, replica-major

  // Every replica runs the program of the largest share, whose buffers
  // (activations in flight) must fit each class's DDR; the slowest replica
  // sets the step.
  int64_t slowest = 0;
  for (int64_t r = 0; r < dp; ++r) {
    if (!fitsClass(price(replicaClass[r], largest), classes, replicaClass[r],
                   misfit))
      return std::nullopt;
    if (seconds(replicaClass[r], shares[r]) >
        seconds(replicaClass[slowest], shares[slowest]))
      slowest = r;
  }
  Plan plan = price(replicaClass[slowest], shares[slowest]);
  plan.memory = price(replicaClass[slowest], largest).memory;
  plan.config = config;
  plan.tokensPerSecond = tokensPerSecond(model, config, plan.time.total);
  std::string text = describeRuns(
      dp,
      [&](int64_t r, int64_t first) {
        return replicaClass[r] == replicaClass[first] &&
               shares[r] == shares[first];
      },
      [&](int64_t r, int64_t end) {
        return llvm::formatv(
                   "replica{0} {1} on class '{2}' run{3} {4} micro-batches "
                   "({5})",
                   end > r ? "s" : "", formatRange(r, end),
                   classes.names[replicaClass[r]], end > r ? "" : "s",
                   shares[r],
                   formatSeconds(seconds(replicaClass[r], shares[r])))
            .str();
      });
  plan.layout =
      llvm::formatv("replicas{0}: {1}", forced.empty() ? "" : " (forced)", text)
          .str();
  if (evenSeconds > 0)
    plan.layout +=
        llvm::formatv("; even shares: {0}", formatSeconds(evenSeconds)).str();
  return plan;
}

/// The stages layout of `base`: stage-major ranks, each stage inside one
/// class (every class count a multiple of dp); the decoder layers split in
/// proportion to the classes' compute, then moved one at a time off the
/// busiest stage while that shortens the step.
std::optional<Plan> stagesLayout(const ModelConfig &model,
                                 const Classes &classes, const Plan &base,
                                 LifecyclePolicy policy, double evenSeconds,
                                 Misfit &misfit) {
  ParallelConfig config = base.config;
  int64_t pp = config.pipelineStages, dp = config.dataParallel;
  int64_t layers = model.numLayers;
  if (pp < 2 || pp > layers)
    return std::nullopt;
  for (const ClusterClass &cls : classes.machine.classes)
    if (cls.count % dp != 0)
      return std::nullopt;
  config.replicaMajor = false;
  std::vector<int64_t> stageClass(pp);
  for (int64_t s = 0; s < pp; ++s)
    stageClass[s] = classes.classOfCluster(s * dp);
  if (llvm::all_equal(stageClass))
    return std::nullopt;

  // Layers in proportion to compute (largest remainders), at least one each.
  double sum = 0;
  for (int64_t s = 0; s < pp; ++s)
    sum += classes.speed(stageClass[s]);
  std::vector<int64_t> split(pp);
  std::vector<std::pair<double, int64_t>> remainders;
  int64_t assigned = 0;
  for (int64_t s = 0; s < pp; ++s) {
    double exact = double(layers) * classes.speed(stageClass[s]) / sum;
    split[s] = std::max<int64_t>(1, int64_t(exact));
    assigned += split[s];
    remainders.push_back({exact - double(int64_t(exact)), s});
  }
  llvm::sort(remainders, [](auto a, auto b) { return a.first > b.first; });
  for (size_t i = 0; assigned < layers; i = (i + 1) % remainders.size()) {
    ++split[remainders[i].second];
    ++assigned;
  }
  while (assigned > layers) {
    int64_t most = std::max_element(split.begin(), split.end()) - split.begin();
    --split[most];
    --assigned;
  }

  auto price = [&](llvm::ArrayRef<int64_t> layersPerStage) {
    ParallelConfig trial = config;
    int64_t first = 0;
    for (int64_t s = 0; s < pp; ++s) {
      trial.stages[s] = {first, layersPerStage[s]};
      first += layersPerStage[s];
      if (!trial.activationOffload.empty())
        trial.activationOffload[s] =
            std::min(trial.activationOffload[s], layersPerStage[s]);
    }
    return priceStages(model, classes, trial, stageClass, stageClass, policy,
                       misfit);
  };

  PricedStages best = price(split);
  for (int64_t moves = 0; moves < 4 * layers; ++moves) {
    int64_t busiest = std::max_element(best.work.begin(), best.work.end()) -
                      best.work.begin();
    if (split[busiest] <= 1)
      break;
    int64_t target = -1;
    for (int64_t n : {busiest - 1, busiest + 1})
      if (n >= 0 && n < pp && (target < 0 || best.work[n] < best.work[target]))
        target = n;
    std::vector<int64_t> trial = split;
    --trial[busiest];
    ++trial[target];
    PricedStages next = price(trial);
    if (!(next.fits || !best.fits) ||
        next.plan.time.total >= best.plan.time.total)
      break;
    split = std::move(trial);
    best = std::move(next);
  }
  if (!best.fits)
    return std::nullopt;

  std::string text = describeRuns(
      pp,
      [&](int64_t s, int64_t first) {
        return stageClass[s] == stageClass[first];
      },
      [&](int64_t s, int64_t end) {
        ParallelConfig part;
        for (int64_t k = s; k <= end; ++k)
          part.stages.push_back({0, split[k]});
        return llvm::formatv("stage{0} {1} on class '{2}' with {3} layers",
                             end > s ? "s" : "", formatRange(s, end),
                             classes.names[stageClass[s]],
                             formatLayerSplit(part))
            .str();
      });
  Plan plan = std::move(best.plan);
  plan.layout = llvm::formatv("stages: {0}", text).str();
  if (evenSeconds > 0)
    plan.layout +=
        llvm::formatv("; an even split: {0}", formatSeconds(evenSeconds)).str();
  return plan;
}

/// `candidate`, and unless `fixed` (forced shares or micro-batch size) or its
/// micro-batches are single sequences, the same with b = 1 and b times as
/// many micro-batches.
std::vector<Plan> microBatchVariants(const Plan &candidate, bool fixed) {
  std::vector<Plan> variants = {candidate};
  const ParallelConfig &config = candidate.config;
  if (fixed || config.microBatchSize == 1 ||
      config.numMicroBatches * config.microBatchSize > limits::kMaxMicroBatches)
    return variants;
  Plan single = candidate;
  single.config.numMicroBatches *= config.microBatchSize;
  single.config.microBatchSize = 1;
  variants.push_back(std::move(single));
  return variants;
}

/// Forced dp shares: the request's dp and micro-batch size they imply. The
/// errors name the option.
llvm::Error checkForcedShares(const PlanRequest &request, int64_t &dp,
                              int64_t &microBatchSize) {
  llvm::ArrayRef<int64_t> shares = request.dpShares;
  dp = int64_t(shares.size());
  int64_t sum = std::accumulate(shares.begin(), shares.end(), int64_t(0));
  if (request.dataParallel && *request.dataParallel != dp)
    return makeError(llvm::formatv("dp-shares: {0} shares for dp = {1}", dp,
                                   *request.dataParallel));
  if (request.clusters % dp != 0)
    return makeError(
        llvm::formatv("dp-shares: {0} replicas do not divide {1} clusters", dp,
                      request.clusters));
  if (request.globalBatch % sum != 0)
    return makeError(llvm::formatv(
        "dp-shares: the global batch of {0} sequences is not a multiple of "
        "the shares' {1} micro-batches",
        request.globalBatch, sum));
  microBatchSize = request.globalBatch / sum;
  if (request.microBatchSize && *request.microBatchSize != microBatchSize)
    return makeError(llvm::formatv(
        "dp-shares: {0} micro-batches of the global batch {1} have {2} "
        "sequences, not the requested micro-batch size {3}",
        sum, request.globalBatch, microBatchSize, *request.microBatchSize));
  if (request.syncPeriod != 1)
    return makeError("dp-shares: replicas of uneven shares average "
                     "gradients every step (sync period 1)");
  return llvm::Error::success();
}

} // namespace

llvm::Expected<PlanResult>
planner::planHeterogeneous(const ModelConfig &model,
                           const MachineModel &machine,
                           const PlanRequest &request) {
  using Layout = PlanRequest::ClassLayout;
  bool classed = machine.heterogeneous();
  if (classed && request.clusters != machine.totalClusters())
    return makeError(llvm::formatv(
        "machine '{0}' has classes of clusters: it is planned whole, "
        "{1} clusters, not {2}",
        machine.name, machine.totalClusters(), request.clusters));
  if ((request.schedule &&
       *request.schedule != schedule::ScheduleKind::OneFOneB) ||
      request.searchSchedules ||
      (request.virtualStages && *request.virtualStages != 1))
    return makeError(classed ? "a machine with classes of clusters is "
                               "planned for the 1f1b schedule only"
                             : "dp-shares needs the 1f1b schedule");

  PlanRequest inner = request;
  inner.dpShares.clear();
  inner.schedule = schedule::ScheduleKind::OneFOneB;
  inner.virtualStages = 1;
  inner.topK = std::max<int64_t>(request.topK, 32);
  int64_t forcedDp = 0, forcedMicroBatch = 0;
  bool forced = !request.dpShares.empty();
  if (forced) {
    if (llvm::Error error =
            checkForcedShares(request, forcedDp, forcedMicroBatch))
      return std::move(error);
    inner.dataParallel = forcedDp;
    inner.microBatchSize = forcedMicroBatch;
    int64_t largest =
        *std::max_element(request.dpShares.begin(), request.dpShares.end());
    inner.globalBatch = forcedDp * forcedMicroBatch * largest;
  }

  Classes classes(machine, request.memoryCapBytes);
  MachineModel baseMachine = machine;
  if (classed) {
    baseMachine = classes.machines[classes.slowest];
    inner.memoryCapBytes = classes.caps[classes.leastMemory];
  }
  llvm::Expected<PlanResult> base = planTraining(model, baseMachine, inner);
  if (!base) {
    if (!classed)
      return base.takeError();
    return makeError(llvm::formatv(
        "no plan fits class '{0}' ({1} of DDR per cluster, the least of "
        "machine '{2}', planned at the speed of class '{3}'): {4}",
        classes.names[classes.leastMemory],
        formatBytes(classes.caps[classes.leastMemory]), machine.name,
        classes.names[classes.slowest], llvm::toString(base.takeError())));
  }

  PlanResult result = std::move(*base);
  std::vector<Plan> plans;
  if (!classed) {
    // Forced shares on a homogeneous machine: the slowest replica (the
    // largest share) sets the step the base plans were priced at.
    for (Plan plan : result.plans) {
      plan.config.replicaMicroBatches = request.dpShares;
      plan.tokensPerSecond =
          tokensPerSecond(model, plan.config, plan.time.total);
      plan.layout =
          "replicas (forced): dp shares " + formatDpShares(plan.config);
      plans.push_back(std::move(plan));
    }
  } else {
    Misfit misfit;
    for (const Plan &candidate : result.plans) {
      std::optional<Plan> even =
          evenLayout(model, classes, candidate, request.policy, misfit);
      double evenSeconds = even ? even->time.total : 0;
      if (even && !forced &&
          (request.classLayout == Layout::Search ||
           request.classLayout == Layout::Even))
        plans.push_back(*even);
      // Uneven shares need micro-batches to deal: also with single
      // sequences (b = 1) where the candidate has more (its activations,
      // and so its memory, only shrink).
      if (forced || request.classLayout == Layout::Search ||
          request.classLayout == Layout::Replicas)
        for (const Plan &variant : microBatchVariants(
                 candidate, forced || request.microBatchSize.has_value()))
          if (std::optional<Plan> plan =
                  replicasLayout(model, classes, variant, request.policy,
                                 request.dpShares, evenSeconds, misfit))
            plans.push_back(std::move(*plan));
      if (!forced && (request.classLayout == Layout::Search ||
                      request.classLayout == Layout::Stages))
        if (std::optional<Plan> plan = stagesLayout(
                model, classes, candidate, request.policy, evenSeconds, misfit))
          plans.push_back(std::move(*plan));
      result.candidatesEvaluated += 3;
    }
    if (plans.empty()) {
      llvm::StringRef layout =
          forced                                    ? "replicas"
          : request.classLayout == Layout::Even     ? "even"
          : request.classLayout == Layout::Replicas ? "replicas"
          : request.classLayout == Layout::Stages   ? "stages"
                                                    : "any";
      if (misfit.text.empty())
        return makeError(llvm::formatv(
            "no {0} layout applies on machine '{1}': replicas need every "
            "class's count to be a multiple of pp, stages a multiple of dp",
            layout, machine.name));
      return makeError(llvm::formatv(
          "no {0} layout fits every class of machine '{1}'; closest: {2}",
          layout, machine.name, misfit.text));
    }
  }
  llvm::stable_sort(plans, [](const Plan &a, const Plan &b) {
    return a.time.total < b.time.total;
  });
  if (int64_t(plans.size()) > request.topK)
    plans.resize(request.topK);
  result.plans = std::move(plans);
  result.feasiblePlans = int64_t(result.plans.size());
  return result;
}
