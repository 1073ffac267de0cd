//===- FromPlan.cpp - A simulator program from a training plan ------------===//

#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/SyntheticSchedule.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>

using namespace ratrain;
using namespace ratrain::sim;

double sim::modelFlopsPerIteration(const ModelConfig &model,
                                   const ParallelConfig &config) {
  double forwardPerToken =
      static_cast<double>(model.numLayers) *
          (model.layerMatmulFlopsPerToken() + model.attentionFlopsPerToken()) +
      model.headFlopsPerToken();
  double tokens = static_cast<double>(config.globalBatch()) *
                  static_cast<double>(model.seqLen);
  return 3.0 * forwardPerToken * tokens;
}

namespace {
/// The data-parallel group of a stage (cluster id = stage * d + replica: d
/// contiguous clusters) on the machine's levels, and the groups of its
/// hierarchical partitions.
struct DataParallelLevels {
  const MachineModel &machine;
  CollectiveAlgorithm algorithm;
  int64_t d;
  std::array<int64_t, kMaxNetworkLevels> members;

  DataParallelLevels(const MachineModel &machine, CollectiveAlgorithm algorithm,
                     int64_t d)
      : machine(machine), algorithm(algorithm), d(d),
        members(groupLevels(machine, d)) {}

  /// Members of the group inside one level-`level` group (g_L).
  int64_t inside(int64_t level) const {
    int64_t g = 1;
    for (int64_t l = 0; l <= level && l < int64_t(kMaxNetworkLevels); ++l)
      g *= members[l];
    return g;
  }
  CollectiveSpec make(const std::array<int64_t, kMaxNetworkLevels> &perLevel,
                      WireFormat wire, int64_t elementBytes) const {
    CollectiveSpec spec;
    spec.membersPerLevel = perLevel;
    spec.groupSize = 1;
    spec.membersPerNode = 1;
    for (unsigned l = 0; l < kMaxNetworkLevels; ++l) {
      spec.groupSize *= perLevel[l];
      if (l < machine.nodeLevels())
        spec.membersPerNode *= perLevel[l];
    }
    spec.algorithm = algorithm;
    spec.wire = wire;
    spec.elementBytes = elementBytes;
    return spec;
  }
  /// The whole group.
  CollectiveSpec whole(WireFormat wire, int64_t elementBytes) const {
    return make(members, wire, elementBytes);
  }
  /// The members inside one level-`level` group.
  CollectiveSpec within(int64_t level, WireFormat wire,
                        int64_t elementBytes) const {
    std::array<int64_t, kMaxNetworkLevels> perLevel{1, 1, 1, 1};
    for (int64_t l = 0; l <= level; ++l)
      perLevel[l] = members[l];
    return make(perLevel, wire, elementBytes);
  }
  /// The members with the same index inside their level-`level` group; the
  /// g_L such groups run at once.
  CollectiveSpec across(int64_t level, WireFormat wire,
                        int64_t elementBytes) const {
    std::array<int64_t, kMaxNetworkLevels> perLevel = members;
    for (int64_t l = 0; l <= level; ++l)
      perLevel[l] = 1;
    CollectiveSpec spec = make(perLevel, wire, elementBytes);
    for (unsigned l = 0; l < kMaxNetworkLevels; ++l)
      spec.concurrentGroups[l] = inside(std::min<int64_t>(l, level));
    return spec;
  }
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

/// Checks `config.sharding` against the machine's levels and the ZeRO
/// stage.
static llvm::Error checkSharding(const MachineModel &machine,
                                 const ParallelConfig &config) {
  const ShardingPolicy &policy = config.sharding;
  const int64_t levels = int64_t(machine.networkLevels().size());
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  for (auto [name, level] :
       {std::pair<const char *, int64_t>{"weight", policy.weightLevel},
        {"gradient", policy.gradLevel}})
    if (level < -1 || level >= levels)
      return fail(llvm::formatv("{0} partition level {1}: machine '{2}' has "
                                "network levels 0..{3}",
                                name, level, machine.name, levels - 1));
  if (policy.weightLevel >= 0 && config.zero < ZeroStage::Parameters)
    return fail(llvm::formatv("a weight partition (level {0}) needs ZeRO-3, "
                              "the plan has ZeRO-{1}",
                              policy.weightLevel,
                              stringifyZeroStage(config.zero)));
  if (policy.gradLevel >= 0 && config.zero < ZeroStage::Gradients)
    return fail(llvm::formatv("a gradient partition (level {0}) needs ZeRO-2 "
                              "or 3, the plan has ZeRO-{1}",
                              policy.gradLevel,
                              stringifyZeroStage(config.zero)));
  return llvm::Error::success();
}

llvm::Expected<Synthetic1F1BConfig> sim::planToSyntheticConfig(
    const ModelConfig &model, const MachineModel &machine,
    const ParallelConfig &config, const PlanProgramOptions &options) {
  if (llvm::Error error = config.validate(model))
    return std::move(error);
  if (llvm::Error error = checkSharding(machine, config))
    return std::move(error);
  CostModel costs(model, machine);
  // The buffers of the runtime that runs the placement (gpu-style keeps a
  // whole-stage FP32 gradient buffer and optimizer workspace).
  const MemoryOptions memoryOptions =
      MemoryOptions::forMachine(machine, options.policy);
  const int64_t p = config.numVirtualStages(), d = config.dataParallel;
  const bool plain1F1B = config.schedule == schedule::ScheduleKind::OneFOneB &&
                         config.virtualStages == 1;
  // Other schedules: the rank's memory (its chunks together) goes on its
  // first chunk.
  std::vector<StageMemory> rankMemory;
  std::vector<bool> rankSeen(config.pipelineStages, false);
  if (!plain1F1B)
    rankMemory = computeMemory(model, config, memoryOptions);
  const int64_t b = config.microBatchSize;
  const bool zero = config.zero != ZeroStage::None && d > 1;

  Synthetic1F1BConfig result;
  result.stages = p; // virtual stages
  result.microBatches = config.numMicroBatches;
  result.dataParallel = d;
  result.activationBytes = p > 1 ? costs.pipelineMessageBytes(b) : 0;
  result.rendezvousMessages = config.transfers == TransferPolicy::TwoSided;
  if (model.tieEmbeddings)
    result.tiedEmbeddingBytes =
        getDTypeBytes(model.dtype) * model.vocab * model.hidden;
  result.pipelineLink =
      costs.pipelineLink(config) == ratrain::LinkClass::IntraNode
          ? LinkClass::IntraNode
          : LinkClass::InterNode;
  result.syncKind =
      zero ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
  result.syncAlgorithm = options.algorithm.value_or(machine.network.collective);
  const int64_t perNode = std::max<int64_t>(1, machine.clustersPerNode);
  result.dpMembersPerNode = (d % perNode == 0 || perNode % d == 0)
                                ? std::min(d, perNode)
                                : std::gcd(d, perNode);
  result.placement = options.policy == LifecyclePolicy::RATrain
                         ? LifecyclePlacement::PerLayer
                         : LifecyclePlacement::WholeModel;
  // Hierarchical partitioning and quantized wires (ShardingPolicy): the
  // groups of the ZeRO collectives on the machine's levels.
  const ShardingPolicy &sharding = config.sharding;
  const bool zero3 = zero && config.zero >= ZeroStage::Parameters;
  const bool sharded = zero && !sharding.isDefault();
  const DataParallelLevels dpLevels(machine, result.syncAlgorithm, d);
  // g_L of the weight and gradient partitions (d: none).
  int64_t weightGroup = d, gradGroup = d;
  bool finalSync = true;
  if (sharded) {
    const WireFormat ww = sharding.weightWire, gw = sharding.gradWire;
    if (zero3 && sharding.weightLevel >= 0) {
      weightGroup = dpLevels.inside(sharding.weightLevel);
      result.viewGatherSpec = dpLevels.within(sharding.weightLevel, ww, 2);
      if (weightGroup < d)
        result.primaryGatherSpec = dpLevels.across(sharding.weightLevel, ww, 2);
    } else {
      result.viewGatherSpec = dpLevels.whole(ww, 2);
    }
    if (config.zero >= ZeroStage::Gradients && sharding.gradLevel >= 0) {
      // After the last micro-batch: inside the level-L group into a
      // partition of 1/g_L, then the partition across the level-L groups
      // (none when g_L = d).
      gradGroup = dpLevels.inside(sharding.gradLevel);
      result.partitionGradSpec = dpLevels.within(sharding.gradLevel, gw, 2);
      finalSync = gradGroup < d;
      result.gradSyncSpec = dpLevels.across(sharding.gradLevel, gw, 2);
    } else {
      result.gradSyncSpec = dpLevels.whole(gw, 2);
    }
  }
  result.gradientStream = zero3 ? 1 : 0;
  result.clipGradients = config.maxGradNorm > 0;
  const bool partial = config.syncPeriod > 1 && d > 1 && !zero;
  if (partial)
    result.syncPeriod = config.syncPeriod;
  result.tokensPerIteration = static_cast<double>(config.globalBatch()) *
                              static_cast<double>(model.seqLen);
  result.modelFlopsPerIteration = modelFlopsPerIteration(model, config);

  const double tokensPerMicroBatch =
      static_cast<double>(b) * static_cast<double>(model.seqLen);
  const double layerForwardFlops =
      (model.layerMatmulFlopsPerToken() + model.attentionFlopsPerToken()) *
      tokensPerMicroBatch;
  for (int64_t i = 0; i < p; ++i) {
    const StageLayers &layers = config.stages[i];
    const RecomputePolicy recompute = config.recompute[i];
    SyntheticStage stage;
    stage.layers = layers.numLayers;
    stage.firstLayer = layers.firstLayer;
    stage.forwardSeconds = costs.layerForward(b);
    stage.backwardSeconds = costs.layerBackward(b);
    stage.backwardWeightSeconds = costs.layerBackwardWeight(b);
    stage.deferredBytesPerLayer =
        layerDeferredBytes(model, b, recompute, memoryOptions);
    stage.recomputeSeconds = costs.layerRecompute(b, recompute);
    stage.forwardFlops = layerForwardFlops;
    stage.backwardFlops = 2 * layerForwardFlops;
    double extraForward = 0, extraBackward = 0;
    double extraWeight = 0;
    if (i == 0) {
      extraForward += costs.embeddingForward(b);
      extraBackward += costs.embeddingBackward(b);
      extraWeight += costs.embeddingBackward(b);
    }
    if (i == p - 1) {
      extraForward += costs.headForward(b);
      extraBackward += costs.headBackward(b);
      extraWeight += costs.headBackwardWeight(b);
    }
    stage.extraForwardSeconds = extraForward;
    stage.extraBackwardSeconds = extraBackward;
    stage.extraBackwardWeightSeconds = extraWeight;

    // Lifecycle per layer; the stage's embedding/head parameters are spread
    // evenly over its layers.
    const int64_t params = stageParams(model, config, i);
    const int64_t paramsPerLayer =
        (params + layers.numLayers - 1) / layers.numLayers;
    const int64_t updated =
        zero ? (paramsPerLayer + d - 1) / d : paramsPerLayer;
    stage.updateSeconds = costs.optimizerUpdate(
        updated, costs.averagesInUpdate(config, chunkRank(config, i)));
    if (config.maxGradNorm > 0)
      stage.gradSquaresSeconds =
          costs.gradSquares(zero ? (params + d - 1) / d : params);
    stage.viewCastSeconds = costs.viewCast(updated);
    stage.gradientBytesPerLayer = 2 * paramsPerLayer;
    if (partial) {
      // No gradient sync: the fp32 masters are averaged in their phase.
      stage.gradientBytesPerLayer = 0;
      stage.averageBytesPerLayer = 4 * paramsPerLayer;
    }
    if (result.partitionGradSpec) {
      stage.partitionGradientBytesPerLayer = 2 * paramsPerLayer;
      stage.gradientBytesPerLayer =
          finalSync ? 2 * ceilDiv(paramsPerLayer, gradGroup) : 0;
    }
    // ZeRO 1/2 gather the updated views once; ZeRO-3 before every use (and
    // with a secondary partition the secondary shard at the first use).
    stage.gatherBytesPerLayer = zero && !zero3 ? 2 * paramsPerLayer : 0;
    stage.parameterGatherBytesPerLayer = zero3 ? 2 * paramsPerLayer : 0;
    stage.primaryGatherBytesPerLayer =
        result.primaryGatherSpec ? 2 * ceilDiv(paramsPerLayer, weightGroup) : 0;
    stage.offloadBytesPerLayer =
        offloadedBytesPerParam(model, config.offload) * updated;

    stage.storedActivationBytesPerLayer =
        layerActivationBytes(model, b, recompute, memoryOptions);
    stage.offloadedLayers = config.offloadedLayers(i);
    // A storage tier's host cache: the link at the blend of both bandwidths
    // for the share of the stage's tier bytes it holds (tierCacheShares).
    if (machine.offload.hasHostCache()) {
      TierCacheShares shares = tierCacheShares(costs, config, i);
      // Weighted by the bytes each moves per step.
      double states = double(stage.offloadBytesPerLayer) *
                      double(config.stages[i].numLayers),
             acts = double(layerActivationBytes(model, b, RecomputePolicy::None,
                                                memoryOptions)) *
                    double(stage.offloadedLayers) *
                    double(config.numMicroBatches);
      double total = states + acts;
      double cached =
          total > 0
              ? (shares.states * states + shares.activations * acts) / total
              : 0;
      if (cached > 0)
        stage.offloadBandwidth =
            1.0 / (cached / machine.offload.hostCacheBandwidth +
                   (1 - cached) / machine.offload.bandwidth);
    }
    if (stage.offloadedLayers > 0)
      stage.activationOffloadBytes =
          layerActivationBytes(model, b, RecomputePolicy::None, memoryOptions);
    // As the lifecycle pass picks it: one backward ahead when one backward
    // hides a reload.
    stage.activationPrefetch =
        costs.layerBackward(b) >= costs.activationTransfer(b)
            ? 1
            : kMaxActivationPrefetch;
    if (plain1F1B) {
      StageMemory memory = computeStageMemory(model, config, i, memoryOptions);
      stage.residentBytes = memory.total() - memory.activations;
      stage.assignedPeakBytes = memory.total();
    } else if (int64_t rank = chunkRank(config, i); !rankSeen[rank]) {
      rankSeen[rank] = true;
      const StageMemory &memory = rankMemory[rank];
      stage.residentBytes = memory.total() - memory.activations;
      stage.assignedPeakBytes = memory.total();
    }
    result.perStage.push_back(stage);
  }
  return result;
}

llvm::Expected<SimProgram>
sim::buildProgramFromPlan(const ModelConfig &model, const MachineModel &machine,
                          const ParallelConfig &config,
                          const PlanProgramOptions &options) {
  llvm::Expected<Synthetic1F1BConfig> synthetic =
      planToSyntheticConfig(model, machine, config, options);
  if (!synthetic)
    return synthetic.takeError();
  SimProgram program;
  if (config.schedule == schedule::ScheduleKind::OneFOneB &&
      config.virtualStages == 1) {
    program = buildSynthetic1F1B(*synthetic);
  } else {
    llvm::Expected<schedule::PipelineSchedule> generated =
        schedule::generateSchedule(config.schedule, config.pipelineStages,
                                   config.virtualStages,
                                   config.numMicroBatches);
    if (!generated)
      return generated.takeError();
    program = buildSyntheticSchedule(*synthetic, *generated);
  }
  program.name = llvm::formatv("{0} {1} ({2})", model.name, config.describe(),
                               stringifyLifecyclePolicy(options.policy))
                     .str();
  const int64_t perNode = std::max<int64_t>(1, machine.clustersPerNode);
  program.stageReplicasPerNode = std::min(config.dataParallel, perNode);
  program.sixteenBitGradients = getDTypeBytes(model.dtype) < 4;
  program.replicaMajor = config.replicaMajor;
  return program;
}

llvm::Expected<std::vector<sim::RankGroupProgram>> sim::buildRankGroupPrograms(
    const ModelConfig &model, const MachineModel &machine,
    const ParallelConfig &config, const PlanProgramOptions &options) {
  std::vector<RankGroupProgram> groups;
  auto classOf = [&](int64_t cluster) {
    return machine.classes.empty() ? int64_t(0)
                                   : machine.classOfCluster(cluster);
  };
  auto classMachine = [&](int64_t c) {
    return machine.classes.empty() ? machine : machine.classMachine(c);
  };
  auto className = [&](int64_t c) {
    return machine.classes.empty() ? machine.name : machine.classes[c].name;
  };
  int64_t pp = config.pipelineStages, dp = config.dataParallel;

  // Stages on different classes (stage-major ranks).
  bool stagesDiffer = false, replicasDiffer = false;
  for (int64_t s = 0; s < pp; ++s)
    for (int64_t r = 0; r < dp; ++r) {
      stagesDiffer |=
          classOf(config.clusterOf(s, r)) != classOf(config.clusterOf(0, r));
      replicasDiffer |=
          classOf(config.clusterOf(s, r)) != classOf(config.clusterOf(s, 0));
    }
  if (stagesDiffer && (replicasDiffer || !config.replicaMicroBatches.empty()))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: both the stages and the replicas of the plan "
                      "span classes of clusters; the simulator prices one "
                      "or the other",
                      config.describe()));
  if (stagesDiffer) {
    if (config.schedule != schedule::ScheduleKind::OneFOneB ||
        config.virtualStages != 1)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "stages on different classes of clusters are simulated for 1f1b "
          "only");
    // Each stage's costs from its class; the rest from the slowest class.
    int64_t slowest = 0;
    std::vector<Synthetic1F1BConfig> perClass;
    for (int64_t c = 0; c < int64_t(machine.classes.size()); ++c) {
      llvm::Expected<Synthetic1F1BConfig> synthetic =
          planToSyntheticConfig(model, classMachine(c), config, options);
      if (!synthetic)
        return synthetic.takeError();
      perClass.push_back(std::move(*synthetic));
      if (machine.classes[c].cluster.peakFlopsF16 <
          machine.classes[slowest].cluster.peakFlopsF16)
        slowest = c;
    }
    Synthetic1F1BConfig spliced = perClass[slowest];
    for (int64_t s = 0; s < pp; ++s)
      spliced.perStage[s] =
          perClass[classOf(config.clusterOf(s, 0))].perStage[s];
    RankGroupProgram group;
    group.machine = classMachine(slowest);
    group.program = buildSynthetic1F1B(spliced);
    group.program.name =
        llvm::formatv("{0} {1} ({2})", model.name, config.describe(),
                      stringifyLifecyclePolicy(options.policy))
            .str();
    group.program.stageReplicasPerNode =
        std::min(dp, std::max<int64_t>(1, machine.clustersPerNode));
    group.program.sixteenBitGradients = getDTypeBytes(model.dtype) < 4;
    for (int64_t s = 0; s < pp;) {
      int64_t end = s, c = classOf(config.clusterOf(s, 0));
      while (end + 1 < pp && classOf(config.clusterOf(end + 1, 0)) == c)
        ++end;
      group.label +=
          llvm::formatv("{0}stages {1}-{2} on class '{3}'",
                        group.label.empty() ? "" : ", ", s, end, className(c))
              .str();
      s = end + 1;
    }
    groups.push_back(std::move(group));
    return groups;
  }

  // Replicas: one program per distinct (class, share).
  std::vector<std::pair<int64_t, int64_t>> seen;
  for (int64_t r = 0; r < dp; ++r) {
    std::pair<int64_t, int64_t> key = {classOf(config.clusterOf(0, r)),
                                       config.replicaShare(r)};
    if (llvm::is_contained(seen, key))
      continue;
    seen.push_back(key);
    ParallelConfig own = config;
    own.numMicroBatches = key.second;
    own.replicaMicroBatches.clear();
    RankGroupProgram group;
    group.machine = classMachine(key.first);
    llvm::Expected<SimProgram> program =
        buildProgramFromPlan(model, group.machine, own, options);
    if (!program)
      return program.takeError();
    group.program = std::move(*program);
    if (replicasDiffer || !config.replicaMicroBatches.empty()) {
      std::vector<int64_t> members;
      for (int64_t q = 0; q < dp; ++q)
        if (classOf(config.clusterOf(0, q)) == key.first &&
            config.replicaShare(q) == key.second)
          members.push_back(q);
      group.label = llvm::formatv("class '{0}', {1} replica{2} from {3}, {4} "
                                  "micro-batches",
                                  className(key.first), members.size(),
                                  members.size() == 1 ? "" : "s",
                                  members.front(), key.second)
                        .str();
    }
    groups.push_back(std::move(group));
  }
  return groups;
}
