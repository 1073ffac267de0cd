//===- MemoryModel.cpp - Per-stage DDR accounting -------------------------===//
//
// The formulas are written down in docs/planner.md; the unit tests in
// test/unit/Planner check them against hand-computed values.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Planner/MemoryModel.h"
#include "ratrain/Planner/Planner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>

using namespace ratrain;

llvm::StringRef ratrain::stringifyRecomputePolicy(RecomputePolicy policy) {
  switch (policy) {
  case RecomputePolicy::None:
    return "none";
  case RecomputePolicy::Selective:
    return "selective";
  case RecomputePolicy::Full:
    return "full";
  }
  llvm_unreachable("unknown recompute policy");
}

std::optional<RecomputePolicy>
ratrain::parseRecomputePolicy(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<RecomputePolicy>>(name)
      .Case("none", RecomputePolicy::None)
      .Case("selective", RecomputePolicy::Selective)
      .Case("full", RecomputePolicy::Full)
      .Default(std::nullopt);
}

llvm::StringRef ratrain::stringifyZeroStage(ZeroStage stage) {
  switch (stage) {
  case ZeroStage::None:
    return "0";
  case ZeroStage::Optimizer:
    return "1";
  case ZeroStage::Gradients:
    return "2";
  case ZeroStage::Parameters:
    return "3";
  }
  llvm_unreachable("unknown ZeRO stage");
}

std::optional<ZeroStage> ratrain::parseZeroStage(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ZeroStage>>(name)
      .Cases({"0", "zero0", "none"}, ZeroStage::None)
      .Cases({"1", "zero1"}, ZeroStage::Optimizer)
      .Cases({"2", "zero2"}, ZeroStage::Gradients)
      .Cases({"3", "zero3"}, ZeroStage::Parameters)
      .Default(std::nullopt);
}

llvm::StringRef ratrain::stringifyWireFormat(WireFormat wire) {
  switch (wire) {
  case WireFormat::Native:
    return "native";
  case WireFormat::Int8:
    return "int8";
  case WireFormat::Int4:
    return "int4";
  }
  llvm_unreachable("unknown wire format");
}

std::optional<WireFormat> ratrain::parseWireFormat(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<WireFormat>>(name)
      .Case("native", WireFormat::Native)
      .Case("int8", WireFormat::Int8)
      .Case("int4", WireFormat::Int4)
      .Default(std::nullopt);
}

double ratrain::wireBytesPerElement(WireFormat wire, int64_t elemBytes,
                                    int64_t block) {
  double scale = 4.0 / double(block);
  switch (wire) {
  case WireFormat::Native:
    return double(elemBytes);
  case WireFormat::Int8:
    return 1.0 + scale;
  case WireFormat::Int4:
    return 0.5 + scale;
  }
  llvm_unreachable("unknown wire format");
}

std::string ShardingPolicy::describe() const {
  std::string text;
  if (weightLevel >= 0)
    text += " weight-partition=" + std::to_string(weightLevel);
  if (gradLevel >= 0)
    text += " grad-partition=" + std::to_string(gradLevel);
  if (weightWire != WireFormat::Native)
    text += " weight-wire=" + stringifyWireFormat(weightWire).str();
  if (gradWire != WireFormat::Native)
    text += " grad-wire=" + stringifyWireFormat(gradWire).str();
  return text;
}

std::optional<ShardingPolicy> ratrain::shardingPreset(llvm::StringRef name,
                                                      int64_t levels) {
  if (name == "flat")
    return ShardingPolicy();
  if (levels < 2)
    return std::nullopt;
  ShardingPolicy policy;
  if (name == "zero++") {
    policy.weightLevel = levels - 2;
    policy.gradLevel = levels - 1;
    return policy;
  }
  if (name == "three-level") {
    policy.weightLevel = 0;
    policy.gradLevel = levels - 2;
    return policy;
  }
  return std::nullopt;
}

llvm::SmallVector<int64_t, 4>
ratrain::levelGroupClusters(const MachineModel &machine) {
  llvm::SmallVector<int64_t, 4> clusters;
  size_t levels = machine.networkLevels().size();
  for (size_t l = 0; l < levels; ++l)
    clusters.push_back(l + 1 == levels ? machine.totalClusters()
                                       : machine.clustersPerGroup(unsigned(l)));
  return clusters;
}

