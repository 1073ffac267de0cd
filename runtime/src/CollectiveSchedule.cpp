//===- CollectiveSchedule.cpp - Collectives as point-to-point rounds ------===//
//
// Ring: reduce-scatter and all-gather in k-1 rounds of one block (n/k) to
// the right neighbour and from the left one, all-reduce = both (2(k-1)).
// Binomial tree rooted at rank 0: reduce (ceil(log2 k) rounds of n at the
// root), broadcast (the mirror), scatter of blocks (the root sends the
// blocks of each subtree, (k-1)/k n in all) and gather (the mirror).
// Hierarchical: ring reduce-scatter inside the innermost level's group, the
// next level over the shard, ..., all-reduce at the outermost level, then
// the all-gathers back out; reduce-scatter and all-gather are the halves,
// on blocks arranged so that every level's share is contiguous.
//
//===----------------------------------------------------------------------===//

#include "CollectiveSchedule.h"

#include <algorithm>

using namespace ratrain::rt;

namespace {

/// Rounds of a ring over `p` members (this one at `q`) on the blocks of a
/// region: block j is [offset(j), offset(j + 1)) bytes.
template <typename Offset>
void ringReduceScatter(std::vector<Round> &rounds, MPI_Comm comm, int p, int q,
                       uint8_t level, Offset offset) {
  for (int s = 0; s + 1 < p; ++s) {
    int send = ((q - s - 1) % p + p) % p;
    int recv = ((q - s - 2) % p + p) % p;
    Round r;
    r.comm = comm;
    r.level = level;
    r.sendPeer = (q + 1) % p;
    r.recvPeer = (q + p - 1) % p;
    r.sendOffset = offset(send);
    r.sendBytes = offset(send + 1) - offset(send);
    r.recvOffset = offset(recv);
    r.recvBytes = offset(recv + 1) - offset(recv);
    r.reduce = true;
    rounds.push_back(r);
  }
}

template <typename Offset>
void ringAllGather(std::vector<Round> &rounds, MPI_Comm comm, int p, int q,
                   uint8_t level, Offset offset) {
  for (int s = 0; s + 1 < p; ++s) {
    int send = ((q - s) % p + p) % p;
    int recv = ((q - s - 1) % p + p) % p;
    Round r;
    r.comm = comm;
    r.level = level;
    r.sendPeer = (q + 1) % p;
    r.recvPeer = (q + p - 1) % p;
    r.sendOffset = offset(send);
    r.sendBytes = offset(send + 1) - offset(send);
    r.recvOffset = offset(recv);
    r.recvBytes = offset(recv + 1) - offset(recv);
    rounds.push_back(r);
  }
}

int lowBit(int r) { return r & -r; }

/// The highest power of two below k (k >= 2).
int topMask(int k) {
  int mask = 1;
  while (mask * 2 < k)
    mask *= 2;
  return mask;
}

/// Binomial reduce of [0, bytes) to rank 0.
void treeReduce(std::vector<Round> &rounds, const CollectiveShape &g,
                uint64_t bytes) {
  for (int mask = 1; mask < g.size; mask *= 2) {
    Round r;
    r.comm = g.comm;
    r.level = g.outerLevel;
    if (g.rank & mask) {
      r.sendPeer = g.rank - mask;
      r.sendBytes = bytes;
      rounds.push_back(r);
      return;
    }
    if (g.rank + mask < g.size) {
      r.recvPeer = g.rank + mask;
      r.recvBytes = bytes;
      r.reduce = true;
      rounds.push_back(r);
    }
  }
}

/// Binomial broadcast of [0, bytes) from rank 0.
void treeBroadcast(std::vector<Round> &rounds, const CollectiveShape &g,
                   uint64_t bytes) {
  int below = g.rank == 0 ? 2 * topMask(g.size) : lowBit(g.rank);
  if (g.rank != 0) {
    Round r;
    r.comm = g.comm;
    r.level = g.outerLevel;
    r.recvPeer = g.rank - lowBit(g.rank);
    r.recvBytes = bytes;
    rounds.push_back(r);
  }
  for (int mask = below / 2; mask >= 1; mask /= 2) {
    if (g.rank + mask >= g.size)
      continue;
    Round r;
    r.comm = g.comm;
    r.level = g.outerLevel;
    r.sendPeer = g.rank + mask;
    r.sendBytes = bytes;
    rounds.push_back(r);
  }
}

/// The blocks of rank r's subtree: [r, r + span(r)).
int subtree(const CollectiveShape &g, int r) {
  int bit = r == 0 ? 2 * topMask(g.size) : lowBit(r);
  return std::min(bit, g.size - r);
}

/// Binomial scatter of blocks of `block` bytes from rank 0: each rank ends
/// with the blocks of its subtree at their places.
void treeScatter(std::vector<Round> &rounds, const CollectiveShape &g,
                 uint64_t block) {
  if (g.rank != 0) {
    Round r;
    r.comm = g.comm;
    r.level = g.outerLevel;
    r.recvPeer = g.rank - lowBit(g.rank);
    r.recvOffset = uint64_t(g.rank) * block;
    r.recvBytes = uint64_t(subtree(g, g.rank)) * block;
    rounds.push_back(r);
  }
  int below = g.rank == 0 ? 2 * topMask(g.size) : lowBit(g.rank);
  for (int mask = below / 2; mask >= 1; mask /= 2) {
    int child = g.rank + mask;
    if (child >= g.size)
      continue;
    Round r;
    r.comm = g.comm;
    r.level = g.outerLevel;
    r.sendPeer = child;
    r.sendOffset = uint64_t(child) * block;
    r.sendBytes = uint64_t(subtree(g, child)) * block;
    rounds.push_back(r);
  }
}

/// Binomial gather of blocks to rank 0 (the mirror of treeScatter).
void treeGather(std::vector<Round> &rounds, const CollectiveShape &g,
                uint64_t block) {
  for (int mask = 1; mask < g.size; mask *= 2) {
    Round r;
    r.comm = g.comm;
    r.level = g.outerLevel;
    if (g.rank & mask) {
      r.sendPeer = g.rank - mask;
      r.sendOffset = uint64_t(g.rank) * block;
      r.sendBytes = uint64_t(subtree(g, g.rank)) * block;
      rounds.push_back(r);
      return;
    }
    int child = g.rank + mask;
    if (child < g.size) {
      r.recvPeer = child;
      r.recvOffset = uint64_t(child) * block;
      r.recvBytes = uint64_t(subtree(g, child)) * block;
      rounds.push_back(r);
    }
  }
}

void buildTree(const CollectiveShape &g, Schedule &schedule) {
  uint64_t block = g.count * g.elemBytes;
  uint64_t whole = block * uint64_t(g.size);
  std::vector<Round> &rounds = schedule.rounds;
  switch (g.kind) {
  case CollectiveKind::AllReduce:
    schedule.work = WorkBuffer::Result;
    treeReduce(rounds, g, block);
    treeBroadcast(rounds, g, block);
    schedule.reduceBytes = block;
    return;
  case CollectiveKind::ReduceScatter:
    schedule.work = WorkBuffer::Staging;
    treeReduce(rounds, g, whole);
    treeScatter(rounds, g, block);
    schedule.reduceBytes = whole;
    return;
  case CollectiveKind::AllGather:
    schedule.work = WorkBuffer::Result;
    treeGather(rounds, g, block);
    treeBroadcast(rounds, g, whole);
    return;
  }
}

/// Ring (one level) and hierarchical collectives over g.levels levels.
void buildLevels(const CollectiveShape &g, Schedule &schedule) {
  const int levels = g.levels;
  const unsigned e = g.elemBytes;
  std::vector<Round> &rounds = schedule.rounds;
  int k = 1;
  for (int i = 0; i < levels; ++i)
    k *= g.members[i];
  if (g.kind == CollectiveKind::AllReduce) {
    // Element ranges, split as evenly as the count allows.
    schedule.work = WorkBuffer::Result;
    uint64_t lo[kMaxLevels], len[kMaxLevels];
    uint64_t start = 0, size = g.count;
    for (int i = 0; i < levels; ++i) {
      lo[i] = start;
      len[i] = size;
      int p = g.members[i];
      auto offset = [&, start, size, p](int j) {
        return (start + size * uint64_t(j) / uint64_t(p)) * e;
      };
      schedule.reduceBytes =
          std::max(schedule.reduceBytes, offset(1) - offset(0) + e);
      ringReduceScatter(rounds, g.levelComms[i], p, g.index[i], g.levelIds[i],
                        offset);
      if (i + 1 == levels)
        break;
      uint64_t next = start + size * uint64_t(g.index[i]) / uint64_t(p);
      size = start + size * uint64_t(g.index[i] + 1) / uint64_t(p) - next;
      start = next;
    }
    for (int i = levels - 1; i >= 0; --i) {
      int p = g.members[i];
      uint64_t s = lo[i], n = len[i];
      ringAllGather(rounds, g.levelComms[i], p, g.index[i], g.levelIds[i],
                    [&, s, n, p](int j) {
                      return (s + n * uint64_t(j) / uint64_t(p)) * e;
                    });
    }
    return;
  }
  // Reduce-scatter and all-gather move whole blocks of `count` elements,
  // staged in "level order": group rank d's block at
  // sum_i index_i(d) * prod_{j>i} m_j, so that the blocks a level's members
  // exchange are contiguous.
  schedule.work = WorkBuffer::Staging;
  const uint64_t block = g.count * e;
  schedule.order.resize(size_t(k));
  for (int d = 0; d < k; ++d) {
    int rest = d, position = 0;
    int digits[kMaxLevels];
    for (int i = 0; i < levels; ++i) {
      digits[i] = rest % g.members[i];
      rest /= g.members[i];
    }
    for (int i = 0; i < levels; ++i)
      position = position * g.members[i] + digits[i];
    schedule.order[size_t(d)] = g.levelOrderRanks ? d : position;
  }
  // The region of level i: the blocks whose digits below i are this rank's.
  auto region = [&](int i, uint64_t &first, uint64_t &blocks) {
    first = 0;
    blocks = uint64_t(k);
    for (int j = 0; j < i; ++j) {
      blocks /= uint64_t(g.members[j]);
      first += uint64_t(g.index[j]) * blocks;
    }
  };
  if (g.kind == CollectiveKind::ReduceScatter) {
    for (int i = 0; i < levels; ++i) {
      uint64_t first, blocks;
      region(i, first, blocks);
      int p = g.members[i];
      uint64_t chunk = blocks / uint64_t(p);
      schedule.reduceBytes = std::max(schedule.reduceBytes, chunk * block);
      ringReduceScatter(rounds, g.levelComms[i], p, g.index[i], g.levelIds[i],
                        [&, first, chunk](int j) {
                          return (first + chunk * uint64_t(j)) * block;
                        });
    }
    return;
  }
  for (int i = levels - 1; i >= 0; --i) {
    uint64_t first, blocks;
    region(i, first, blocks);
    int p = g.members[i];
    uint64_t chunk = blocks / uint64_t(p);
    ringAllGather(rounds, g.levelComms[i], p, g.index[i], g.levelIds[i],
                  [&, first, chunk](int j) {
                    return (first + chunk * uint64_t(j)) * block;
                  });
  }
}

} // namespace

