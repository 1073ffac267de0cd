//===- ratrain-calibrate.cpp - Measure this host, write a machine file ----===//
//
// ratrain-calibrate [-o examples/machines/host.yaml] [--clusters-per-node N]
//                   [--ddr-fraction 0.5] [--quick]
//
// Treats the host as one node of N clusters (default: one per CPU), each
// with hardware_concurrency / N cores, and measures:
//  - caches (sysfs): AM = per-core L2, GSM = the cluster's share of L3;
//  - DDR = a usable share of RAM (MemTotal * ddr-fraction / N);
//  - DDR bandwidth: STREAM triad run by all clusters at once, per cluster;
//  - FP32 FMA and bf16 dot-product peaks per core (register-only kernels
//    compiled with -O3 -march=native) times the cores of a cluster;
//  - GEMM efficiency: OpenBLAS sgemm on one core / the FP32 peak (when
//    OpenBLAS is available), memory-bound efficiency: an Adam update / triad;
//  - DMA bandwidth: a large memcpy; intra-node link: latency of a cache-line
//    ping-pong between two threads and bandwidth of copying a buffer written
//    by another thread.
// Attention efficiencies are assumptions derived from the GEMM efficiency and
// are marked so in the file. The file is parsed back before it is written.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "ratrain/Machine/MachineModel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <thread>
#include <vector>

#ifdef RATRAIN_HAVE_CBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

using namespace ratrain;
using namespace ratrain::calibrate;
namespace cl = llvm::cl;

static cl::opt<std::string> outputPath("o", cl::init("-"),
                                       cl::desc("output machine file"),
                                       cl::value_desc("file"));
static cl::opt<unsigned>
    clustersPerNodeOpt("clusters-per-node", cl::init(0),
                       cl::desc("clusters on this host (default: one per "
                                "CPU)"));
static cl::opt<double>
    ddrFraction("ddr-fraction", cl::init(0.5),
                cl::desc("share of RAM the clusters may use together"));
static cl::opt<bool> quick("quick", cl::desc("shorter measurements (noisier)"));
static cl::opt<std::string> machineName("name", cl::init("host"),
                                        cl::desc("machine name"));

