//===- CommEngine.cpp - MPI requests and their progress -------------------===//

#include "CommEngine.h"
#include "QuantizedCollectives.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Half.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cstring>

using namespace ratrain::rt;

void ratrain::rt::checkMPI(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  fatal(llvm::formatv("MPI failure in {0}: {1} (error code {2})", what, text,
                      code));
}

CommEngine::CommEngine(TokenPool &pool, ProgressMode mode, unsigned pollMicros,
                       double timeoutSeconds)
    : pool(pool), progressMode(mode), pollMicros(pollMicros),
      timeout(timeoutSeconds), ops(pool.capacity()), queue(pool.capacity()),
      phaseReady(pool.capacity(), 0), scratch(pool.capacity()) {
  phaseRing[0].resize(pool.capacity());
  phaseRing[1].resize(pool.capacity());
  drained.reserve(pool.capacity());
  requests.reserve(pool.capacity());
  requestSlots.reserve(pool.capacity());
  completedIndices.resize(pool.capacity());
  statuses.resize(pool.capacity());
  if (mode == ProgressMode::Thread)
    thread = std::thread([this] { threadLoop(); });
}

CommEngine::~CommEngine() { shutdown(); }

void CommEngine::shutdown() {
  if (thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    thread.join();
  }
}

void CommEngine::submit(Token token, const Op &op) {
  ops[token.index] = op;
  if (progressMode == ProgressMode::Inline) {
    post(token.index);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    queue[tail++ % queue.size()] = token.index;
  }
  wake.notify_one();
}

namespace {
bool isHierarchical(CommEngine::Kind kind) {
  return kind == CommEngine::Kind::HierarchicalAllReduce ||
         kind == CommEngine::Kind::HierarchicalReduceScatter ||
         kind == CommEngine::Kind::HierarchicalAllGather;
}

/// The last phase of a hierarchical collective.
int lastPhase(CommEngine::Kind kind) {
  return kind == CommEngine::Kind::HierarchicalAllReduce ? 2 : 1;
}

/// The phase ring (0: cross-node duplicate, 1: node-local duplicate) of
/// phase `phase` >= 1.
int ringOf(CommEngine::Kind kind, int phase) {
  if (kind == CommEngine::Kind::HierarchicalAllGather)
    return 1;
  return phase == 1 ? 0 : 1;
}

std::byte *at(void *base, uint64_t offset) {
  return static_cast<std::byte *>(base) + offset;
}

/// Reorders `blocks` = rows x cols blocks of `blockBytes` in place from
/// column-major (the block of (r, c) at c * rows + r) to row-major (at
/// r * cols + c), following each cycle of the permutation with swaps: no
/// staging memory.
void transposeBlocks(std::byte *blocks, int rows, int cols,
                     uint64_t blockBytes) {
  int total = rows * cols;
  // The block at position p (column-major) belongs at dest(p).
  auto dest = [&](int p) { return (p % rows) * cols + p / rows; };
  for (int start = 0; start < total; ++start) {
    int p = dest(start);
    while (p > start)
      p = dest(p);
    if (p != start)
      continue; // Not the smallest position of its cycle: already moved.
    for (int next = dest(start); next != start; next = dest(next))
      std::swap_ranges(blocks + uint64_t(start) * blockBytes,
                       blocks + uint64_t(start + 1) * blockBytes,
                       blocks + uint64_t(next) * blockBytes);
  }
}
} // namespace

void CommEngine::track(uint32_t index, MPI_Request request) {
  requests.push_back(request);
  requestSlots.push_back(index);
}

void CommEngine::complete(uint32_t index) { pool.complete(index); }