void ratrain::rt::buildSchedule(const CollectiveShape &shape,
                                Schedule &schedule) {
  schedule.rounds.clear();
  schedule.order.clear();
  schedule.reduceBytes = 0;
  schedule.work = WorkBuffer::Result;
  schedule.lazyStaging = false;
  if (shape.algorithm == CollectiveAlgorithm::Tree) {
    if (shape.kind == CollectiveKind::ReduceScatter)
      schedule.work = WorkBuffer::Staging;
    if (shape.size > 1)
      buildTree(shape, schedule);
    return;
  }
  if (shape.kind != CollectiveKind::AllReduce)
    schedule.work = WorkBuffer::Staging;
  if (shape.levels > 0)
    buildLevels(shape, schedule);
  if (schedule.work != WorkBuffer::Staging)
    return;
  // Blocks in group-rank order (one level, or ranks already in level
  // order): the result buffer's layout. An all-gather then works in the
  // result itself, a reduce-scatter stages lazily.
  for (size_t d = 0; d < schedule.order.size(); ++d)
    if (schedule.order[d] != int(d))
      return;
  schedule.order.clear();
  if (shape.kind == CollectiveKind::AllGather)
    schedule.work = WorkBuffer::Result;
  else
    schedule.lazyStaging = true;
}

bool StagedRanges::untouched(uint64_t lo, uint64_t hi) const {
  for (const auto &[first, last] : ranges)
    if (first < hi && lo < last)
      return false;
  return true;
}

std::vector<std::pair<uint64_t, uint64_t>>
StagedRanges::gaps(uint64_t lo, uint64_t hi) const {
  std::vector<std::pair<uint64_t, uint64_t>> result;
  uint64_t at = lo;
  for (const auto &[first, last] : ranges) {
    if (last <= at)
      continue;
    if (first >= hi)
      break;
    if (first > at)
      result.emplace_back(at, first);
    at = std::max(at, last);
  }
  if (at < hi)
    result.emplace_back(at, hi);
  return result;
}

void StagedRanges::add(uint64_t lo, uint64_t hi) {
  if (lo >= hi)
    return;
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  merged.reserve(ranges.size() + 1);
  bool placed = false;
  for (const auto &range : ranges) {
    if (range.second < lo) {
      merged.push_back(range);
    } else if (hi < range.first) {
      if (!placed)
        merged.emplace_back(lo, hi);
      placed = true;
      merged.push_back(range);
    } else {
      lo = std::min(lo, range.first);
      hi = std::max(hi, range.second);
    }
  }
  if (!placed)
    merged.emplace_back(lo, hi);
  ranges = std::move(merged);
}