int64_t ratrain::partitionGroupMembers(llvm::ArrayRef<int64_t> levelClusters,
                                       int64_t dataParallel, int64_t level) {
  int64_t d = std::max<int64_t>(dataParallel, 1);
  if (level < 0 || level + 1 >= int64_t(levelClusters.size()))
    return d;
  int64_t group = std::max<int64_t>(levelClusters[level], 1);
  if (group % d == 0)
    return d;
  if (d % group == 0)
    return group;
  return std::gcd(group, d);
}

bool ratrain::isRegularPartitionLevel(llvm::ArrayRef<int64_t> levelClusters,
                                      int64_t dataParallel, int64_t level) {
  if (level < 0 || level + 1 >= int64_t(levelClusters.size()))
    return true;
  int64_t group = std::max<int64_t>(levelClusters[level], 1);
  int64_t d = std::max<int64_t>(dataParallel, 1);
  return group % d == 0 || d % group == 0;
}

llvm::StringRef ratrain::stringifyOffloadPolicy(OffloadPolicy policy) {
  switch (policy) {
  case OffloadPolicy::None:
    return "none";
  case OffloadPolicy::OptimizerStates:
    return "optimizer";
  case OffloadPolicy::MasterAndOptimizer:
    return "master";
  }
  llvm_unreachable("unknown offload policy");
}

std::optional<OffloadPolicy> ratrain::parseOffloadPolicy(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<OffloadPolicy>>(name)
      .Case("none", OffloadPolicy::None)
      .Cases({"optimizer", "optimizer-states"}, OffloadPolicy::OptimizerStates)
      .Cases({"master", "master-and-optimizer"},
             OffloadPolicy::MasterAndOptimizer)
      .Default(std::nullopt);
}

int64_t ratrain::offloadedBytesPerParam(const ModelConfig &model,
                                        OffloadPolicy offload) {
  bool lowPrecision = getDTypeBytes(model.dtype) < 4;
  switch (offload) {
  case OffloadPolicy::None:
    return 0;
  case OffloadPolicy::OptimizerStates:
    return 8;
  case OffloadPolicy::MasterAndOptimizer:
    return lowPrecision ? 12 : 8;
  }
  llvm_unreachable("unknown offload policy");
}

ParallelConfig
ParallelConfig::balanced(int64_t numLayers, int64_t pipelineStages,
                         int64_t dataParallel, int64_t microBatchSize,
                         int64_t numMicroBatches, RecomputePolicy recompute,
                         ZeroStage zero) {
  ParallelConfig config;
  config.pipelineStages = pipelineStages;
  config.dataParallel = dataParallel;
  config.microBatchSize = microBatchSize;
  config.numMicroBatches = numMicroBatches;
  config.zero = zero;
  int64_t p = std::max<int64_t>(pipelineStages, 1);
  int64_t base = numLayers / p, extra = numLayers % p;
  // The `extra` stages centred in the pipeline get one more layer.
  int64_t firstExtra = (p - extra) / 2;
  int64_t next = 0;
  for (int64_t i = 0; i < p; ++i) {
    int64_t count = base + (i >= firstExtra && i < firstExtra + extra ? 1 : 0);
    config.stages.push_back({next, count});
    next += count;
  }
  config.recompute.assign(p, recompute);
  return config;
}

