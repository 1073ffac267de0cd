//===- RuntimeCollectives.cpp - Groups, collectives, point-to-point ------===//
//
// The Runtime's process groups and their queries, the collective counters,
// and the asynchronous collectives (all-reduce, reduce-scatter, all-gather,
// broadcast, barrier) and sends / receives it hands to the communication
// engine (CommEngine.h) or, quantized, to QuantizedCollectives.h.
//
//===----------------------------------------------------------------------===//

#include "CommEngine.h"
#include "QuantizedCollectives.h"
#include "RuntimeInternal.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <climits>
#include <cstdio>

using namespace ratrain::rt;
using namespace ratrain::rt::detail;

namespace {
/// Formats an operation description into `out` (no allocation).
void describe(char (&out)[TokenPool::kWhatBytes], const char *kind, Group group,
              const Buffer &buffer, const char *extra) {
  std::snprintf(out, sizeof(out), "%s of %s[%llu, +%llu) on the %s group%s",
                kind, stringifyMemorySpace(buffer.space).data(),
                (unsigned long long)buffer.offset,
                (unsigned long long)buffer.bytes, stringifyGroup(group).data(),
                extra);
}
} // namespace

namespace {
/// Bytes one member sends in a ring `kind` over `members` of an n-byte
/// buffer (the input of all-reduce and reduce-scatter, the output of
/// all-gather): (k-1)/k n, twice that for an all-reduce.
uint64_t ringBytes(CollectiveKind kind, uint64_t n, int members) {
  if (members <= 1)
    return 0;
  uint64_t k = uint64_t(members);
  uint64_t steps = kind == CollectiveKind::AllReduce ? 2 * (k - 1) : k - 1;
  return steps * (n / k) + steps * (n % k) / k;
}

const char *algorithmSuffix(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::Auto:
    return "";
  case CollectiveAlgorithm::Ring:
    return ", ring";
  case CollectiveAlgorithm::Tree:
    return ", tree";
  case CollectiveAlgorithm::Hierarchical:
    return ", hierarchical";
  }
  return "";
}
} // namespace

bool Runtime::groupSpansNodes(Group group) const {
  return groupSpans[unsigned(group)];
}

int Runtime::groupOuterLevel(Group group) const {
  return groupOuterLevels[unsigned(group)];
}

int Runtime::dataLevelMembers(int level) const {
  return level >= 0 && level < levelCount ? dataMembers[level] : 1;
}

int Runtime::dataLevelIndex(int level) const {
  return level >= 0 && level < levelCount ? dataIndex[level] : 0;
}

CollectiveCounters Runtime::collectiveCounters() const {
  return comm->counters();
}

void Runtime::resetCollectiveCounters() {
  comm->resetCounters();
  wireCounters = WireCounters{};
}

WireCounters Runtime::quantizedCounters() const { return wireCounters; }

void Runtime::countFlat(CollectiveKind kind, Group group, uint64_t bytes) {
  uint64_t ring = ringBytes(kind, bytes, groupSize(group));
  comm->count(kind, CollectiveAlgorithm::Auto, unsigned(groupOuterLevel(group)),
              ring, ring);
}

llvm::SmallVector<int, kMaxLevels> Runtime::dataLevelsOf(Group group) const {
  llvm::SmallVector<int, kMaxLevels> levels;
  int lo = 0, hi = levelCount - 1;
  if (isPartitionGroup(group)) {
    int level = partitionGroupLevel(group);
    if (isInsideGroup(group))
      hi = std::min(level, hi);
    else
      lo = level + 1;
  }
  for (int l = lo; l <= hi; ++l)
    if (dataMembers[l] > 1)
      levels.push_back(l);
  return levels;
}

void Runtime::checkPartitionGroup(Group group, const char *what) const {
  if (isPartitionGroup(group) && !hierarchicalData)
    fatal(llvm::formatv("{0}: the partition groups need a Data group that "
                        "every network level splits evenly (dp index = sum "
                        "of level index x stride); check RATRAIN_LEVELS or "
                        "RATRAIN_RANKS_PER_NODE against the plan's dp",
                        what));
}

