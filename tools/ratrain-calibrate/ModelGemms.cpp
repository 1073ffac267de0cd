//===- ModelGemms.cpp - The GEMM calls of the models given ----------------===//

#include "ModelGemms.h"

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Model/Limits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::calibrate;

llvm::Expected<ModelGemms>
ratrain::calibrate::readModelGemms(llvm::ArrayRef<std::string> paths,
                                   int64_t seqLen,
                                   llvm::ArrayRef<int64_t> microBatchSizes) {
  const llvm::ArrayRef<int64_t> given =
      microBatchSizes.empty() ? llvm::ArrayRef(kMeasuredMicroBatchSizes)
                              : microBatchSizes;
  const std::vector<int64_t> sizes(given.begin(), given.end());
  for (int64_t b : sizes)
    if (b < 1 || b > limits::kMaxGlobalBatch)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("--micro-batch-sizes: {0} is not in [1, {1}]", b,
                        limits::kMaxGlobalBatch));
  ModelGemms result;
  for (const std::string &path : paths) {
    HFImportOptions importOptions;
    importOptions.seqLen = seqLen;
    llvm::Expected<ModelConfig> model = loadHFConfig(path, importOptions);
    if (!model)
      return model.takeError();
    llvm::append_range(result.calls, distinctGemmCalls(*model, sizes));
    result.stepBytes = std::max(result.stepBytes, stepWorkingSetBytes(*model));
    if (!result.layerModel) {
      result.layerModel = *model;
      result.layerMicroBatchSize =
          *std::min_element(sizes.begin(), sizes.end());
    }
  }
  if (paths.empty())
    return result;
  result.names = llvm::join(paths, ", ");
  result.description =
      llvm::formatv(
          "{0} (micro-batches of {1} sequences)", result.names,
          llvm::join(llvm::map_range(
                         sizes, [](int64_t b) { return std::to_string(b); }),
                     ", "))
          .str();
  return result;
}
