//===- StepLog.cpp - Per-step JSON log and terminal progress --------------===//

#include "ratrain/runtime/StepLog.h"
#include "ratrain/runtime/Error.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <time.h>
#include <unistd.h>

using namespace ratrain::rt;

std::string ratrain::rt::formatStepJSON(const StepRecord &record) {
  llvm::json::Array peaks;
  for (uint64_t bytes : record.peakArenaBytes)
    peaks.push_back(bytes);
  double rate = record.seconds > 0 ? record.tokens / record.seconds : 0.0;
  llvm::json::Object object{{"step", record.step},
                            {"tokens", record.tokens},
                            {"tokens_per_s", rate},
                            {"step_s", record.seconds},
                            {"elapsed_s", record.elapsedSeconds},
                            {"peak_arena_bytes", std::move(peaks)}};
  if (!record.rankTimes.empty()) {
    llvm::json::Array step, kernel, wait, assist, other, calls, kernelCpu,
        progressCpu;
    for (const StepTimeSplit &split : record.rankTimes) {
      step.push_back(split.step);
      kernel.push_back(split.kernel);
      wait.push_back(split.wait);
      assist.push_back(split.assist);
      other.push_back(split.other());
      calls.push_back(split.kernelCalls);
      kernelCpu.push_back(split.kernelCpu);
      progressCpu.push_back(split.progressCpu);
    }
    object["rank_step_s"] = std::move(step);
    object["kernel_s"] = std::move(kernel);
    object["wait_s"] = std::move(wait);
    object["assist_s"] = std::move(assist);
    object["other_s"] = std::move(other);
    object["kernel_calls"] = std::move(calls);
    object["kernel_cpu_s"] = std::move(kernelCpu);
    object["progress_cpu_s"] = std::move(progressCpu);
  }
  if (std::isfinite(record.lr))
    object["lr"] = record.lr;
  if (std::isfinite(record.gradNorm))
    object["grad_norm"] = record.gradNorm;
  // JSON has no NaN: a diverged loss is logged as null.
  if (std::isfinite(record.loss))
    object["loss"] = record.loss;
  else
    object["loss"] = nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(object));
  os.flush();
  return text;
}

double ratrain::rt::meanReportedLoss(llvm::ArrayRef<double> tuples,
                                     size_t stride) {
  double sum = 0;
  int count = 0;
  for (size_t i = 0; i < tuples.size(); i += stride)
    if (!std::isnan(tuples[i])) {
      sum += tuples[i];
      ++count;
    }
  return count ? sum / count : NAN;
}

int64_t ratrain::rt::cpuClockNanoseconds(clockid_t clock) {
  timespec now{};
  if (clock_gettime(clock, &now) != 0)
    return 0;
  return int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
}

int64_t StepTimers::threadCpuNanoseconds() {
  return cpuClockNanoseconds(CLOCK_THREAD_CPUTIME_ID);
}

void StepTimers::take(StepTimeSplit &split) {
  split.kernel = std::chrono::duration<double>(kernel).count();
  split.wait = std::chrono::duration<double>(wait).count();
  split.assist = std::chrono::duration<double>(assist).count();
  split.kernelCpu = double(kernelCpu) * 1e-9;
  split.kernelCalls = kernelCalls;
  kernel = Clock::duration{0};
  wait = Clock::duration{0};
  assist = Clock::duration{0};
  kernelCpu = 0;
  kernelCalls = 0;
}

std::string ratrain::rt::formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  uint64_t s = uint64_t(seconds + 0.5);
  if (s >= 3600)
    return llvm::formatv("{0}h{1:d2}m", s / 3600, (s / 60) % 60).str();
  if (s >= 60)
    return llvm::formatv("{0}m{1:d2}s", s / 60, s % 60).str();
  return llvm::formatv("{0}s", s).str();
}