void CommEngine::post(uint32_t index) {
  Op &op = ops[index];
  if (op.kind == Kind::Quantized) {
    quantized->post(index);
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  switch (op.kind) {
  case Kind::AllReduce:
    rc = MPI_Iallreduce(op.send == op.recv ? MPI_IN_PLACE : op.send, op.recv,
                        op.count, op.type, op.op, op.comm, &request);
    break;
  case Kind::HierarchicalAllReduce: {
    // c | count; shard l of the buffer is this rank's part.
    int shard = op.count / op.perNode;
    uint64_t shardBytes = uint64_t(shard) * op.elemBytes;
    if (op.phase == 0) {
      // Node-local reduce-scatter: shard l lands at its place in `recv`
      // (in place: at the start, moved after completion).
      if (op.send == op.recv)
        rc = MPI_Ireduce_scatter_block(MPI_IN_PLACE, op.recv, shard, op.type,
                                       op.op, op.localComm, &request);
      else
        rc = MPI_Ireduce_scatter_block(
            op.send, at(op.recv, op.localIndex * shardBytes), shard, op.type,
            op.op, op.localComm, &request);
    } else if (op.phase == 1) {
      // All-reduce of the shard among the nodes (every member: c rings).
      rc = MPI_Iallreduce(MPI_IN_PLACE, at(op.recv, op.localIndex * shardBytes),
                          shard, op.type, op.op, op.crossDup, &request);
    } else {
      rc = MPI_Iallgather(MPI_IN_PLACE, 0, op.type, op.recv, shard, op.type,
                          op.localDup, &request);
    }
    break;
  }
  case Kind::HierarchicalReduceScatter: {
    // The input holds k = G * c blocks of `count` elements, block g * c + l
    // for the rank of node g with node-local index l.
    uint64_t blockBytes = uint64_t(op.count) * op.elemBytes;
    int chunk = op.count * op.nodes; // Elements of a node-local shard.
    std::vector<std::byte> &stage = scratch[index];
    if (op.phase == 0) {
      // Reorder the blocks node-local index first, so that shard l holds
      // the G blocks bound for the ranks with node-local index l; then the
      // node-local reduce-scatter (in place: shard l lands at the start).
      uint64_t total = blockBytes * uint64_t(op.perNode) * uint64_t(op.nodes);
      if (stage.size() < total)
        stage.resize(total);
      const auto *from = static_cast<const std::byte *>(op.send);
      for (int g = 0; g < op.nodes; ++g)
        for (int l = 0; l < op.perNode; ++l)
          std::memcpy(stage.data() + uint64_t(l * op.nodes + g) * blockBytes,
                      from + uint64_t(g * op.perNode + l) * blockBytes,
                      blockBytes);
      rc = MPI_Ireduce_scatter_block(MPI_IN_PLACE, stage.data(), chunk, op.type,
                                     op.op, op.localComm, &request);
    } else {
      // Reduce-scatter of the shard among the nodes: node g keeps block g
      // of it, the block of Data rank g * c + l.
      rc = MPI_Ireduce_scatter_block(stage.data(), op.recv, op.count, op.type,
                                     op.op, op.crossDup, &request);
    }
    break;
  }
  case Kind::HierarchicalAllGather: {
    uint64_t blockBytes = uint64_t(op.count) * op.elemBytes;
    if (op.phase == 0) {
      // All-gather among the nodes into shard l of `recv` (node order).
      rc = MPI_Iallgather(
          op.send, op.count, op.type,
          at(op.recv, uint64_t(op.localIndex) * op.nodes * blockBytes),
          op.count, op.type, op.crossComm, &request);
    } else {
      // Node-local all-gather of the shards; reordered after completion.
      rc = MPI_Iallgather(MPI_IN_PLACE, 0, op.type, op.recv,
                          op.count * op.nodes, op.type, op.localDup, &request);
    }
    break;
  }
  case Kind::ReduceScatter:
    rc = MPI_Ireduce_scatter_block(op.send, op.recv, op.count, op.type, op.op,
                                   op.comm, &request);
    break;
  case Kind::AllGather:
    rc = MPI_Iallgather(op.send, op.count, op.type, op.recv, op.count, op.type,
                        op.comm, &request);
    break;
  case Kind::Broadcast:
    rc = MPI_Ibcast(op.recv, op.count, op.type, op.peer, op.comm, &request);
    break;
  case Kind::Barrier:
    rc = MPI_Ibarrier(op.comm, &request);
    break;
  case Kind::Send:
    rc = MPI_Isend(op.send, op.count, op.type, op.peer, op.tag, op.comm,
                   &request);
    break;
  case Kind::Recv:
    rc = MPI_Irecv(op.recv, op.count, op.type, op.peer, op.tag, op.comm,
                   &request);
    break;
  case Kind::Quantized:
    break; // Handled above.
  }
  checkMPI(rc, pool.what(index));
  if (isHierarchical(op.kind) && op.phase == 0) {
    // Queue the later phases on their rings in issue order.
    for (int phase = 1; phase <= lastPhase(op.kind); ++phase) {
      int ring = ringOf(op.kind, phase);
      phaseRing[ring][phaseTail[ring]++ % phaseRing[ring].size()] = index;
    }
  }
  requests.push_back(request);
  requestSlots.push_back(index);
}

bool CommEngine::testOutstanding() {
  if (requests.empty())
    return false;
  int completed = 0;
  int rc = MPI_Testsome(int(requests.size()), requests.data(), &completed,
                        completedIndices.data(), statuses.data());
  if (rc == MPI_ERR_IN_STATUS) {
    for (int i = 0; i < completed; ++i)
      checkMPI(statuses[i].MPI_ERROR,
               pool.what(requestSlots[completedIndices[i]]));
  }
  if (rc != MPI_SUCCESS) {
    // Name the first outstanding operation: MPI does not say which failed.
    checkMPI(rc, pool.what(requestSlots.front()));
  }
  if (completed == MPI_UNDEFINED || completed == 0)
    return false;
  for (int i = 0; i < completed; ++i) {
    int at = completedIndices[i];
    requests[at] = MPI_REQUEST_NULL; // Marks the entry for compaction.
    uint32_t slot = requestSlots[at];
    if (advance(slot))
      pool.complete(slot);
  }
  size_t kept = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i] == MPI_REQUEST_NULL)
      continue;
    requests[kept] = requests[i];
    requestSlots[kept] = requestSlots[i];
    ++kept;
  }
  requests.resize(kept);
  requestSlots.resize(kept);
  return true;
}