llvm::Error ParallelConfig::validate(const ModelConfig &model) const {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "parallel config: " + message);
  };
  if (pipelineStages < 1 || dataParallel < 1 || microBatchSize < 1 ||
      numMicroBatches < 1)
    return fail(llvm::formatv("pp, dp, micro-batch size and count must be "
                              "positive, got pp={0} dp={1} mbs={2} m={3}",
                              pipelineStages, dataParallel, microBatchSize,
                              numMicroBatches));
  if (llvm::Error err = validateScheduleShape(schedule, pipelineStages,
                                              virtualStages, numMicroBatches))
    return fail(llvm::toString(std::move(err)));
  int64_t numStages = numVirtualStages();
  if (int64_t(stages.size()) != numStages)
    return fail(llvm::formatv("{0} stage layer ranges for {1} stages",
                              stages.size(), numStages));
  if (int64_t(recompute.size()) != numStages)
    return fail(llvm::formatv("{0} recompute policies for {1} stages",
                              recompute.size(), numStages));
  int64_t next = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].firstLayer != next)
      return fail(llvm::formatv("stage {0} starts at layer {1}, expected {2}",
                                i, stages[i].firstLayer, next));
    if (stages[i].numLayers < 1)
      return fail(llvm::formatv("stage {0} has no layers", i));
    next += stages[i].numLayers;
  }
  if (next != model.numLayers)
    return fail(llvm::formatv("stages cover {0} layers, the model has {1}",
                              next, model.numLayers));
  if (!activationOffload.empty()) {
    if (int64_t(activationOffload.size()) != numStages)
      return fail(llvm::formatv("{0} activation offload counts for {1} stages",
                                activationOffload.size(), numStages));
    for (size_t i = 0; i < stages.size(); ++i)
      if (activationOffload[i] < 0 ||
          activationOffload[i] > stages[i].numLayers)
        return fail(llvm::formatv("stage {0} offloads the activations of {1} "
                                  "layers; it has {2}",
                                  i, activationOffload[i],
                                  stages[i].numLayers));
  }
  if (!replicaMicroBatches.empty()) {
    if (int64_t(replicaMicroBatches.size()) != dataParallel)
      return fail(llvm::formatv("{0} dp shares for dp = {1}",
                                replicaMicroBatches.size(), dataParallel));
    int64_t largest = 0;
    for (auto [r, m] : llvm::enumerate(replicaMicroBatches)) {
      if (m < 1 || m > numMicroBatches)
        return fail(llvm::formatv(
            "the dp share of replica {0} is {1}, not in [1, m = {2}]", r, m,
            numMicroBatches));
      largest = std::max(largest, m);
    }
    if (largest != numMicroBatches)
      return fail(llvm::formatv("m = {0} must be the largest dp share ({1})",
                                numMicroBatches, largest));
  }
  return llvm::Error::success();
}

std::string ParallelConfig::describe() const {
  std::string text =
      llvm::formatv("pp={0} dp={1} mbs={2} m={3} zero={4} layers={5} "
                    "recompute={6}",
                    pipelineStages, dataParallel, microBatchSize,
                    numMicroBatches, stringifyZeroStage(zero),
                    formatLayerSplit(*this), formatRecompute(*this))
          .str();
  if (offload != OffloadPolicy::None)
    text += " offload=" + stringifyOffloadPolicy(offload).str();
  if (schedule != schedule::ScheduleKind::OneFOneB || virtualStages != 1)
    text += " schedule=" + schedule::stringifyScheduleKind(schedule).str();
  if (virtualStages != 1)
    text += " v=" + std::to_string(virtualStages);
  text += sharding.describe();
  if (maxGradNorm > 0) {
    char norm[32];
    std::snprintf(norm, sizeof(norm), "%g", maxGradNorm);
    text += std::string(" clip=") + norm;
  }
  if (transfers != TransferPolicy::TwoSided)
    text += " transfers=" + stringifyTransferPolicy(transfers).str();
  if (syncPeriod > 1)
    text += " sync-period=" + std::to_string(syncPeriod);
  if (offloadsActivations())
    text += " act-offload=" + formatActivationOffload(*this);
  if (!replicaMicroBatches.empty())
    text += " dp-shares=" + formatDpShares(*this);
  if (replicaMajor)
    text += " replica-major";
  return text;
}

llvm::StringRef ratrain::stringifyTransferPolicy(TransferPolicy policy) {
  return policy == TransferPolicy::OneSided ? "one-sided" : "two-sided";
}

std::optional<TransferPolicy>
ratrain::parseTransferPolicy(llvm::StringRef name) {
  if (name == "two-sided")
    return TransferPolicy::TwoSided;
  if (name == "one-sided")
    return TransferPolicy::OneSided;
  return std::nullopt;
}

bool ratrain::averagesInUpdate(const ParallelConfig &config, DType dtype,
                               bool ring) {
  return config.zero == ZeroStage::Optimizer && config.dataParallel > 1 &&
         ring && (dtype == DType::F32 || dtype == DType::BF16) &&
         config.sharding.isDefault() && config.maxGradNorm <= 0 &&
         config.syncPeriod <= 1;
}

int64_t ratrain::inFlightMicroBatches(const ParallelConfig &config,
                                      int64_t stage) {
  return std::min(config.pipelineStages - stage, config.numMicroBatches);
}

/// Scale of the 16-bit Korthikanti formulas for the model's activation type.
static int64_t scaleToDType(const ModelConfig &model, int64_t bytes16) {
  return bytes16 * int64_t(getDTypeBytes(model.dtype)) / 2;
}

