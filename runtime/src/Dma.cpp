//===- Dma.cpp - Asynchronous copies between memory levels ----------------===//

#include "ratrain/runtime/Dma.h"
#include "ratrain/runtime/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <cstring>

using namespace ratrain::rt;

DmaEngine::DmaEngine(TokenPool &pool, unsigned threads)
    : pool(pool), jobs(pool.capacity()), queue(pool.capacity()) {
  for (unsigned i = 0; i < threads; ++i)
    workers.emplace_back([this] { workerLoop(); });
}

DmaEngine::~DmaEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &worker : workers)
    worker.join();
}

void DmaEngine::run(Job &job) {
  if (job.work) {
    job.work();
    job.work = nullptr;
    return;
  }
  if (job.rows == 1 ||
      (job.dstPitch == job.rowBytes && job.srcPitch == job.rowBytes)) {
    std::memcpy(job.dst, job.src, job.rowBytes * job.rows);
    return;
  }
  for (uint64_t row = 0; row < job.rows; ++row)
    std::memcpy(job.dst + row * job.dstPitch, job.src + row * job.srcPitch,
                job.rowBytes);
}

Token DmaEngine::copy(Buffer dst, Buffer src) {
  if (dst.bytes != src.bytes)
    fatal(llvm::formatv("dma size mismatch: {0}[{1}, +{2}) <- {3}[{4}, +{5})",
                        stringifyMemorySpace(dst.space), dst.offset, dst.bytes,
                        stringifyMemorySpace(src.space), src.offset,
                        src.bytes));
  char what[TokenPool::kWhatBytes];
  std::snprintf(what, sizeof(what), "dma %s[%llu, +%llu) <- %s[%llu]",
                stringifyMemorySpace(dst.space).data(),
                (unsigned long long)dst.offset, (unsigned long long)dst.bytes,
                stringifyMemorySpace(src.space).data(),
                (unsigned long long)src.offset);
  return issue(Job{dst.data, src.data, dst.bytes, src.bytes, dst.bytes, 1, {}},
               what);
}

Token DmaEngine::copy2d(Buffer dst, uint64_t dstPitch, Buffer src,
                        uint64_t srcPitch, uint64_t rowBytes, uint64_t rows) {
  auto extent = [&](uint64_t pitch) {
    return rows == 0 ? 0 : (rows - 1) * pitch + rowBytes;
  };
  if (rowBytes > dstPitch || rowBytes > srcPitch ||
      extent(dstPitch) > dst.bytes || extent(srcPitch) > src.bytes)
    fatal(llvm::formatv(
        "dma2d of {0} rows x {1} bytes (dst pitch {2}, src pitch {3}) does not "
        "fit {4}[{5}, +{6}) <- {7}[{8}, +{9})",
        rows, rowBytes, dstPitch, srcPitch, stringifyMemorySpace(dst.space),
        dst.offset, dst.bytes, stringifyMemorySpace(src.space), src.offset,
        src.bytes));
  char what[TokenPool::kWhatBytes];
  std::snprintf(
      what, sizeof(what), "dma2d %s[%llu] <- %s[%llu], %llu rows x %llu bytes",
      stringifyMemorySpace(dst.space).data(), (unsigned long long)dst.offset,
      stringifyMemorySpace(src.space).data(), (unsigned long long)src.offset,
      (unsigned long long)rows, (unsigned long long)rowBytes);
  return issue(Job{dst.data, src.data, dstPitch, srcPitch, rowBytes, rows, {}},
               what);
}

Token DmaEngine::call(const char *what, std::function<void()> work) {
  return issue(Job{nullptr, nullptr, 0, 0, 0, 0, std::move(work)}, what);
}

Token DmaEngine::issue(const Job &job, const char *what) {
  Token token = pool.acquire(what);
  if (workers.empty()) {
    Job copy = job;
    run(copy);
    pool.complete(token.index);
    return token;
  }
  jobs[token.index] = job;
  {
    std::lock_guard<std::mutex> lock(mutex);
    // At most capacity() tokens are outstanding, so the ring cannot overflow.
    queue[tail++ % queue.size()] = token.index;
  }
  wake.notify_one();
  return token;
}

void DmaEngine::workerLoop() {
  for (;;) {
    uint32_t index;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || head != tail; });
      if (head == tail)
        return; // Stopping with an empty queue.
      index = queue[head++ % queue.size()];
    }
    run(jobs[index]);
    pool.complete(index);
  }
}
