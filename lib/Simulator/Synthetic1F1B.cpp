//===- Synthetic1F1B.cpp - Generated non-interleaved 1F1B programs
//---------===//

#include "ratrain/Simulator/Synthetic1F1B.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::sim;

namespace {

/// Emits the program of one stage.
class StageBuilder {
public:
  StageBuilder(const Synthetic1F1BConfig &config, int64_t stage,
               StageProgram &program)
      : config(config), stage(stage), program(program),
        last(stage == config.stages - 1), syncTokens(config.layersPerStage),
        pendingWaits(config.layersPerStage, 0) {}

  void build();

private:
  int64_t globalLayer(int64_t local) const {
    return stage * config.layersPerStage + local;
  }
  bool syncs() const {
    return config.dataParallel > 1 && config.gradientBytesPerLayer > 0;
  }
  CollectiveSpec syncSpec(int64_t bytes) const {
    CollectiveSpec spec;
    spec.kind = config.syncKind;
    spec.bytes = bytes;
    spec.groupSize = config.dataParallel;
    spec.membersPerNode =
        std::clamp<int64_t>(config.dpMembersPerNode, 1, config.dataParallel);
    spec.algorithm = config.syncAlgorithm;
    return spec;
  }
  void forward(int64_t mb);
  void backward(int64_t mb);
  void wholeModelLifecycle();

  const Synthetic1F1BConfig &config;
  int64_t stage;
  StageProgram &program;
  bool last;
  std::vector<Token> syncTokens;
  /// Index of the loop-carried wait placed before each layer's first forward.
  std::vector<size_t> pendingWaits;
};

} // namespace

void StageBuilder::forward(int64_t mb) {
  if (stage > 0)
    program.addRecv(static_cast<uint32_t>(stage - 1), config.activationBytes,
                    static_cast<uint64_t>(2 * mb),
                    llvm::formatv("recv act mb{0}", mb).str());
  for (int64_t l = 0; l < config.layersPerStage; ++l) {
    int64_t layer = globalLayer(l);
    if (mb == 0 && config.placement == LifecyclePlacement::PerLayer) {
      // The previous iteration's gradients of this layer must be synchronized
      // and applied before its first forward.
      if (syncs()) {
        pendingWaits[l] = program.size();
        program.addWait(Token(), /*previousIteration=*/true,
                        llvm::formatv("wait grad sync L{0}", layer).str());
      }
      if (config.updateSeconds > 0)
        program.addCompute(ComputeKind::Update, config.updateSeconds, 0,
                           llvm::formatv("update L{0}", layer).str());
      if (config.viewCastSeconds > 0)
        program.addCompute(ComputeKind::ViewCast, config.viewCastSeconds, 0,
                           llvm::formatv("view-cast L{0}", layer).str());
    }
    program.addCompute(ComputeKind::Forward, config.forwardSeconds,
                       config.forwardFlops,
                       llvm::formatv("fwd L{0} mb{1}", layer, mb).str());
    if (config.storedActivationBytesPerLayer > 0)
      program.addAlloc(config.storedActivationBytesPerLayer,
                       llvm::formatv("act L{0} mb{1}", layer, mb).str());
  }
  if (!last)
    program.addSend(static_cast<uint32_t>(stage + 1), config.activationBytes,
                    static_cast<uint64_t>(2 * mb), config.pipelineLink,
                    llvm::formatv("send act mb{0}", mb).str());
}

void StageBuilder::backward(int64_t mb) {
  if (!last)
    program.addRecv(static_cast<uint32_t>(stage + 1), config.activationBytes,
                    static_cast<uint64_t>(2 * mb + 1),
                    llvm::formatv("recv grad mb{0}", mb).str());
  for (int64_t l = config.layersPerStage - 1; l >= 0; --l) {
    int64_t layer = globalLayer(l);
    if (config.recomputeSeconds > 0)
      program.addCompute(
          ComputeKind::Recompute, config.recomputeSeconds, config.forwardFlops,
          llvm::formatv("recompute L{0} mb{1}", layer, mb).str());
    program.addCompute(ComputeKind::Backward, config.backwardSeconds,
                       config.backwardFlops,
                       llvm::formatv("bwd L{0} mb{1}", layer, mb).str());
    if (config.storedActivationBytesPerLayer > 0)
      program.addFree(config.storedActivationBytesPerLayer,
                      llvm::formatv("act L{0} mb{1}", layer, mb).str());
    if (mb == config.microBatches - 1 &&
        config.placement == LifecyclePlacement::PerLayer && syncs())
      syncTokens[l] =
          program.addCollective(syncSpec(config.gradientBytesPerLayer),
                                llvm::formatv("grad sync L{0}", layer).str());
  }
  if (stage > 0)
    program.addSend(static_cast<uint32_t>(stage - 1), config.activationBytes,
                    static_cast<uint64_t>(2 * mb + 1), config.pipelineLink,
                    llvm::formatv("send grad mb{0}", mb).str());
}

void StageBuilder::wholeModelLifecycle() {
  if (syncs()) {
    Token token = program.addCollective(
        syncSpec(config.gradientBytesPerLayer * config.layersPerStage),
        "grad sync (all layers)");
    program.addWait(token, false, "wait grad sync");
  }
  for (int64_t l = 0; l < config.layersPerStage; ++l)
    if (config.updateSeconds > 0)
      program.addCompute(ComputeKind::Update, config.updateSeconds, 0,
                         llvm::formatv("update L{0}", globalLayer(l)).str());
  for (int64_t l = 0; l < config.layersPerStage; ++l)
    if (config.viewCastSeconds > 0)
      program.addCompute(ComputeKind::ViewCast, config.viewCastSeconds, 0,
                         llvm::formatv("view-cast L{0}", globalLayer(l)).str());
}

void StageBuilder::build() {
  const int64_t p = config.stages, m = config.microBatches;
  program.name = llvm::formatv("stage {0}", stage).str();
  program.residentBytes = config.residentBytes;
  int64_t warmup = std::min(p - stage - 1, m);
  int64_t layers = config.layersPerStage;
  program.reserve(static_cast<size_t>(m * (2 * layers + 4) * 2 + 4 * layers));
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
  if (syncs())
    for (int64_t l = 0; l < layers; ++l)
      program.setWaitTarget(pendingWaits[l], syncTokens[l],
                            /*previousIteration=*/true);
}

SimProgram sim::buildSynthetic1F1B(const Synthetic1F1BConfig &config) {
  SimProgram program;
  program.name =
      llvm::formatv("synthetic 1F1B p={0} m={1} dp={2} ({3})", config.stages,
                    config.microBatches, config.dataParallel,
                    config.placement == LifecyclePlacement::PerLayer
                        ? "per-layer lifecycle"
                        : "whole-model lifecycle")
          .str();
  program.dataParallel = config.dataParallel;
  program.tokensPerIteration = config.tokensPerIteration;
  program.modelFlopsPerIteration = config.modelFlopsPerIteration;
  program.stages.resize(static_cast<size_t>(config.stages));
  for (int64_t s = 0; s < config.stages; ++s) {
    StageBuilder builder(config, s, program.stages[s]);
    builder.build();
  }
  return program;
}
