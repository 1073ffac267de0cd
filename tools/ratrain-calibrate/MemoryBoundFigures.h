//===- MemoryBoundFigures.h - The memory-bound kernels' figures -*- C++ -*-===//
//
// ratrain-calibrate: the machine file's figures for memory-bound kernels
// (efficiency.memory_bound, the optimizer update's rates, a layer's
// element-wise kernels' rates; docs/machine-model.md, "Calibration"). Built
// with the runtime's kernels only (RATRAIN_HAVE_KERNELS).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_MEMORYBOUNDFIGURES_H
#define RATRAIN_CALIBRATE_MEMORYBOUNDFIGURES_H

#include "ratrain/Model/ModelConfig.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <utility>

namespace ratrain::calibrate {

/// The memory-bound kernels' entries of a machine file's cluster.
struct MemoryBoundFigures {
  /// efficiency.memory_bound: the mean of AdamW's and RMSNorm's shares of
  /// the triad of one cluster alone, each capped at 1.
  double memoryBound = 0;
  /// optimizer_bandwidth and _alone, and the _f16 pair: {every cluster
  /// updating, one alone}.
  std::pair<double, double> optimizerF32, optimizerF16;
  /// elementwise_bandwidth and _f16.
  double elementwiseF32 = 0, elementwiseF16 = 0;
};

/// Measures them on `clusters` clusters of `coresPerCluster` cores whose
/// one cluster alone streams the triad at `ddrAlone` bytes/s: AdamW and
/// RMSNorm on one cluster, the update as a step runs it alone and on every
/// cluster at once, and `layer`'s element-wise kernels on micro-batches of
/// `layerBatch` on every cluster at once, each cluster's arrays cycled
/// through `layerWorkingSet` bytes; `reps` timed runs each (`quick`:
/// smaller arrays). Prints them to stderr and the header notes to `notes`.
/// Errors: a kernel that fails.
llvm::Expected<MemoryBoundFigures>
calibrateMemoryBound(bool quick, int reps, unsigned coresPerCluster,
                     unsigned clusters, double ddrAlone,
                     const ModelConfig &layer, int64_t layerBatch,
                     int64_t layerWorkingSet, llvm::raw_ostream &notes);

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_MEMORYBOUNDFIGURES_H
