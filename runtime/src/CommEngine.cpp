//===- CommEngine.cpp - MPI requests and their progress -------------------===//

#include "CommEngine.h"
#include "QuantizedCollectives.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/ReduceLoops.h"
#include "ratrain/runtime/StepLog.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

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
                       int progressNice, bool assist, double timeoutSeconds)
    : pool(pool), progressMode(mode), pollMicros(pollMicros),
      progressNice(progressNice),
      assisting(assist && mode == ProgressMode::Thread),
      timeout(timeoutSeconds), ops(pool.capacity()), queue(pool.capacity()),
      explicitState(pool.capacity()) {
  // An explicit collective's round has a send and a receive outstanding.
  drained.reserve(pool.capacity());
  requests.reserve(2 * pool.capacity());
  requestSlots.reserve(2 * pool.capacity());
  completedIndices.resize(2 * pool.capacity());
  statuses.resize(2 * pool.capacity());
  if (mode == ProgressMode::Thread) {
    thread = std::thread([this] { threadLoop(); });
    threadHandle = thread.native_handle();
  }
}

CommEngine::~CommEngine() { shutdown(); }

int64_t CommEngine::progressCpuNanoseconds() const {
  if (!thread.joinable())
    return 0;
  clockid_t clock;
  if (pthread_getcpuclockid(threadHandle, &clock) != 0)
    return 0;
  return cpuClockNanoseconds(clock);
}

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
    busy.store(true, std::memory_order_relaxed);
  }
  wake.notify_one();
}

bool CommEngine::progressPass() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    while (head != tail)
      drained.push_back(queue[head++ % queue.size()]);
  }
  for (uint32_t index : drained)
    post(index);
  drained.clear();
  bool progressed = testOutstanding();
  if (!arrivals.empty())
    progressed |= pollArrivals();
  std::lock_guard<std::mutex> lock(mutex);
  busy.store(!requests.empty() || !arrivals.empty() || head != tail,
             std::memory_order_relaxed);
  return progressed;
}

void CommEngine::assist() {
  // A blocking lock, not a try-lock: the progress thread shares this core at
  // a low priority, and when it is preempted inside a pass it keeps the
  // mutex until the compute thread next sleeps. Skipping the pass then
  // skipped every pass while the rank computed (85M fp32, dp 2: 73% of the
  // assists found the mutex held, and reduce-scatters posted during the
  // backward waited for the rank's next wait); blocking hands the core to
  // the holder, which finishes its pass.
  std::lock_guard<std::mutex> work(progressMutex);
  // The progress thread needs no wake-up for what this pass leaves
  // outstanding: while `busy` it polls on its interval and never waits
  // without a deadline (threadLoop).
  progressPass();
}

namespace {
std::byte *at(void *base, uint64_t offset) {
  return static_cast<std::byte *>(base) + offset;
}
} // namespace

void CommEngine::count(CollectiveKind kind, CollectiveAlgorithm algorithm,
                       unsigned level, uint64_t step, uint64_t sent) {
  level = std::min(level, kMaxLevels - 1);
  stepBytes[unsigned(kind)][unsigned(algorithm)][level].fetch_add(
      step, std::memory_order_relaxed);
  sentBytes[unsigned(kind)][unsigned(algorithm)][level].fetch_add(
      sent, std::memory_order_relaxed);
}

CollectiveCounters CommEngine::counters() const {
  CollectiveCounters result;
  for (unsigned k = 0; k < kNumCollectiveKinds; ++k)
    for (unsigned a = 0; a < kNumAlgorithms; ++a)
      for (unsigned l = 0; l < kMaxLevels; ++l) {
        result.bytes[k][a][l] = stepBytes[k][a][l].load();
        result.sent[k][a][l] = sentBytes[k][a][l].load();
      }
  return result;
}

void CommEngine::resetCounters() {
  for (unsigned k = 0; k < kNumCollectiveKinds; ++k)
    for (unsigned a = 0; a < kNumAlgorithms; ++a)
      for (unsigned l = 0; l < kMaxLevels; ++l) {
        stepBytes[k][a][l].store(0);
        sentBytes[k][a][l].store(0);
      }
}

