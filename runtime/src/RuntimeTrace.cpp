//===- RuntimeTrace.cpp - Gathering and writing the per-op trace ----------===//
//
// Runtime::writeTrace: every rank's events (Tracer, Trace.h) gathered over
// the world through the communication engine, written by rank 0.
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <thread>
#include <vector>

using namespace ratrain::rt;

void Runtime::writeTrace(llvm::StringRef path, llvm::StringRef program) {
  using Clock = Tracer::Clock;
  // The common time origin: the earliest first traced step of any rank.
  double mine =
      traceRecorder.hasEvents()
          ? double(traceRecorder.firstStepStart().time_since_epoch().count())
          : INFINITY;
  std::vector<double> starts =
      allGatherDoubleTuples(llvm::ArrayRef<double>(&mine, 1));
  double earliest = *std::min_element(starts.begin(), starts.end());
  Clock::time_point origin =
      std::isfinite(earliest)
          ? Clock::time_point(Clock::duration(Clock::rep(earliest)))
          : Clock::now();

  std::string events = traceRecorder.takeEvents(
      rank(),
      llvm::formatv("stage {0} (rank {1}, data rank {2})", stage(), rank(),
                    dpIndex())
          .str(),
      stage(), dpIndex(), origin);
  double length = double(events.size());
  std::vector<double> lengths =
      allGatherDoubleTuples(llvm::ArrayRef<double>(&length, 1));
  uint64_t longest = 1;
  for (double l : lengths)
    longest = std::max(longest, uint64_t(l));
  if (longest * uint64_t(worldSize()) >= uint64_t(INT_MAX))
    fatal(llvm::formatv("--trace {0}: {1} ranks of up to {2} bytes of events "
                        "exceed the {3} bytes one gather carries; trace "
                        "fewer steps (--trace-steps)",
                        path, worldSize(), longest, INT_MAX));
  std::vector<char> send(longest, ' ');
  std::copy(events.begin(), events.end(), send.begin());
  std::vector<char> gathered(longest * uint64_t(worldSize()));
  Buffer sendBuffer{reinterpret_cast<std::byte *>(send.data()), 0, longest,
                    MemorySpace::DDR};
  Buffer recvBuffer{reinterpret_cast<std::byte *>(gathered.data()), 0,
                    gathered.size(), MemorySpace::DDR};
  wait(allGather(Group::World, sendBuffer, recvBuffer));
  if (rank() != 0)
    return;
  std::vector<std::string> pieces;
  for (int r = 0; r < worldSize(); ++r)
    pieces.emplace_back(gathered.data() + uint64_t(r) * longest,
                        uint64_t(lengths[size_t(r)]));
  exitOnError(writeFileAtomically(path, Tracer::assemble(pieces, program)));
}

void Runtime::setEmulatedSlowdown(double slowdown) {
  if (!std::isfinite(slowdown) || slowdown < 1 || slowdown > 1000)
    fatal(llvm::formatv("emulated slowdown {0} is not in [1, 1000]", slowdown));
  slowdownFactor = slowdown;
}

void Runtime::endEmulatedSpan() {
  if (slowdownFactor <= 1)
    return;
  // The span's kernel time (the whole sum when a step ended inside it).
  auto now = stepTimers().kernelSoFar();
  auto spent = now >= emulatedSpanKernel ? now - emulatedSpanKernel : now;
  std::this_thread::sleep_for(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          spent * (slowdownFactor - 1)));
}
