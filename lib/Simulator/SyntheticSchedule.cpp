//===- SyntheticSchedule.cpp - Programs of any pipeline schedule ----------===//

#include "ratrain/Simulator/SyntheticSchedule.h"
#include "ActivationOffloadTasks.h"
#include "ratrain/Planner/SyncPhases.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::sim;
using schedule::ActionKind;

namespace {

/// Emits the program of one rank.
class RankBuilder {
public:
  RankBuilder(const Synthetic1F1BConfig &config,
              const std::vector<SyntheticStage> &stages,
              const schedule::PipelineSchedule &schedule, int64_t rank,
              StageProgram &program)
      : config(config), stages(stages), schedule(schedule), rank(rank),
        program(program), numStages(schedule.numStages()),
        m(schedule.microBatches), chunks(numStages) {
    for (int64_t c = 0; c < numStages; ++c) {
      chunks[c].syncs.resize(stages[c].layers);
      chunks[c].gathers.resize(stages[c].layers);
      chunks[c].pendingWaits.assign(stages[c].layers, ~size_t(0));
      chunks[c].primed.assign(stages[c].layers, false);
      chunks[c].activations = std::make_unique<ActivationOffloadTasks>(
          program, stages[c], /*adjacentBackward=*/c == numStages - 1,
          /*head=*/c == numStages - 1 && stages[c].extraForwardSeconds > 0);
    }
  }

  void build();

private:
  /// Per virtual stage of this rank.
  struct Chunk {
    bool forwarded = false; ///< its first F was emitted
    int64_t backwards = 0;  ///< B or W actions emitted (the last syncs)
    std::vector<Token> syncs, gathers;
    std::vector<size_t> pendingWaits;
    /// The layer's secondary shard was gathered this iteration.
    std::vector<bool> primed;
    /// Offloaded activations (SyntheticStage::offloadedLayers).
    std::unique_ptr<ActivationOffloadTasks> activations;
  };
  /// A layer in the order its gradient sync is issued.
  struct Item {
    int64_t chunk, local;
  };

