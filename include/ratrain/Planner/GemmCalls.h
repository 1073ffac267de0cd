//===- GemmCalls.h - The GEMM calls of a training step ----------*- C++ -*-===//
//
// The GEMM calls a micro-batch's forward and backward make, as the runtime's
// kernels are called (form and m x n x k): the cost model prices each one
// (a measured time where the machine file lists its shape, `gemm_measured`,
// the fit otherwise), and ratrain-calibrate --model measures the same list,
// so the two cannot disagree on what a layer calls.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_PLANNER_GEMMCALLS_H
#define RATRAIN_PLANNER_GEMMCALLS_H

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/ModelConfig.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdint>

namespace ratrain {

/// A model's GEMM calls above this many FLOPs are not measured into a
/// machine file (ratrain-calibrate --model, --add-gemms): gemm_fit is
/// accurate for large calls, and timing them would take minutes.
inline constexpr double kMaxMeasuredGemmFlops = 2e11;
/// The micro-batch sizes whose calls are measured for a model unless told
/// otherwise: those the planner picks on small hosts.
inline constexpr int64_t kMeasuredMicroBatchSizes[] = {1, 2, 4};

/// The most bytes a model's measured calls cycle their operands through.
inline constexpr int64_t kMaxGemmWorkingSetBytes = int64_t(256) << 20;

/// What a training step of `model` touches per parameter, as the working
/// set its GEMMs see: the 16-bit view and gradient, the fp32 master and
/// AdamW's two moments (16 bytes a parameter). Operands of a model whose
/// step is larger than the last-level cache come from DRAM, and the packing
/// of a call's operands then costs more the fewer rows it has, so the
/// calibration times a model's calls on operands cycled through this many
/// bytes (clamped to [the last-level cache, kMaxGemmWorkingSetBytes]).
inline int64_t stepWorkingSetBytes(const ModelConfig &model) {
  return 16 * model.totalParams();
}

/// The bytes a model's calls are timed on: its step's working set
/// (`stepBytes`, the largest model's when several) clamped to
/// [`cacheBytes` (the last-level cache), kMaxGemmWorkingSetBytes].
inline int64_t modelGemmWorkingSet(int64_t stepBytes, int64_t cacheBytes) {
  return std::clamp(stepBytes, cacheBytes,
                    std::max(cacheBytes, kMaxGemmWorkingSetBytes));
}

/// One GEMM call, `count` times per pass: C[m x n] over k, read as `form`.
struct GemmCall {
  GemmForm form = GemmForm::NT;
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 1;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

/// The passes a part of the model runs: the forward (Y = X W^T, NT), the
/// backward's input gradients (dX = dY W, NN) and its weight gradients
/// (dW = dY^T X, TN).
enum class GemmPass { Forward, BackwardInput, BackwardWeight };

/// One decoder layer's GEMM calls in `pass` for a micro-batch of
/// `microBatchSize` sequences: q, o, k and v (GQA: kv-wide), gate and up,
/// down.
llvm::SmallVector<GemmCall, 8>
layerGemmCalls(const ModelConfig &model, int64_t microBatchSize, GemmPass pass);
/// The LM head's GEMM call in `pass` (logits = X E^T over the vocabulary).
GemmCall headGemmCall(const ModelConfig &model, int64_t microBatchSize,
                      GemmPass pass);
/// Every distinct GEMM call (count 1) of a step of micro-batches of each
/// size in `microBatchSizes`: layers and head, all three passes; the shapes
/// ratrain-calibrate --model measures.
std::vector<GemmCall>
distinctGemmCalls(const ModelConfig &model,
                  llvm::ArrayRef<int64_t> microBatchSizes);
/// Those of `calls` up to kMaxMeasuredGemmFlops that `measured` does not
/// list for both operand types: what ratrain-calibrate --add-gemms times
/// (and the driver asks it to).
std::vector<GemmCall> unmeasuredGemmCalls(llvm::ArrayRef<GemmCall> calls,
                                          const MeasuredGemms &measured);

} // namespace ratrain

#endif // RATRAIN_PLANNER_GEMMCALLS_H