LayerShape LayerShape::of(const ModelConfig &model, int64_t microBatchSize) {
  LayerShape shape;
  shape.tokens = model.seqLen * microBatchSize;
  shape.hidden = model.hidden;
  shape.heads = model.numHeads;
  shape.qDim = model.numHeads * model.headDim();
  shape.kvDim = model.kvDim();
  shape.ffn = model.ffnHidden;
  shape.qkvBias = model.qkvBias;
  return shape;
}

namespace {
/// Bump allocation of aligned slots.
struct Slots {
  int64_t alignment;
  int64_t size = 0;
  int64_t take(int64_t bytes) {
    int64_t offset = alignBytes(size, alignment);
    size = offset + bytes;
    return offset;
  }
};
} // namespace

DecoderActivationLayout ratrain::decoderActivationLayout(const LayerShape &d,
                                                         int64_t w,
                                                         int64_t available,
                                                         int64_t alignment) {
  DecoderActivationLayout l;
  Slots a{alignment};
  int64_t T = d.tokens;
  l.x = a.take(T * d.hidden * w);
  l.xn1 = a.take(T * d.hidden * w);
  l.q = a.take(T * d.qDim * w);
  l.k = a.take(T * d.kvDim * w);
  l.v = a.take(T * d.kvDim * w);
  l.o = a.take(T * d.qDim * w);
  l.x2 = a.take(T * d.hidden * w);
  l.xn2 = a.take(T * d.hidden * w);
  l.gate = a.take(T * d.ffn * w);
  l.up = a.take(T * d.ffn * w);
  l.rstd1 = a.take(T * 4);
  l.rstd2 = a.take(T * 4);
  l.lse = a.take(T * d.heads * 4);
  Slots withHact = a;
  int64_t hact = withHact.take(T * d.ffn * w);
  if (withHact.size <= available) {
    l.hact = hact;
    l.bytes = withHact.size;
  } else {
    l.bytes = a.size;
  }
  return l;
}

DecoderDeferredLayout ratrain::decoderDeferredLayout(const LayerShape &d,
                                                     int64_t w,
                                                     int64_t alignment) {
  DecoderDeferredLayout l;
  Slots a{alignment};
  int64_t T = d.tokens;
  l.dy = a.take(T * d.hidden * w);
  l.dgate = a.take(T * d.ffn * w);
  l.dup = a.take(T * d.ffn * w);
  l.dxn2 = a.take(T * d.hidden * w);
  l.dres = a.take(T * d.hidden * w);
  l.dq = a.take(T * d.qDim * w);
  l.dk = a.take(T * d.kvDim * w);
  l.dv = a.take(T * d.kvDim * w);
  l.dxn1 = a.take(T * d.hidden * w);
  l.bytes = a.size;
  return l;
}

int64_t ratrain::deferredBytes(const ModelConfig &model, int64_t microBatchSize,
                               LayerRole role, int64_t alignment) {
  return deferredBytes(LayerShape::of(model, microBatchSize),
                       getDTypeBytes(model.dtype), role, alignment);
}

int64_t ratrain::deferredBytes(const LayerShape &shape, int64_t elemBytes,
                               LayerRole role, int64_t alignment) {
  if (role == LayerRole::Decoder)
    return decoderDeferredLayout(shape, elemBytes, alignment).bytes;
  // The head's final-norm output gradient, the embedding's output gradient.
  return shape.tokens * shape.hidden * elemBytes;
}

LoweringScratch LoweringScratch::of(const LayerShape &d, int64_t E) {
  int64_t T = d.tokens;
  LoweringScratch s;
  s.stream = T * d.hidden * E;
  s.ones = d.qkvBias ? T * E : 0;
  s.r1 = std::max({T * d.ffn, T * (d.qDim + 2 * d.kvDim), T * d.hidden}) * E;
  s.r2 = T * d.hidden * E;
  s.w = std::max(2 * T * d.ffn, T * (2 * d.qDim + d.kvDim)) * E;
  s.message = T * d.hidden * E;
  return s;
}

ZeroShardSizes ZeroShardSizes::of(int64_t layerParams, int64_t dataParallel,
                                  int64_t elemBytes) {
  int64_t n = layerParams / std::max<int64_t>(dataParallel, 1);
  ZeroShardSizes sizes;
  sizes.gradShard = n * elemBytes;
  // An FP32 model's view shard is its master shard.
  sizes.viewShard = n * elemBytes;
  return sizes;
}