  int64_t rankOf(int64_t c) const { return schedule.stageToRank[c]; }
  int64_t layerOf(int64_t c, int64_t l) const {
    return stages[c].firstLayer + l;
  }
  uint64_t tag(int64_t c, int64_t mb, bool gradient) const {
    return uint64_t(2 * (c * m + mb) + (gradient ? 1 : 0));
  }
  /// Tied embeddings whose embedding (chunk 0) and head (the last chunk)
  /// run on different ranks; tags past the pipeline messages'.
  bool tiedAcrossRanks() const {
    return config.tiedEmbeddingBytes > 0 && rankOf(0) != rankOf(numStages - 1);
  }
  uint64_t tiedTag(bool gradient) const {
    return uint64_t(2 * numStages * m + (gradient ? 1 : 0));
  }
  /// The head's rank: after its last head backward, the LM head's gradient
  /// goes to the embedding's rank.
  void sendTiedGradient() {
    program.addSend(uint32_t(rankOf(0)), config.tiedEmbeddingBytes,
                    tiedTag(true), config.pipelineLink,
                    "send tied LM-head grad");
  }
  /// The embedding's rank: before its gradient is complete.
  void recvTiedGradient() {
    program.addRecv(uint32_t(rankOf(numStages - 1)), config.tiedEmbeddingBytes,
                    tiedTag(true), "recv tied LM-head grad");
  }
  bool syncs(int64_t c) const {
    return config.dataParallel > 1 && stages[c].gradientBytesPerLayer > 0;
  }
  bool gathers(int64_t c) const {
    return config.dataParallel > 1 && stages[c].gatherBytesPerLayer > 0;
  }
  bool offloads(int64_t c) const { return stages[c].offloadBytesPerLayer > 0; }
  /// Partial synchronization (Synthetic1F1BConfig::syncPeriod).
  bool averages() const {
    return config.dataParallel > 1 && config.syncPeriod > 1 &&
           stages.front().averageBytesPerLayer > 0;
  }
  /// The averaging of chunk `c`'s local layer `l`, in `phase`.
  Token average(int64_t c, int64_t l, int64_t phase) {
    return program.addCollective(
        config.zeroCollective(config.gradSyncSpec, CollectiveKind::AllReduce,
                              stages[c].averageBytesPerLayer),
        llvm::formatv("average L{0}", layerOf(c, l)).str(),
        config.gradientStream, uint32_t(config.syncPeriod), uint32_t(phase));
  }
  /// Partial synchronization: the updates of `items`, then their averagings
  /// (right after each update when `interleave`), then each averaging's
  /// wait and the cast of the view.
  /// Offloaded optimizer states stream through two buffers (per layer) or
  /// are reloaded before each update (whole model, write-backs waited at
  /// the end), as in the lifecycles below.
  void averagedLifecycle(llvm::ArrayRef<Item> items, bool interleave) {
    // The rank's layers (of all its chunks) spread over the phases, as the
    // lifecycle pass spreads a stage's.
    std::vector<int64_t> bytes;
    for (const Item &item : items)
      bytes.push_back(stages[item.chunk].averageBytesPerLayer);
    std::vector<int64_t> phases = assignSyncPhases(bytes, config.syncPeriod);
    std::vector<Token> tokens, writeBacks;
    for (size_t k = 0; k < items.size(); ++k) {
      const Item &item = items[k];
      int64_t c = item.chunk, layer = layerOf(c, item.local);
      if (offloads(c))
        program.addWait(interleave && k < reloads.size()
                            ? reloads[k]
                            : offloadTransfer(item, "reload"),
                        false, llvm::formatv("wait reload L{0}", layer).str());
      if (stages[c].updateSeconds > 0)
        program.addCompute(ComputeKind::Update, stages[c].updateSeconds, 0,
                           llvm::formatv("update L{0}", layer).str(),
                           /*optimizerStream=*/true);
      if (offloads(c)) {
        writeBacks.push_back(offloadTransfer(item, "write back"));
        if (interleave && k + 2 < items.size() && offloads(items[k + 2].chunk))
          reloads.push_back(offloadTransfer(items[k + 2], "reload"));
      }
      if (interleave)
        tokens.push_back(average(c, item.local, phases[k]));
    }
    if (!interleave)
      for (size_t k = 0; k < items.size(); ++k)
        tokens.push_back(average(items[k].chunk, items[k].local, phases[k]));
    for (auto [item, token] : llvm::zip(items, tokens)) {
      int64_t layer = layerOf(item.chunk, item.local);
      program.addWait(token, false,
                      llvm::formatv("wait average L{0}", layer).str());
      if (stages[item.chunk].viewCastSeconds > 0)
        program.addCompute(ComputeKind::ViewCast,
                           stages[item.chunk].viewCastSeconds, 0,
                           llvm::formatv("view-cast L{0}", layer).str());
    }
    if (!interleave)
      for (Token token : writeBacks)
        program.addWait(token, false, "wait write-back");
  }
  bool perLayer() const {
    return config.placement == LifecyclePlacement::PerLayer;
  }
  bool partitionSyncs(int64_t c) const {
    return config.dataParallel > 1 &&
           stages[c].partitionGradientBytesPerLayer > 0;
  }
  CollectiveSpec gradSync(int64_t bytes) const {
    return config.zeroCollective(config.gradSyncSpec, config.syncKind, bytes);
  }
  CollectiveSpec viewGather(int64_t bytes) const {
    return config.zeroCollective(config.viewGatherSpec,
                                 CollectiveKind::AllGather, bytes);
  }
  /// After a layer's gradient of micro-batch `mb` is complete (its B, or
  /// its W): after the last one, the gradient partition's reduce-scatter
  /// inside its level.
  void microBatchScatter(int64_t c, int64_t l, int64_t mb) {
    if (!partitionSyncs(c) || mb != config.microBatches - 1)
      return;
    chunks[c].syncs[l] = program.addCollective(
        config.zeroCollective(config.partitionGradSpec,
                              CollectiveKind::ReduceScatter,
                              stages[c].partitionGradientBytesPerLayer),
        llvm::formatv("grad reduce-scatter L{0} mb{1}", layerOf(c, l), mb)
            .str(),
        config.gradientStream);
    lastScatter = chunks[c].syncs[l];
  }
  Token offloadTransfer(const Item &item, const char *what) {
    return program.addOffloadTransfer(
        stages[item.chunk].offloadBytesPerLayer,
        llvm::formatv("{0} states L{1}", what, layerOf(item.chunk, item.local))
            .str());
  }

