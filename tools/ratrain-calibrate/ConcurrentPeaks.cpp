//===- ConcurrentPeaks.cpp - Every CPU's peak, alone and all at once ------===//

#include "ConcurrentPeaks.h"
#include "Kernels.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <pthread.h>
#include <sched.h>
#include <thread>

using namespace ratrain::calibrate;

double
ratrain::calibrate::runConcurrently(unsigned threads,
                                    const std::function<void(unsigned)> &f) {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire))
        std::this_thread::yield();
      f(t);
    });
  while (ready.load() < threads)
    std::this_thread::yield();
  auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread &t : pool)
    t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

double ratrain::calibrate::bestConcurrentRate(
    unsigned threads, int reps, int inner, double work,
    const std::function<int(unsigned, int)> &call) {
  double best = 0;
  for (int r = 0; r <= reps; ++r) {
    std::atomic<bool> failed{false};
    std::vector<double> rates(threads, 0);
    runConcurrently(threads, [&](unsigned t) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < inner; ++i)
        if (call(t, i) != 0)
          failed.store(true);
      double s = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      rates[t] = s > 0 ? work * inner / s : 0;
    });
    if (failed.load())
      return 0;
    if (r == 0)
      continue; // the warm-up
    double mean = 0;
    for (double rate : rates)
      mean += rate / double(threads);
    best = std::max(best, mean);
  }
  return best;
}

double CpuRates::fp32Total() const {
  return std::accumulate(fp32.begin(), fp32.end(), 0.0);
}
double CpuRates::bf16Total() const {
  return std::accumulate(bf16.begin(), bf16.end(), 0.0);
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

/// Runs the loops on `cpus[first, first + count)` at once, one pinned thread
/// each, and records each CPU's best round into `rates`.
bool measure(const std::vector<int> &cpus, int first, int count,
             int64_t iterations, int rounds, CpuRates &rates,
             std::string &error) {
  const bool bf16 = hasBF16Kernel();
  SpinBarrier barrier(count);
  std::vector<std::string> errors(count);
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t)
    threads.emplace_back([&, t] {
      const int index = first + t;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[index], &one);
      if (int rc = pthread_setaffinity_np(pthread_self(), sizeof(one), &one))
        errors[t] = "pinning a thread to CPU " + std::to_string(cpus[index]) +
                    ": " + std::strerror(rc);
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
        timed(fp32FmaKernel, rates.fp32[index]);
        if (bf16)
          timed(bf16DotKernel, rates.bf16[index]);
      }
      // Keeps the loops' results alive.
      if (sink == 12345.0f)
        std::fputc(' ', stderr);
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = e;
      return false;
    }
  return true;
}

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
  for (CpuRates *rates : {&result.alone, &result.together}) {
    rates->fp32.assign(n, 0);
    rates->bf16.assign(n, 0);
  }
  auto started = Clock::now();
  for (int i = 0; i < n; ++i)
    if (!measure(result.cpus, i, 1, iterations, rounds, result.alone, error))
      return false;
  if (!measure(result.cpus, 0, n, iterations, rounds, result.together, error))
    return false;
  result.seconds =
      std::chrono::duration<double>(Clock::now() - started).count();
  return true;
}

static llvm::json::Object ratesJson(const CpuRates &rates) {
  return llvm::json::Object{{"fp32_flops", llvm::json::Array(rates.fp32)},
                            {"bf16_flops", llvm::json::Array(rates.bf16)},
                            {"fp32_total", rates.fp32Total()},
                            {"bf16_total", rates.bf16Total()}};
}

void ratrain::calibrate::printConcurrentPeaksJson(const ConcurrentPeaks &peaks,
                                                  bool bf16Widened,
                                                  llvm::raw_ostream &os) {
  const bool dot = !bf16Widened && peaks.alone.bf16Total() > 0;
  double peak32 = std::max(peaks.alone.fp32Total(), peaks.together.fp32Total());
  double peak16 =
      dot ? std::max(peaks.alone.bf16Total(), peaks.together.bf16Total())
          : peak32;
  llvm::json::Object object{{"cpus", llvm::json::Array(peaks.cpus)},
                            {"alone", ratesJson(peaks.alone)},
                            {"together", ratesJson(peaks.together)},
                            {"bf16_path", dot ? "dot" : "widen"},
                            {"peak32_total", peak32},
                            {"peak16_total", peak16},
                            {"seconds", peaks.seconds}};
  os << llvm::json::Value(std::move(object)) << "\n";
}
