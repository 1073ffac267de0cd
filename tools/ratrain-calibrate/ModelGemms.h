//===- ModelGemms.h - The GEMM calls of the models given -------*- C++ -*-===//
//
// ratrain-calibrate --model: the models' GEMM calls (ModelGemms.cpp), and
// --add-gemms, which times them into an existing machine file
// (AddModelGemms.cpp, built with the runtime's kernels only:
// RATRAIN_HAVE_KERNELS).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_MODELGEMMS_H
#define RATRAIN_CALIBRATE_MODELGEMMS_H

#include "ratrain/Model/ModelConfig.h"
#include "ratrain/Planner/GemmCalls.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace ratrain::calibrate {

/// The GEMM calls of the models given to ratrain-calibrate --model.
struct ModelGemms {
  std::vector<GemmCall> calls; ///< each model's distinct calls
  int64_t stepBytes = 0;       ///< the largest model's stepWorkingSetBytes
  std::string names;           ///< the config paths, comma-separated
  /// The names and the micro-batch sizes, as the header notes say them
  /// (empty without models).
  std::string description;
  /// The first model's config and the smallest micro-batch size: the layer
  /// whose element-wise kernels are timed (none without models).
  std::optional<ModelConfig> layerModel;
  int64_t layerMicroBatchSize = 1;
};

/// Reads the configs at `paths` (training sequence length `seqLen`, 0: each
/// config's) and lists their calls for micro-batches of `microBatchSizes`
/// sequences (empty: kMeasuredMicroBatchSizes). Errors: a size outside
/// [1, kMaxGlobalBatch], a config that does not load.
llvm::Expected<ModelGemms>
readModelGemms(llvm::ArrayRef<std::string> paths, int64_t seqLen,
               llvm::ArrayRef<int64_t> microBatchSizes);

/// Reads the machine file `machinePath`, times those of `calls` (up to
/// kMaxMeasuredGemmFlops) that its gemm_measured lacks for either operand
/// type on operands cycled through `stepWorkingSet` bytes (the models' step,
/// stepWorkingSetBytes; clamped to [the last-level cache,
/// kMaxGemmWorkingSetBytes]), and writes the file with them added to
/// `outputPath` (atomically; the header comments kept, with a line naming
/// `models`). Nothing is written when every call is listed already. Returns the
/// exit status; errors go through `fail`.
int addModelGemms(llvm::StringRef machinePath, llvm::StringRef outputPath,
                  llvm::ArrayRef<GemmCall> calls, int64_t stepWorkingSet,
                  llvm::StringRef models, int reps,
                  llvm::function_ref<int(const llvm::Twine &)> fail);

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_MODELGEMMS_H