int64_t ratrain::layerActivationBytes(const ModelConfig &model,
                                      int64_t microBatchSize,
                                      RecomputePolicy policy,
                                      const MemoryOptions &options) {
  int64_t s = model.seqLen, b = microBatchSize, h = model.hidden,
          a = model.numHeads;
  int64_t sbh = s * b * h;
  // What the lowering stores of a layer kept for backward (no hact): more
  // than 34sbh for a SwiGLU FFN wider than ~3.3h with narrow K/V.
  auto stored = [&] {
    return decoderActivationLayout(LayerShape::of(model, microBatchSize),
                                   getDTypeBytes(model.dtype),
                                   /*available=*/0)
        .bytes;
  };
  switch (policy) {
  case RecomputePolicy::None:
    // sbh(34 + 5as/h) = 34sbh + 5as^2b; fused attention keeps FP32 row
    // statistics (4asb) instead of the scores.
    if (options.fusedAttention)
      return std::max(scaleToDType(model, 34 * sbh) + 4 * a * s * b, stored());
    return std::max(scaleToDType(model, 34 * sbh + 5 * a * s * s * b),
                    stored());
  case RecomputePolicy::Selective:
    return std::max(scaleToDType(model, 34 * sbh), stored());
  case RecomputePolicy::Full:
    return scaleToDType(model, 2 * sbh);
  }
  llvm_unreachable("unknown recompute policy");
}

/// Parameters of the stage's embedding-like parts.
static int64_t stageExtraParams(const ModelConfig &model, int64_t stage,
                                int64_t pipelineStages) {
  int64_t params = 0;
  if (stage == 0)
    params += model.embeddingParams();
  // Tied embeddings: the embedding owns the shared matrix; the head's
  // replica of its view and gradient is lowering scratch (tiedScratch).
  if (stage == pipelineStages - 1)
    params += model.headParams();
  return params;
}

int64_t ratrain::stageParams(const ModelConfig &model,
                             const ParallelConfig &config, int64_t stage) {
  return config.stages[stage].numLayers * model.paramsPerLayer() +
         stageExtraParams(model, stage, config.numVirtualStages());
}

static int64_t ceilDiv(int64_t x, int64_t y) { return (x + y - 1) / y; }

/// Parameters of each item the stage updates as a unit: one per owned layer,
/// then the embedding on the first stage and the head on the last (a tied
/// embedding is updated once, by its owner, the embedding).
static llvm::SmallVector<int64_t> stageUpdateItems(const ModelConfig &model,
                                                   StageLayers layers,
                                                   bool first, bool last,
                                                   int64_t pipelineStages) {
  llvm::SmallVector<int64_t> items(layers.numLayers, model.paramsPerLayer());
  if (first)
    items.push_back(model.embeddingParams());
  if (last)
    items.push_back(model.headParams());
  return items;
}

StageMemory
ratrain::computeStageMemory(const ModelConfig &model, int64_t stage,
                            int64_t pipelineStages, int64_t dataParallel,
                            int64_t microBatchSize, int64_t numMicroBatches,
                            StageLayers layers, RecomputePolicy recompute,
                            ZeroStage zero, const MemoryOptions &options) {
  return computeStageMemory(model, stage, pipelineStages, dataParallel,
                            microBatchSize, numMicroBatches, layers, recompute,
                            zero, OffloadPolicy::None, options);
}

StageMemory ratrain::computeStageMemory(
    const ModelConfig &model, int64_t stage, int64_t pipelineStages,
    int64_t dataParallel, int64_t microBatchSize, int64_t numMicroBatches,
    StageLayers layers, RecomputePolicy recompute, ZeroStage zero,
    OffloadPolicy offload, const MemoryOptions &options) {
  return computeStageMemory(
      model, stage, pipelineStages, dataParallel, microBatchSize,
      numMicroBatches, layers, recompute, zero, offload,
      std::min(pipelineStages - stage, numMicroBatches), options);
}

