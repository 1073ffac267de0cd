//===- RuntimeCheckpoint.cpp - Collective checkpoints and step logs -------===//

#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/HFDirectory.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

using namespace ratrain;
using namespace ratrain::rt;

namespace ratrain::rt {
/// Gives the operations issued in its scope another watchdog limit.
class ScopedIssueTimeout {
public:
  ScopedIssueTimeout(Runtime &rt, double seconds)
      : rt(rt), saved(rt.issueTimeout) {
    rt.issueTimeout = seconds;
  }
  ~ScopedIssueTimeout() { rt.issueTimeout = saved; }

private:
  Runtime &rt;
  double saved;
};
} // namespace ratrain::rt

namespace {
/// The first error of this rank, as text (it travels to the other ranks).
struct LocalStatus {
  std::string message;
  bool failed = false;
  void set(llvm::Error e) {
    if (!e)
      return;
    std::string text = llvm::toString(std::move(e));
    if (!failed)
      message = std::move(text);
    failed = true;
  }
};

/// Bytes of an error message exchanged between ranks.
constexpr size_t kMessageBytes = 1024;
} // namespace

/// Collective: whether every rank succeeded and, if not, the message of the
/// lowest failing rank, so that every rank reports the real cause (the
/// launcher may tear the job down before the failing rank's own output is
/// forwarded).
static std::optional<std::string> firstFailure(Runtime &rt,
                                               const LocalStatus &status) {
  if (rt.allReduceMin(status.failed ? 0 : 1) == 1)
    return std::nullopt;
  std::vector<char> mine(kMessageBytes, '\0');
  if (status.failed)
    std::snprintf(mine.data(), kMessageBytes, "%s", status.message.c_str());
  std::vector<char> all(kMessageBytes * size_t(rt.worldSize()));
  Buffer send{reinterpret_cast<std::byte *>(mine.data()), 0, kMessageBytes,
              MemorySpace::DDR};
  Buffer recv{reinterpret_cast<std::byte *>(all.data()), 0, all.size(),
              MemorySpace::DDR};
  rt.wait(rt.allGather(Group::World, send, recv));
  for (int r = 0; r < rt.worldSize(); ++r)
    if (all[size_t(r) * kMessageBytes] != '\0')
      return llvm::formatv("rank {0}: {1}", r,
                           std::string(&all[size_t(r) * kMessageBytes]))
          .str();
  return std::string("a rank failed");
}

/// This rank's error after a failed collective step: its own message, or
/// the first failing rank's.
static llvm::Error reportFailure(const LocalStatus &status,
                                 const std::string &first,
                                 const llvm::Twine &context) {
  if (status.failed)
    return makeError(status.message);
  return makeError(context + " failed on " + first);
}

llvm::Error Runtime::saveCheckpoint(llvm::StringRef root,
                                    const ModelConfig &model,
                                    const StagePartition &partition,
                                    const TrainerState &state,
                                    llvm::ArrayRef<ParamSlot> slots) {
  ScopedIssueTimeout slowPeers(*this, opts.checkpointTimeoutSeconds);
  LocalStatus status;
  std::string staging = stagingDirectory(root, state.step);
  if (partition.numStages() != numStages())
    status.set(makeError(llvm::formatv("checkpoint save: the partition has "
                                       "{0} stages, the job {1}",
                                       partition.numStages(), numStages())));
  if (state.pp != numStages() || state.dp != dpSize())
    status.set(
        makeError(llvm::formatv("checkpoint save: trainer state says "
                                "pp {0} x dp {1}, the job is {2} x {3}",
                                state.pp, state.dp, numStages(), dpSize())));
  // 1. Rank 0 prepares an empty staging directory.
  if (rank() == 0 && !status.failed) {
    if (std::error_code ec = llvm::sys::fs::create_directories(root))
      status.set(makeError(llvm::formatv("{0}: cannot create the checkpoint "
                                         "directory: {1}",
                                         root, ec.message())));
    else {
      llvm::sys::fs::remove_directories(staging);
      if (std::error_code ec = llvm::sys::fs::create_directory(staging))
        status.set(makeError(llvm::formatv("{0}: cannot create the staging "
                                           "directory: {1}",
                                           staging, ec.message())));
    }
  }
  bool anySharded = false;
  for (const ParamSlot &slot : slots)
    anySharded |= slot.sharded();
  bool zero = allReduceMin(anySharded ? 0 : 1) == 0;
  std::optional<std::string> failure = firstFailure(*this, status);
  // 2. The data rank 0 of every stage writes its model (and unsharded
  // optimizer) file; with ZeRO every rank writes its shards.
  if (!failure)
    status.set(writeStageShards(staging, model, partition, stage(), slots,
                                state, dpIndex()));
  if (!failure)
    failure = firstFailure(*this, status);
  // Test hook: a crash while the checkpoint is half-written (every shard in
  // the staging directory, no index, nothing committed).
  if (!failure && rank() == 0)
    if (const char *killStep = std::getenv("RATRAIN_TEST_KILL_IN_SAVE"))
      if (std::to_string(state.step) == killStep) {
        std::fprintf(stderr,
                     "RATRAIN_TEST_KILL_IN_SAVE: rank 0 kills itself while "
                     "saving step %llu (staging directory %s)\n",
                     static_cast<unsigned long long>(state.step),
                     staging.c_str());
        std::fflush(stderr);
        std::raise(SIGKILL);
      }
  // 3. Rank 0 publishes.
  if (!failure && rank() == 0) {
    status.set(writeCheckpointIndex(staging, model, partition, state, zero));
    if (!status.failed)
      status.set(commitCheckpoint(root, staging, state.step));
  }
  if (!failure)
    failure = firstFailure(*this, status);
  if (!failure)
    return llvm::Error::success();
  if (rank() == 0)
    llvm::sys::fs::remove_directories(staging);
  return reportFailure(
      status, *failure,
      llvm::formatv("checkpoint save of step {0} under {1} (existing "
                    "checkpoints are untouched)",
                    state.step, root)
          .str());
}