namespace {
/// Divides every element of an all-reduce result by `n` (ReduceOp::Avg).
void divideBy(void *data, int count, ElemType type, int n) {
  switch (type) {
  case ElemType::F32: {
    float *x = static_cast<float *>(data);
    for (int i = 0; i < count; ++i)
      x[i] /= float(n);
    return;
  }
  case ElemType::BF16: {
    uint16_t *x = static_cast<uint16_t *>(data);
    for (int i = 0; i < count; ++i)
      x[i] = floatToBF16(bf16ToFloat(x[i]) / float(n));
    return;
  }
  case ElemType::F16: {
    uint16_t *x = static_cast<uint16_t *>(data);
    for (int i = 0; i < count; ++i)
      x[i] = floatToF16(f16ToFloat(x[i]) / float(n));
    return;
  }
  case ElemType::I32: {
    int32_t *x = static_cast<int32_t *>(data);
    for (int i = 0; i < count; ++i)
      x[i] /= n;
    return;
  }
  case ElemType::I64: {
    int64_t *x = static_cast<int64_t *>(data);
    for (int i = 0; i < count; ++i)
      x[i] /= n;
    return;
  }
  case ElemType::U8: {
    uint8_t *x = static_cast<uint8_t *>(data);
    for (int i = 0; i < count; ++i)
      x[i] = uint8_t(x[i] / n);
    return;
  }
  }
}
} // namespace

void CommEngine::drainPhases(int ring) {
  std::vector<uint32_t> &slots = phaseRing[ring];
  while (phaseHead[ring] != phaseTail[ring]) {
    uint32_t index = slots[phaseHead[ring] % slots.size()];
    const Op &op = ops[index];
    if (!phaseReady[index] || op.phase == 0 ||
        ringOf(op.kind, op.phase) != ring)
      return;
    phaseReady[index] = 0;
    ++phaseHead[ring];
    post(index);
  }
}

bool CommEngine::advance(uint32_t index) {
  Op &op = ops[index];
  if (op.kind == Kind::Quantized)
    return quantized->advance(index);
  if (isHierarchical(op.kind) && op.phase < lastPhase(op.kind)) {
    if (op.kind == Kind::HierarchicalAllReduce && op.phase == 0 &&
        op.send == op.recv && op.localIndex != 0) {
      // The in-place reduce-scatter left shard l at the start.
      uint64_t shardBytes = uint64_t(op.count / op.perNode) * op.elemBytes;
      std::memcpy(at(op.recv, op.localIndex * shardBytes), op.recv, shardBytes);
    }
    ++op.phase;
    phaseReady[index] = 1;
    drainPhases(ringOf(op.kind, op.phase));
    return false;
  }
  if (op.kind == Kind::HierarchicalAllGather)
    transposeBlocks(static_cast<std::byte *>(op.recv), op.nodes, op.perNode,
                    uint64_t(op.count) * op.elemBytes);
  if (op.averageOver > 1)
    divideBy(op.recv, op.count, op.elemType, op.averageOver);
  return true;
}

void CommEngine::checkTimeouts() {
  if (requests.empty())
    return;
  auto now = TokenPool::Clock::now();
  for (uint32_t index : requestSlots) {
    double limit = pool.timeout(index, timeout);
    if (limit <= 0)
      continue;
    double age =
        std::chrono::duration<double>(now - pool.issued(index)).count();
    if (age > limit)
      fatal(llvm::formatv(
          "communication timed out: '{0}' has been outstanding for {1:F1} s "
          "(limit {2} s, RATRAIN_COMM_TIMEOUT_S); a peer rank is probably "
          "dead or hung, aborting the job",
          pool.what(index), age, limit));
  }
}

void CommEngine::progress() {
  testOutstanding();
  checkTimeouts();
}

void CommEngine::threadLoop() {
  auto lastTimeoutCheck = TokenPool::Clock::now();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (requests.empty())
        wake.wait(lock, [&] { return stopping || head != tail; });
      if (stopping && head == tail && requests.empty())
        return;
      while (head != tail)
        drained.push_back(queue[head++ % queue.size()]);
    }
    for (uint32_t index : drained)
      post(index);
    drained.clear();
    bool progressed = testOutstanding();
    auto now = TokenPool::Clock::now();
    if (now - lastTimeoutCheck > std::chrono::milliseconds(100)) {
      checkTimeouts();
      lastTimeoutCheck = now;
    }
    if (!progressed && !requests.empty()) {
      std::unique_lock<std::mutex> lock(mutex);
      // Sleep for the polling interval, or until new work arrives.
      wake.wait_for(lock, std::chrono::microseconds(pollMicros),
                    [&] { return stopping || head != tail; });
    }
  }
}