StageMemory ratrain::computeStageMemory(
    const ModelConfig &model, int64_t stage, int64_t pipelineStages,
    int64_t dataParallel, int64_t microBatchSize, int64_t numMicroBatches,
    StageLayers layers, RecomputePolicy recompute, ZeroStage zero,
    OffloadPolicy offload, int64_t inFlight, const MemoryOptions &options) {
  StageMemory mem;
  mem.stage = stage;
  bool first = stage == 0, last = stage == pipelineStages - 1;
  int64_t params = layers.numLayers * model.paramsPerLayer() +
                   stageExtraParams(model, stage, pipelineStages);
  mem.params = params;
  int64_t d = std::max<int64_t>(dataParallel, 1);
  int64_t w = getDTypeBytes(model.dtype);
  bool lowPrecision = w < 4;
  int64_t shardedOptimizer =
      zero >= ZeroStage::Optimizer ? ceilDiv(params, d) : params;
  int64_t shardedGradients =
      zero >= ZeroStage::Gradients ? ceilDiv(params, d) : params;

  // Model states: 16 bytes/param without ZeRO.
  mem.parameterViews = w * params;
  // ZeRO-3: this rank's view shard, and the full views of the two update
  // items gathered at a time (the one the running compute reads and the
  // next one's, issued one compute ahead).
  if (zero >= ZeroStage::Parameters) {
    llvm::SmallVector<int64_t> items =
        stageUpdateItems(model, layers, first, last, pipelineStages);
    llvm::sort(items, std::greater<int64_t>());
    mem.gatheredItems[0] = items[0];
    mem.gatheredItems[1] = items.size() > 1 ? items[1] : 0;
    mem.parameterViews =
        w * (ceilDiv(params, d) + mem.gatheredItems[0] + mem.gatheredItems[1]);
    // hpZ: the secondary shard (1/g_L of each owned item's view) lives from
    // the item's first gather of the step to its last use; under 1F1B every
    // owned item is between its first forward and its last backward at the
    // stage's peak. g_L = d: the secondary is the primary shard (no copy).
    int64_t g = partitionGroupMembers(options.levelClusters, d,
                                      options.sharding.weightLevel);
    if (options.sharding.weightLevel >= 0 && g < d)
      for (int64_t item :
           stageUpdateItems(model, layers, first, last, pipelineStages))
        mem.parameterViews += w * ceilDiv(item, g);
  }
  // With FP32 training the parameters are the master copy.
  mem.masterWeights = lowPrecision ? 4 * shardedOptimizer : 0;
  mem.optimizerStates = 8 * shardedOptimizer;
  // 16-bit (or FP32) gradients; FP32 training keeps 4-byte gradients so the
  // total stays 16 bytes/param.
  mem.gradients = w * shardedGradients;
  bool gpuStyle = options.lifecycle == LifecyclePolicy::GpuStyle;
  // ZeRO-2 under the layer-level lifecycle: a layer's gradient is ready (and
  // reduce-scattered) only after its last micro-batch's backward, so with
  // m > 1 every owned layer accumulates its full gradient until then; the
  // shards it keeps after the sync are separate. With m = 1 each layer is
  // reduce-scattered right after its only backward: the shard plus one
  // layer's full gradient as the reduce-scatter input (communication below).
  bool zero2 = zero >= ZeroStage::Gradients && d > 1 &&
               options.lifecycle != LifecyclePolicy::GpuStyle;
  bool zero2Accumulates = zero2 && numMicroBatches > 1;
  if (zero2Accumulates) {
    mem.gradients = w * (params + shardedGradients);
  } else if (zero2) {
    // m = 1: a layer's reduce-scatter overlaps the next layer's backward, so
    // the two largest items' full gradients are live next to the shards
    // (the reduce-scatter inputs: no separate staging buffer).
    llvm::SmallVector<int64_t> items =
        stageUpdateItems(model, layers, first, last, pipelineStages);
    llvm::sort(items, std::greater<int64_t>());
    int64_t largestTwo = items[0] + (items.size() > 1 ? items[1] : 0);
    mem.gradients = w * (shardedGradients + largestTwo);
  }
  // Gradient partition at level L: an item's gradient accumulates as
  // without one; after its last backward it is reduce-scattered inside the
  // level-L group into a partition of 1/g_L of the item, which the
  // reduce-scatter across the level-L groups reads (the full gradient is
  // free once the first completes). The two items synchronizing at a time
  // hold a partition each.
  if (zero2 && options.sharding.gradLevel >= 0) {
    int64_t g = partitionGroupMembers(options.levelClusters, d,
                                      options.sharding.gradLevel);
    if (g < d) {
      llvm::SmallVector<int64_t> items =
          stageUpdateItems(model, layers, first, last, pipelineStages);
      llvm::sort(items, std::greater<int64_t>());
      mem.gradients += w * (ceilDiv(items[0], g) +
                            (items.size() > 1 ? ceilDiv(items[1], g) : 0));
    }
  }
  if (gpuStyle) {
    // A GPU-style runtime accumulates every micro-batch's gradients into a
    // flat FP32 buffer of the whole stage and reduces it (all-reduce or, with
    // ZeRO, reduce-scatter in place) only at the iteration boundary, so ZeRO-2
    // cannot shrink it: 18 bytes/param without ZeRO. Its optimizer step then
    // materializes an FP32 temporary for every parameter it updates at once.
    mem.gradients = 4 * params;
    mem.optimizerWorkspace = 4 * shardedOptimizer;
  }

  // Offloaded states live in the tier; DDR keeps a double-buffered window:
  // two buffers, each the largest update item's share of them or one
  // streaming chunk when the machine streams in chunks (reload of the next
  // while the current one is updated and written back).
  if (int64_t perParam = offloadedBytesPerParam(model, offload)) {
    if (lowPrecision && offload == OffloadPolicy::MasterAndOptimizer)
      mem.masterWeights = 0;
    mem.optimizerStates = 0;
    mem.offloadedBytes = perParam * shardedOptimizer;
    int64_t largestItem = model.paramsPerLayer();
    for (int64_t item :
         stageUpdateItems(model, layers, first, last, pipelineStages))
      largestItem = std::max(largestItem, item);
    int64_t itemShard =
        zero >= ZeroStage::Optimizer ? ceilDiv(largestItem, d) : largestItem;
    int64_t buffer = perParam * itemShard;
    if (options.offloadChunkBytes > 0)
      buffer = std::min(buffer, options.offloadChunkBytes);
    mem.offloadWindow = std::min(2 * buffer, mem.offloadedBytes);
  }

  // Stored activations of the micro-batches in flight.
  mem.activations =
      layers.numLayers * inFlight *
      layerActivationBytes(model, microBatchSize, recompute, options);

  int64_t s = model.seqLen, b = microBatchSize, h = model.hidden;
  int64_t sb = s * b;
  // The layer being recomputed in backward (one micro-batch).
  if (recompute == RecomputePolicy::Full)
    mem.recomputeBuffer = layerActivationBytes(model, microBatchSize,
                                               RecomputePolicy::None, options);
  else if (recompute == RecomputePolicy::Selective && !options.fusedAttention)
    mem.recomputeBuffer = scaleToDType(model, 5 * model.numHeads * s * s * b);

  // Token ids (int32) of the micro-batches in flight on stage 0; on the last
  // stage the final-norm input and output, the 16-bit logits, their FP32
  // softmax for the cross-entropy, and the int32 labels of one micro-batch.
  if (first)
    mem.embeddingHeadActivations += 4 * sb * inFlight;
  if (last)
    mem.embeddingHeadActivations +=
        inFlight * (2 * w * sb * h + (w + 4) * sb * model.vocab + 4 * sb);
  // Baichuan2's NormHead: the lowering's row-normalized copy of the LM-head
  // weight for the step, its rows' 1/rms and the normalization's weight and
  // weight gradient (LowerToMT3K.cpp, normHeadLayout).
  if (last && model.normHead)
    mem.embeddingHeadActivations +=
        alignBytes(w * model.vocab * h, kLoweringAlignment) +
        alignBytes(4 * model.vocab, kLoweringAlignment) +
        2 * alignBytes(w * h, kLoweringAlignment);

  // Largest DDR scratch of a layer kernel: the SwiGLU backward's gate/up
  // gradients (2 * s*b*ffn 16-bit) or the attention backward's FP32 dQ, dK,
  // dV accumulators, whichever is larger.
  mem.kernelWorkspace = std::max(2 * sb * model.ffnHidden * w,
                                 sb * (model.hidden + 2 * model.kvDim()) * 4);

  // Send and receive buffers for activations and activation gradients
  // between stages. All-reduce (ZeRO 0/1) runs in place on the gradients,
  // the ZeRO all-gather in place on the views, and ZeRO-2 reduce-scatters
  // from the full gradients counted above.
  if (pipelineStages > 1)
    mem.communicationBuffers += 4 * sb * h * w;

  // What --ratrain-lower-to-mt3k appends to the assigned arena (the region
  // sizes come from the same functions; see LowerToMT3K.cpp, "The lowering
  // scratch area"): the arena's round-up to the alignment, the layer
  // kernels' temporaries, the full-recompute forward layout (without the
  // SwiGLU output, which goes to scratch.w), the outboxes
  // and the ZeRO shards.
  const int64_t A = kLoweringAlignment;
  LayerShape shape = LayerShape::of(model, microBatchSize);
  LoweringScratch scratch = LoweringScratch::of(shape, w);
  mem.layerTemporaries = A + alignBytes(scratch.stream, A) +
                         alignBytes(scratch.ones, A) +
                         alignBytes(scratch.r1, A) + alignBytes(scratch.r2, A);
  if (mem.kernelWorkspace < scratch.w)
    mem.layerTemporaries += alignBytes(scratch.w, A);
  if (recompute == RecomputePolicy::Full)
    mem.layerTemporaries +=
        alignBytes(decoderActivationLayout(shape, w, /*available=*/0).bytes, A);
  int64_t sendsPerDirection = numMicroBatches;
  int64_t slots = (last ? 0 : outboxSlots(sendsPerDirection)) +
                  (first ? 0 : outboxSlots(sendsPerDirection));
  mem.outgoingMessages = slots * alignBytes(scratch.message, A);
  // Tied embeddings (TiedEmbeddings.cpp): the LM head's gradient replica on
  // the head's stage and, on the owner when the head runs elsewhere, the
  // buffer it arrives in; the view replica on a head stage that is not the
  // owner.
  if (model.tieEmbeddings && (first || last)) {
    int64_t table = alignBytes(w * model.vocab * model.hidden, A);
    mem.layerTemporaries += table;
    if (last && !first)
      mem.layerTemporaries += table;
  }
  if (zero >= ZeroStage::Optimizer) {
    // One item per owned layer, the embedding and the head. ZeRO-2 under the
    // layer-level lifecycle counts the gradient shards in `gradients` (assigned
    // buffers).
    llvm::SmallVector<int64_t> items =
        stageUpdateItems(model, layers, first, last, pipelineStages);
    for (int64_t itemParams : items) {
      ZeroShardSizes shards = ZeroShardSizes::of(itemParams, d, w);
      if (!zero2)
        mem.zeroShards += alignBytes(shards.gradShard, A);
      // ZeRO-3: the assigned view is the view shard (and an FP32 model's
      // master shard). Under ZeRO-1/2 with the default sharding policy the
      // view shard (an FP32 model's master shard) is the rank's block of
      // the full view (AdamW writes it there and the all-gather runs in
      // place), as StageLowering::viewShardInPlace.
      if (zero >= ZeroStage::Parameters || options.sharding.isDefault())
        continue;
      mem.zeroShards += alignBytes(shards.viewShard, A);
    }
  }

  return mem;
}