std::string ratrain::rt::formatProgressLine(const StepRecord &record,
                                            uint64_t stepsLogged) {
  double rate = record.seconds > 0 ? record.tokens / record.seconds : 0.0;
  std::string rateText =
      rate >= 1e6   ? llvm::formatv("{0:F1}M", rate / 1e6).str()
      : rate >= 1e3 ? llvm::formatv("{0:F1}k", rate / 1e3).str()
                    : llvm::formatv("{0:F0}", rate).str();
  std::string line;
  if (record.totalSteps)
    line = llvm::formatv("step {0}/{1}", record.step, record.totalSteps);
  else
    line = llvm::formatv("step {0}", record.step);
  line += llvm::formatv(" | loss {0:F4} | {1} tok/s | {2:F3} s/step",
                        record.loss, rateText, record.seconds)
              .str();
  if (record.totalSteps && stepsLogged > 0) {
    double mean = record.elapsedSeconds / double(stepsLogged);
    double remaining = record.step >= record.totalSteps
                           ? 0.0
                           : double(record.totalSteps - record.step) * mean;
    line += " | ETA " + formatDuration(remaining);
  }
  return line;
}

llvm::Expected<StepLogger> StepLogger::create(llvm::StringRef jsonPath,
                                              Progress progress) {
  StepLogger logger;
  if (jsonPath == "-") {
    logger.json = stdout;
  } else if (!jsonPath.empty()) {
    std::string path = jsonPath.str();
    logger.json = std::fopen(path.c_str(), "a");
    if (!logger.json)
      return makeError(llvm::formatv("{0}: cannot open the step log: {1}",
                                     jsonPath, std::strerror(errno)));
    logger.ownsJson = true;
  }
  if (progress == Progress::Auto) {
    llvm::StringRef mode;
    if (const char *env = std::getenv("RATRAIN_PROGRESS_LINE"))
      mode = env;
    if (mode == "always")
      progress = Progress::Always;
    else if (mode == "never")
      progress = Progress::Never;
    else if (!mode.empty() && mode != "auto")
      return makeError(llvm::formatv("RATRAIN_PROGRESS_LINE='{0}' must be "
                                     "auto, always or never",
                                     mode));
  }
  bool underMPI = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
                  std::getenv("PMI_SIZE") != nullptr;
  if (progress == Progress::Always ||
      (progress == Progress::Auto && isatty(STDERR_FILENO)))
    logger.progress = stderr;
  else if (progress == Progress::Auto && !underMPI && isatty(STDOUT_FILENO))
    logger.progress = stdout;
  return logger;
}

StepLogger::StepLogger(StepLogger &&other)
    : json(other.json), ownsJson(other.ownsJson), progress(other.progress),
      progressShown(other.progressShown), logged(other.logged) {
  other.json = nullptr;
  other.ownsJson = false;
  other.progressShown = false;
}

StepLogger::~StepLogger() {
  finish();
  if (ownsJson && json)
    std::fclose(json);
}

void StepLogger::writeJSONLine(const std::string &line) {
  if (!json)
    return;
  // A JSON line on the terminal that shows the progress line: clear the
  // progress line first so that the two do not share a row.
  if (progressShown &&
      (json == progress || (json == stdout && isatty(STDOUT_FILENO)))) {
    std::fprintf(progress, "\r\x1b[K");
    std::fflush(progress);
  }
  std::fprintf(json, "%s\n", line.c_str());
  std::fflush(json);
}

void StepLogger::log(const StepRecord &record) {
  ++logged;
  if (json)
    writeJSONLine(formatStepJSON(record));
  if (progress) {
    std::string line = formatProgressLine(record, logged);
    // \r and "erase to end of line" rewrite the line in place.
    std::fprintf(progress, "\r%s\x1b[K", line.c_str());
    std::fflush(progress);
    progressShown = true;
  }
}

std::string ratrain::rt::formatEvalJSON(uint64_t step, double loss,
                                        double tokens) {
  llvm::json::Object object;
  object["step"] = int64_t(step);
  object["eval_tokens"] = tokens;
  if (std::isfinite(loss))
    object["eval_loss"] = loss;
  else
    object["eval_loss"] = nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(object));
  return text;
}

void StepLogger::logEval(uint64_t step, double loss, double tokens) {
  if (json)
    writeJSONLine(formatEvalJSON(step, loss, tokens));
  if (progress)
    note(llvm::formatv("step {0}: validation loss {1:F4}", step, loss).str());
}

void StepLogger::finish() {
  if (progressShown) {
    std::fprintf(progress, "\n");
    std::fflush(progress);
    progressShown = false;
  }
}

void StepLogger::note(llvm::StringRef message) {
  finish();
  std::fprintf(stderr, "%s\n", message.str().c_str());
  std::fflush(stderr);
}
