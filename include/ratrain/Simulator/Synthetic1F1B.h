//===- Synthetic1F1B.h - Generated non-interleaved 1F1B programs -*- C++
//-*-===//
//
// Builds the SimProgram of a non-interleaved 1F1B iteration directly, without
// the compiler: uniform layers per stage, given per-layer durations and
// sizes, and one of two placements of the training-state lifecycle
// (gradient sync, update, parameter-view cast):
// - WholeModel ("gpu-style"): after the stage's last backward, one bucketed
//   collective for all of the stage's gradients, wait, update every layer,
//   cast every parameter view.
// - PerLayer ("ratrain"): each layer's gradient sync is issued as soon as the
//   last micro-batch's backward of that layer finishes; the layer's wait,
//   update and view cast are placed just before its first forward of the next
//   iteration (loop-carried), so they overlap the pipeline drain and fill.
// Used by the unit tests, the simulator benchmark and the evaluation until the
// schedule passes feed the simulator; the real schedules come from
// expand-1f1b + schedule-lifecycle.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_SYNTHETIC1F1B_H
#define RATRAIN_SIMULATOR_SYNTHETIC1F1B_H

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Simulator/SimProgram.h"

#include <cstdint>

namespace ratrain {
namespace sim {

enum class LifecyclePlacement { WholeModel, PerLayer };

struct Synthetic1F1BConfig {
  int64_t stages = 2;
  int64_t microBatches = 2;
  int64_t layersPerStage = 1;
  int64_t dataParallel = 1;
  /// Seconds per layer and micro-batch.
  double forwardSeconds = 1;
  double backwardSeconds = 2;
  /// Recomputation before each layer's backward (0 = activations stored).
  double recomputeSeconds = 0;
  /// Per layer and iteration (whole batch).
  double updateSeconds = 0;
  double viewCastSeconds = 0;
  /// FLOPs per layer and micro-batch (reported on the compute tasks).
  double forwardFlops = 0;
  double backwardFlops = 0;
  /// Activation bytes sent between stages per micro-batch (0 = none sent).
  int64_t activationBytes = 0;
  LinkClass pipelineLink = LinkClass::InterNode;
  /// Gradient bytes per layer synchronized over the data-parallel group.
  int64_t gradientBytesPerLayer = 0;
  CollectiveKind syncKind = CollectiveKind::AllReduce;
  CollectiveAlgorithm syncAlgorithm = CollectiveAlgorithm::Ring;
  int64_t dpMembersPerNode = 1;
  LifecyclePlacement placement = LifecyclePlacement::WholeModel;
  /// DDR accounting: resident bytes per stage, activation bytes held per
  /// layer and micro-batch between its forward and backward.
  int64_t residentBytes = 0;
  int64_t storedActivationBytesPerLayer = 0;
  double tokensPerIteration = 0;
  double modelFlopsPerIteration = 0;
};

/// Builds the program; stage i runs min(p-i-1, m) warm-up forwards, the
/// steady 1F1B pairs, then the cool-down backwards. Tags: forward activations
/// use 2*mb, backward gradients 2*mb+1.
SimProgram buildSynthetic1F1B(const Synthetic1F1BConfig &config);

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_SYNTHETIC1F1B_H