bool Runtime::makeShape(CollectiveShape &shape, CollectiveKind kind,
                        Group group, CollectiveAlgorithm algorithm,
                        uint64_t count, unsigned elemBytes) const {
  const unsigned g = unsigned(group);
  shape = CollectiveShape{};
  shape.kind = kind;
  shape.algorithm = algorithm;
  shape.elemBytes = elemBytes;
  shape.count = count;
  shape.comm = collectiveComms[g];
  shape.rank = groupRanks[g];
  shape.size = groupSizes[g];
  shape.outerLevel = uint8_t(groupOuterLevels[g]);
  switch (algorithm) {
  case CollectiveAlgorithm::Auto:
    return false;
  case CollectiveAlgorithm::Tree:
    return true;
  case CollectiveAlgorithm::Ring:
    if (shape.size > 1) {
      shape.levels = 1;
      shape.members[0] = shape.size;
      shape.index[0] = shape.rank;
      shape.levelIds[0] = shape.outerLevel;
      shape.levelComms[0] = shape.comm;
    }
    return true;
  case CollectiveAlgorithm::Hierarchical:
    if ((group != Group::Data && !isPartitionGroup(group)) || !hierarchicalData)
      return false;
    // A partition group's ranks are already in level order (the innermost
    // digit most significant).
    shape.levelOrderRanks = isPartitionGroup(group);
    for (int l : dataLevelsOf(group)) {
      int i = shape.levels++;
      shape.members[i] = dataMembers[l];
      shape.index[i] = dataIndex[l];
      shape.levelIds[i] = uint8_t(l);
      shape.levelComms[i] = dataLevelComms[l];
    }
    return true;
  }
  return false;
}

Token Runtime::allReduce(Group group, Buffer src, Buffer dst, ElemType type,
                         ReduceOp op, CollectiveAlgorithm algorithm) {
  char what[TokenPool::kWhatBytes];
  char extra[64];
  std::snprintf(extra, sizeof(extra), " (%s %s%s)",
                stringifyElemType(type).data(), stringifyReduceOp(op).data(),
                algorithmSuffix(algorithm));
  describe(what, "all-reduce", group, dst, extra);
  if (src.bytes != dst.bytes)
    fatal(llvm::formatv("{0}: source and destination differ in size ({1} "
                        "and {2} bytes)",
                        what, src.bytes, dst.bytes));
  int count = elementCount(dst, getElemBytes(type), what);
  MPI_Op mop = mpiOp(type, op);
  CommEngine::Op request{CommEngine::Kind::AllReduce,
                         communicators[unsigned(group)],
                         src.data,
                         dst.data,
                         count,
                         mpiType(type),
                         mop,
                         0,
                         0};
  request.averageOver = op == ReduceOp::Avg ? groupSize(group) : 0;
  request.elemType = type;
  request.reduce = op;
  if (makeShape(request.shape, CollectiveKind::AllReduce, group, algorithm,
                uint64_t(count), getElemBytes(type))) {
    request.kind = CommEngine::Kind::Explicit;
    request.tag = int(explicitIssued[unsigned(group)]++ % 32768);
  } else {
    countFlat(CollectiveKind::AllReduce, group, dst.bytes);
  }
  Token token = pool->acquire(what, issueTimeout);
  comm->submit(token, request);
  return token;
}

/// The quantized collective of `kind` on `group`: its level communicators
/// (innermost first; levels of one member left out) are the Data group's
/// per-level sub-communicators when `hierarchical`, else the group itself at
/// the outermost level it spans.
static QuantizedSpec quantizedSpec(CollectiveKind kind, Group group,
                                   bool hierarchical, WireType wire,
                                   ElemType type, const int *groupSizes,
                                   const int *dataMembers,
                                   llvm::ArrayRef<int> levels, int outerLevel) {
  QuantizedSpec spec;
  spec.kind = kind;
  spec.wire = wire;
  spec.type = type;
  spec.lane = unsigned(group) * 2 + unsigned(hierarchical);
  if (hierarchical) {
    // A partition group ranks its members in level order.
    spec.levelOrderRanks = isPartitionGroup(group);
    for (int l : levels) {
      spec.levels.push_back(dataLevelComms[l]);
      spec.sizes.push_back(dataMembers[l]);
      spec.networkLevels.push_back(unsigned(l));
    }
  } else if (groupSizes[unsigned(group)] > 1) {
    spec.levels.push_back(communicators[unsigned(group)]);
    spec.sizes.push_back(groupSizes[unsigned(group)]);
    spec.networkLevels.push_back(unsigned(outerLevel));
  }
  return spec;
}

