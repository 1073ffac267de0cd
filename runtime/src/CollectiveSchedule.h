//===- CollectiveSchedule.h - Collectives as p2p rounds ---------*- C++ -*-===//
//
// Private to the runtime. The ring, binomial-tree and N-level hierarchical
// collectives the cost model and the simulator count
// (lib/Simulator/Collectives.cpp, planCollective), as rounds of at most one
// send and one receive per rank that the CommEngine runs with MPI_Isend /
// MPI_Irecv. One round of this rank is one step of the model: the model
// charges a step the bytes that leave and arrive on a member's link, the
// runtime counts a round as the larger of what it sends and what it
// receives (see CollectiveCounters in Runtime.h).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SRC_COLLECTIVESCHEDULE_H
#define RATRAIN_RUNTIME_SRC_COLLECTIVESCHEDULE_H

#include "ratrain/runtime/Runtime.h"

#include <mpi.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace ratrain::rt {

/// The group a collective runs on, as the schedule sees it.
struct CollectiveShape {
  CollectiveKind kind = CollectiveKind::AllReduce;
  /// Ring, Tree or Hierarchical.
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  /// Element size in bytes (1 for all-gathers, which move bytes).
  unsigned elemBytes = 1;
  /// Elements of one member's block: the all-reduce buffer, the
  /// reduce-scatter result, the all-gather input.
  uint64_t count = 0;
  /// Ring and tree: the group's private communicator, this rank's place in
  /// it, its size, and the level the model charges (the outermost level the
  /// group spans).
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  uint8_t outerLevel = 0;
  /// Hierarchical: the levels the group spans (more than one member),
  /// innermost first: members m_i, this rank's index in its level group, the
  /// model's level index and a private communicator of the level group
  /// (ranks ordered by index). Group rank d = sum_i index_i * prod_{j<i} m_j.
  int levels = 0;
  int members[kMaxLevels] = {};
  int index[kMaxLevels] = {};
  uint8_t levelIds[kMaxLevels] = {};
  MPI_Comm levelComms[kMaxLevels] = {};
  /// The group ranks are already in level order, d = sum_i index_i *
  /// prod_{j>i} m_j (the partition groups, Runtime::partitionIndex): the
  /// staging order is the identity.
  bool levelOrderRanks = false;
};

/// One round: an optional send of [sendOffset, +sendBytes) of the work
/// buffer and an optional receive of recvBytes, either straight to
/// recvOffset or (reduce) into a temporary buffer that is then reduced into
/// recvOffset.
struct Round {
  MPI_Comm comm = MPI_COMM_NULL;
  int sendPeer = -1;
  int recvPeer = -1;
  uint64_t sendOffset = 0, sendBytes = 0;
  uint64_t recvOffset = 0, recvBytes = 0;
  bool reduce = false;
  uint8_t level = 0;
};

/// Where the work buffer comes from and how the result leaves it.
enum class WorkBuffer : unsigned char {
  /// The result buffer itself (all-reduce; all-gathers whose blocks are
  /// staged in group-rank order): the input is copied in first (the own
  /// block for all-gathers).
  Result,
  /// A staging buffer of k blocks (reduce-scatter; hierarchical all-gather
  /// in level order), the blocks in `order`; the own block (reduce-scatter)
  /// or every block (all-gather) is copied out at the end. A reduce-scatter
  /// whose blocks are in group-rank order stages lazily (`StagedRanges`).
  Staging
};

/// The byte ranges of a lazily staged reduce-scatter's staging buffer that
/// hold data; every other byte still equals the send buffer's byte at the
/// same offset (blocks in group-rank order). Rounds then send untouched
/// blocks straight from the send buffer and reduce a received block with
/// the send buffer's into staging, so the k blocks are never copied in
/// first. Sorted, disjoint, merged half-open ranges.
class StagedRanges {
public:
  void clear() { ranges.clear(); }
  /// Whether no byte of [lo, hi) is staged.
  bool untouched(uint64_t lo, uint64_t hi) const;
  /// The parts of [lo, hi) not staged yet, in order.
  std::vector<std::pair<uint64_t, uint64_t>> gaps(uint64_t lo,
                                                  uint64_t hi) const;
  /// Marks [lo, hi) staged.
  void add(uint64_t lo, uint64_t hi);

private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
};

struct Schedule {
  std::vector<Round> rounds;
  WorkBuffer work = WorkBuffer::Result;
  /// Staging: the position of group rank d's block (empty: d itself).
  std::vector<int> order;
  /// The largest receive that is reduced (the temporary buffer's size).
  uint64_t reduceBytes = 0;
  /// Staging (reduce-scatter) in group-rank order: staged lazily.
  bool lazyStaging = false;
};

/// Appends the rounds of `shape` for this rank to `schedule` (cleared
/// first).
void buildSchedule(const CollectiveShape &shape, Schedule &schedule);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SRC_COLLECTIVESCHEDULE_H
