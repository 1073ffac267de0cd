//===- Synthetic1F1B.cpp - Generated non-interleaved 1F1B programs
//---------===//

#include "ratrain/Simulator/Synthetic1F1B.h"
#include "ActivationOffloadTasks.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::sim;

std::vector<SyntheticStage> Synthetic1F1BConfig::resolveStages() const {
  if (!perStage.empty())
    return perStage;
  std::vector<SyntheticStage> result;
  for (int64_t s = 0; s < stages; ++s) {
    SyntheticStage stage;
    stage.layers = layersPerStage;
    stage.firstLayer = s * layersPerStage;
    stage.forwardSeconds = forwardSeconds;
    stage.backwardSeconds = backwardSeconds;
    stage.recomputeSeconds = recomputeSeconds;
    stage.updateSeconds = updateSeconds;
    stage.viewCastSeconds = viewCastSeconds;
    stage.forwardFlops = forwardFlops;
    stage.backwardFlops = backwardFlops;
    stage.gradientBytesPerLayer = gradientBytesPerLayer;
    stage.residentBytes = residentBytes;
    stage.storedActivationBytesPerLayer = storedActivationBytesPerLayer;
    result.push_back(stage);
  }
  return result;
}

namespace {

/// Emits the program of one stage.
class StageBuilder {
public:
  StageBuilder(const Synthetic1F1BConfig &config, const SyntheticStage &costs,
               int64_t stage, StageProgram &program)
      : config(config), costs(costs), stage(stage), program(program),
        last(stage == config.stages - 1), syncTokens(costs.layers),
        gatherTokens(costs.layers), reloadTokens(costs.layers),
        pendingWaits(costs.layers), primed(costs.layers, false),
        averageTokens(costs.layers),
        activations(program, costs, last,
                    last && costs.extraForwardSeconds > 0) {}