Token Runtime::reduceScatter(Group group, Buffer send, Buffer recv,
                             ElemType type, ReduceOp op,
                             CollectiveAlgorithm algorithm, WireType wire,
                             bool leaveOwn) {
  char what[TokenPool::kWhatBytes];
  char extra[64];
  std::snprintf(extra, sizeof(extra), " (%s %s%s%s%s)",
                stringifyElemType(type).data(), stringifyReduceOp(op).data(),
                algorithmSuffix(algorithm),
                wire == WireType::Native ? "" : ", wire ",
                wire == WireType::Native ? "" : stringifyWireType(wire).data());
  describe(what, "reduce-scatter", group, send, extra);
  checkPartitionGroup(group, what);
  int size = groupSize(group);
  if (send.bytes != recv.bytes * uint64_t(size))
    fatal(llvm::formatv("{0}: the send buffer must be {1} x the receive "
                        "buffer ({2} bytes), got {3} bytes",
                        what, size, recv.bytes, send.bytes));
  int count = elementCount(recv, getElemBytes(type), what);
  if (leaveOwn) {
    // The last round of a ring reduces the own block: the other members'
    // sum arrives there, and the consumer adds the rest.
    const char *why = nullptr;
    if (wire != WireType::Native)
      why = "a quantized wire";
    else if (algorithm != CollectiveAlgorithm::Ring)
      why = "an algorithm other than ring";
    else if (size < 2)
      why = "a group of one rank";
    else if (op != ReduceOp::Sum && op != ReduceOp::Avg)
      why = "a reduction other than sum or avg";
    else if (send.overlaps(recv))
      why = "a receive buffer inside the send buffer (the consumer reads "
            "the own block of the send buffer)";
    if (why)
      fatal(llvm::formatv("{0}: leaves its own contribution to the consumer, "
                          "which needs a ring of two or more ranks on a "
                          "native wire reducing by sum or avg, not {1}",
                          what, why));
  }
  if (wire != WireType::Native) {
    if (op != ReduceOp::Sum && op != ReduceOp::Avg)
      fatal(llvm::formatv("{0}: a {1} wire reduces by sum or avg, not {2}",
                          what, stringifyWireType(wire),
                          stringifyReduceOp(op)));
    QuantizedSpec spec =
        quantizedSpec(CollectiveKind::ReduceScatter, group,
                      algorithm == CollectiveAlgorithm::Hierarchical &&
                          (group == Group::Data || isPartitionGroup(group)) &&
                          hierarchicalData,
                      wire, type, groupSizes, dataMembers, dataLevelsOf(group),
                      groupOuterLevel(group));
    spec.average = op == ReduceOp::Avg;
    spec.send = send.data;
    spec.recv = recv.data;
    spec.count = uint64_t(count);
    spec.blockSize = opts.quantBlockSize;
    return submitQuantized(spec, what);
  }
  MPI_Op mop = mpiOp(type, op);
  CommEngine::Op request{CommEngine::Kind::ReduceScatter,
                         communicators[unsigned(group)],
                         send.data,
                         recv.data,
                         count,
                         mpiType(type),
                         mop,
                         0,
                         0};
  request.averageOver = op == ReduceOp::Avg ? size : 0;
  request.elemType = type;
  request.reduce = op;
  request.leaveOwn = leaveOwn;
  if (makeShape(request.shape, CollectiveKind::ReduceScatter, group, algorithm,
                uint64_t(count), getElemBytes(type))) {
    request.kind = CommEngine::Kind::Explicit;
    request.tag = int(explicitIssued[unsigned(group)]++ % 32768);
  } else {
    countFlat(CollectiveKind::ReduceScatter, group, send.bytes);
  }
  Token token = pool->acquire(what, issueTimeout);
  comm->submit(token, request);
  return token;
}

bool Runtime::checkGatherOverlap(Group group, Buffer send, Buffer recv,
                                 const char *what) const {
  const std::byte *block = recv.data + uint64_t(groupRank(group)) * send.bytes;
  if (send.data == block)
    return true;
  if (send.overlaps(recv))
    fatal(llvm::formatv("{0}: the send buffer overlaps the receive buffer "
                        "without being this rank's block of it (block {1} of "
                        "{2} bytes)",
                        what, groupRank(group), send.bytes));
  return false;
}

