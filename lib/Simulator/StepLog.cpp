//===- StepLog.cpp - Measured step times of a real run --------------------===//

#include "ratrain/Simulator/StepLog.h"
#include "ratrain/Model/JSON.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::sim;

llvm::Expected<MeasuredSteps> sim::parseStepLog(llvm::StringRef text,
                                                llvm::StringRef fileName) {
  MeasuredSteps result;
  auto fail = [&](size_t line, const llvm::Twine &what) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}:{1}: {2}", fileName, line, what.str()).str());
  };
  // Per rank, its kernel (CPU) seconds of every step.
  std::vector<std::vector<double>> rankKernel, rankKernelCpu;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (auto [index, raw] : llvm::enumerate(lines)) {
    llvm::StringRef line = raw.trim();
    if (line.empty())
      continue;
    llvm::Expected<llvm::json::Value> value = parseJSON(line);
    if (!value)
      return fail(index + 1, "not JSON: " + llvm::toString(value.takeError()));
    const llvm::json::Object *object = value->getAsObject();
    if (!object)
      return fail(index + 1, "expected a JSON object");
    std::optional<double> seconds = object->getNumber("step_s");
    if (!seconds || !(*seconds >= 0))
      return fail(index + 1, "missing or negative \"step_s\"");
    result.stepSeconds.push_back(*seconds);
    // (A structured binding: clang 14 does not capture it in a lambda.)
    const size_t lineNumber = index + 1;
    // The mean over the ranks of a per-rank time array (kernel_s,
    // kernel_cpu_s), appended to `into` when the line has it, and each
    // rank's value to `perRank` (one list per rank).
    auto rankMean =
        [&](llvm::StringRef key, std::vector<double> &into,
            std::vector<std::vector<double>> *perRank) -> llvm::Error {
      const llvm::json::Array *times = object->getArray(key);
      if (!times || times->empty())
        return llvm::Error::success();
      double sum = 0;
      size_t ranks = 0;
      for (const llvm::json::Value &rank : *times)
        if (std::optional<double> seconds = rank.getAsNumber();
            seconds && *seconds >= 0) {
          sum += *seconds;
          ++ranks;
        }
      if (ranks != times->size())
        return fail(lineNumber, "\"" + key +
                                    "\" must list one non-negative number "
                                    "per rank");
      into.push_back(sum / double(ranks));
      if (perRank) {
        perRank->resize(std::max(perRank->size(), ranks));
        for (size_t r = 0; r < ranks; ++r)
          (*perRank)[r].push_back(*(*times)[r].getAsNumber());
      }
      return llvm::Error::success();
    };
    if (llvm::Error error =
            rankMean("kernel_s", result.kernelSeconds, &rankKernel))
      return std::move(error);
    if (llvm::Error error =
            rankMean("kernel_cpu_s", result.kernelCpuSeconds, &rankKernelCpu))
      return std::move(error);
    if (llvm::Error error =
            rankMean("progress_cpu_s", result.progressCpuSeconds, nullptr))
      return std::move(error);
    if (std::optional<double> tokens = object->getNumber("tokens"))
      result.tokensPerStep = *tokens;
    if (const llvm::json::Array *peaks = object->getArray("peak_arena_bytes"))
      for (const llvm::json::Value &peak : *peaks)
        if (std::optional<int64_t> bytes = peak.getAsInteger())
          result.peakArenaBytes = std::max(result.peakArenaBytes, *bytes);
  }
  if (result.stepSeconds.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fileName + ": no steps logged");
  // The steps without the first, sorted; quantile q of such a list,
  // interpolating between the nearest ranks (the median of an even count is
  // the mean of the middle two).
  auto steadySorted = [](const std::vector<double> &all) {
    std::vector<double> steady(all.begin() + (all.size() > 1 ? 1 : 0),
                               all.end());
    std::sort(steady.begin(), steady.end());
    return steady;
  };
  auto quantile = [](const std::vector<double> &sorted, double q) {
    double rank = q * double(sorted.size() - 1);
    size_t below = size_t(rank);
    size_t above = std::min(below + 1, sorted.size() - 1);
    return sorted[below] +
           (rank - double(below)) * (sorted[above] - sorted[below]);
  };
  std::vector<double> steps = steadySorted(result.stepSeconds);
  result.medianStepSeconds = quantile(steps, 0.5);
  result.lowerQuartileStepSeconds = quantile(steps, 0.25);
  result.upperQuartileStepSeconds = quantile(steps, 0.75);
  // Kernel times only where every step has them (a log appended to by
  // another run would mix them).
  // Each rank's median, where every step listed every rank.
  auto rankMedians = [&](const std::vector<std::vector<double>> &perRank) {
    std::vector<double> medians;
    for (const std::vector<double> &times : perRank) {
      if (times.size() != result.stepSeconds.size())
        return std::vector<double>();
      medians.push_back(quantile(steadySorted(times), 0.5));
    }
    return medians;
  };
  // A per-step time's median, where every step has it (none otherwise).
  auto steadyMedian = [&](std::vector<double> &times, double &median) {
    if (times.size() == result.stepSeconds.size()) {
      median = quantile(steadySorted(times), 0.5);
      return true;
    }
    times.clear();
    return false;
  };
  if (steadyMedian(result.kernelSeconds, result.medianKernelSeconds))
    result.rankMedianKernelSeconds = rankMedians(rankKernel);
  if (steadyMedian(result.kernelCpuSeconds, result.medianKernelCpuSeconds))
    result.rankMedianKernelCpuSeconds = rankMedians(rankKernelCpu);
  steadyMedian(result.progressCpuSeconds, result.medianProgressCpuSeconds);
  return result;
}

llvm::Expected<MeasuredSteps> sim::loadStepLog(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buffer)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + buffer.getError().message());
  return parseStepLog((*buffer)->getBuffer(), path);
}
