//===- StepLog.h - Per-step JSON log and terminal progress ------*- C++ -*-===//
//
// One JSON object per line and step:
//   {"step":12,"loss":3.2101,"tokens":4096,"tokens_per_s":8123.4,
//    "step_s":0.504,"elapsed_s":6.1,"peak_arena_bytes":[1048576, ...],
//    "rank_step_s":[0.503, ...],"kernel_s":[0.41, ...],"wait_s":[0.07, ...],
//    "assist_s":[0.004, ...],"other_s":[0.019, ...],"kernel_calls":[212, ...],
//    "kernel_cpu_s":[0.40, ...],"progress_cpu_s":[0.01, ...]}
// (peak DDR arena bytes and, when measured, where each world rank's step
// time went: kernels, blocking waits, progress passes the compute thread ran
// between kernels, the rest; the CPU time the rank's thread spent inside
// kernels, less than their wall time when the ranks share the cores; and the
// CPU time of its progress thread) and, when stderr is a terminal, a progress
// line rewritten in place:
//   step 12/100 | loss 3.2101 | 8.1k tok/s | 0.504 s/step | ETA 44s
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_STEPLOG_H
#define RATRAIN_RUNTIME_STEPLOG_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace ratrain::rt {

/// Where one rank's step time went, in seconds: `kernel` inside compute
/// kernel calls, `wait` blocked waiting for communication or DMA, `assist`
/// in the progress passes the compute thread runs between kernels
/// (CommEngine::assist: posting, testing, reducing received blocks), and
/// the rest (runtime and helper overhead, fp32 staging conversions, data
/// loading, issuing transfers, inline progress polls).
struct StepTimeSplit {
  double step = 0;
  double kernel = 0;
  double wait = 0;
  double assist = 0;
  /// Number of kernel calls.
  uint64_t kernelCalls = 0;
  /// CPU time of the calling thread inside the kernel calls: their wall time
  /// less the time the OS ran other threads on the core (ranks that share
  /// the cores) or the hypervisor took it.
  double kernelCpu = 0;
  /// CPU time of the rank's progress thread (polls, message copies and
  /// reductions): a core's time the rank's kernels lose when the ranks
  /// share the cores.
  double progressCpu = 0;
  /// step - kernel - wait - assist, never negative.
  double other() const {
    double rest = step - kernel - wait - assist;
    return rest > 0 ? rest : 0.0;
  }
};

/// A CPU-time clock's reading (`CLOCK_THREAD_CPUTIME_ID`, or another
/// thread's clock from `pthread_getcpuclockid`), in nanoseconds; 0 where it
/// cannot be read.
int64_t cpuClockNanoseconds(clockid_t clock);

/// This rank's kernel, wait and assist time since the last take(),
/// accumulated by the emitted program's kernel and wait helpers and the
/// runtime's poll on the main thread. Adding is a steady_clock read before
/// and after the call (and, for kernels, a read of the thread's CPU clock)
/// and an integer add: no allocation, no synchronization, no collective.
class StepTimers {
public:
  using Clock = std::chrono::steady_clock;

  /// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in
  /// nanoseconds.
  static int64_t threadCpuNanoseconds();

  /// A kernel call of wall time `elapsed` that kept its thread on a core for
  /// `cpuNanoseconds`.
  void addKernel(Clock::duration elapsed, int64_t cpuNanoseconds) {
    kernel += elapsed;
    kernelCpu += cpuNanoseconds;
    ++kernelCalls;
  }
  void addWait(Clock::duration elapsed) { wait += elapsed; }
  void addAssist(Clock::duration elapsed) { assist += elapsed; }
  /// The kernel time accumulated since the last take().
  Clock::duration kernelSoFar() const { return kernel; }

  /// The kernel, wait and assist seconds accumulated since the last take()
  /// (or since start-up), into `split` (which keeps its `step`); restarts
  /// the sums.
  void take(StepTimeSplit &split);

  /// What a Scope times.
  enum class Sum { Kernel, Wait, Assist };