Token Runtime::allGather(Group group, Buffer send, Buffer recv,
                         CollectiveAlgorithm algorithm) {
  char what[TokenPool::kWhatBytes];
  describe(what, "all-gather", group, send, algorithmSuffix(algorithm));
  checkPartitionGroup(group, what);
  int size = groupSize(group);
  if (recv.bytes != send.bytes * uint64_t(size))
    fatal(llvm::formatv("{0}: the receive buffer must be {1} x the send "
                        "buffer ({2} bytes), got {3} bytes",
                        what, size, send.bytes, recv.bytes));
  int count = elementCount(send, 1, what);
  // In place: the contribution already is this rank's block of the result
  // (mt3k.group_slot), so nothing copies it there.
  const bool inPlace = checkGatherOverlap(group, send, recv, what);
  CommEngine::Op request{CommEngine::Kind::AllGather,
                         communicators[unsigned(group)],
                         send.data,
                         recv.data,
                         count,
                         MPI_BYTE,
                         MPI_OP_NULL,
                         0,
                         0};
  request.elemType = ElemType::U8;
  if (makeShape(request.shape, CollectiveKind::AllGather, group, algorithm,
                uint64_t(count), 1)) {
    request.kind = CommEngine::Kind::Explicit;
    request.tag = int(explicitIssued[unsigned(group)]++ % 32768);
  } else {
    if (inPlace)
      request.send = MPI_IN_PLACE;
    countFlat(CollectiveKind::AllGather, group, recv.bytes);
  }
  Token token = pool->acquire(what, issueTimeout);
  comm->submit(token, request);
  return token;
}

Token Runtime::allGather(Group group, Buffer send, Buffer recv, ElemType type,
                         CollectiveAlgorithm algorithm, WireType wire) {
  if (wire == WireType::Native)
    return allGather(group, send, recv, algorithm);
  char what[TokenPool::kWhatBytes];
  char extra[64];
  std::snprintf(extra, sizeof(extra), " (%s%s, wire %s)",
                stringifyElemType(type).data(), algorithmSuffix(algorithm),
                stringifyWireType(wire).data());
  describe(what, "all-gather", group, send, extra);
  checkPartitionGroup(group, what);
  int size = groupSize(group);
  if (recv.bytes != send.bytes * uint64_t(size))
    fatal(llvm::formatv("{0}: the receive buffer must be {1} x the send "
                        "buffer ({2} bytes), got {3} bytes",
                        what, size, send.bytes, recv.bytes));
  int count = elementCount(send, getElemBytes(type), what);
  // Every block is decoded from its codes, the rank's own too: in place it
  // would overwrite the contribution (the lowering keeps a separate view
  // shard under a weight wire).
  if (checkGatherOverlap(group, send, recv, what))
    fatal(llvm::formatv("{0}: a quantized all-gather cannot run in place (its "
                        "send buffer is the rank's block of the receive "
                        "buffer)",
                        what));
  QuantizedSpec spec = quantizedSpec(
      CollectiveKind::AllGather, group,
      algorithm == CollectiveAlgorithm::Hierarchical &&
          (group == Group::Data || isPartitionGroup(group)) && hierarchicalData,
      wire, type, groupSizes, dataMembers, dataLevelsOf(group),
      groupOuterLevel(group));
  spec.send = send.data;
  spec.recv = recv.data;
  spec.count = uint64_t(count);
  spec.blockSize = opts.quantBlockSize;
  return submitQuantized(spec, what);
}

Token Runtime::broadcast(Group group, Buffer data, int root) {
  char what[TokenPool::kWhatBytes];
  char extra[32];
  std::snprintf(extra, sizeof(extra), " from %d", root);
  describe(what, "broadcast", group, data, extra);
  if (root < 0 || root >= groupSize(group))
    fatal(llvm::formatv("{0}: root {1} is not a rank of the group (size {2})",
                        what, root, groupSize(group)));
  int count = elementCount(data, 1, what);
  Token token = pool->acquire(what, issueTimeout);
  comm->submit(token,
               {CommEngine::Kind::Broadcast, communicators[unsigned(group)],
                nullptr, data.data, count, MPI_BYTE, MPI_OP_NULL, root, 0});
  return token;
}

Token Runtime::barrier(Group group) {
  char what[TokenPool::kWhatBytes];
  std::snprintf(what, sizeof(what), "barrier on the %s group",
                stringifyGroup(group).data());
  Token token = pool->acquire(what, issueTimeout);
  comm->submit(token,
               {CommEngine::Kind::Barrier, communicators[unsigned(group)],
                nullptr, nullptr, 0, MPI_BYTE, MPI_OP_NULL, 0, 0});
  return token;
}