  bool gathersPerUse(int64_t c) const {
    return config.dataParallel > 1 &&
           stages[c].parameterGatherBytesPerLayer > 0;
  }
  /// ZeRO-3: issues the gather of the view of chunk `c`'s local layer `l`
  /// (its first use in the iteration first gathers the secondary shard).
  Token gatherView(int64_t c, int64_t l) {
    if (!chunks[c].primed[l] && stages[c].primaryGatherBytesPerLayer > 0)
      program.addCollective(
          config.zeroCollective(config.primaryGatherSpec,
                                CollectiveKind::AllGather,
                                stages[c].primaryGatherBytesPerLayer),
          llvm::formatv("primary all-gather L{0}", layerOf(c, l)).str());
    chunks[c].primed[l] = true;
    return program.addCollective(
        viewGather(stages[c].parameterGatherBytesPerLayer),
        llvm::formatv("view all-gather L{0}", layerOf(c, l)).str());
  }
  /// ZeRO-3: waits for the gather of layer `l` of a sweep over chunk `c`
  /// and issues the one of its next layer `next` (-1: none).
  void gatherBefore(int64_t c, Token &pending, int64_t l, int64_t next) {
    if (!gathersPerUse(c))
      return;
    program.addWait(pending, false,
                    llvm::formatv("wait view L{0}", layerOf(c, l)).str());
    if (next >= 0)
      pending = gatherView(c, next);
  }
  void forward(int64_t c, int64_t mb);
  void backward(int64_t c, int64_t mb, ActionKind kind);
  void weight(int64_t c, int64_t mb);
  /// The layer's gradient is complete after its last B or W.
  void gradientReady(int64_t c, int64_t l);
  void perLayerLifecycle();
  void wholeModelLifecycle();

  const Synthetic1F1BConfig &config;
  const std::vector<SyntheticStage> &stages;
  const schedule::PipelineSchedule &schedule;
  int64_t rank;
  StageProgram &program;
  int64_t numStages, m;
  std::vector<Chunk> chunks;
  std::vector<Item> ready;
  std::vector<Token> reloads;
  /// The last per-micro-batch reduce-scatter issued (in order on its
  /// stream).
  Token lastScatter;
};

} // namespace

void RankBuilder::forward(int64_t c, int64_t mb) {
  const SyntheticStage &s = stages[c];
  if (c > 0 && rankOf(c - 1) != rank)
    program.addRecv(uint32_t(rankOf(c - 1)), config.activationBytes,
                    tag(c - 1, mb, false),
                    llvm::formatv("recv act c{0} mb{1}", c, mb).str());
  if (c == 0 && s.extraForwardSeconds > 0)
    program.addCompute(ComputeKind::Forward, s.extraForwardSeconds, 0,
                       llvm::formatv("fwd embedding mb{0}", mb).str());
  Chunk &chunk = chunks[c];
  if (c == 0 && !chunk.forwarded && tiedAcrossRanks())
    program.addSend(uint32_t(rankOf(numStages - 1)), config.tiedEmbeddingBytes,
                    tiedTag(false), config.pipelineLink,
                    "send tied embedding view");
  bool firstForward = !chunk.forwarded;
  Token pending;
  if (gathersPerUse(c))
    pending = gatherView(c, 0);
  for (int64_t l = 0; l < s.layers; ++l) {
    gatherBefore(c, pending, l, l + 1 < s.layers ? l + 1 : -1);
    if (!chunk.forwarded && perLayer() && gathers(c)) {
      chunk.pendingWaits[l] = program.size();
      program.addWait(Token(), /*previousIteration=*/true,
                      llvm::formatv("wait view L{0}", layerOf(c, l)).str());
    }
    program.addCompute(
        ComputeKind::Forward, s.forwardSeconds, s.forwardFlops,
        llvm::formatv("fwd L{0} mb{1}", layerOf(c, l), mb).str());
    chunk.activations->afterForward(l, mb, layerOf(c, l));
    if (s.storedActivationBytesPerLayer > 0)
      program.addAlloc(
          s.storedActivationBytesPerLayer,
          llvm::formatv("act L{0} mb{1}", layerOf(c, l), mb).str());
  }
  chunk.forwarded = true;
  if (c == numStages - 1 && firstForward && tiedAcrossRanks())
    program.addRecv(uint32_t(rankOf(0)), config.tiedEmbeddingBytes,
                    tiedTag(false), "recv tied embedding view");
  if (c == numStages - 1 && s.extraForwardSeconds > 0)
    program.addCompute(ComputeKind::Forward, s.extraForwardSeconds, 0,
                       llvm::formatv("fwd head+loss mb{0}", mb).str());
  if (c + 1 < numStages && rankOf(c + 1) != rank)
    program.addSend(uint32_t(rankOf(c + 1)), config.activationBytes,
                    tag(c, mb, false), config.pipelineLink,
                    llvm::formatv("send act c{0} mb{1}", c, mb).str(),
                    config.rendezvousMessages);
}

