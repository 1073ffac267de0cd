//===- MemoryBoundFigures.cpp - The memory-bound kernels' figures ---------===//

#include "MemoryBoundFigures.h"
#include "HalideKernelFigures.h"
#include "LayerElementwise.h"

#include "ratrain/kernels/Kernels.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::calibrate;

static llvm::Error failure(const char *what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Expected<MemoryBoundFigures> ratrain::calibrate::calibrateMemoryBound(
    bool quick, int reps, unsigned coresPerCluster, unsigned clusters,
    double ddrAlone, const ModelConfig &layer, int64_t layerBatch,
    int64_t layerWorkingSet, llvm::raw_ostream &notes) {
  MemoryBoundFigures f;
  // Memory-bound kernels, measured on one cluster while the others idle,
  // against what its DDR gives it then (ddr_bandwidth_alone; the cost
  // model divides their bytes by ddr_bandwidth * memory_bound, the rate
  // with every cluster streaming, and the simulator by
  // ddr_bandwidth_alone * memory_bound for a cluster streaming alone).
  int64_t params = quick ? (4 << 20) : (8 << 20);
  double adamw = measureAdamW(params, reps) * coresPerCluster;
  double rmsnorm =
      measureRmsNorm(quick ? 1024 : 2048, 4096, reps) * coresPerCluster;
  if (adamw <= 0 || rmsnorm <= 0)
    return failure("the Halide AdamW / RMSNorm kernels failed");
  // The update as a step runs it (an fp32 and a bf16 model's), one cluster
  // alone and every cluster at once, and the layer's element-wise kernels,
  // every cluster at once: a thread a cluster, each call on the cluster's
  // cores (wall clock). Clusters of one core run their kernels' parallel
  // loops on their own thread, as a rank process of one core does: through
  // the process's one thread pool, two threads of small kernels took turns
  // at its lock and measured half the rate in some calibrations.
  kernels::setCallerThreadLoops(coresPerCluster == 1);
  f.optimizerF32 = measureOptimizerBandwidths(params, reps, clusters, false);
  f.optimizerF16 = measureOptimizerBandwidths(params, reps, clusters, true);
  f.elementwiseF32 = measureLayerElementwise(layer, layerBatch, false, clusters,
                                             reps, layerWorkingSet);
  f.elementwiseF16 = measureLayerElementwise(layer, layerBatch, true, clusters,
                                             reps, layerWorkingSet);
  kernels::setCallerThreadLoops(false);
  if (f.optimizerF32.second <= 0 || f.optimizerF16.second <= 0)
    return failure("the Halide AdamW kernel failed");
  if (f.elementwiseF32 <= 0 || f.elementwiseF16 <= 0)
    return failure("the Halide RMSNorm / RoPE / SwiGLU / add kernels failed");
  double adamwShare = adamw / ddrAlone, rmsnormShare = rmsnorm / ddrAlone;
  f.memoryBound = std::clamp(
      (std::min(adamwShare, 1.0) + std::min(rmsnormShare, 1.0)) / 2, 0.05, 1.0);

  llvm::errs() << llvm::formatv(
      "  Halide AdamW {0:f1} GB/s, RMSNorm {1:f1} GB/s; the update fp32 "
      "{2:f1} GB/s alone, {3:f1} a cluster with all updating, bf16 {4:f1} "
      "and {5:f1}\n",
      adamw / 1e9, rmsnorm / 1e9, f.optimizerF32.second / 1e9,
      f.optimizerF32.first / 1e9, f.optimizerF16.second / 1e9,
      f.optimizerF16.first / 1e9);
  llvm::errs() << llvm::formatv(
      "  a layer's element-wise kernels ({0} tokens, h {1}, ffn {2}), every "
      "cluster at once: fp32 {3:f1} GB/s, bf16 {4:f1} GB/s\n",
      layer.seqLen * layerBatch, layer.hidden, layer.ffnHidden,
      f.elementwiseF32 / 1e9, f.elementwiseF16 / 1e9);
  notes << llvm::formatv(
      "#  [M]   the update over {0} Mi parameters as a step runs it, one "
      "cluster alone and every cluster at once (bytes as the cost model "
      "counts them): fp32 gradients {1:f1} and {2:f1} GB/s "
      "(optimizer_bandwidth_alone, optimizer_bandwidth), bf16 gradients "
      "with the bf16 view {3:f1} and {4:f1} GB/s (_f16); the update is "
      "priced at these, not at memory_bound\n",
      params >> 20, f.optimizerF32.second / 1e9, f.optimizerF32.first / 1e9,
      f.optimizerF16.second / 1e9, f.optimizerF16.first / 1e9);
  notes << llvm::formatv(
      "#  [M]   a decoder layer's element-wise kernels (RMSNorm, RoPE, "
      "SwiGLU, residual-gradient adds; forward and backward, bytes as the "
      "cost model counts them) on {0} tokens (h {1}, ffn {2}), every "
      "cluster at once, each cycling through {5} MiB: fp32 {3:f1} GB/s "
      "(elementwise_bandwidth), bf16 {4:f1} GB/s (elementwise_bandwidth_f16)\n",
      layer.seqLen * layerBatch, layer.hidden, layer.ffnHidden,
      f.elementwiseF32 / 1e9, f.elementwiseF16 / 1e9, layerWorkingSet >> 20);
  notes << llvm::formatv(
      "#  [M]   AdamW over {0} Mi parameters with the bf16 view (30 B per "
      "parameter): {1:f1} GB/s = {2:f3} of ddr_bandwidth_alone; RMSNorm "
      "forward {3} x 4096 (8 B per element): {4:f1} GB/s = {5:f3}\n",
      params >> 20, adamw / 1e9, adamwShare, quick ? 1024 : 2048, rmsnorm / 1e9,
      rmsnormShare);
  return f;
}