  /// Times a scope into the kernel, wait or assist sum.
  class Scope {
  public:
    /// The CPU clock is read inside the wall-clock span (see the emitted
    /// program's kernel helper).
    Scope(StepTimers &timers, Sum sum)
        : timers(timers), sum(sum), start(Clock::now()),
          cpuStart(sum == Sum::Kernel ? threadCpuNanoseconds() : 0) {}
    ~Scope() {
      int64_t cpu = sum == Sum::Kernel ? threadCpuNanoseconds() - cpuStart : 0;
      Clock::duration elapsed = Clock::now() - start;
      switch (sum) {
      case Sum::Kernel:
        timers.addKernel(elapsed, cpu);
        break;
      case Sum::Wait:
        timers.addWait(elapsed);
        break;
      case Sum::Assist:
        timers.addAssist(elapsed);
        break;
      }
    }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    StepTimers &timers;
    Sum sum;
    Clock::time_point start;
    int64_t cpuStart;
  };

private:
  Clock::duration kernel{0};
  Clock::duration wait{0};
  Clock::duration assist{0};
  int64_t kernelCpu = 0;
  uint64_t kernelCalls = 0;
};

struct StepRecord {
  uint64_t step = 0;
  uint64_t totalSteps = 0; ///< 0 when unknown (no ETA).
  double loss = 0;
  double tokens = 0;         ///< Tokens processed by the whole job this step.
  double seconds = 0;        ///< Wall time of the step.
  double elapsedSeconds = 0; ///< Since the first logged step started.
  /// The step's learning rate (logged as "lr" when known, i.e. finite).
  double lr = NAN;
  /// The global gradient norm before clipping (logged as "grad_norm" when
  /// the program clips, i.e. finite).
  double gradNorm = NAN;
  std::vector<uint64_t> peakArenaBytes; ///< Per world rank.
  /// Per world rank; empty when not measured (no time fields are logged).
  std::vector<StepTimeSplit> rankTimes;
};

/// The job's loss from every rank's gathered values: the mean of the first
/// of each `stride` values (a rank's mean over its micro-batches; NaN from
/// the ranks that run no LM head), NaN when no rank reported one.
double meanReportedLoss(llvm::ArrayRef<double> tuples, size_t stride = 1);

std::string formatStepJSON(const StepRecord &record);
/// The JSON line of a validation result (StepLogger::logEval).
std::string formatEvalJSON(uint64_t step, double loss, double tokens);
/// Progress line without a newline; ETA from the mean step time so far.
std::string formatProgressLine(const StepRecord &record, uint64_t stepsLogged);
/// "1h02m", "3m05s", "42s".
std::string formatDuration(double seconds);

/// Writes JSON lines to a file ("" = none, "-" = stdout) and the progress
/// line to a terminal: stderr when it is one, else stdout when it is one and
/// the process does not run under mpirun (Open MPI gives every rank a
/// pseudo-terminal as stdout, even when mpirun's output goes to a file).
/// Progress::Always writes it to stderr regardless (under mpirun, whose
/// forwarded stderr shows it on mpirun's terminal). The environment variable
/// RATRAIN_PROGRESS_LINE=auto|always|never overrides Progress::Auto.
class StepLogger {
public:
  enum class Progress { Auto, Always, Never };
  /// Opens (appends to) `jsonPath`; errors name the file.
  static llvm::Expected<StepLogger> create(llvm::StringRef jsonPath,
                                           Progress progress = Progress::Auto);
  StepLogger(StepLogger &&other);
  StepLogger &operator=(StepLogger &&) = delete;
  ~StepLogger();

  void log(const StepRecord &record);
  /// A validation result after training step `step`: a JSON line
  /// {"eval_loss": ..., "eval_tokens": ..., "step": step} (eval_loss null
  /// when not finite) and, with a progress line, a note.
  void logEval(uint64_t step, double loss, double tokens);
  /// Prints a one-line message on stderr (after ending the progress line).
  void note(llvm::StringRef message);
  /// Ends the progress line (newline) if one is showing.
  void finish();

private:
  StepLogger() = default;
  /// Writes one line to the JSON log, clearing a progress line that shares
  /// its terminal first.
  void writeJSONLine(const std::string &line);
  std::FILE *json = nullptr;
  bool ownsJson = false;
  std::FILE *progress = nullptr; ///< Where the progress line goes, if any.
  bool progressShown = false;
  uint64_t logged = 0;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_STEPLOG_H