void RankBuilder::gradientReady(int64_t c, int64_t l) {
  if (!perLayer())
    return;
  Item item{c, l};
  if (offloads(c) && reloads.size() < 2)
    reloads.push_back(offloadTransfer(item, "reload"));
  if (syncs(c))
    chunks[c].syncs[l] = program.addCollective(
        gradSync(stages[c].gradientBytesPerLayer),
        llvm::formatv("grad sync L{0}", layerOf(c, l)).str(),
        config.gradientStream);
  ready.push_back(item);
}

void RankBuilder::backward(int64_t c, int64_t mb, ActionKind kind) {
  const SyntheticStage &s = stages[c];
  bool full = kind == ActionKind::Backward;
  if (c + 1 < numStages && rankOf(c + 1) != rank)
    program.addRecv(uint32_t(rankOf(c + 1)), config.activationBytes,
                    tag(c + 1, mb, true),
                    llvm::formatv("recv grad c{0} mb{1}", c, mb).str());
  double extra = full ? s.extraBackwardSeconds
                      : s.extraBackwardSeconds - s.extraBackwardWeightSeconds;
  if (c == numStages - 1 && extra > 0)
    program.addCompute(
        ComputeKind::Backward, extra, 0,
        llvm::formatv("bwd{0} head+loss mb{1}", full ? "" : "-I", mb).str());
  bool last = full && ++chunks[c].backwards == m;
  if (c == numStages - 1 && last && tiedAcrossRanks())
    sendTiedGradient();
  double seconds =
      full ? s.backwardSeconds : s.backwardSeconds - s.backwardWeightSeconds;
  double flops = full ? s.backwardFlops : s.backwardFlops / 2;
  Token pending;
  if (gathersPerUse(c))
    pending = gatherView(c, s.layers - 1);
  ActivationOffloadTasks &activations = *chunks[c].activations;
  auto globalLayer = [&](int64_t l) { return layerOf(c, l); };
  activations.beforeSweep(mb, globalLayer);
  for (int64_t l = s.layers - 1; l >= 0; --l) {
    int64_t layer = layerOf(c, l);
    gatherBefore(c, pending, l, l - 1);
    activations.beforeBackward(l, mb, globalLayer);
    if (s.recomputeSeconds > 0 && !activations.keepsFullActivations(l))
      program.addCompute(
          ComputeKind::Recompute, s.recomputeSeconds, 0,
          llvm::formatv("recompute L{0} mb{1}", layer, mb).str());
    program.addCompute(
        ComputeKind::Backward, seconds, flops,
        llvm::formatv("bwd{0} L{1} mb{2}", full ? "" : "-I", layer, mb).str());
    if (full && s.storedActivationBytesPerLayer > 0)
      program.addFree(s.storedActivationBytesPerLayer,
                      llvm::formatv("act L{0} mb{1}", layer, mb).str());
    if (!full && s.deferredBytesPerLayer > 0)
      program.addAlloc(s.deferredBytesPerLayer,
                       llvm::formatv("dY L{0} mb{1}", layer, mb).str());
    if (full)
      microBatchScatter(c, l, mb);
    if (last)
      gradientReady(c, l);
  }
  if (c == 0 && full && s.extraBackwardSeconds > 0)
    program.addCompute(ComputeKind::Backward, s.extraBackwardSeconds, 0,
                       llvm::formatv("bwd embedding mb{0}", mb).str());
  if (c == 0 && last && tiedAcrossRanks())
    recvTiedGradient();
  if (c > 0 && rankOf(c - 1) != rank)
    program.addSend(uint32_t(rankOf(c - 1)), config.activationBytes,
                    tag(c, mb, true), config.pipelineLink,
                    llvm::formatv("send grad c{0} mb{1}", c, mb).str(),
                    config.rendezvousMessages);
}

