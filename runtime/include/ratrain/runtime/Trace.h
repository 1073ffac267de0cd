//===- Trace.h - Per-op trace of a training run ------------------*- C++
//-*-===//
//
// The runtime's Chrome/Perfetto trace (docs/runtime.md, "Per-op trace"):
// over a range of steps, every rank records
//   - the span of each schedule op's work (mt3k.trace_begin/trace_end, named
//     as the simulator names the same work: "fwd L3 mb1", "update L5"), with
//     the kernel calls inside it nested under it, on the "compute" thread;
//   - each blocking wait, on the "stream blocked (exposed comm)" thread,
//     named "wait <kind>" after what it waited for;
//   - each asynchronous operation (DMA, send, recv, collective, offload) from
//     issue to completion, as an async slice of its kind;
//   - each step, as the outermost span of the compute thread.
// The thread names and categories are the simulator's (sim::writeChromeTrace),
// so `ratrain-sim --measured-trace` compares the two per op class.
//
// Recording is single-threaded except asynchronous completions (a mutex);
// outside the traced steps every hook is one predictable branch.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_TRACE_H
#define RATRAIN_RUNTIME_TRACE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ratrain::rt {

/// What the work of a traced span is: the simulator's compute kinds.
enum class TracePhase : uint8_t {
  Forward,
  Backward,
  Recompute,
  Update,
  ViewCast,
  Other
};
/// "forward", "backward", "recompute", "update", "view-cast", "other".
llvm::StringRef stringifyTracePhase(TracePhase phase);

/// The simulator's communication kind of an asynchronous operation, from the
/// first word of its description: "dma", "p2p" (send, recv), "all-reduce",
/// "reduce-scatter", "all-gather", "offload" (offload, reload); "broadcast",
/// "barrier" and "other" have no simulator counterpart.
llvm::StringRef getCommCategory(llvm::StringRef what);

/// Which steps to trace: --trace FILE, --trace-steps FIRST[-LAST].
struct TraceRange {
  uint64_t first = 0; ///< 0: tracing off.
  uint64_t last = 0;
  bool contains(uint64_t step) const {
    return first != 0 && step >= first && step <= last;
  }
};
/// Parses "N" or "FIRST-LAST" (1-based, inclusive); errors name the flag.
llvm::Expected<TraceRange> parseTraceRange(llvm::StringRef text);

/// One rank's recorder.
class Tracer {
public:
  using Clock = std::chrono::steady_clock;

  /// Thread ids inside a rank's process, as the simulator's.
  enum Thread : int64_t {
    ComputeThread = 0,
    BlockedThread = 1,
    NetworkThread = 2,
    OffloadThread = 3,
    DmaThread = 4
  };

  void setRange(TraceRange range) { steps = range; }
  TraceRange range() const { return steps; }
  /// True while a traced step runs: the hooks below record only then.
  bool recording() const { return active; }
  /// True once a traced step has been recorded and not yet taken.
  bool hasEvents() const { return !events.empty(); }

  /// Step boundaries (Session); beginStep starts recording for a step in
  /// range. endStep closes a span left open and the step's own span.
  void beginStep(uint64_t step);
  void endStep();

  /// A schedule op's span (the emitted mt3k.trace_begin / trace_end);
  /// `label` is a string literal of the program (not copied).
  void beginSpan(const char *label, TracePhase phase);
  void endSpan();
  /// A kernel call; `name` is a string literal, `shape` (copied; may be
  /// empty) what the call computed, e.g. a GEMM's "NT 256x688x256" (form,
  /// M x N x K), written as the event's `shape` argument.
  void kernel(const char *name, Clock::time_point start, Clock::time_point end,
              llvm::StringRef shape = {});
  /// A blocking wait for an operation described by `what` (copied).
  void wait(llvm::StringRef what, Clock::time_point start,
            Clock::time_point end);
  /// An asynchronous operation, issue to completion (any thread).
  void async(llvm::StringRef what, Clock::time_point issued,
             Clock::time_point completed);

  /// This rank's events as a comma-separated list of Chrome trace event
  /// objects (no brackets), timestamps in microseconds after `origin`;
  /// `pid` is the rank, `processName` labels it. Clears the events.
  std::string takeEvents(int64_t pid, llvm::StringRef processName,
                         int64_t stage, int64_t dataRank,
                         Clock::time_point origin);
  /// When the first recorded step began (Clock's epoch when none).
  Clock::time_point firstStepStart() const { return firstStart; }

  /// The whole trace file from every rank's takeEvents() text.
  static std::string assemble(llvm::ArrayRef<std::string> rankEvents,
                              llvm::StringRef program);

private:
  enum class Kind : uint8_t { Step, Span, Kernel, Wait, Async };
  struct Event {
    Kind kind;
    TracePhase phase = TracePhase::Other;
    const char *name = nullptr; ///< Static (span labels, kernel names).
    std::string text; ///< Owned (waits, async operations, kernel shapes).
    uint64_t step = 0;
    Clock::time_point start, end;
  };

  TraceRange steps;
  bool active = false;
  uint64_t currentStep = 0;
  Clock::time_point stepStart;
  Clock::time_point firstStart;
  /// Index of the open span in `events`, or -1.
  int64_t openSpan = -1;
  std::vector<Event> events;
  std::mutex asyncMutex; ///< Guards `events` against async().
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_TRACE_H