  void build();

private:
  int64_t globalLayer(int64_t local) const { return costs.firstLayer + local; }
  bool tiedAcrossStages() const {
    return config.tiedEmbeddingBytes > 0 && config.stages > 1;
  }
  /// Past the pipeline messages' tags (2 mb and 2 mb + 1).
  uint64_t tiedTag(bool gradient) const {
    return static_cast<uint64_t>(2 * config.microBatches + (gradient ? 1 : 0));
  }
  bool syncs() const {
    return config.dataParallel > 1 && costs.gradientBytesPerLayer > 0;
  }
  bool offloads() const { return costs.offloadBytesPerLayer > 0; }
  /// Partial synchronization: local layer `l`'s update, then the averaging
  /// of its masters in the iterations of its phase.
  bool averages() const {
    return config.dataParallel > 1 && config.syncPeriod > 1 &&
           costs.averageBytesPerLayer > 0;
  }
  /// Local layer `l`'s update. Offloaded states stream through two buffers
  /// (the per-layer placement: the reload issued two updates earlier) or,
  /// with `writeBacks`, are reloaded right before it and written back into
  /// `writeBacks`, waited at the end (the whole-model placement).
  void update(int64_t l, std::vector<Token> *writeBacks = nullptr) {
    int64_t layer = globalLayer(l);
    if (offloads())
      program.addWait(writeBacks ? reload(l) : reloadTokens[l], false,
                      llvm::formatv("wait reload L{0}", layer).str());
    if (costs.updateSeconds > 0)
      program.addCompute(ComputeKind::Update, costs.updateSeconds, 0,
                         llvm::formatv("update L{0}", layer).str(),
                         /*optimizerStream=*/true);
    if (offloads()) {
      Token written = writeBack(l);
      if (writeBacks)
        writeBacks->push_back(written);
      else if (l >= 2)
        reloadTokens[l - 2] = reload(l - 2);
    }
  }
  void average(int64_t l) {
    int64_t layer = globalLayer(l);
    averageTokens[l] = program.addCollective(
        config.zeroCollective(config.gradSyncSpec, CollectiveKind::AllReduce,
                              costs.averageBytesPerLayer),
        llvm::formatv("average L{0}", layer).str(), config.gradientStream,
        // Equal layers: assignSyncPhases goes round-robin.
        uint32_t(config.syncPeriod), uint32_t(l % config.syncPeriod));
  }
  /// Waits for each averaging and casts the view from the averaged masters.
  void castAveragedViews() {
    for (int64_t l = costs.layers - 1; l >= 0; --l) {
      int64_t layer = globalLayer(l);
      program.addWait(averageTokens[l], false,
                      llvm::formatv("wait average L{0}", layer).str());
      if (costs.viewCastSeconds > 0)
        program.addCompute(ComputeKind::ViewCast, costs.viewCastSeconds, 0,
                           llvm::formatv("view-cast L{0}", layer).str());
    }
  }
  Token reload(int64_t l) {
    return program.addOffloadTransfer(
        costs.offloadBytesPerLayer,
        llvm::formatv("reload states L{0}", globalLayer(l)).str());
  }
  Token writeBack(int64_t l) {
    return program.addOffloadTransfer(
        costs.offloadBytesPerLayer,
        llvm::formatv("write back states L{0}", globalLayer(l)).str());
  }
  bool gathers() const {
    return config.dataParallel > 1 && costs.gatherBytesPerLayer > 0;
  }
  bool partitionSyncs() const {
    return config.dataParallel > 1 && costs.partitionGradientBytesPerLayer > 0;
  }
  CollectiveSpec gradSync(int64_t bytes) const {
    return config.zeroCollective(config.gradSyncSpec, config.syncKind, bytes);
  }
  CollectiveSpec viewGather(int64_t bytes) const {
    return config.zeroCollective(config.viewGatherSpec,
                                 CollectiveKind::AllGather, bytes);
  }
  bool gathersPerUse() const {
    return config.dataParallel > 1 && costs.parameterGatherBytesPerLayer > 0;
  }
  /// ZeRO-3: issues the gather of local layer `l`'s view; the layer's
  /// first use in the iteration first gathers its secondary shard from the
  /// primary ones (same stream: in order).
  Token gatherView(int64_t l) {
    if (!primed[l] && costs.primaryGatherBytesPerLayer > 0)
      program.addCollective(
          config.zeroCollective(config.primaryGatherSpec,
                                CollectiveKind::AllGather,
                                costs.primaryGatherBytesPerLayer),
          llvm::formatv("primary all-gather L{0}", globalLayer(l)).str());
    primed[l] = true;
    return program.addCollective(
        viewGather(costs.parameterGatherBytesPerLayer),
        llvm::formatv("view all-gather L{0}", globalLayer(l)).str());
  }
  /// After local layer `l`'s backward of micro-batch `mb`: its gradient
  /// collectives after the last one (with a gradient partition the
  /// reduce-scatter inside its level, then the sync).
  void gradientCollectives(int64_t l, int64_t mb) {
    int64_t layer = globalLayer(l);
    if (partitionSyncs() && mb == config.microBatches - 1)
      syncTokens[l] = program.addCollective(
          config.zeroCollective(config.partitionGradSpec,
                                CollectiveKind::ReduceScatter,
                                costs.partitionGradientBytesPerLayer),
          llvm::formatv("grad reduce-scatter L{0} mb{1}", layer, mb).str(),
          config.gradientStream);
    if (mb == config.microBatches - 1 &&
        config.placement == LifecyclePlacement::PerLayer && syncs())
      syncTokens[l] = program.addCollective(
          gradSync(costs.gradientBytesPerLayer),
          llvm::formatv("grad sync L{0}", layer).str(), config.gradientStream);
  }
  /// ZeRO-3: before the compute of local layer `l` in a sweep whose next
  /// layer is `next` (-1: none), waits for `l`'s gather and issues the next
  /// one, which overlaps the compute.
  void gatherBefore(Token &pending, int64_t l, int64_t next) {
    if (!gathersPerUse())
      return;
    program.addWait(pending, false,
                    llvm::formatv("wait view L{0}", globalLayer(l)).str());
    if (next >= 0)
      pending = gatherView(next);
  }
  void perLayerLifecycle();
  void forward(int64_t mb);
  void backward(int64_t mb);
  void wholeModelLifecycle();