void RankBuilder::weight(int64_t c, int64_t mb) {
  const SyntheticStage &s = stages[c];
  if (c == numStages - 1 && s.extraBackwardWeightSeconds > 0)
    program.addCompute(ComputeKind::Backward, s.extraBackwardWeightSeconds, 0,
                       llvm::formatv("bwd-W head mb{0}", mb).str());
  bool last = ++chunks[c].backwards == m;
  if (c == numStages - 1 && last && tiedAcrossRanks())
    sendTiedGradient();
  Token pending;
  if (gathersPerUse(c))
    pending = gatherView(c, s.layers - 1);
  for (int64_t l = s.layers - 1; l >= 0; --l) {
    int64_t layer = layerOf(c, l);
    gatherBefore(c, pending, l, l - 1);
    program.addCompute(ComputeKind::Backward, s.backwardWeightSeconds,
                       s.backwardFlops / 2,
                       llvm::formatv("bwd-W L{0} mb{1}", layer, mb).str());
    if (s.storedActivationBytesPerLayer > 0)
      program.addFree(s.storedActivationBytesPerLayer,
                      llvm::formatv("act L{0} mb{1}", layer, mb).str());
    if (s.deferredBytesPerLayer > 0)
      program.addFree(s.deferredBytesPerLayer,
                      llvm::formatv("dY L{0} mb{1}", layer, mb).str());
    microBatchScatter(c, l, mb);
    if (last)
      gradientReady(c, l);
  }
  if (c == 0 && s.extraBackwardSeconds > 0)
    program.addCompute(ComputeKind::Backward, s.extraBackwardSeconds, 0,
                       llvm::formatv("bwd-W embedding mb{0}", mb).str());
  if (c == 0 && last && tiedAcrossRanks())
    recvTiedGradient();
}

/// After the rank's last action, in the order the syncs were issued: wait,
/// update, cast, issue the view all-gather the next forward waits for.
void RankBuilder::perLayerLifecycle() {
  if (averages()) {
    averagedLifecycle(ready, /*interleave=*/true);
    return;
  }
  if (config.clipGradients) {
    // Every sync first: the global norm needs all of them.
    double squares = 0;
    for (const Item &item : ready) {
      int64_t c = item.chunk, l = item.local;
      if (chunks[c].syncs[l].isValid())
        program.addWait(
            chunks[c].syncs[l], false,
            llvm::formatv("wait grad sync L{0}", layerOf(c, l)).str());
    }
    for (int64_t c = 0; c < numStages; ++c)
      if (rankOf(c) == rank)
        squares += stages[c].gradSquaresSeconds;
    appendGlobalNorm(
        program, rank, schedule.ranks,
        config.dataParallelCollective(CollectiveKind::AllReduce, 4), squares,
        config.pipelineLink);
  }
  for (size_t k = 0; k < ready.size(); ++k) {
    const Item &item = ready[k];
    int64_t c = item.chunk, l = item.local, layer = layerOf(c, l);
    const SyntheticStage &s = stages[c];
    if (chunks[c].syncs[l].isValid() && !config.clipGradients)
      program.addWait(chunks[c].syncs[l], false,
                      llvm::formatv("wait grad sync L{0}", layer).str());
    if (offloads(c) && k < reloads.size())
      program.addWait(reloads[k], false,
                      llvm::formatv("wait reload L{0}", layer).str());
    if (s.updateSeconds > 0)
      program.addCompute(ComputeKind::Update, s.updateSeconds, 0,
                         llvm::formatv("update L{0}", layer).str(),
                         /*optimizerStream=*/true);
    if (offloads(c)) {
      offloadTransfer(item, "write back");
      if (k + 2 < ready.size() && offloads(ready[k + 2].chunk))
        reloads.push_back(offloadTransfer(ready[k + 2], "reload"));
    }
    if (s.viewCastSeconds > 0)
      program.addCompute(ComputeKind::ViewCast, s.viewCastSeconds, 0,
                         llvm::formatv("view-cast L{0}", layer).str());
    if (gathers(c))
      chunks[c].gathers[l] = program.addCollective(
          viewGather(s.gatherBytesPerLayer),
          llvm::formatv("param all-gather L{0}", layer).str());
  }
  for (int64_t c = 0; c < numStages; ++c)
    if (rankOf(c) == rank && gathers(c))
      for (int64_t l = 0; l < stages[c].layers; ++l)
        if (chunks[c].pendingWaits[l] != ~size_t(0))
          program.setWaitTarget(chunks[c].pendingWaits[l], chunks[c].gathers[l],
                                /*previousIteration=*/true);
}

