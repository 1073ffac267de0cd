//===- OverlapBench.cpp - Does communication overlap compute? -------------===//
//
// Measures, on every rank of an mpirun job, the median over --reps runs of
//   comm     a data-parallel all-reduce of --mib MiB of f32 alone
//   compute  a compute loop calibrated to take about as long as `comm`
//   serial   compute, then the all-reduce (the baseline)
//   overlap  all-reduce issued, compute, wait
// and, with RATRAIN_PROGRESS=inline, also `overlap+poll` (compute calls
// rt.poll() between chunks). Rank 0 prints one line per variant and the
// ratios overlap/serial (1.0 = no overlap; comm+compute hidden perfectly gives
// max(comm, compute)/serial) and the hidden fraction of the shorter phase:
//   hidden = (serial - overlap) / min(comm, compute).
// Not a Google Benchmark program: MPI ranks must run the same number of
// iterations, which Benchmark's adaptive iteration count does not guarantee.
//
// With --op p2p the communication is instead a pipeline exchange: every rank
// sends --mib MiB to its right neighbour and receives as much from its left
// one (isend/irecv, the rendezvous protocol for large messages).
//
//   mpirun -np 2 ratrain-bench-overlap [--op allreduce|p2p] [--mib 32]
//                                      [--reps 15]
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace ratrain::rt;

namespace {
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A cache-resident multiply-add loop: the stand-in for a kernel. Calls
/// `between` after each of `chunks` chunks.
struct Compute {
  std::vector<float> x, y;
  Compute() : x(16384, 1.0001f), y(16384, 0.5f) {}
  template <typename Fn> void run(long iterations, int chunks, Fn between) {
    long perChunk = std::max(1L, iterations / chunks);
    for (long done = 0; done < iterations; done += perChunk) {
      for (long it = 0; it < perChunk; ++it)
        for (size_t i = 0; i < x.size(); ++i)
          y[i] = y[i] * 0.999f + x[i];
      between();
    }
  }
  float checksum() const { return y[0] + y[y.size() - 1]; }
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  double mib = 32;
  int reps = 15;
  bool p2p = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--op"))
      p2p = !std::strcmp(argv[i + 1], "p2p");
    else if (!std::strcmp(argv[i], "--mib"))
      mib = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps"))
      reps = std::atoi(argv[i + 1]);
  }
  int worldSize = 1;
  if (const char *size = std::getenv("OMPI_COMM_WORLD_SIZE"))
    worldSize = std::atoi(size);
  RuntimeOptions options;
  options.pp = 1;
  options.dp = worldSize;
  uint64_t bytes = uint64_t(mib * (1 << 20)) / 4 * 4;
  options.ddrBytes = 2 * bytes;
  Runtime rt(argc, argv, options);
  Buffer grad = rt.ddr().buffer(0, bytes);
  Buffer incoming = rt.ddr().buffer(bytes, bytes);
  for (uint64_t i = 0; i < bytes / 4; ++i)
    grad.as<float>()[i] = 1.0f;
  bool inlineMode = rt.options().progress == ProgressMode::Inline;
  Compute compute;
  const int chunks = 64;
  auto sync = [&] { rt.wait(rt.barrier(Group::World)); };
  // One communication step; returns the token(s) to wait for.
  int right = (rt.rank() + 1) % rt.worldSize();
  int left = (rt.rank() + rt.worldSize() - 1) % rt.worldSize();
  struct Tokens {
    Token a, b;
  };
  auto communicate = [&]() -> Tokens {
    if (!p2p)
      return {rt.allReduce(Group::Data, grad, ElemType::F32), Token{}};
    return {rt.recv(Group::World, left, 7, incoming),
            rt.send(Group::World, right, 7, grad)};
  };
  auto finish = [&](Tokens t) {
    rt.wait(t.a);
    rt.wait(t.b);
  };

  // Time the all-reduce alone, then calibrate the compute loop to match it.
  std::vector<double> comm;
  for (int r = 0; r < reps; ++r) {
    sync();
    auto start = Clock::now();
    finish(communicate());
    comm.push_back(seconds(start));
  }
  double commTime = median(comm);
  long iterations = 64;
  for (;;) {
    auto start = Clock::now();
    compute.run(iterations, chunks, [] {});
    double t = seconds(start);
    if (t > commTime * 0.5 || iterations > (1L << 30)) {
      iterations = long(double(iterations) * commTime / t);
      break;
    }
    iterations *= 2;
  }
  // Every rank uses rank 0's calibration so that all do the same work.
  Buffer shared{reinterpret_cast<std::byte *>(&iterations), 0, sizeof(long),
                MemorySpace::DDR};
  rt.wait(rt.broadcast(Group::World, shared, 0));

  // Every repetition measures every variant back to back, so that load
  // from other processes affects them alike.
  std::vector<double> commTimes, computeTimes, serial, overlap, overlapPoll;
  for (int r = 0; r < reps; ++r) {
    sync();
    auto start = Clock::now();
    finish(communicate());
    commTimes.push_back(seconds(start));

    sync();
    start = Clock::now();
    compute.run(iterations, chunks, [] {});
    computeTimes.push_back(seconds(start));

    sync();
    start = Clock::now();
    compute.run(iterations, chunks, [] {});
    finish(communicate());
    serial.push_back(seconds(start));

    sync();
    start = Clock::now();
    Tokens token = communicate();
    compute.run(iterations, chunks, [] {});
    finish(token);
    overlap.push_back(seconds(start));

    if (inlineMode) {
      sync();
      start = Clock::now();
      Tokens polled = communicate();
      compute.run(iterations, chunks, [&] { rt.poll(); });
      finish(polled);
      overlapPoll.push_back(seconds(start));
    }
  }
  // The slowest rank determines the step: report the max over ranks of each
  // median.
  auto worst = [&](double value) {
    std::vector<double> all = rt.allGatherDoubles(value);
    return *std::max_element(all.begin(), all.end());
  };
  double tComm = worst(median(commTimes)),
         tCompute = worst(median(computeTimes));
  double tSerial = worst(median(serial)), tOverlap = worst(median(overlap));
  double tPoll = inlineMode ? worst(median(overlapPoll)) : 0;
  if (rt.rank() == 0) {
    const char *mode = inlineMode ? "inline" : "thread";
    std::printf("overlap benchmark: %d ranks, %s of %.1f MiB, progress=%s, "
                "poll=%uus, median of %d (max over ranks)\n",
                rt.worldSize(), p2p ? "ring send/recv" : "f32 all-reduce", mib,
                mode, rt.options().pollMicros, reps);
    std::printf("  comm alone      %8.2f ms\n", tComm * 1e3);
    std::printf("  compute alone   %8.2f ms\n", tCompute * 1e3);
    std::printf("  serialized      %8.2f ms  (baseline)\n", tSerial * 1e3);
    auto report = [&](const char *name, double t) {
      std::printf("  %-15s %8.2f ms  overlap/serial %.3f  hidden %.0f%%\n",
                  name, t * 1e3, t / tSerial,
                  100.0 * (tSerial - t) / std::min(tComm, tCompute));
    };
    report("overlapped", tOverlap);
    if (inlineMode)
      report("overlapped+poll", tPoll);
    std::printf("  (ideal overlap/serial %.3f)\n",
                std::max(tComm, tCompute) / tSerial);
  }
  if (compute.checksum() == 12345.0f) // Keep the compute loop alive.
    std::printf("!\n");
  return 0;
}