  const Synthetic1F1BConfig &config;
  const SyntheticStage &costs;
  int64_t stage;
  StageProgram &program;
  bool last;
  std::vector<Token> syncTokens;
  std::vector<Token> gatherTokens;
  std::vector<Token> reloadTokens;
  /// Index of the loop-carried wait on each layer's view all-gather.
  std::vector<size_t> pendingWaits;
  /// ZeRO-3 with a secondary partition: the layer's secondary shard was
  /// gathered this iteration.
  std::vector<bool> primed;
  /// Partial synchronization: each layer's averaging.
  std::vector<Token> averageTokens;
  ActivationOffloadTasks activations;
};

} // namespace

/// Per-layer lifecycle after the stage's last backward, in the order the
/// syncs complete (last layer first): wait, update, cast, issue the
/// all-gather of the view that the layer's next forward waits for.
void StageBuilder::perLayerLifecycle() {
  if (averages()) {
    for (int64_t l = costs.layers - 1; l >= 0; --l) {
      update(l);
      average(l);
    }
    castAveragedViews();
    return;
  }
  if (config.clipGradients) {
    // Every sync first: the global norm needs all of them.
    for (int64_t l = costs.layers - 1; l >= 0; --l)
      if (syncTokens[l].isValid())
        program.addWait(
            syncTokens[l], false,
            llvm::formatv("wait grad sync L{0}", globalLayer(l)).str());
    appendGlobalNorm(
        program, stage, config.stages,
        config.dataParallelCollective(CollectiveKind::AllReduce, 4),
        costs.gradSquaresSeconds, config.pipelineLink);
  }
  for (int64_t l = costs.layers - 1; l >= 0; --l) {
    int64_t layer = globalLayer(l);
    if (syncTokens[l].isValid() && !config.clipGradients)
      program.addWait(syncTokens[l], false,
                      llvm::formatv("wait grad sync L{0}", layer).str());
    update(l);
    if (costs.viewCastSeconds > 0)
      program.addCompute(ComputeKind::ViewCast, costs.viewCastSeconds, 0,
                         llvm::formatv("view-cast L{0}", layer).str());
    if (gathers())
      gatherTokens[l] = program.addCollective(
          viewGather(costs.gatherBytesPerLayer),
          llvm::formatv("param all-gather L{0}", layer).str());
  }
}

void StageBuilder::forward(int64_t mb) {
  if (stage > 0)
    program.addRecv(static_cast<uint32_t>(stage - 1), config.activationBytes,
                    static_cast<uint64_t>(2 * mb),
                    llvm::formatv("recv act mb{0}", mb).str());
  if (stage == 0 && costs.extraForwardSeconds > 0)
    program.addCompute(ComputeKind::Forward, costs.extraForwardSeconds, 0,
                       llvm::formatv("fwd embedding mb{0}", mb).str());
  if (stage == 0 && mb == 0 && tiedAcrossStages())
    program.addSend(static_cast<uint32_t>(config.stages - 1),
                    config.tiedEmbeddingBytes, tiedTag(false),
                    config.pipelineLink, "send tied embedding view");
  Token pending;
  if (gathersPerUse())
    pending = gatherView(0);
  for (int64_t l = 0; l < costs.layers; ++l) {
    int64_t layer = globalLayer(l);
    gatherBefore(pending, l, l + 1 < costs.layers ? l + 1 : -1);
    if (mb == 0 && config.placement == LifecyclePlacement::PerLayer &&
        gathers()) {
      // The view all-gathered at the end of the previous iteration.
      pendingWaits[l] = program.size();
      program.addWait(Token(), /*previousIteration=*/true,
                      llvm::formatv("wait view L{0}", layer).str());
    }
    program.addCompute(ComputeKind::Forward, costs.forwardSeconds,
                       costs.forwardFlops,
                       llvm::formatv("fwd L{0} mb{1}", layer, mb).str());
    activations.afterForward(l, mb, layer);
    if (costs.storedActivationBytesPerLayer > 0)
      program.addAlloc(costs.storedActivationBytesPerLayer,
                       llvm::formatv("act L{0} mb{1}", layer, mb).str());
  }
  if (last && mb == 0 && tiedAcrossStages())
    program.addRecv(0, config.tiedEmbeddingBytes, tiedTag(false),
                    "recv tied embedding view");
  if (last && costs.extraForwardSeconds > 0)
    program.addCompute(ComputeKind::Forward, costs.extraForwardSeconds, 0,
                       llvm::formatv("fwd head+loss mb{0}", mb).str());
  if (!last)
    program.addSend(static_cast<uint32_t>(stage + 1), config.activationBytes,
                    static_cast<uint64_t>(2 * mb), config.pipelineLink,
                    llvm::formatv("send act mb{0}", mb).str(),
                    config.rendezvousMessages);
}