void CommEngine::track(uint32_t index, MPI_Request request) {
  requests.push_back(request);
  requestSlots.push_back(index);
}

void CommEngine::complete(uint32_t index) { pool.complete(index); }

void CommEngine::setPutWindows(MPI_Win data, MPI_Win counters, int self) {
  dataWindow = data;
  counterWindow = counters;
  windowSelf = self;
  consumedPuts.assign(kPutTags, 0);
}

bool CommEngine::pollArrivals() {
  bool any = false;
  for (size_t i = 0; i < arrivals.size();) {
    uint32_t index = arrivals[i];
    const Op &op = ops[index];
    uint64_t landed = 0;
    checkMPI(MPI_Fetch_and_op(nullptr, &landed, MPI_UINT64_T, windowSelf,
                              MPI_Aint(op.tag), MPI_NO_OP, counterWindow),
             pool.what(index));
    checkMPI(MPI_Win_flush(windowSelf, counterWindow), pool.what(index));
    if (landed <= consumedPuts[op.tag]) {
      ++i;
      continue;
    }
    ++consumedPuts[op.tag];
    // The data was flushed before the counter moved: make it visible here.
    checkMPI(MPI_Win_sync(dataWindow), pool.what(index));
    arrivals[i] = arrivals.back();
    arrivals.pop_back();
    pool.complete(index);
    any = true;
  }
  return any;
}