void ratrain::applyActivationOffload(StageMemory &mem, const ModelConfig &model,
                                     int64_t microBatchSize,
                                     RecomputePolicy recompute,
                                     int64_t offloadedLayers, int64_t inFlight,
                                     const MemoryOptions &options) {
  if (offloadedLayers <= 0 || inFlight <= 0)
    return;
  int64_t stored =
      layerActivationBytes(model, microBatchSize, recompute, options);
  int64_t full = layerActivationBytes(model, microBatchSize,
                                      RecomputePolicy::None, options);
  int64_t offloaded = offloadedLayers * inFlight;
  mem.activations -= offloaded * stored;
  mem.activations += std::min(offloaded, kActivationOffloadResident) * full;
  mem.offloadedActivations += offloaded * full;
  mem.offloadedBytes += offloaded * full;
}

StageMemory ratrain::computeStageMemory(const ModelConfig &model,
                                        const ParallelConfig &config,
                                        int64_t stage,
                                        const MemoryOptions &options) {
  MemoryOptions withPolicy = options;
  withPolicy.sharding = config.sharding;
  StageMemory mem = computeStageMemory(
      model, stage, config.pipelineStages, config.dataParallel,
      config.microBatchSize, config.numMicroBatches, config.stages[stage],
      config.recompute[stage], config.zero, config.offload, withPolicy);
  applyActivationOffload(mem, model, config.microBatchSize,
                         config.recompute[stage], config.offloadedLayers(stage),
                         inFlightMicroBatches(config, stage), options);
  return mem;
}

std::vector<std::pair<llvm::StringRef, int64_t>> StageMemory::fields() const {
  return {{"parameter views", parameterViews},
          {"master weights", masterWeights},
          {"optimizer states", optimizerStates},
          {"gradients", gradients},
          {"activations", activations},
          {"recompute buffer", recomputeBuffer},
          {"embedding/head activations", embeddingHeadActivations},
          {"kernel workspace", kernelWorkspace},
          {"communication buffers", communicationBuffers},
          {"optimizer workspace", optimizerWorkspace},
          {"offload window", offloadWindow},
          {"layer temporaries", layerTemporaries},
          {"outgoing messages", outgoingMessages},
          {"ZeRO shards", zeroShards}};
}