void StageBuilder::backward(int64_t mb) {
  if (mb == config.microBatches - 1 &&
      config.placement == LifecyclePlacement::PerLayer && offloads()) {
    // Double-buffered reloads for the first two updates (last layers first)
    // from the start of the last backward sweep.
    for (int64_t l = costs.layers - 1; l >= 0 && l >= costs.layers - 2; --l)
      reloadTokens[l] = reload(l);
  }
  if (!last)
    program.addRecv(static_cast<uint32_t>(stage + 1), config.activationBytes,
                    static_cast<uint64_t>(2 * mb + 1),
                    llvm::formatv("recv grad mb{0}", mb).str());
  if (last && costs.extraBackwardSeconds > 0)
    program.addCompute(ComputeKind::Backward, costs.extraBackwardSeconds, 0,
                       llvm::formatv("bwd head+loss mb{0}", mb).str());
  if (last && mb == config.microBatches - 1 && tiedAcrossStages())
    program.addSend(0, config.tiedEmbeddingBytes, tiedTag(true),
                    config.pipelineLink, "send tied LM-head grad");
  Token pending;
  if (gathersPerUse())
    pending = gatherView(costs.layers - 1);
  auto layerOf = [&](int64_t l) { return globalLayer(l); };
  activations.beforeSweep(mb, layerOf);
  for (int64_t l = costs.layers - 1; l >= 0; --l) {
    int64_t layer = globalLayer(l);
    gatherBefore(pending, l, l - 1);
    activations.beforeBackward(l, mb, layerOf);
    if (costs.recomputeSeconds > 0 && !activations.keepsFullActivations(l))
      program.addCompute(
          ComputeKind::Recompute, costs.recomputeSeconds, 0,
          llvm::formatv("recompute L{0} mb{1}", layer, mb).str());
    program.addCompute(ComputeKind::Backward, costs.backwardSeconds,
                       costs.backwardFlops,
                       llvm::formatv("bwd L{0} mb{1}", layer, mb).str());
    if (costs.storedActivationBytesPerLayer > 0)
      program.addFree(costs.storedActivationBytesPerLayer,
                      llvm::formatv("act L{0} mb{1}", layer, mb).str());
    gradientCollectives(l, mb);
  }
  if (stage == 0 && costs.extraBackwardSeconds > 0)
    program.addCompute(ComputeKind::Backward, costs.extraBackwardSeconds, 0,
                       llvm::formatv("bwd embedding mb{0}", mb).str());
  if (stage == 0 && mb == config.microBatches - 1 && tiedAcrossStages())
    program.addRecv(static_cast<uint32_t>(config.stages - 1),
                    config.tiedEmbeddingBytes, tiedTag(true),
                    "recv tied LM-head grad");
  if (stage > 0)
    program.addSend(static_cast<uint32_t>(stage - 1), config.activationBytes,
                    static_cast<uint64_t>(2 * mb + 1), config.pipelineLink,
                    llvm::formatv("send grad mb{0}", mb).str(),
                    config.rendezvousMessages);
}