void CommEngine::post(uint32_t index) {
  Op &op = ops[index];
  if (op.kind == Kind::Quantized) {
    quantized->post(index);
    return;
  }
  if (op.kind == Kind::Put) {
    if (dataWindow == MPI_WIN_NULL)
      fatal(llvm::formatv("{0}: the runtime has no one-sided windows (the "
                          "program was built without one-sided transfers)",
                          pool.what(index)));
    // The data, then the counter: the flush between them orders the two.
    static const uint64_t one = 1;
    checkMPI(MPI_Put(op.send, op.count, MPI_BYTE, op.peer,
                     MPI_Aint(op.targetOffset), op.count, MPI_BYTE, dataWindow),
             pool.what(index));
    checkMPI(MPI_Win_flush(op.peer, dataWindow), pool.what(index));
    checkMPI(MPI_Accumulate(&one, 1, MPI_UINT64_T, op.peer, MPI_Aint(op.tag), 1,
                            MPI_UINT64_T, MPI_SUM, counterWindow),
             pool.what(index));
    checkMPI(MPI_Win_flush(op.peer, counterWindow), pool.what(index));
    pool.complete(index);
    return;
  }
  if (op.kind == Kind::Arrival) {
    if (counterWindow == MPI_WIN_NULL)
      fatal(llvm::formatv("{0}: the runtime has no one-sided windows (the "
                          "program was built without one-sided transfers)",
                          pool.what(index)));
    arrivals.push_back(index);
    pollArrivals();
    return;
  }
  if (op.kind == Kind::Explicit) {
    if (runRounds(index)) {
      finishExplicit(index);
      pool.complete(index);
    }
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  switch (op.kind) {
  case Kind::Explicit:
    break;
  case Kind::AllReduce:
    rc = MPI_Iallreduce(op.send == op.recv ? MPI_IN_PLACE : op.send, op.recv,
                        op.count, op.type, op.op, op.comm, &request);
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
  case Kind::Quantized:
  case Kind::Put:
  case Kind::Arrival:
    break; // Handled above.
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
/// Group rank of this member of an explicit collective.
int groupRankOf(const CollectiveShape &shape) {
  if (shape.algorithm == CollectiveAlgorithm::Tree)
    return shape.rank;
  int rank = 0, stride = 1;
  for (int i = 0; i < shape.levels; ++i) {
    if (shape.levelOrderRanks)
      rank = rank * shape.members[i] + shape.index[i];
    else
      rank += shape.index[i] * stride;
    stride *= shape.members[i];
  }
  return rank;
}

int groupSizeOf(const CollectiveShape &shape) {
  if (shape.algorithm == CollectiveAlgorithm::Tree)
    return shape.size;
  int size = 1;
  for (int i = 0; i < shape.levels; ++i)
    size *= shape.members[i];
  return size;
}

/// Where group rank d's block lies in the staging buffer.
uint64_t stagedBlock(const Schedule &schedule, int d) {
  return schedule.order.empty() ? uint64_t(d)
                                : uint64_t(schedule.order[size_t(d)]);
}

/// Where a lazily staged collective reads [lo, hi) of its work buffer: the
/// send buffer (same offsets) while none of it is staged, else staging, the
/// parts not staged yet copied in first.
const std::byte *stagedSource(StagedRanges &staged, std::byte *staging,
                              const void *send, uint64_t lo, uint64_t hi) {
  const auto *input = static_cast<const std::byte *>(send);
  if (staged.untouched(lo, hi))
    return input + lo;
  for (const auto &[first, last] : staged.gaps(lo, hi))
    std::memcpy(staging + first, input + first, last - first);
  staged.add(lo, hi);
  return staging + lo;
}
} // namespace

bool CommEngine::runRounds(uint32_t index) {
  Op &op = ops[index];
  ExplicitState &st = explicitState[index];
  const CollectiveShape &shape = op.shape;
  const uint64_t block = shape.count * shape.elemBytes;
  if (!op.started) {
    op.started = true;
    buildSchedule(shape, st.schedule);
    st.next = 0;
    st.pending = 0;
    const int me = groupRankOf(shape);
    const int k = groupSizeOf(shape);
    if (st.schedule.work == WorkBuffer::Result) {
      // All-reduce: the input is copied into the result; tree all-gather:
      // the own block to its place.
      if (shape.kind == CollectiveKind::AllReduce) {
        if (op.send != op.recv)
          std::memcpy(op.recv, op.send, block);
      } else if (op.send != at(op.recv, uint64_t(me) * block)) {
        // (An all-gather in place has its block there already.)
        std::memmove(at(op.recv, uint64_t(me) * block), op.send, block);
      }
    } else {
      uint64_t total = block * uint64_t(k);
      st.staging.reserve(total);
      st.staged.clear();
      if (st.schedule.lazyStaging) {
        // Nothing is copied in: the rounds read untouched blocks from the
        // send buffer.
      } else if (shape.kind == CollectiveKind::ReduceScatter) {
        const auto *from = static_cast<const std::byte *>(op.send);
        for (int d = 0; d < k; ++d)
          std::memcpy(st.staging.data() + stagedBlock(st.schedule, d) * block,
                      from + uint64_t(d) * block, block);
      } else {
        std::memcpy(st.staging.data() + stagedBlock(st.schedule, me) * block,
                    op.send, block);
      }
    }
    st.temp.reserve(st.schedule.reduceBytes);
    st.resultWritten = false;
  }
  std::byte *base = st.schedule.work == WorkBuffer::Result
                        ? static_cast<std::byte *>(op.recv)
                        : st.staging.data();
  while (st.next < st.schedule.rounds.size()) {
    const Round &round = st.schedule.rounds[st.next];
    if (round.recvPeer >= 0) {
      // A reduce-scatter that leaves its own contribution to the consumer
      // receives the other members' sum of its block into the result and
      // reduces nothing more (Runtime::reduceScatter checked the shape: a
      // ring, whose last round reduces the own block).
      void *into = round.reduce ? st.temp.data() : base + round.recvOffset;
      if (op.leaveOwn && reducesIntoResult(op, st, round.recvOffset,
                                           round.recvOffset + round.recvBytes))
        into = op.recv;
      MPI_Request request = MPI_REQUEST_NULL;
      checkMPI(MPI_Irecv(into, int(round.recvBytes), MPI_BYTE, round.recvPeer,
                         op.tag, round.comm, &request),
               pool.what(index));
      if (st.schedule.lazyStaging && !round.reduce)
        st.staged.add(round.recvOffset, round.recvOffset + round.recvBytes);
      requests.push_back(request);
      requestSlots.push_back(index);
      ++st.pending;
    }
    if (round.sendPeer >= 0) {
      const std::byte *from =
          st.schedule.lazyStaging
              ? stagedSource(st.staged, base, op.send, round.sendOffset,
                             round.sendOffset + round.sendBytes)
              : base + round.sendOffset;
      MPI_Request request = MPI_REQUEST_NULL;
      checkMPI(MPI_Isend(from, int(round.sendBytes), MPI_BYTE, round.sendPeer,
                         op.tag, round.comm, &request),
               pool.what(index));
      requests.push_back(request);
      requestSlots.push_back(index);
      ++st.pending;
    }
    count(shape.kind, shape.algorithm, round.level,
          std::max(round.sendBytes, round.recvBytes), round.sendBytes);
    if (st.pending > 0)
      return false;
    ++st.next;
  }
  return true;
}

void CommEngine::finishExplicit(uint32_t index) {
  Op &op = ops[index];
  ExplicitState &st = explicitState[index];
  const CollectiveShape &shape = op.shape;
  const uint64_t block = shape.count * shape.elemBytes;
  const bool average = op.averageOver > 1;
  if (st.resultWritten)
    return;
  if (op.leaveOwn)
    fatal(llvm::formatv("{0}: left its own contribution to the consumer, but "
                        "no round of its schedule received the other "
                        "members' sum of its block",
                        pool.what(index)));
  if (st.schedule.work == WorkBuffer::Staging &&
      shape.kind == CollectiveKind::ReduceScatter) {
    // This rank's reduced block goes to the result, divided on the way when
    // it is an average (one pass instead of a copy and a division).
    const uint64_t ownOffset =
        stagedBlock(st.schedule, groupRankOf(shape)) * block;
    const std::byte *own =
        st.schedule.lazyStaging
            ? stagedSource(st.staged, st.staging.data(), op.send, ownOffset,
                           ownOffset + block)
            : st.staging.data() + ownOffset;
    if (average)
      divideInto(op.recv, own, uint64_t(op.count), op.elemType, op.averageOver);
    else
      std::memcpy(op.recv, own, block);
    return;
  }
  if (st.schedule.work == WorkBuffer::Staging) {
    for (int d = 0, k = groupSizeOf(shape); d < k; ++d)
      std::memcpy(at(op.recv, uint64_t(d) * block),
                  st.staging.data() + stagedBlock(st.schedule, d) * block,
                  block);
  }
  if (average)
    divideInto(op.recv, op.recv, uint64_t(op.count), op.elemType,
               op.averageOver);
}

bool CommEngine::reducesIntoResult(const Op &op, const ExplicitState &st,
                                   uint64_t lo, uint64_t hi) const {
  const CollectiveShape &shape = op.shape;
  if (shape.kind != CollectiveKind::ReduceScatter ||
      st.schedule.work != WorkBuffer::Staging ||
      st.next + 1 != st.schedule.rounds.size())
    return false;
  const uint64_t block = shape.count * shape.elemBytes;
  const uint64_t own = stagedBlock(st.schedule, groupRankOf(shape)) * block;
  return lo == own && hi == own + block;
}

void CommEngine::reduceAndAverage(void *dst, const void *a, const void *b,
                                  uint64_t count, const Op &op) {
  // An average (only ReduceOp::Avg sets averageOver): the sum and the
  // division in one loop, the bits of the two passes.
  if (op.averageOver > 1)
    return averageFrom(dst, a, b, count, op.elemType, op.averageOver);
  reduceFrom(dst, a, b, count, op.elemType, op.reduce);
}

bool CommEngine::advance(uint32_t index) {
  Op &op = ops[index];
  if (op.kind == Kind::Quantized)
    return quantized->advance(index);
  if (op.kind == Kind::Explicit) {
    ExplicitState &st = explicitState[index];
    if (--st.pending > 0)
      return false;
    const Round &round = st.schedule.rounds[st.next];
    if (round.reduce && round.recvPeer >= 0 && op.leaveOwn &&
        reducesIntoResult(op, st, round.recvOffset,
                          round.recvOffset + round.recvBytes)) {
      // The other members' sum arrived in the result; the consumer adds
      // this rank's contribution (and divides an average).
      st.resultWritten = true;
    } else if (round.reduce && round.recvPeer >= 0) {
      std::byte *base = st.schedule.work == WorkBuffer::Result
                            ? static_cast<std::byte *>(op.recv)
                            : st.staging.data();
      const uint64_t lo = round.recvOffset, hi = lo + round.recvBytes;
      const uint64_t count = round.recvBytes / op.shape.elemBytes;
      // A block's first reduction in a lazily staged collective reads the
      // send buffer's part and writes staging.
      const std::byte *current =
          st.schedule.lazyStaging
              ? stagedSource(st.staged, base, op.send, lo, hi)
              : base + lo;
      if (reducesIntoResult(op, st, lo, hi)) {
        reduceAndAverage(op.recv, current, st.temp.data(), count, op);
        st.resultWritten = true;
      } else {
        reduceFrom(base + lo, current, st.temp.data(), count, op.elemType,
                   op.reduce);
        if (st.schedule.lazyStaging)
          st.staged.add(lo, hi);
      }
    }
    ++st.next;
    if (!runRounds(index))
      return false;
    finishExplicit(index);
    return true;
  }
  if (op.averageOver > 1)
    divideInto(op.recv, op.recv, uint64_t(op.count), op.elemType,
               op.averageOver);
  return true;
}

void CommEngine::checkTimeouts() {
  if (requests.empty() && arrivals.empty())
    return;
  auto now = TokenPool::Clock::now();
  auto check = [&](uint32_t index) {
    double limit = pool.timeout(index, timeout);
    if (limit <= 0)
      return;
    double age =
        std::chrono::duration<double>(now - pool.issued(index)).count();
    if (age > limit)
      fatal(llvm::formatv(
          "communication timed out: '{0}' has been outstanding for {1:F1} s "
          "(limit {2} s, RATRAIN_COMM_TIMEOUT_S); a peer rank is probably "
          "dead or hung, aborting the job",
          pool.what(index), age, limit));
  };
  for (uint32_t index : requestSlots)
    check(index);
  for (uint32_t index : arrivals)
    check(index);
}

void CommEngine::progress() {
  testOutstanding();
  if (!arrivals.empty())
    pollArrivals();
  checkTimeouts();
}

void CommEngine::threadLoop() {
  // Linux gives each thread its own nice value. Raising it needs no
  // privilege; where it fails anyway the thread runs at the process's.
  if (progressNice > 0)
    (void)setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), progressNice);
  auto lastTimeoutCheck = TokenPool::Clock::now();
  for (;;) {
    {
      // `busy`: operations queued or outstanding (set under `mutex` by
      // submit() and at the end of every pass, by either thread).
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] {
        return stopping || busy.load(std::memory_order_relaxed);
      });
      if (stopping && !busy.load(std::memory_order_relaxed))
        return;
    }
    bool progressed;
    {
      std::lock_guard<std::mutex> work(progressMutex);
      progressed = progressPass();
      auto now = TokenPool::Clock::now();
      if (now - lastTimeoutCheck > std::chrono::milliseconds(100)) {
        checkTimeouts();
        lastTimeoutCheck = now;
      }
    }
    if (!progressed && busy.load(std::memory_order_relaxed)) {
      std::unique_lock<std::mutex> lock(mutex);
      // Sleep for the polling interval, or until new work arrives.
      wake.wait_for(lock, std::chrono::microseconds(pollMicros),
                    [&] { return stopping || head != tail; });
    }
  }
}
