//===- ActivationOffloadTasks.h - Offloaded activations, synthetic -*- C++
//-*-===//
//
// Private to the simulator's synthetic programs (Synthetic1F1B.cpp,
// SyntheticSchedule.cpp): the transfers of a stage whose first layers keep
// their activations in the offload tier (SyntheticStage::offloadedLayers),
// placed as --ratrain-schedule-lifecycle places them (docs/schedule.md,
// "Activation offload"): out after the forward, back `activationPrefetch`
// backwards ahead of the one that reads them, waited right before it.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_LIB_SIMULATOR_ACTIVATIONOFFLOADTASKS_H
#define RATRAIN_LIB_SIMULATOR_ACTIVATIONOFFLOADTASKS_H

#include "ratrain/Simulator/Synthetic1F1B.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <utility>

namespace ratrain::sim {

class ActivationOffloadTasks {
public:
  /// `adjacentBackward`: the stage's backward of a micro-batch follows its
  /// forward directly (the last stage of the pipeline, whose head runs in
  /// between when `head`), so the last layers' activations, read within the
  /// prefetch window, stay in DDR.
  ActivationOffloadTasks(StageProgram &program, const SyntheticStage &stage,
                         bool adjacentBackward, bool head)
      : program(program), stage(stage), adjacentBackward(adjacentBackward),
        head(head) {}

  /// Whether layer `l` (in the stage) keeps its full activations (no
  /// recompute before its backward).
  bool keepsFullActivations(int64_t l) const {
    return l < stage.offloadedLayers;
  }

  /// After the forward of layer `l` of micro-batch `mb`.
  void afterForward(int64_t l, int64_t mb, int64_t layer) {
    if (!moves(l))
      return;
    offloads[{l, mb}] = program.addOffloadTransfer(
        stage.activationOffloadBytes,
        llvm::formatv("offload act L{0} mb{1}", layer, mb).str());
  }

  /// At the start of micro-batch `mb`'s backward sweep (layers last to
  /// first): the reloads needed within the prefetch distance.
  void beforeSweep(int64_t mb, llvm::function_ref<int64_t(int64_t)> layerOf) {
    for (int64_t l = stage.layers - 1;
         l >= 0 && l >= stage.layers - 1 - stage.activationPrefetch; --l)
      reload(l, mb, layerOf(l));
  }

  /// Right before the backward of layer `l`: issues the reload prefetch
  /// layers below and waits for layer `l`'s own.
  void beforeBackward(int64_t l, int64_t mb,
                      llvm::function_ref<int64_t(int64_t)> layerOf) {
    int64_t ahead = l - stage.activationPrefetch;
    if (ahead >= 0)
      reload(ahead, mb, layerOf(ahead));
    auto it = reloads.find({l, mb});
    if (it == reloads.end())
      return;
    program.addWait(
        it->second, false,
        llvm::formatv("wait reload act L{0} mb{1}", layerOf(l), mb).str());
    reloads.erase(it);
  }

private:
  bool moves(int64_t l) const {
    if (l >= stage.offloadedLayers || stage.activationOffloadBytes <= 0)
      return false;
    if (!adjacentBackward)
      return true;
    // Computes from l's forward to its backward, as the lifecycle pass
    // counts them: the later layers' forwards, the head's forward and
    // backward, the later layers' recomputes and backwards, l's backward.
    int64_t distance = (stage.layers - 1 - l) + (head ? 2 : 0) + 1;
    for (int64_t j = l + 1; j < stage.layers; ++j)
      distance +=
          1 + (stage.recomputeSeconds > 0 && !keepsFullActivations(j) ? 1 : 0);
    return distance > stage.activationPrefetch + 2;
  }
  void reload(int64_t l, int64_t mb, int64_t layer) {
    auto offload = offloads.find({l, mb});
    if (offload == offloads.end() || reloads.count({l, mb}))
      return;
    // A reload reads what its offload wrote.
    program.addWait(
        offload->second, false,
        llvm::formatv("wait offload act L{0} mb{1}", layer, mb).str());
    offloads.erase(offload);
    reloads[{l, mb}] = program.addOffloadTransfer(
        stage.activationOffloadBytes,
        llvm::formatv("reload act L{0} mb{1}", layer, mb).str());
  }

  StageProgram &program;
  const SyntheticStage &stage;
  bool adjacentBackward, head;
  std::map<std::pair<int64_t, int64_t>, Token> offloads, reloads;
};

} // namespace ratrain::sim

#endif // RATRAIN_LIB_SIMULATOR_ACTIVATIONOFFLOADTASKS_H
