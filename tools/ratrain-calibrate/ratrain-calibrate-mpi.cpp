//===- ratrain-calibrate-mpi.cpp - Transfers through the RATrain runtime --===//
//
// mpirun -np 2 ratrain-calibrate-mpi [--quick]
//
// The transfer half of ratrain-calibrate: two ranks (pp = 2, dp = 1) of the
// real runtime (rt::Runtime, its progress thread, DMA threads and arenas)
// measure
//  - point-to-point: a ping-pong of zero-byte signals (latency) and of DDR
//    buffers of 1, 8 and 64 MiB (rt.send / rt.recv + wait; one-way time =
//    round trip / 2), every size the best of a few repetitions;
//  - DMA: rt.dma of 64 MiB DDR -> DDR, both ranks at once;
//  - offload: rt.offload / rt.reload of 64 MiB to host memory, both ranks at
//    once.
// Rank 0 prints one `key value...` line per figure (seconds, bytes/s) on
// stdout; ratrain-calibrate parses them. Wall time (steady clock), best of
// the repetitions: the host is shared.
//
// mpirun -np 2N ratrain-calibrate-mpi --loaded
//
// Instead, N pipelines of two ranks (pp = 2, dp = N) all at once, computing
// as a pipeline does: the first stage computes 1.5-3.5 ms (floating-point
// arithmetic), then sends a 256 KiB activation; the second waits for it, then
// computes 1 ms, so it is waiting when the message comes (the message is on
// the critical path) while the other ranks compute. Prints `loaded BYTES
// SECONDS`: the mean time from the send being posted to the receiver's wait
// returning, over the messages of every pipeline (a mean, not the best: the
// occasional wait for a core is the point). With more ranks than cores it is
// what a message between virtual clusters takes in training. Also prints
// `progress-share SHARE`: the CPU time of the ranks' progress threads over
// the time their ranks had a message outstanding (the share of a core a
// polling progress thread takes while the cores are shared).
//
//===----------------------------------------------------------------------===//

#include "ratrain/Support/CrashReport.h"
#include "ratrain/runtime/Runtime.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace ratrain::rt;