namespace {

using Clock = std::chrono::steady_clock;

double seconds(const std::function<void()> &f) {
  auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// CPU time of the calling thread, so that time spent descheduled on a
/// shared host does not count.
double threadCpuSeconds(const std::function<void()> &f) {
  timespec start, end;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  f();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
  return double(end.tv_sec - start.tv_sec) +
         1e-9 * double(end.tv_nsec - start.tv_nsec);
}

/// Best rate (work per second of the thread's CPU time) of `reps` runs; the
/// host is shared, so the best run is the least disturbed one.
double bestRate(int reps, const std::function<double()> &run) {
  double best = 0;
  for (int i = 0; i < reps; ++i) {
    double work = 0;
    double t = threadCpuSeconds([&] { work = run(); });
    if (t > 0)
      best = std::max(best, work / t);
  }
  return best;
}

std::string readFile(const std::string &path) {
  // sysfs and procfs report a size of 0: read them as streams.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileAsStream(path);
  if (!buffer)
    return "";
  return (*buffer)->getBuffer().trim().str();
}

/// "1024K" -> 1048576.
int64_t parseCacheSize(llvm::StringRef text) {
  int64_t scale = 1;
  if (text.consume_back("K"))
    scale = 1024;
  else if (text.consume_back("M"))
    scale = 1024 * 1024;
  int64_t value = 0;
  if (text.getAsInteger(10, value))
    return 0;
  return value * scale;
}

/// CPUs in a sysfs list like "0-1,4".
int64_t countCpuList(llvm::StringRef list) {
  int64_t count = 0;
  llvm::SmallVector<llvm::StringRef> parts;
  list.split(parts, ',', -1, false);
  for (llvm::StringRef part : parts) {
    auto [lo, hi] = part.split('-');
    int64_t a = 0, b = 0;
    if (lo.getAsInteger(10, a))
      continue;
    if (hi.empty() || hi.getAsInteger(10, b))
      b = a;
    count += b - a + 1;
  }
  return std::max<int64_t>(count, 1);
}

struct CacheLevel {
  int64_t bytes = 0;
  int64_t sharedBy = 1;
};

CacheLevel readCache(int level) {
  CacheLevel result;
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        llvm::formatv("/sys/devices/system/cpu/cpu0/cache/index{0}", index);
    std::string lvl = readFile(dir + "/level");
    if (lvl.empty())
      break;
    std::string type = readFile(dir + "/type");
    if (lvl != std::to_string(level) || type == "Instruction")
      continue;
    result.bytes = parseCacheSize(readFile(dir + "/size"));
    result.sharedBy = countCpuList(readFile(dir + "/shared_cpu_list"));
  }
  return result;
}

int64_t memTotalBytes() {
  std::string meminfo = readFile("/proc/meminfo");
  for (llvm::StringRef line : llvm::split(meminfo, '\n')) {
    if (!line.consume_front("MemTotal:"))
      continue;
    line = line.trim();
    line.consume_back("kB");
    int64_t kb = 0;
    if (!line.trim().getAsInteger(10, kb))
      return kb * 1024;
  }
  return 0;
}

std::string cpuModel() {
  std::string cpuinfo = readFile("/proc/cpuinfo");
  for (llvm::StringRef line : llvm::split(cpuinfo, '\n'))
    if (line.starts_with("model name"))
      return line.split(':').second.trim().str();
  return "unknown CPU";
}

/// Runs `f(thread)` on `threads` threads at once; returns the wall time.
double runConcurrently(unsigned threads,
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
  auto start = Clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread &t : pool)
    t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// One-way latency of handing a cache line between two threads.
double pingPongLatency(int rounds) {
  alignas(64) std::atomic<int> flag{0};
  std::thread other([&] {
    for (int i = 0; i < rounds; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1)
        ;
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  double t = seconds([&] {
    for (int i = 0; i < rounds; ++i) {
      flag.store(2 * i + 1, std::memory_order_release);
      while (flag.load(std::memory_order_acquire) != 2 * i + 2)
        ;
    }
  });
  other.join();
  return t / rounds / 2;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "measure this host and write a RATrain "
                              "machine file\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), "ratrain-calibrate")
        << message << "\n";
    return 1;
  };
  if (!(ddrFraction > 0 && ddrFraction <= 1))
    return fail("--ddr-fraction must be in (0, 1]");

  unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  unsigned clusters = clustersPerNodeOpt ? unsigned(clustersPerNodeOpt) : cpus;
  if (clusters > cpus || cpus % clusters)
    return fail(llvm::formatv("--clusters-per-node {0} must divide the {1} "
                              "CPUs",
                              clusters, cpus));
  unsigned coresPerCluster = cpus / clusters;
  const int reps = quick ? 2 : 5;
  llvm::errs() << llvm::formatv("calibrating {0}: {1} CPUs as {2} clusters of "
                                "{3} cores\n",
                                cpuModel(), cpus, clusters, coresPerCluster);

  // Caches and RAM.
  CacheLevel l2 = readCache(2), l3 = readCache(3);
  int64_t amBytes = l2.bytes > 0 ? l2.bytes : 1 << 20;
  int64_t gsmBytes = l3.bytes > 0 ? l3.bytes * coresPerCluster /
                                        std::min<int64_t>(l3.sharedBy, cpus)
                                  : 8 << 20;
  int64_t ram = memTotalBytes();
  if (ram <= 0)
    return fail("cannot read MemTotal from /proc/meminfo");
  int64_t ddrBytes = int64_t(double(ram) * ddrFraction / clusters);

  // Compute peaks per core (register-only kernels).
  float sink = 0;
  const int64_t fmaIterations = quick ? 20000000 : 50000000;
  double fp32PerCore =
      bestRate(reps, [&] { return fp32FmaKernel(fmaIterations, &sink); });
  double bf16PerCore =
      hasBF16Kernel()
          ? bestRate(reps, [&] { return bf16DotKernel(fmaIterations, &sink); })
          : 0;
  llvm::errs() << llvm::formatv("  fp32 FMA ({0}): {1:f1} GFLOP/s per core; "
                                "bf16 dot: {2:f1} GFLOP/s per core\n",
                                fmaIsaName(), fp32PerCore / 1e9,
                                bf16PerCore / 1e9);

  // DDR bandwidth: triad on arrays well beyond L3, all clusters at once.
  const size_t n = quick ? (8u << 20) : (16u << 20); // floats per array
  unsigned streams = cpus;
  std::vector<std::vector<float>> arrays(3 * streams);
  for (auto &a : arrays)
    a.assign(n / streams + 16, 1.0f);
  // Every thread's rate over its own CPU time, summed: what the memory
  // system delivers while all of them stream (wall time would count the
  // time other users' processes hold the CPUs).
  double triadAll = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> rates(streams);
    runConcurrently(streams, [&](unsigned s) {
      double t = threadCpuSeconds([&] {
        triadKernel(arrays[3 * s].data(), arrays[3 * s + 1].data(),
                    arrays[3 * s + 2].data(), n / streams, 1.0001f);
      });
      rates[s] = 12.0 * double(n / streams) / t;
    });
    double total = 0;
    for (double rate : rates)
      total += rate;
    triadAll = std::max(triadAll, total);
  }
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 3.0f), d(n, 0.5f);
  double triadOne = bestRate(reps, [&] {
    return triadKernel(a.data(), b.data(), c.data(), n, 1.0001f);
  });
  double adamOne = bestRate(reps, [&] {
    return adamKernel(a.data(), b.data(), c.data(), d.data(), n);
  });
  double ddrPerCluster = triadAll / clusters;
  double memoryEfficiency = std::clamp(adamOne / triadOne, 0.05, 1.0);
  llvm::errs() << llvm::formatv("  triad: {0:f1} GB/s all CPUs, {1:f1} GB/s "
                                "one; Adam update {2:f1} GB/s\n",
                                triadAll / 1e9, triadOne / 1e9, adamOne / 1e9);

