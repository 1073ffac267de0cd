//===- QuantizedCollectives.h - ZeRO++ qwZ / qgZ collectives ----*- C++ -*-===//
//
// Private to the runtime. Quantized all-gathers (qwZ) and reduce-scatters
// (qgZ) over an ordered list of per-level communicators (innermost first),
// run as nonblocking steps on the CommEngine's progress (the progress thread,
// or test/wait/poll in inline mode): the quantization kernels run between
// the steps, on the progressing thread.
//
// Steps of one collective run on private duplicates of its level
// communicators (made with MPI_Comm_idup, posted in issue order when a
// level list is first used). The collectives of one level list (a "lane")
// run one at a time, in issue order, so every rank starts the steps on each
// duplicate in the same order; collectives of different lanes overlap.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SRC_QUANTIZEDCOLLECTIVES_H
#define RATRAIN_RUNTIME_SRC_QUANTIZEDCOLLECTIVES_H

#include "HugePages.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/ADT/SmallVector.h"

#include <mpi.h>

#include <cstddef>
#include <deque>
#include <vector>

namespace ratrain::rt {

class CommEngine;

/// One quantized collective, as Runtime hands it over.
struct QuantizedSpec {
  /// ReduceScatter or AllGather.
  CollectiveKind kind = CollectiveKind::AllGather;
  /// Int8 or Int4.
  WireType wire = WireType::Int8;
  /// F32, BF16 or F16: of `send` and `recv`.
  ElemType type = ElemType::F32;
  /// Reduce-scatter: divide the sum by the group size (ReduceOp::Avg).
  bool average = false;
  /// The level communicators, innermost first; a rank's group index is
  /// sum_l index_l * prod_{j < l} size_j. Levels of one member are left out.
  llvm::SmallVector<MPI_Comm, kMaxWireLevels> levels;
  /// Members of each level (cached by the caller: with the progress thread,
  /// the main thread makes no MPI calls).
  llvm::SmallVector<int, kMaxWireLevels> sizes;
  /// The network level of each entry of `levels` (the index the counters
  /// use: the machine's level, as in the model's CollectiveStep).
  llvm::SmallVector<unsigned, kMaxWireLevels> networkLevels;
  /// The group ranks are in level order, sum_l index_l * prod_{j>l} size_j
  /// (the partition groups): a member's block is the contiguous chunk of
  /// its digits at every level.
  bool levelOrderRanks = false;
  /// Identifies the level list: equal keys, equal lists.
  unsigned lane = 0;
  const void *send = nullptr;
  void *recv = nullptr;
  /// Elements of the block one rank owns: `recv` of a reduce-scatter,
  /// `send` of an all-gather.
  uint64_t count = 0;
  /// Elements per quantization block.
  uint64_t blockSize = 256;
};

/// Adds the wire bytes this rank sends in `spec` to `counters`: per level,
/// the codes and scales of the chunks it sends to the other members.
void countWireBytes(WireCounters &counters, const QuantizedSpec &spec);

class QuantizedCollectives {
public:
  /// `slots`: the token pool's capacity.
  QuantizedCollectives(CommEngine &engine, uint32_t slots, unsigned lanes);
  /// Frees the duplicate communicators (call after the progress stopped,
  /// before MPI_Finalize).
  ~QuantizedCollectives();

  /// Main thread, before CommEngine::submit of a Kind::Quantized operation
  /// at token slot `index`: records what it does.
  void prepare(uint32_t index, const QuantizedSpec &spec);

  /// Progressing thread: starts the operation of slot `index` (or queues it
  /// behind the running collective of its lane).
  void post(uint32_t index);
  /// Progressing thread: a request tracked for slot `index` completed.
  /// Returns true when the operation finished.
  bool advance(uint32_t index);

private:
  struct Lane {
    /// The program's level communicators, and the private duplicates.
    llvm::SmallVector<MPI_Comm, kMaxWireLevels> parents, dups;
    llvm::SmallVector<int, kMaxWireLevels> sizes;
    /// Set by prepare() on the main thread when the lane is first used.
    bool registered = false;
    bool dupsPosted = false;
    int dupsPending = 0;
    /// Operations in issue order; the front one runs.
    std::deque<uint32_t> queue;
    /// Scratch of the running operation: payloads sent and received,
    /// staged chunks, fp32 partial sums.
    HugePageVector<std::byte> sendBuf, recvBuf, stage;
    HugePageVector<float> acc, accNext;
    std::vector<float> scales;
  };
  struct Running {
    QuantizedSpec spec;
    /// The step being run (a level of the decomposition).
    int step = 0;
    /// All-gather: payloads gathered so far.
    uint64_t gathered = 0;
  };

  Lane &laneOf(uint32_t index) { return lanes[ops[index].spec.lane]; }
  /// Starts the front operations of `lane` until one is in flight; the
  /// others finish without communication.
  void startQueue(Lane &lane);
  /// Runs the local work before step `op.step` and posts its request;
  /// false when the operation is complete instead.
  bool postStep(uint32_t index);
  /// Local work after step `op.step` completed.
  void finishStep(uint32_t index);
  /// Writes the result of a finished operation.
  void finish(uint32_t index);

  CommEngine &engine;
  std::vector<Running> ops;
  std::vector<Lane> lanes;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SRC_QUANTIZEDCOLLECTIVES_H