Token Runtime::send(Group group, int peer, int tag, Buffer data) {
  return pointToPoint(/*isSend=*/true, group, peer, tag, data);
}

Token Runtime::recv(Group group, int peer, int tag, Buffer data) {
  return pointToPoint(/*isSend=*/false, group, peer, tag, data);
}

Token Runtime::putToStage(int peerStage, int tag, Buffer data,
                          uint64_t targetOffset) {
  char what[TokenPool::kWhatBytes];
  char extra[96];
  std::snprintf(extra, sizeof(extra),
                " to pipeline rank %d at byte %llu, tag %d", peerStage,
                static_cast<unsigned long long>(targetOffset), tag);
  describe(what, "put", Group::Pipeline, data, extra);
  checkPutPeer(peerStage, tag, what);
  if (targetOffset > opts.ddrBytes || data.bytes > opts.ddrBytes - targetOffset)
    fatal(llvm::formatv("{0}: bytes [{1}, {2}) lie outside the peer's DDR "
                        "arena of {3} bytes",
                        what, targetOffset, targetOffset + data.bytes,
                        opts.ddrBytes));
  int count = elementCount(data, 1, what);
  Token token = pool->acquire(what, issueTimeout);
  CommEngine::Op op{CommEngine::Kind::Put,
                    communicators[unsigned(Group::Pipeline)],
                    data.data,
                    nullptr,
                    count,
                    MPI_BYTE,
                    MPI_OP_NULL,
                    peerStage,
                    tag};
  op.targetOffset = targetOffset;
  comm->submit(token, op);
  return token;
}

Token Runtime::arrivalFromStage(int peerStage, int tag, Buffer data) {
  char what[TokenPool::kWhatBytes];
  char extra[64];
  std::snprintf(extra, sizeof(extra), " from pipeline rank %d, tag %d",
                peerStage, tag);
  describe(what, "arrival", Group::Pipeline, data, extra);
  checkPutPeer(peerStage, tag, what);
  Token token = pool->acquire(what, issueTimeout);
  comm->submit(token, {CommEngine::Kind::Arrival,
                       communicators[unsigned(Group::Pipeline)], nullptr,
                       data.data, 0, MPI_BYTE, MPI_OP_NULL, peerStage, tag});
  return token;
}

void Runtime::checkPutPeer(int peerStage, int tag, const char *what) const {
  if (!opts.oneSidedPipeline)
    fatal(llvm::formatv("{0}: one-sided transfers are off "
                        "(RuntimeOptions::oneSidedPipeline)",
                        what));
  if (peerStage < 0 || peerStage >= groupSize(Group::Pipeline) ||
      peerStage == groupRank(Group::Pipeline))
    fatal(llvm::formatv("{0}: invalid peer {1} (pipeline group size {2}, "
                        "self {3})",
                        what, peerStage, groupSize(Group::Pipeline),
                        groupRank(Group::Pipeline)));
  if (tag < 0 || tag >= CommEngine::kPutTags)
    fatal(llvm::formatv("{0}: tag {1} is outside [0, {2})", what, tag,
                        CommEngine::kPutTags));
}

Token Runtime::pointToPoint(bool isSend, Group group, int peer, int tag,
                            Buffer data) {
  char what[TokenPool::kWhatBytes];
  char extra[64];
  std::snprintf(extra, sizeof(extra), " %s %s rank %d, tag %d",
                isSend ? "to" : "from", stringifyGroup(group).data(), peer,
                tag);
  describe(what, isSend ? "send" : "recv", group, data, extra);
  if (peer < 0 || peer >= groupSize(group) || peer == groupRank(group))
    fatal(llvm::formatv("{0}: invalid peer {1} (group size {2}, self {3})",
                        what, peer, groupSize(group), groupRank(group)));
  if (tag < 0 || tag > 32767)
    fatal(llvm::formatv("{0}: tag {1} is outside [0, 32767]", what, tag));
  int count = elementCount(data, 1, what);
  Token token = pool->acquire(what, issueTimeout);
  comm->submit(token,
               {isSend ? CommEngine::Kind::Send : CommEngine::Kind::Recv,
                communicators[unsigned(group)], isSend ? data.data : nullptr,
                isSend ? nullptr : data.data, count, MPI_BYTE, MPI_OP_NULL,
                peer, tag});
  return token;
}