  // memcpy ("DMA") and the intra-node link.
  double copyOne = bestRate(reps, [&] {
    std::memcpy(a.data(), b.data(), n * sizeof(float));
    return double(n * sizeof(float));
  });
  double linkBandwidth = 0;
  for (int r = 0; r < reps; ++r) {
    // The producer writes, the consumer (another thread) copies it out.
    std::thread producer([&] { std::fill(c.begin(), c.end(), float(r)); });
    producer.join();
    double t = threadCpuSeconds(
        [&] { std::memcpy(d.data(), c.data(), n * sizeof(float)); });
    linkBandwidth = std::max(linkBandwidth, double(n * sizeof(float)) / t);
  }
  double latency = 1;
  if (cpus > 1)
    for (int r = 0; r < reps; ++r)
      latency = std::min(latency, pingPongLatency(quick ? 20000 : 100000));
  else
    latency = 1e-6;
  llvm::errs() << llvm::formatv("  memcpy {0:f1} GB/s; thread-to-thread copy "
                                "{1:f1} GB/s, latency {2:f2} us\n",
                                copyOne / 1e9, linkBandwidth / 1e9,
                                latency * 1e6);

  // GEMM efficiency.
  double gemmEfficiency = 0.45; // assumption without OpenBLAS
  double sgemmRate = 0;
#ifdef RATRAIN_HAVE_CBLAS
  {
    openblas_set_num_threads(1);
    const int dim = quick ? 512 : 1024;
    std::vector<float> ma(dim * dim, 0.5f), mb(dim * dim, 0.25f),
        mc(dim * dim, 0.0f);
    sgemmRate = bestRate(reps, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dim, dim, dim,
                  1.0f, ma.data(), dim, mb.data(), dim, 0.0f, mc.data(), dim);
      return 2.0 * dim * dim * double(dim);
    });
    sink += mc[0];
    gemmEfficiency = std::clamp(sgemmRate / fp32PerCore, 0.05, 1.0);
    llvm::errs() << llvm::formatv("  OpenBLAS sgemm {0}^3: {1:f1} GFLOP/s "
                                  "per core\n",
                                  dim, sgemmRate / 1e9);
  }
