//===- CommEngine.cpp - MPI requests and their progress -------------------===//

#include "CommEngine.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Half.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>

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
      phaseReady(pool.capacity(), 0) {
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

void CommEngine::post(uint32_t index) {
  const Op &op = ops[index];
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  switch (op.kind) {
  case Kind::AllReduce:
    rc = MPI_Iallreduce(op.send == op.recv ? MPI_IN_PLACE : op.send, op.recv,
                        op.count, op.type, op.op, op.comm, &request);
    break;
  case Kind::HierarchicalAllReduce:
    if (op.phase == 0) {
      // Reduce onto the node's root (local rank 0).
      const void *send = op.send;
      if (op.localRoot && op.send == op.recv)
        send = MPI_IN_PLACE;
      rc = MPI_Ireduce(send, op.recv, op.count, op.type, op.op, 0, op.localComm,
                       &request);
      if (rc == MPI_SUCCESS) {
        // Queue the later phases in issue order (roots: both).
        if (op.localRoot)
          phaseRing[0][phaseTail[0]++ % phaseRing[0].size()] = index;
        phaseRing[1][phaseTail[1]++ % phaseRing[1].size()] = index;
      }
    } else if (op.phase == 1) {
      // Only node roots take part in the cross-node all-reduce.
      rc = MPI_Iallreduce(MPI_IN_PLACE, op.recv, op.count, op.type, op.op,
                          op.crossComm, &request);
    } else {
      rc =
          MPI_Ibcast(op.recv, op.count, op.type, 0, op.broadcastComm, &request);
    }
    break;
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
  }
  checkMPI(rc, pool.what(index));
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
    if (!phaseReady[index] || ops[index].phase != ring + 1)
      return;
    phaseReady[index] = 0;
    ++phaseHead[ring];
    post(index);
  }
}

bool CommEngine::advance(uint32_t index) {
  Op &op = ops[index];
  if (op.kind == Kind::HierarchicalAllReduce && op.phase < 2) {
    ++op.phase;
    if (op.phase == 1 && !op.localRoot)
      ++op.phase; // Non-roots wait for the node-local broadcast.
    phaseReady[index] = 1;
    drainPhases(op.phase - 1);
    return false;
  }
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
