//===- CommEngine.h - MPI requests and their progress -----------*- C++ -*-===//
//
// Private to the runtime. Owns the communicators and every MPI request. In
// thread mode the progress thread makes the MPI calls after start-up: the
// main thread enqueues operation descriptors (no allocation: they sit in an
// array indexed by token slot) and waits on tokens; with assistance it also
// runs progress passes between kernels (assist()), one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SRC_COMMENGINE_H
#define RATRAIN_RUNTIME_SRC_COMMENGINE_H

#include "CollectiveSchedule.h"
#include "HugePages.h"
#include "ratrain/runtime/Runtime.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ratrain::rt {

class QuantizedCollectives;

/// Throws the job down with a message naming `what` and MPI's error string
/// when `code` is not MPI_SUCCESS.
void checkMPI(int code, const char *what);

class CommEngine {
public:
  enum class Kind : unsigned char {
    AllReduce,
    /// A ring, tree or hierarchical collective run as point-to-point rounds
    /// (CollectiveSchedule.h) on private communicators.
    Explicit,
    ReduceScatter,
    AllGather,
    Broadcast,
    Barrier,
    Send,
    Recv,
    /// A quantized all-gather or reduce-scatter: its steps are run by the
    /// QuantizedCollectives (QuantizedCollectives.h) given to setQuantized.
    Quantized,
    /// A one-sided put into the peer's window (`count` bytes of `send` at
    /// `targetOffset`) and the increment of its counter of `tag`.
    Put,
    /// Waits until this rank's counter of `tag` shows one more put.
    Arrival
  };
  /// One operation; lives in `ops` at its token's slot index.
  struct Op {
    Kind kind;
    MPI_Comm comm;
    const void *send;
    void *recv;
    /// Elements of the result: the whole buffer of an all-reduce, the
    /// received block of a reduce-scatter, the sent block of an all-gather.
    int count;
    MPI_Datatype type;
    MPI_Op op;
    int peer; ///< Root for broadcast.
    int tag;
    /// Divide the result by this after completion (ReduceOp::Avg), 0 = no.
    int averageOver = 0;
    ElemType elemType = ElemType::F32;
    /// Explicit collectives: the group and algorithm (`count` is
    /// CollectiveShape::count), the reduction, and the element type.
    CollectiveShape shape;
    ReduceOp reduce = ReduceOp::Sum;
    /// Explicit ring reduce-scatters: leave the last reduction to the
    /// consumer (Runtime::reduceScatter's `leaveOwn`); `recv` receives the
    /// other members' sum of this rank's block, undivided.
    bool leaveOwn = false;
    bool started = false;
    /// Put: the byte offset in the peer's window.
    uint64_t targetOffset = 0;
  };
  /// `progressNice`: the nice value (0..19) the progress thread runs at
  /// (RuntimeOptions::progressNice, resolved); `assist`: the compute thread
  /// may run progress passes itself (assist(); thread mode only).
  CommEngine(TokenPool &pool, ProgressMode mode, unsigned pollMicros,
             int progressNice, bool assist, double timeoutSeconds);
  ~CommEngine();

  /// Bytes per collective kind, algorithm and level (CollectiveCounters);
  /// the progress thread adds the rounds it runs, the main thread the
  /// collectives MPI runs (counted as rings).
  void count(CollectiveKind kind, CollectiveAlgorithm algorithm, unsigned level,
             uint64_t stepBytes, uint64_t sentBytes);
  CollectiveCounters counters() const;
  void resetCounters();

