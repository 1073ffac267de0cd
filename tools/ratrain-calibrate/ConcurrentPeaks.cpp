//===- ConcurrentPeaks.cpp - Every CPU's peak, measured at once -----------===//

#include "ConcurrentPeaks.h"
#include "Kernels.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <pthread.h>
#include <sched.h>
#include <thread>

using namespace ratrain::calibrate;

double ConcurrentPeaks::fp32Total() const {
  double total = 0;
  for (double r : fp32)
    total += r;
  return total;
}

double ConcurrentPeaks::bf16Total() const {
  double total = 0;
  for (double r : bf16)
    total += r;
  return total;
}

namespace {

using Clock = std::chrono::steady_clock;

/// A reusable barrier for `count` threads (C++17: no std::barrier).
class SpinBarrier {
public:
  explicit SpinBarrier(int count) : count(count) {}
  void arriveAndWait() {
    int generation = phase.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == count) {
      arrived.store(0, std::memory_order_relaxed);
      phase.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    while (phase.load(std::memory_order_acquire) == generation)
      std::this_thread::yield();
  }

private:
  const int count;
  std::atomic<int> arrived{0}, phase{0};
};

} // namespace

bool ratrain::calibrate::measureConcurrentPeaks(int64_t iterations, int rounds,
                                                ConcurrentPeaks &result,
                                                std::string &error) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    error = std::string("sched_getaffinity: ") + std::strerror(errno);
    return false;
  }
  result = ConcurrentPeaks();
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed))
      result.cpus.push_back(cpu);
  const int n = int(result.cpus.size());
  result.fp32.assign(n, 0);
  result.bf16.assign(n, 0);
  const bool bf16 = hasBF16Kernel();
  SpinBarrier barrier(n);
  std::vector<std::string> errors(n);
  auto started = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(result.cpus[t], &one);
      if (int rc = pthread_setaffinity_np(pthread_self(), sizeof(one), &one))
        errors[t] = "pinning a thread to CPU " +
                    std::to_string(result.cpus[t]) + ": " + std::strerror(rc);
      float sink = 0;
      auto timed = [&](double (*loop)(int64_t, float *), double &best) {
        barrier.arriveAndWait();
        auto start = Clock::now();
        double flops = loop(iterations, &sink);
        double s = std::chrono::duration<double>(Clock::now() - start).count();
        if (s > 0)
          best = std::max(best, flops / s);
      };
      for (int r = 0; r < rounds; ++r) {
        timed(fp32FmaKernel, result.fp32[t]);
        if (bf16)
          timed(bf16DotKernel, result.bf16[t]);
      }
      // Keeps the loops' results alive.
      if (sink == 12345.0f)
        std::fputc(' ', stderr);
    });
  for (std::thread &t : threads)
    t.join();
  result.seconds =
      std::chrono::duration<double>(Clock::now() - started).count();
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = e;
      return false;
    }
  return true;
}

void ratrain::calibrate::printConcurrentPeaksJson(const ConcurrentPeaks &peaks,
                                                  bool bf16Widened,
                                                  llvm::raw_ostream &os) {
  llvm::json::Array cpus, fp32, bf16;
  for (size_t i = 0; i < peaks.cpus.size(); ++i) {
    cpus.push_back(peaks.cpus[i]);
    fp32.push_back(peaks.fp32[i]);
    bf16.push_back(peaks.bf16[i]);
  }
  const bool dot = !bf16Widened && peaks.bf16Total() > 0;
  llvm::json::Object object{
      {"cpus", std::move(cpus)},
      {"fp32_flops", std::move(fp32)},
      {"bf16_flops", std::move(bf16)},
      {"fp32_total", peaks.fp32Total()},
      {"bf16_total", peaks.bf16Total()},
      {"bf16_path", dot ? "dot" : "widen"},
      {"peak16_total", dot ? peaks.bf16Total() : peaks.fp32Total()},
      {"seconds", peaks.seconds}};
  os << llvm::json::Value(std::move(object)) << "\n";
}