void RankBuilder::wholeModelLifecycle() {
  if (averages()) {
    std::vector<Item> items;
    for (int64_t c = 0; c < numStages; ++c)
      if (rankOf(c) == rank)
        for (int64_t l = 0; l < stages[c].layers; ++l)
          items.push_back({c, l});
    averagedLifecycle(items, /*interleave=*/false);
    return;
  }
  std::vector<int64_t> mine;
  int64_t gradientBytes = 0, gatherBytes = 0;
  for (int64_t c = 0; c < numStages; ++c)
    if (rankOf(c) == rank) {
      mine.push_back(c);
      if (syncs(c))
        gradientBytes += stages[c].gradientBytesPerLayer * stages[c].layers;
      if (gathers(c))
        gatherBytes += stages[c].gatherBytesPerLayer * stages[c].layers;
    }
  if (gradientBytes > 0) {
    Token token =
        program.addCollective(gradSync(gradientBytes), "grad sync (all layers)",
                              config.gradientStream);
    program.addWait(token, false, "wait grad sync");
  } else if (lastScatter.isValid()) {
    program.addWait(lastScatter, false, "wait grad reduce-scatters");
  }
  if (config.clipGradients) {
    double squares = 0;
    for (int64_t c : mine)
      squares += stages[c].gradSquaresSeconds;
    appendGlobalNorm(
        program, rank, schedule.ranks,
        config.dataParallelCollective(CollectiveKind::AllReduce, 4), squares,
        config.pipelineLink);
  }
  std::vector<Token> writeBacks;
  for (int64_t c : mine)
    for (int64_t l = 0; l < stages[c].layers; ++l) {
      Item item{c, l};
      if (offloads(c))
        program.addWait(offloadTransfer(item, "reload"), false,
                        llvm::formatv("wait reload L{0}", layerOf(c, l)).str());
      if (stages[c].updateSeconds > 0)
        program.addCompute(ComputeKind::Update, stages[c].updateSeconds, 0,
                           llvm::formatv("update L{0}", layerOf(c, l)).str(),
                           /*optimizerStream=*/true);
      if (offloads(c))
        writeBacks.push_back(offloadTransfer(item, "write back"));
    }
  for (int64_t c : mine)
    for (int64_t l = 0; l < stages[c].layers; ++l)
      if (stages[c].viewCastSeconds > 0)
        program.addCompute(
            ComputeKind::ViewCast, stages[c].viewCastSeconds, 0,
            llvm::formatv("view-cast L{0}", layerOf(c, l)).str());
  if (gatherBytes > 0) {
    Token token = program.addCollective(viewGather(gatherBytes),
                                        "param all-gather (all layers)");
    program.addWait(token, false, "wait param all-gather");
  }
  for (Token token : writeBacks)
    program.addWait(token, false, "wait write-back");
}

void RankBuilder::build() {
  program.name = llvm::formatv("stage {0}", rank).str();
  for (int64_t c = 0; c < numStages; ++c)
    if (rankOf(c) == rank) {
      program.residentBytes += stages[c].residentBytes;
      program.assignedPeakBytes += stages[c].assignedPeakBytes;
    }
  for (const schedule::Action &action : schedule.programs[rank]) {
    switch (action.kind) {
    case ActionKind::Forward:
      forward(action.stage, action.microBatch);
      break;
    case ActionKind::Backward:
    case ActionKind::BackwardInput:
      backward(action.stage, action.microBatch, action.kind);
      break;
    case ActionKind::BackwardWeight:
      weight(action.stage, action.microBatch);
      break;
    default:
      // Explicit transfers are implied by the compute actions.
      break;
    }
  }
  if (perLayer())
    perLayerLifecycle();
  else
    wholeModelLifecycle();
}

SimProgram
sim::buildSyntheticSchedule(const Synthetic1F1BConfig &requested,
                            const schedule::PipelineSchedule &schedule) {
  Synthetic1F1BConfig config = requested;
  config.stages = schedule.numStages();
  std::vector<SyntheticStage> stages = config.resolveStages();
  SimProgram program;
  program.name = llvm::formatv("{0} p={1} v={2} m={3} dp={4} ({5} lifecycle)",
                               schedule::stringifyScheduleKind(schedule.kind),
                               schedule.ranks, schedule.virtualStages,
                               schedule.microBatches, config.dataParallel,
                               config.placement == LifecyclePlacement::PerLayer
                                   ? "per-layer"
                                   : "whole-model")
                     .str();
  program.dataParallel = config.dataParallel;
  program.tokensPerIteration = config.tokensPerIteration;
  program.modelFlopsPerIteration = config.modelFlopsPerIteration;
  program.stages.resize(size_t(schedule.ranks));
  for (int64_t r = 0; r < schedule.ranks; ++r) {
    RankBuilder builder(config, stages, schedule, r, program.stages[r]);
    builder.build();
  }
  return program;
}