llvm::Expected<TrainerState>
Runtime::loadCheckpoint(llvm::StringRef path, const ModelConfig &model,
                        llvm::ArrayRef<ParamSlot> slots) {
  ScopedIssueTimeout slowPeers(*this, opts.checkpointTimeoutSeconds);
  LocalStatus status;
  TrainerState state;
  auto directory = resolveCheckpoint(path);
  if (!directory) {
    status.set(directory.takeError());
  } else {
    auto read = readTrainerState(*directory, model);
    if (!read)
      status.set(read.takeError());
    else {
      state = *read;
      status.set(loadSlots(*directory, slots, dpIndex(), dpSize()));
    }
  }
  if (std::optional<std::string> failure = firstFailure(*this, status))
    return reportFailure(status, *failure, "loading checkpoint " + path);
  return state;
}

llvm::Error Runtime::loadPretrained(llvm::StringRef directory,
                                    const ModelConfig &model,
                                    llvm::ArrayRef<ParamSlot> slots) {
  ScopedIssueTimeout slowPeers(*this, opts.checkpointTimeoutSeconds);
  LocalStatus status;
  status.set(rt::loadPretrained(directory, model, slots));
  if (std::optional<std::string> failure = firstFailure(*this, status))
    return reportFailure(status, *failure,
                         "loading the weights of " + directory);
  return llvm::Error::success();
}

double Runtime::logStep(StepLogger *logger, uint64_t step, uint64_t totalSteps,
                        double loss, double tokens, double seconds,
                        const StepTimeSplit *times, double lr,
                        double gradNorm) {
  auto now = TokenPool::Clock::now();
  if (!firstLogStart)
    firstLogStart =
        now - std::chrono::duration_cast<TokenPool::Clock::duration>(
                  std::chrono::duration<double>(seconds));
  // One collective per step: (loss, peak DDR bytes[, step, kernel and wait
  // seconds, kernel calls, kernel and progress CPU seconds, assist seconds])
  // of every rank. The ranks that run the LM head report a loss, the others
  // NaN.
  double mine[9] = {loss, double(ddr().peakBytes()), 0, 0, 0, 0, 0, 0, 0};
  if (times) {
    mine[2] = times->step;
    mine[3] = times->kernel;
    mine[4] = times->wait;
    mine[5] = double(times->kernelCalls);
    mine[6] = times->kernelCpu;
    mine[7] = times->progressCpu;
    mine[8] = times->assist;
  }
  size_t stride = times ? 9 : 2;
  std::vector<double> gathered =
      allGatherDoubleTuples(llvm::ArrayRef<double>(mine, stride));
  double meanLoss = meanReportedLoss(gathered, stride);
  if (rank() != 0 || !logger)
    return meanLoss;
  StepRecord record;
  record.step = step;
  record.totalSteps = totalSteps;
  record.loss = meanLoss;
  record.tokens = tokens;
  record.seconds = seconds;
  record.lr = lr;
  record.gradNorm = gradNorm;
  record.elapsedSeconds =
      std::chrono::duration<double>(now - *firstLogStart).count();
  for (int r = 0; r < worldSize(); ++r) {
    record.peakArenaBytes.push_back(uint64_t(gathered[stride * r + 1]));
    if (times) {
      StepTimeSplit split;
      split.step = gathered[stride * r + 2];
      split.kernel = gathered[stride * r + 3];
      split.wait = gathered[stride * r + 4];
      split.kernelCalls = uint64_t(gathered[stride * r + 5]);
      split.kernelCpu = gathered[stride * r + 6];
      split.progressCpu = gathered[stride * r + 7];
      split.assist = gathered[stride * r + 8];
      record.rankTimes.push_back(split);
    }
  }
  logger->log(record);
  return meanLoss;
}
