//===- CommEngine.h - MPI requests and their progress -----------*- C++ -*-===//
//
// Private to the runtime. Owns the communicators and every MPI request. In
// thread mode the progress thread makes every MPI call after start-up: the
// main thread only enqueues operation descriptors (no allocation: they sit in
// an array indexed by token slot) and waits on tokens.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SRC_COMMENGINE_H
#define RATRAIN_RUNTIME_SRC_COMMENGINE_H

#include "ratrain/runtime/Runtime.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
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
    /// The hierarchical collectives (see CollectiveAlgorithm in Runtime.h):
    /// phases on the node-local and cross-node parts of the Data group.
    HierarchicalAllReduce,
    HierarchicalReduceScatter,
    HierarchicalAllGather,
    ReduceScatter,
    AllGather,
    Broadcast,
    Barrier,
    Send,
    Recv,
    /// A quantized all-gather or reduce-scatter: its steps are run by the
    /// QuantizedCollectives (QuantizedCollectives.h) given to setQuantized.
    Quantized
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
    /// Hierarchical collectives: the program's node-local and cross-node
    /// groups (phase 0 runs on one of them, in issue order), private
    /// duplicates of both (later phases), the current phase, this rank's
    /// node-local index, the members per node c and the nodes G, and the
    /// size of an element in bytes.
    MPI_Comm localComm = MPI_COMM_NULL;
    MPI_Comm crossComm = MPI_COMM_NULL;
    MPI_Comm localDup = MPI_COMM_NULL;
    MPI_Comm crossDup = MPI_COMM_NULL;
    int phase = 0;
    int localIndex = 0;
    int perNode = 1;
    int nodes = 1;
    unsigned elemBytes = 1;
  };
  CommEngine(TokenPool &pool, ProgressMode mode, unsigned pollMicros,
             double timeoutSeconds);
  ~CommEngine();

  /// Enqueues (thread mode) or posts (inline mode) `op` for `token`.
  void submit(Token token, const Op &op);
  /// One progress step: posts queued operations, tests outstanding ones,
  /// enforces the timeout. Inline mode only (the thread calls it itself).
  void progress();
  /// Stops the progress thread; outstanding operations are fatal.
  void shutdown();
  ProgressMode mode() const { return progressMode; }
  /// Runs the Kind::Quantized operations (set before the first one).
  void setQuantized(QuantizedCollectives *runner) { quantized = runner; }
  /// Progressing thread: tracks `request` as outstanding for slot `index`
  /// (the steps of quantized collectives).
  void track(uint32_t index, MPI_Request request);
  /// Progressing thread: completes slot `index`, which has no outstanding
  /// request (a quantized collective that finished without one).
  void complete(uint32_t index);
  double timeoutSeconds() const { return timeout; }

private:
  void post(uint32_t index);
  /// Called when the request of slot `index` completed: posts the next
  /// phase (returns false) or finishes the operation (returns true).
  bool advance(uint32_t index);
  bool testOutstanding();
  void checkTimeouts();
  void threadLoop();

  TokenPool &pool;
  QuantizedCollectives *quantized = nullptr;
  ProgressMode progressMode;
  unsigned pollMicros;
  double timeout;
  std::vector<Op> ops;
  /// Submission ring (thread mode), guarded by `mutex`.
  std::vector<uint32_t> queue;
  uint64_t head = 0, tail = 0;
  std::vector<uint32_t> drained;
  /// Posts the later phases of hierarchical collectives waiting in `ring`
  /// (0: the cross-node duplicate, 1: the node-local duplicate) in issue
  /// order, as far as they are ready. MPI needs every rank to start the
  /// collectives of a communicator in the same order; completion order may
  /// differ between ranks, so later phases are started in issue order, not
  /// in completion order.
  void drainPhases(int ring);
  std::vector<uint32_t> phaseRing[2];
  uint64_t phaseHead[2] = {0, 0}, phaseTail[2] = {0, 0};
  std::vector<uint8_t> phaseReady;
  /// Staging buffer of each slot's hierarchical reduce-scatter (its input
  /// with the blocks reordered node-local index first), grown on first use.
  std::vector<std::vector<std::byte>> scratch;

  /// Outstanding requests; only the progressing thread touches these.
  std::vector<MPI_Request> requests;
  std::vector<uint32_t> requestSlots;
  std::vector<int> completedIndices;
  std::vector<MPI_Status> statuses;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SRC_COMMENGINE_H