void StageBuilder::wholeModelLifecycle() {
  if (averages()) {
    // Whole-stage phases: the updates and their averagings, then the
    // waits and the casts.
    std::vector<Token> writeBacks;
    for (int64_t l = costs.layers - 1; l >= 0; --l)
      update(l, &writeBacks);
    for (int64_t l = costs.layers - 1; l >= 0; --l)
      average(l);
    castAveragedViews();
    for (Token token : writeBacks)
      program.addWait(token, false, "wait write-back");
    return;
  }
  // The per-micro-batch reduce-scatters run in order on their stream: the
  // last one issued completes last.
  Token lastScatter = syncTokens.empty() ? Token() : syncTokens.front();
  if (syncs()) {
    Token token = program.addCollective(
        gradSync(costs.gradientBytesPerLayer * costs.layers),
        "grad sync (all layers)", config.gradientStream);
    program.addWait(token, false, "wait grad sync");
  } else if (lastScatter.isValid()) {
    program.addWait(lastScatter, false, "wait grad reduce-scatters");
  }
  if (config.clipGradients)
    appendGlobalNorm(
        program, stage, config.stages,
        config.dataParallelCollective(CollectiveKind::AllReduce, 4),
        costs.gradSquaresSeconds, config.pipelineLink);
  std::vector<Token> writeBacks;
  for (int64_t l = 0; l < costs.layers; ++l)
    update(l, &writeBacks);
  for (int64_t l = 0; l < costs.layers; ++l)
    if (costs.viewCastSeconds > 0)
      program.addCompute(ComputeKind::ViewCast, costs.viewCastSeconds, 0,
                         llvm::formatv("view-cast L{0}", globalLayer(l)).str());
  if (gathers()) {
    Token token = program.addCollective(
        viewGather(costs.gatherBytesPerLayer * costs.layers),
        "param all-gather (all layers)");
    program.addWait(token, false, "wait param all-gather");
  }
  for (Token token : writeBacks)
    program.addWait(token, false, "wait write-back");
}

void StageBuilder::build() {
  const int64_t p = config.stages, m = config.microBatches;
  program.name = llvm::formatv("stage {0}", stage).str();
  program.residentBytes = costs.residentBytes;
  program.assignedPeakBytes = costs.assignedPeakBytes;
  program.offloadBandwidth = costs.offloadBandwidth;
  int64_t warmup = std::min(p - stage - 1, m);
  program.reserve(
      static_cast<size_t>(m * (3 * costs.layers + 6) * 2 + 6 * costs.layers));
  for (int64_t mb = 0; mb < warmup; ++mb)
    forward(mb);
  for (int64_t j = 0; j < m - warmup; ++j) {
    forward(warmup + j);
    backward(j);
  }
  for (int64_t j = m - warmup; j < m; ++j)
    backward(j);
  if (config.placement == LifecyclePlacement::WholeModel) {
    wholeModelLifecycle();
    return;
  }
  perLayerLifecycle();
  if (gathers())
    for (int64_t l = 0; l < costs.layers; ++l)
      program.setWaitTarget(pendingWaits[l], gatherTokens[l],
                            /*previousIteration=*/true);
}

CollectiveSpec
Synthetic1F1BConfig::dataParallelCollective(CollectiveKind kind,
                                            int64_t bytes) const {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  spec.groupSize = dataParallel;
  spec.membersPerNode = std::clamp<int64_t>(dpMembersPerNode, 1, dataParallel);
  spec.algorithm = syncAlgorithm;
  return spec;
}

CollectiveSpec
Synthetic1F1BConfig::zeroCollective(const std::optional<CollectiveSpec> &spec,
                                    CollectiveKind kind, int64_t bytes) const {
  if (!spec)
    return dataParallelCollective(kind, bytes);
  CollectiveSpec result = *spec;
  result.kind = kind;
  result.bytes = bytes;
  return result;
}

SimProgram sim::buildSynthetic1F1B(const Synthetic1F1BConfig &requested) {
  Synthetic1F1BConfig config = requested;
  if (!config.perStage.empty())
    config.stages = static_cast<int64_t>(config.perStage.size());
  SimProgram program;
  program.name =
      llvm::formatv("1F1B p={0} m={1} dp={2} ({3} lifecycle)", config.stages,
                    config.microBatches, config.dataParallel,
                    config.placement == LifecyclePlacement::PerLayer
                        ? "per-layer"
                        : "whole-model")
          .str();
  program.dataParallel = config.dataParallel;
  program.tokensPerIteration = config.tokensPerIteration;
  program.modelFlopsPerIteration = config.modelFlopsPerIteration;
  std::vector<SyntheticStage> stages = config.resolveStages();
  program.stages.resize(static_cast<size_t>(config.stages));
  for (int64_t s = 0; s < config.stages; ++s) {
    StageBuilder builder(config, stages[static_cast<size_t>(s)], s,
                         program.stages[static_cast<size_t>(s)]);
    builder.build();
  }
  return program;
}
