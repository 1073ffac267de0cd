//===- Dma.h - Asynchronous copies between memory levels --------*- C++ -*-===//
//
// On MT-3000 a DMA engine moves data DDR <-> GSM <-> AM while the cores
// compute. Here the levels are host memory and a DMA is a memcpy, executed on
// helper threads (or synchronously with zero threads), so the emitted program
// keeps the same shape: issue, compute, wait on the token.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_DMA_H
#define RATRAIN_RUNTIME_DMA_H

#include "ratrain/runtime/Arena.h"
#include "ratrain/runtime/Token.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ratrain::rt {

/// Copies between buffers; completion is reported through a TokenPool.
class DmaEngine {
public:
  /// `threads` helper threads execute copies; 0 copies synchronously inside
  /// the issuing call (the token is complete on return).
  DmaEngine(TokenPool &pool, unsigned threads);
  ~DmaEngine();
  DmaEngine(const DmaEngine &) = delete;
  DmaEngine &operator=(const DmaEngine &) = delete;

  /// Copies src into dst; the sizes must match (fatal otherwise).
  Token copy(Buffer dst, Buffer src);
  /// Copies `rows` rows of `rowBytes` bytes, reading every `srcPitch` bytes of
  /// src and writing every `dstPitch` bytes of dst (a 2-D tile transfer).
  /// Rows that fall outside either buffer are fatal.
  Token copy2d(Buffer dst, uint64_t dstPitch, Buffer src, uint64_t srcPitch,
               uint64_t rowBytes, uint64_t rows);

  /// Runs `work` on a helper thread (synchronously with zero threads) and
  /// completes the token after it; used for offload to host and storage.
  Token call(const char *what, std::function<void()> work);

  unsigned threadCount() const { return unsigned(workers.size()); }

private:
  struct Job {
    std::byte *dst;
    const std::byte *src;
    uint64_t dstPitch, srcPitch, rowBytes, rows;
    std::function<void()> work; ///< Set for call() jobs.
  };
  Token issue(const Job &job, const char *what);
  static void run(Job &job);
  void workerLoop();

  TokenPool &pool;
  std::vector<Job> jobs;       ///< Indexed by token slot.
  std::vector<uint32_t> queue; ///< Ring of slot indices, capacity = pool.
  uint64_t head = 0, tail = 0;
  bool stopping = false;
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<std::thread> workers;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_DMA_H