  /// Enqueues (thread mode) or posts (inline mode) `op` for `token`.
  void submit(Token token, const Op &op);
  /// One progress step: posts queued operations, tests outstanding ones,
  /// enforces the timeout. Inline mode only (the thread calls it itself).
  void progress();
  /// Whether the compute thread should call assist() now: thread mode with
  /// assistance, and operations queued or outstanding. One relaxed load.
  bool wantsAssist() const {
    return assisting && busy.load(std::memory_order_relaxed);
  }
  /// Thread mode: runs one progress pass on the calling (compute) thread
  /// (posts what is queued, tests what is outstanding, reduces and posts
  /// the next round of an explicit collective whose round completed), after
  /// the progress thread's pass when it is in one. A progress thread below
  /// its rank's priority gets no CPU while its rank computes, so without
  /// these passes (after each kernel, Runtime::poll) a collective posted
  /// during the backward would not move until the rank waits for it
  /// (docs/runtime.md, "Tokens, progress and overlap").
  void assist();
  /// Stops the progress thread; outstanding operations are fatal.
  void shutdown();
  ProgressMode mode() const { return progressMode; }
  /// The CPU time the progress thread has used since it started, in
  /// nanoseconds (0 in inline mode): its polls, the copies and reductions
  /// of the MPI calls it makes. Callable from any thread.
  int64_t progressCpuNanoseconds() const;
  /// Runs the Kind::Quantized operations (set before the first one).
  void setQuantized(QuantizedCollectives *runner) { quantized = runner; }
  /// The windows of Kind::Put and Kind::Arrival (set before the first one):
  /// the DDR arenas and the completion counters (kPutTags of them) of the
  /// pipeline group, in whose communicator this rank is `self`.
  void setPutWindows(MPI_Win data, MPI_Win counters, int self);
  static constexpr int kPutTags = 32768;
  /// Progressing thread: tracks `request` as outstanding for slot `index`
  /// (the steps of quantized collectives).
  void track(uint32_t index, MPI_Request request);
  /// Progressing thread: completes slot `index`, which has no outstanding
  /// request (a quantized collective that finished without one).
  void complete(uint32_t index);
  double timeoutSeconds() const { return timeout; }

private:
  void post(uint32_t index);
  /// Completes the arrivals whose put has landed; returns whether any did.
  bool pollArrivals();
  /// Called when a request of slot `index` completed: for an explicit
  /// collective, reduces the round's block and posts the next round (returns
  /// false) until the last one; finishes the operation (returns true).
  bool advance(uint32_t index);
  bool testOutstanding();
  void checkTimeouts();
  void threadLoop();
  /// Posts the queued operations, tests the outstanding ones and updates
  /// `busy`; returns whether an outstanding one progressed. The caller holds
  /// `progressMutex`.
  bool progressPass();

  TokenPool &pool;
  QuantizedCollectives *quantized = nullptr;
  ProgressMode progressMode;
  unsigned pollMicros;
  int progressNice;
  bool assisting;
  double timeout;
  std::vector<Op> ops;
  /// Submission ring (thread mode), guarded by `mutex`.
  std::vector<uint32_t> queue;
  uint64_t head = 0, tail = 0;
  std::vector<uint32_t> drained;
  /// Explicit collectives: builds the schedule and stages the input (first
  /// call), then posts rounds until one has requests outstanding; returns
  /// true when the collective finished.
  bool runRounds(uint32_t index);
  /// Copies the result out of the staging buffer and averages (nothing
  /// when the last round wrote the result).
  void finishExplicit(uint32_t index);
  /// Per slot: the schedule of its explicit collective, the next round, the
  /// requests of the current round still outstanding, the staging and
  /// temporary buffers (grown on first use).
  struct ExplicitState {
    Schedule schedule;
    size_t next = 0;
    int pending = 0;
    ScratchBuffer staging, temp;
    /// Lazily staged reduce-scatters (Schedule::lazyStaging): what staging
    /// holds.
    StagedRanges staged;
    /// A reduce-scatter whose last round reduced this rank's block straight
    /// into the result (averaged on the way): nothing left to copy out.
    bool resultWritten = false;
  };
  std::vector<ExplicitState> explicitState;
  /// Whether the current round of a reduce-scatter, receiving [lo, hi) of
  /// the work buffer, is its last and reduces this rank's own block: then
  /// it reduces into the result (no staging, no copy out).
  bool reducesIntoResult(const Op &op, const ExplicitState &st, uint64_t lo,
                         uint64_t hi) const;
  /// dst = a (op) b over `count` elements of `op`'s type, divided by the
  /// group size when `op` averages.
  static void reduceAndAverage(void *dst, const void *a, const void *b,
                               uint64_t count, const Op &op);
  std::atomic<uint64_t> stepBytes[kNumCollectiveKinds][kNumAlgorithms]
                                 [kMaxLevels] = {};
  std::atomic<uint64_t> sentBytes[kNumCollectiveKinds][kNumAlgorithms]
                                 [kMaxLevels] = {};

  /// One-sided transfers: the windows, this rank in the pipeline group, the
  /// puts consumed per tag and the arrivals outstanding (slot indices).
  MPI_Win dataWindow = MPI_WIN_NULL, counterWindow = MPI_WIN_NULL;
  int windowSelf = 0;
  std::vector<uint64_t> consumedPuts;
  std::vector<uint32_t> arrivals;

  /// Outstanding requests; only the thread in a progress pass (holding
  /// `progressMutex`) touches these and the explicit collectives' state.
  std::vector<MPI_Request> requests;
  std::vector<uint32_t> requestSlots;
  std::vector<int> completedIndices;
  std::vector<MPI_Status> statuses;
  /// Held for a progress pass, by the progress thread or an assisting
  /// compute thread: MPI calls stay serialized (MPI_THREAD_SERIALIZED).
  /// Taken before `mutex` where both are held.
  std::mutex progressMutex;
  /// Operations queued or outstanding.
  std::atomic<bool> busy{false};
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
  /// The progress thread's handle, for its CPU clock.
  std::thread::native_handle_type threadHandle{};
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SRC_COMMENGINE_H