#endif

  MachineModel machine;
  machine.name = machineName;
  machine.nodes = 1;
  machine.clustersPerNode = clusters;
  ClusterSpec &cs = machine.cluster;
  cs.cores = coresPerCluster;
  cs.ddrBytes = ddrBytes;
  cs.gsmBytes = gsmBytes;
  cs.amBytesPerCore = amBytes;
  cs.ddrBandwidth = ddrPerCluster;
  cs.dmaBandwidth = copyOne;
  cs.dmaChannels = 1;
  cs.peakFlopsF32 = fp32PerCore * coresPerCluster;
  cs.peakFlopsF16 =
      (bf16PerCore > 0 ? bf16PerCore : fp32PerCore) * coresPerCluster;
  cs.efficiency.gemm = gemmEfficiency;
  cs.efficiency.attentionForward = 0.6 * gemmEfficiency;
  cs.efficiency.attentionBackward = 0.5 * gemmEfficiency;
  cs.efficiency.memoryBound = memoryEfficiency;
  cs.fusedAttention = false;
  machine.network.intraNode = {linkBandwidth, latency};
  machine.network.interNode = {linkBandwidth, latency};
  machine.network.collective = CollectiveAlgorithm::Ring;
  // Offload tier: host RAM the clusters' DDR arenas leave, half of it (the
  // rest for the OS and the processes), at memcpy speed. [D/U]
  machine.offload.kind = OffloadTierKind::Host;
  machine.offload.bytesPerNode = int64_t(double(ram) * (1 - ddrFraction) / 2);
  machine.offload.bandwidth = copyOne;
  machine.offload.latency = 1e-6;

  std::string body = printMachineModel(machine);
  if (llvm::Expected<MachineModel> back = parseMachineModel(body, "output");
      !back)
    return fail("the machine file does not parse back: " +
                llvm::toString(back.takeError()));

  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "# Machine file of this host, written by ratrain-calibrate on " << date
     << ".\n# " << cpuModel() << ": " << cpus << " CPUs as " << clusters
     << " clusters of " << coresPerCluster << " cores, one node.\n"
     << "# SI base units: bytes, bytes/s, FLOP/s, seconds.\n#\n"
     << "# Measured [M], derived [D], assumed [U]:\n"
     << llvm::formatv("#  [M] caches (sysfs): L2 {0} B per core -> "
                      "am_bytes_per_core; L3 {1} B shared by {2} CPUs -> "
                      "gsm_bytes (the cluster's share)\n",
                      l2.bytes, l3.bytes, l3.sharedBy)
     << llvm::formatv("#  [D] ddr_bytes = MemTotal {0} B * {1} / {2} "
                      "clusters\n",
                      ram, double(ddrFraction), clusters)
     << llvm::formatv("#  [M] FP32 FMA ({0}, -O3 -march=native): {1:f1} "
                      "GFLOP/s per core; bf16 dot (vdpbf16ps): {2:f1} GFLOP/s "
                      "per core{3}\n",
                      fmaIsaName(), fp32PerCore / 1e9, bf16PerCore / 1e9,
                      bf16PerCore > 0 ? "" : " (unavailable: f16 = f32)")
     << llvm::formatv("#  [M] STREAM triad: {0:f1} GB/s with all CPUs "
                      "(ddr_bandwidth = that / clusters), {1:f1} GB/s on one\n",
                      triadAll / 1e9, triadOne / 1e9)
     << llvm::formatv("#  [M] Adam update {0:f1} GB/s on one core -> "
                      "memory_bound = Adam / triad\n",
                      adamOne / 1e9)
     << (sgemmRate > 0
             ? llvm::formatv("#  [M] OpenBLAS sgemm {0:f1} GFLOP/s on one "
                             "core -> gemm = sgemm / FP32 peak\n",
                             sgemmRate / 1e9)
                   .str()
             : std::string("#  [U] gemm efficiency 0.45 (built without "
                           "OpenBLAS)\n"))
     << "#  [U] attention_forward = 0.6 * gemm, attention_backward = 0.5 * "
        "gemm; fused_attention false\n"
     << llvm::formatv("#  [M] memcpy {0:f1} GB/s -> dma_bandwidth; copying "
                      "another thread's buffer {1:f1} GB/s and cache-line "
                      "ping-pong {2:f3} us one way -> intra_node\n",
                      copyOne / 1e9, linkBandwidth / 1e9, latency * 1e6)
     << "#  [U] one node: inter_node repeats intra_node\n"
     << llvm::formatv("#  [D/U] offload tier (host RAM): bytes_per_node = "
                      "MemTotal * (1 - {0}) / 2 (the rest for the OS), "
                      "bandwidth = memcpy, latency 1 us\n",
                      double(ddrFraction))
     << "# The kernel build reads cluster: gsm_bytes, am_bytes_per_core and "
        "cores as plain integers.\n"
     << body;

  if (outputPath == "-") {
    llvm::outs() << text;
    return sink == 12345.0f ? 2 : 0; // keep `sink` alive
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(outputPath, ec);
  if (ec)
    return fail(outputPath + ": " + ec.message());
  out << text;
  llvm::errs() << "wrote " << outputPath << "\n";
  return sink == 12345.0f ? 2 : 0;
}