namespace {

using Clock = std::chrono::steady_clock;

double now() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

/// Keeps this thread's core busy for `seconds` (floating-point arithmetic,
/// as a kernel would).
void compute(double seconds) {
  static volatile double sink;
  double x = 1, start = now();
  while (now() - start < seconds)
    for (int i = 0; i < 2000; ++i)
      x = x * 1.0000001 + 1e-9;
  sink = x;
}

/// The --loaded measurement (see the file comment).
int measureLoaded(int argc, char **argv, bool quick) {
  const uint64_t bytes = 256 << 10;
  const int messages = quick ? 150 : 400, skipped = 5;
  RuntimeOptions options;
  options.pp = 2;
  // N from the job's size (the runtime takes an initialized MPI).
  int provided = 0, worldSize = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) !=
          MPI_SUCCESS ||
      MPI_Comm_size(MPI_COMM_WORLD, &worldSize) != MPI_SUCCESS) {
    std::fprintf(stderr, "ratrain-calibrate-mpi: MPI_Init_thread failed\n");
    return 1;
  }
  options.dp = std::max(1, worldSize / 2);
  options.ddrBytes = 2 * bytes + 2 * messages * sizeof(double);
  options.gsmBytes = 64 << 10;
  options.amBytes = 16 << 10;
  options.cores = 1;
  options.dmaChannels = 1;
  Runtime rt(argc, argv, options);
  const bool first = rt.stage() == 0;
  const int peer = 1 - rt.stage();
  Buffer message = rt.ddr().buffer(0, bytes);
  Buffer times = rt.ddr().buffer(bytes, messages * sizeof(double));
  Buffer peerTimes = rt.ddr().buffer(bytes + messages * sizeof(double),
                                     messages * sizeof(double));
  auto *at = reinterpret_cast<double *>(times.data);
  std::memset(message.data, 1, bytes);
  rt.wait(rt.barrier(Group::World));
  // The progress thread's CPU time over the messages, and how long this
  // rank had one outstanding (posted until its wait returned).
  double outstanding = 0;
  rt.takeProgressCpuSeconds();
  for (int i = 0; i < messages; ++i) {
    if (first) {
      // A forward micro-batch of uneven length, then its activation.
      compute(0.0015 + 0.001 * (i % 3));
      at[i] = now();
      rt.wait(rt.send(Group::Pipeline, peer, i, message));
      outstanding += now() - at[i];
    } else {
      // Waits for the activation (the message on the pipeline's critical
      // path), then computes for less time than the first stage does.
      double posted = now();
      rt.wait(rt.recv(Group::Pipeline, peer, i, message));
      at[i] = now();
      outstanding += at[i] - posted;
      compute(0.001);
    }
  }
  double progressCpu = rt.takeProgressCpuSeconds();
  // The second stage takes the send times (one clock: the ranks share the
  // host) and averages.
  double mean = -1;
  if (first) {
    rt.wait(rt.send(Group::Pipeline, peer, messages, times));
  } else {
    rt.wait(rt.recv(Group::Pipeline, peer, messages, peerTimes));
    const auto *sentAt = reinterpret_cast<const double *>(peerTimes.data);
    double sum = 0;
    for (int i = skipped; i < messages; ++i)
      sum += at[i] - sentAt[i];
    mean = sum / (messages - skipped);
  }
  // Every rank's (mean, progress CPU, outstanding time) in one gather. The
  // share of a core the progress threads took while their ranks had a
  // message outstanding: the sum over the ranks of both.
  const double mine[3] = {mean, progressCpu, outstanding};
  std::vector<double> gathered = rt.allGatherDoubleTuples(mine);
  double sum = 0, cpuSum = 0, busySum = 0;
  int pipelines = 0;
  for (size_t r = 0; r + 2 < gathered.size(); r += 3) {
    if (gathered[r] >= 0)
      sum += gathered[r], ++pipelines;
    cpuSum += gathered[r + 1];
    busySum += gathered[r + 2];
  }
  if (rt.rank() == 0 && pipelines > 0) {
    std::printf("loaded %llu %.9e\n", (unsigned long long)bytes,
                sum / pipelines);
    if (busySum > 0)
      std::printf("progress-share %.9e\n", std::min(1.0, cpuSum / busySum));
    std::fflush(stdout);
  }
  rt.wait(rt.barrier(Group::World));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  ratrain::InitTool init(argc, argv);
  bool quick = false, loaded = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    if (std::strcmp(argv[i], "--loaded") == 0)
      loaded = true;
  }
  if (loaded)
    return measureLoaded(argc, argv, quick);
  const uint64_t maxBytes = 64ull << 20;
  RuntimeOptions options;
  options.pp = 2;
  options.dp = 1;
  // Send and receive buffers, and a DMA destination.
  options.ddrBytes = 3 * maxBytes;
  options.gsmBytes = 64 << 10;
  options.amBytes = 16 << 10;
  options.cores = 1;
  options.dmaChannels = 1;
  Runtime rt(argc, argv, options);
  const int peer = 1 - rt.stage();
  const bool first = rt.stage() == 0;
  Buffer sendBuf = rt.ddr().buffer(0, maxBytes);
  Buffer recvBuf = rt.ddr().buffer(maxBytes, maxBytes);
  Buffer dmaBuf = rt.ddr().buffer(2 * maxBytes, maxBytes);
  std::memset(sendBuf.data, 1 + rt.rank(), maxBytes);
  std::memset(recvBuf.data, 0, maxBytes);
  std::memset(dmaBuf.data, 0, maxBytes);
  const int reps = quick ? 3 : 5;

  auto barrier = [&] { rt.wait(rt.barrier(Group::World)); };
  // One-way time of a ping-pong of `bytes` (0: signals), best of reps.
  auto pingPong = [&](uint64_t bytes, int rounds) {
    Buffer s = sendBuf.slice(0, bytes), r = recvBuf.slice(0, bytes);
    auto round = [&] {
      if (first) {
        rt.wait(rt.send(Group::Pipeline, peer, 1, bytes ? s : Buffer{}));
        rt.wait(rt.recv(Group::Pipeline, peer, 2, bytes ? r : Buffer{}));
      } else {
        rt.wait(rt.recv(Group::Pipeline, peer, 1, bytes ? r : Buffer{}));
        rt.wait(rt.send(Group::Pipeline, peer, 2, bytes ? s : Buffer{}));
      }
    };
    round(); // warm-up: connections, registration
    double best = 1e30;
    for (int rep = 0; rep < reps; ++rep) {
      barrier();
      double start = now();
      for (int i = 0; i < rounds; ++i)
        round();
      best = std::min(best, (now() - start) / rounds / 2);
    }
    return best;
  };

  double latency = pingPong(0, quick ? 200 : 1000);
  std::vector<std::pair<uint64_t, double>> sizes;
  for (uint64_t bytes : {uint64_t(1) << 20, uint64_t(8) << 20, maxBytes})
    sizes.push_back({bytes, pingPong(bytes, bytes >= maxBytes ? 3 : 10)});

  // Both ranks at once: what one cluster gets while every cluster streams.
  auto concurrent = [&](auto &&op) {
    op(); // warm-up (the first offload allocates its host copy)
    double best = 1e30;
    for (int rep = 0; rep < reps; ++rep) {
      barrier();
      double start = now();
      op();
      best = std::min(best, now() - start);
    }
    std::vector<double> all = rt.allGatherDoubles(best);
    return *std::max_element(all.begin(), all.end());
  };
  double dmaSeconds = concurrent([&] { rt.wait(rt.dma(dmaBuf, sendBuf)); });
  // Both ranks send and receive a large message at once, as every step of
  // a ring collective does: the bytes each receives per second is what its
  // core moves of a collective's data (network.core_copy_bandwidth). The
  // messages walk the whole 64 MiB buffers, one 8 MiB slice after the
  // next, so they come from memory as a step's gradients and views do, not
  // from a cache the same 8 MiB stayed in (Zen 5 host: 16.7 GB/s repeating
  // one slice, 11.6 GB/s walking).
  const uint64_t exchangeBytes = 8ull << 20;
  const int exchanges = int(maxBytes / exchangeBytes);
  double exchangeSeconds =
      concurrent([&] {
        for (int i = 0; i < exchanges; ++i) {
          const uint64_t offset = uint64_t(i) * exchangeBytes;
          Token in = rt.recv(Group::Pipeline, peer, 3,
                             recvBuf.slice(offset, exchangeBytes));
          Token out = rt.send(Group::Pipeline, peer, 3,
                              sendBuf.slice(offset, exchangeBytes));
          rt.wait(out);
          rt.wait(in);
        }
      }) /
      exchanges;
  double offloadSeconds = concurrent([&] {
    rt.wait(rt.offload(sendBuf, StorageTier::Host, "calibrate"));
    rt.wait(rt.reload(dmaBuf, StorageTier::Host, "calibrate"));
  });

  if (first) {
    std::printf("latency %.9e\n", latency);
    for (auto [bytes, seconds] : sizes)
      std::printf("p2p %llu %.9e\n", (unsigned long long)bytes, seconds);
    std::printf("dma %llu %.9e\n", (unsigned long long)maxBytes, dmaSeconds);
    std::printf("exchange %llu %.9e\n", (unsigned long long)exchangeBytes,
                exchangeSeconds);
    std::printf("offload %llu %.9e\n", (unsigned long long)(2 * maxBytes),
                offloadSeconds);
    std::fflush(stdout);
  }
  barrier();
  return 0;
}
