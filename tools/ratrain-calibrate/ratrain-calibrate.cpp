//===- ratrain-calibrate.cpp - Measure this host, write a machine file ----===//
//
// ratrain-calibrate [-o examples/machines/host.yaml] [--clusters-per-node N]
//                   [--ddr-fraction 0.5] [--quick] [--no-mpi]
//                   [--model config.json [--seq-len N]
//                    [--micro-batch-sizes 1,2,4]]
// ratrain-calibrate --peaks [-o FILE]   (each CPU's peaks alone and all at
//                                        once, as JSON: ConcurrentPeaks.h)
//
// Treats the host as one node of N clusters (default: one per CPU), each
// with hardware_concurrency / N cores, and measures:
//  - caches (sysfs): AM = per-core L2, GSM = the cluster's share of L3;
//  - DDR = a usable share of RAM (MemTotal * ddr-fraction / N);
//  - DDR bandwidth: STREAM triad run by all clusters at once, per cluster;
//  - FP32 FMA and bf16 dot-product peaks per core (register-only kernels
//    compiled with -O3 -march=native) times the cores of a cluster;
//  - kernel efficiencies, when the runtime's Halide kernels are built
//    (RATRAIN_HAVE_KERNELS): the NT GEMM in bf16 and fp32 on a tiny-LLaMA
//    and a LLaMA-7B shape / the peak of the matching precision, and the
//    shape-aware GEMM time model (gemm_fit: fp32 and bf16 on 14 shapes,
//    fitted by least squares, KernelTimeFit.h), and every call it times
//    listed with its seconds (gemm_measured), with --model also each
//    distinct GEMM call of the model's layers and head (GemmCalls.h), so
//    the cost model prices the model's own calls as measured; causal GQA
//    attention forward and backward, fp32 and bf16, on ten shapes: the
//    efficiencies (two shapes / the peak of the matching precision) and the
//    attention time fits (attention_forward_fit, attention_backward_fit;
//    HalideKernelFigures.cpp); AdamW (with its bf16
//    view) and RMSNorm forward / the DDR bandwidth. Without the kernels:
//    OpenBLAS sgemm / FP32 peak, an Adam loop / triad, attention assumed;
//  - transfers, when the MPI runtime is built: ratrain-calibrate-mpi under
//    `mpirun -np 2 --oversubscribe` measures the runtime's point-to-point
//    latency and bandwidth (intra_node), its DMA (dma_bandwidth) and its
//    host offload / reload (offload.bandwidth); then, under `mpirun -np 2C`
//    (two ranks per cluster), its --loaded pipelines: what a message takes
//    while the ranks share the cores (network.oversubscribed_latency).
//    Without it (or --no-mpi): a
//    memcpy, copying a buffer another thread wrote, and a cache-line
//    ping-pong between two threads.
// The file's header says where each number comes from. The file is parsed
// back before it is written.
//
//===----------------------------------------------------------------------===//

#include "ConcurrentPeaks.h"
#include "HostFacts.h"
#include "Kernels.h"

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Support/CrashReport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <thread>
#include <tuple>
#include <vector>

// Declarations only: HalideKernelFigures.cpp is built with the kernels.
#include "HalideKernelFigures.h"
#include "LayerElementwise.h"
#include "MemoryBoundFigures.h"
#include "ModelGemms.h"
#ifdef RATRAIN_HAVE_KERNELS
#include "ratrain/kernels/Kernels.h"
namespace kn = ratrain::kernels;
#elif defined(RATRAIN_HAVE_CBLAS)
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

using namespace ratrain;
using namespace ratrain::calibrate;
namespace cl = llvm::cl;

static cl::OptionCategory category("ratrain-calibrate options");
static cl::opt<std::string> outputPath("o", cl::init("-"),
                                       cl::desc("output machine file"),
                                       cl::value_desc("file"),
                                       cl::cat(category));
static cl::opt<unsigned>
    clustersPerNodeOpt("clusters-per-node", cl::init(0),
                       cl::desc("clusters on this host (default: one per "
                                "CPU)"),
                       cl::cat(category));
static cl::opt<double>
    ddrFraction("ddr-fraction", cl::init(0.5),
                cl::desc("share of RAM the clusters may use together"),
                cl::cat(category));
static cl::opt<bool> quick("quick", cl::desc("shorter measurements (noisier)"),
                           cl::cat(category));
static cl::opt<bool>
    noMpi("no-mpi",
          cl::desc("measure transfers between threads instead of "
                   "running the runtime under mpirun"),
          cl::cat(category));
static cl::opt<bool> peaksOnly(
    "peaks",
    cl::desc("only measure the fp32 FMA and bf16 dot peaks of each CPU alone "
             "and of all CPUs at once (pinned threads, wall clock) and write "
             "them as JSON (ConcurrentPeaks.h)"),
    cl::cat(category));
static cl::opt<std::string> machineName("name", cl::init("host"),
                                        cl::desc("machine name"),
                                        cl::cat(category));
static cl::list<std::string> modelPaths(
    "model",
    cl::desc("also measure this model's GEMM calls (a HF config.json; "
             "repeatable) and list them in gemm_measured"),
    cl::value_desc("config.json"), cl::cat(category));
static cl::opt<unsigned>
    modelSeqLen("seq-len", cl::init(0),
                cl::desc("with --model: the training sequence length "
                         "(default: the config's, at most 4096)"),
                cl::cat(category));
static cl::list<unsigned> microBatchSizes(
    "micro-batch-sizes", cl::CommaSeparated,
    cl::desc("with --model: the micro-batch sizes whose GEMMs are measured "
             "(default 1,2,4)"),
    cl::cat(category));
static cl::opt<std::string> addGemmsTo(
    "add-gemms",
    cl::desc("only time the --model's GEMM calls this machine file lacks "
             "and add them to it (gemm_measured; written to -o, default the "
             "file itself)"),
    cl::value_desc("machine.yaml"), cl::cat(category));

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

/// What ratrain-calibrate-mpi measured through the runtime (all zero when
/// it did not run).
struct RuntimeTransfers {
  std::string command;
  double latency = 0;                                  ///< one way, s
  std::vector<std::pair<double, double>> pointToPoint; ///< bytes, s one way
  double dmaBytes = 0, dmaSeconds = 0;
  double offloadBytes = 0, offloadSeconds = 0;
  /// One message's bytes and the time both ranks took to exchange one
  /// (each sending and receiving at once).
  double exchangeBytes = 0, exchangeSeconds = 0;
  /// --loaded: a message's bytes and its mean one-way time while the ranks
  /// compute.
  double loadedBytes = 0, loadedSeconds = 0;
  /// --loaded: the share of a core the progress threads took while their
  /// ranks had a message outstanding.
  double progressShare = 0;
  bool ok() const {
    return latency > 0 && !pointToPoint.empty() && dmaSeconds > 0 &&
           offloadSeconds > 0;
  }
  /// Bandwidth of the largest message with the latency taken off.
  double linkBandwidth() const {
    auto [bytes, seconds] = pointToPoint.back();
    return bytes / std::max(seconds - latency, 0.5 * seconds);
  }
};

/// Runs the runtime's transfer measurement on `ranks` local ranks with the
/// progress mode `progress` (RATRAIN_PROGRESS: thread or inline) and the
/// helper's `options` (" --loaded": the loaded message time).
RuntimeTransfers measureRuntimeTransfers(const char *argv0,
                                         const char *progress, int ranks = 2,
                                         const char *options = "") {
  RuntimeTransfers result;
#if defined(RATRAIN_CALIBRATE_MPIEXEC) && defined(RATRAIN_CALIBRATE_MPI_HELPER)
  // The helper sits next to this executable (or where the build put it).
  std::string helper = RATRAIN_CALIBRATE_MPI_HELPER;
  std::string self = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&measureRuntimeTransfers));
  if (!self.empty()) {
    llvm::SmallString<256> sibling(llvm::sys::path::parent_path(self));
    llvm::sys::path::append(sibling, "ratrain-calibrate-mpi");
    if (llvm::sys::fs::can_execute(sibling))
      helper = std::string(sibling);
  }
  if (!llvm::sys::fs::can_execute(helper))
    return result;
  // Open MPI refuses root without these; two ranks may exceed the slots.
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  setenv("RATRAIN_PROGRESS_LINE", "never", 0);
  setenv("RATRAIN_PROGRESS", progress, 1);
  std::string arguments =
      " -np " + std::to_string(ranks) + " --oversubscribe -x RATRAIN_PROGRESS ";
  std::string helperOptions = std::string(quick ? " --quick" : "") + options;
  result.command = "RATRAIN_PROGRESS=" + std::string(progress) + " " +
                   llvm::sys::path::filename(RATRAIN_CALIBRATE_MPIEXEC).str() +
                   arguments + llvm::sys::path::filename(helper).str() +
                   helperOptions;
  std::string shell = "timeout 180 '" RATRAIN_CALIBRATE_MPIEXEC "'" +
                      arguments + "'" + helper + "'" + helperOptions +
                      " </dev/null";
  FILE *pipe = popen(shell.c_str(), "r");
  if (!pipe)
    return result;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe)) {
    llvm::SmallVector<llvm::StringRef> words;
    llvm::StringRef(line).trim().split(words, ' ', -1, false);
    double x = 0, y = 0;
    if (words.size() == 2 && words[0] == "latency" && !words[1].getAsDouble(x))
      result.latency = x;
    else if (words.size() == 2 && words[0] == "progress-share" &&
             !words[1].getAsDouble(x) && x >= 0 && x <= 1)
      result.progressShare = x;
    else if (words.size() == 3 && !words[1].getAsDouble(x) &&
             !words[2].getAsDouble(y)) {
      if (words[0] == "p2p")
        result.pointToPoint.push_back({x, y});
      else if (words[0] == "dma")
        result.dmaBytes = x, result.dmaSeconds = y;
      else if (words[0] == "exchange")
        result.exchangeBytes = x, result.exchangeSeconds = y;
      else if (words[0] == "offload")
        result.offloadBytes = x, result.offloadSeconds = y;
      else if (words[0] == "loaded")
        result.loadedBytes = x, result.loadedSeconds = y;
    }
  }
  if (pclose(pipe) != 0)
    return RuntimeTransfers{result.command};
#else
  (void)argv0;
  (void)progress;
  (void)ranks;
  (void)options;
#endif
  return result;
}

} // namespace

/// `--peaks`: each CPU's peaks alone and all CPUs' at once, as JSON to -o.
static int writePeaks(const std::function<int(const llvm::Twine &)> &fail) {
  ConcurrentPeaks peaks;
  std::string error;
  if (!measureConcurrentPeaks(quick ? 10000000 : 20000000, 3, peaks, error))
    return fail(error);
#ifdef RATRAIN_HAVE_KERNELS
  const bool bf16Widened = kn::bf16Products() == kn::Bf16Products::Widen;
#else
  const bool bf16Widened = false;
#endif
  if (outputPath == "-") {
    printConcurrentPeaksJson(peaks, bf16Widened, llvm::outs());
    return 0;
  }
  if (llvm::Error e =
          llvm::writeToOutput(outputPath, [&](llvm::raw_ostream &out) {
            printConcurrentPeaksJson(peaks, bf16Widened, out);
            return llvm::Error::success();
          }))
    return fail(outputPath + ": " + llvm::toString(std::move(e)));
  return 0;
}

int main(int argc, char **argv) {
  ratrain::InitTool init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "measure this host and write a RATrain "
                              "machine file\n");
#ifdef RATRAIN_HAVE_KERNELS
  // An invalid RATRAIN_BF16_PRODUCTS stops the tool before it measures.
  (void)kn::bf16Products();
#endif
  auto fail = [](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), "ratrain-calibrate")
        << message << "\n";
    return 1;
  };
  if (!(ddrFraction > 0 && ddrFraction <= 1))
    return fail("--ddr-fraction must be in (0, 1]");
  if (peaksOnly)
    return writePeaks(fail);
  if (modelPaths.empty() && (modelSeqLen.getNumOccurrences() ||
                             !microBatchSizes.empty() || !addGemmsTo.empty()))
    return fail("--seq-len, --micro-batch-sizes and --add-gemms go with "
                "--model");
  // The models' GEMM calls, read before anything is measured so that a bad
  // config fails at once.
  llvm::Expected<ModelGemms> models = readModelGemms(
      modelPaths, modelSeqLen,
      std::vector<int64_t>(microBatchSizes.begin(), microBatchSizes.end()));
  if (!models)
    return fail(llvm::toString(models.takeError()));
  if (!addGemmsTo.empty()) {
#ifdef RATRAIN_HAVE_KERNELS
    return addModelGemms(
        addGemmsTo,
        outputPath == "-" ? std::string(addGemmsTo) : std::string(outputPath),
        models->calls, models->stepBytes, models->names, quick ? 2 : 3, fail);
#else
    return fail("--add-gemms: this build has no Halide kernels to time");
#endif
  }

  auto started = Clock::now();
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

  // DDR bandwidth: triad on arrays well beyond L3 (n floats each in all),
  // on `streams` threads at once. Every thread's rate over its own CPU
  // time, summed: what the memory system delivers while all of them stream
  // (wall time would count the time other users' processes hold the CPUs).
  const size_t n = quick ? (8u << 20) : (16u << 20); // floats per array
  auto triadOn = [&](unsigned streams) {
    std::vector<std::vector<float>> arrays(3 * streams);
    for (auto &a : arrays)
      a.assign(n / streams + 16, 1.0f);
    double best = 0;
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
      best = std::max(best, total);
    }
    return best;
  };
  // All clusters at once, and one cluster while the others idle.
  double triadAll = triadOn(cpus);
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 3.0f), d(n, 0.5f);
  double triadOne = bestRate(reps, [&] {
    return triadKernel(a.data(), b.data(), c.data(), n, 1.0001f);
  });
  double triadCluster =
      coresPerCluster == 1 ? triadOne : triadOn(coresPerCluster);
  double adamOne = bestRate(reps, [&] {
    return adamKernel(a.data(), b.data(), c.data(), d.data(), n);
  });
  double ddrPerCluster = triadAll / clusters;
  // A cluster streaming alone gets at least its share of all at once and at
  // most all of it (the machine file's bounds; measurements of a shared
  // host can fall outside them).
  double ddrAlone = std::clamp(triadCluster, ddrPerCluster, triadAll);
  double memoryEfficiency = std::clamp(adamOne / triadOne, 0.05, 1.0);
  llvm::errs() << llvm::formatv("  triad: {0:f1} GB/s all CPUs, {1:f1} GB/s "
                                "one cluster, {2:f1} GB/s one CPU; Adam "
                                "update {3:f1} GB/s\n",
                                triadAll / 1e9, triadCluster / 1e9,
                                triadOne / 1e9, adamOne / 1e9);

  // memcpy ("DMA") and the intra-node link between threads: the figures
  // when the runtime is not built (or --no-mpi).
  double copyOne = bestRate(reps, [&] {
    std::memcpy(a.data(), b.data(), n * sizeof(float));
    return double(n * sizeof(float));
  });
  double threadBandwidth = 0;
  for (int r = 0; r < reps; ++r) {
    // The producer writes, the consumer (another thread) copies it out.
    std::thread producer([&] { std::fill(c.begin(), c.end(), float(r)); });
    producer.join();
    double t = threadCpuSeconds(
        [&] { std::memcpy(d.data(), c.data(), n * sizeof(float)); });
    threadBandwidth = std::max(threadBandwidth, double(n * sizeof(float)) / t);
  }
  double threadLatency = 1;
  if (cpus > 1)
    for (int r = 0; r < reps; ++r)
      threadLatency =
          std::min(threadLatency, pingPongLatency(quick ? 5000 : 20000));
  else
    threadLatency = 1e-6;
  llvm::errs() << llvm::formatv("  memcpy {0:f1} GB/s; thread-to-thread copy "
                                "{1:f1} GB/s, latency {2:f2} us\n",
                                copyOne / 1e9, threadBandwidth / 1e9,
                                threadLatency * 1e6);

  // Kernel efficiencies.
  std::string kernelNotes;
  llvm::raw_string_ostream notes(kernelNotes);
  double gemmEfficiency = 0.45; // assumption without kernels or OpenBLAS
  // Attention efficiencies (0 without the kernels: assumed below; the
  // bf16 ones then absent) and time fits.
  AttentionCalibration attention;
  KernelTimeFit gemmFitF32, gemmFitF16;
  MeasuredGemms gemmMeasured;
  // The 16-bit peak is the rate of the path the bf16 kernels take: the dot
  // product's, or the fp32 FMA's where they widen (kernels::bf16Products).
#ifdef RATRAIN_HAVE_KERNELS
  const bool bf16Widened = kn::bf16Products() == kn::Bf16Products::Widen;
#else
  const bool bf16Widened = false;
#endif
  // The dot loop's peak where the kernels use the dot product and this
  // build measured it; the fp32 FMA's otherwise.
  const bool bf16AtDotPeak = !bf16Widened && bf16PerCore > 0;
  double bf16Peak = bf16AtDotPeak ? bf16PerCore : fp32PerCore;
#ifdef RATRAIN_HAVE_KERNELS
  if (bf16Widened && bf16PerCore > fp32PerCore)
    llvm::errs() << llvm::formatv(
        "warning: the bf16 kernels widen to fp32 (RATRAIN_BF16_PRODUCTS or "
        "this CPU's rule), but vdpbf16ps runs at {0:f1} GFLOP/s per core "
        "against {1:f1} for fp32 FMA: RATRAIN_BF16_PRODUCTS=dot may be "
        "faster\n",
        bf16PerCore / 1e9, fp32PerCore / 1e9);
  else if (bf16AtDotPeak && bf16PerCore < fp32PerCore)
    llvm::errs() << llvm::formatv(
        "warning: the bf16 kernels run on vdpbf16ps at {0:f1} GFLOP/s per "
        "core against {1:f1} for fp32 FMA: RATRAIN_BF16_PRODUCTS=widen may be "
        "faster\n",
        bf16PerCore / 1e9, fp32PerCore / 1e9);
#endif
  // The optimizer update's own rates (cluster.optimizer_bandwidth, _alone
  // and the _f16 pair): {every cluster updating, one alone}.
  std::pair<double, double> optimizerF32, optimizerF16;
  // A decoder layer's element-wise kernels as a step runs them
  // (cluster.elementwise_bandwidth and _f16).
  double elementwiseF32 = 0, elementwiseF16 = 0;
#ifdef RATRAIN_HAVE_KERNELS
  {
    for (std::vector<float> *v : {&a, &b, &c, &d})
      std::vector<float>().swap(*v);
    // One cluster: its cores' worth of Halide workers; rates are per
    // CPU-second, i.e. per busy core.
    kn::setNumThreads(int(coresPerCluster));
    const int kreps = quick ? 2 : 3;
    GemmFigure gemms[] = {
        {"tiny LLaMA MLP up (2048 tokens, h 256 -> ffn 688)", 2048, 688, 256},
        {"LLaMA-7B QKV/O projection (1024 tokens, h 4096)", 1024, 4096, 4096}};
    double gemmSum = 0;
    for (GemmFigure &g : gemms) {
      measureGemm(g, kreps);
      if (g.fp32 <= 0 || g.bf16 <= 0)
        return fail("the Halide GEMM failed");
      gemmSum += g.fp32 / fp32PerCore + g.bf16 / bf16Peak;
      llvm::errs() << llvm::formatv("  Halide GEMM NT {0}x{1}x{2}: fp32 {3:f1} "
                                    "GFLOP/s ({4:f2} of peak), bf16 {5:f1} "
                                    "({6:f2})\n",
                                    g.m, g.n, g.k, g.fp32 / 1e9,
                                    g.fp32 / fp32PerCore, g.bf16 / 1e9,
                                    g.bf16 / bf16Peak);
      notes << llvm::formatv(
          "#  [M]   NT {0} x {1} x {2}, {3}: fp32 {4:f1} GFLOP/s per core = "
          "{5:f3} of the FP32 peak, bf16 {6:f1} = {7:f3} of the bf16 peak\n",
          g.m, g.n, g.k, g.what, g.fp32 / 1e9, g.fp32 / fp32PerCore,
          g.bf16 / 1e9, g.bf16 / bf16Peak);
    }
    gemmEfficiency = std::clamp(gemmSum / (2 * std::size(gemms)), 0.05, 1.0);

    // The shape-aware GEMM model (gemm_fit) and the calls measured for it
    // and for the models given (gemm_measured).
    const int64_t fitWorkingSet =
        std::max<int64_t>(l3.bytes, int64_t(16) << 20);
    GemmCalibration gemmCalibration = calibrateGemms(
        kreps, fitWorkingSet, coresPerCluster, fp32PerCore, bf16Peak,
        models->calls, models->stepBytes, models->description, notes);
    gemmFitF32 = gemmCalibration.fit.f32;
    gemmFitF16 = gemmCalibration.fit.f16;
    gemmMeasured = std::move(gemmCalibration.measured);

    // Attention: the efficiencies and the shape-aware time fits.
    if (llvm::Error error =
            calibrateAttention(kreps, fitWorkingSet, coresPerCluster,
                               fp32PerCore, bf16Peak, attention, notes))
      return fail(llvm::toString(std::move(error)));

    // Memory-bound kernels: the triad's share, the update's rates and, on
    // the first model's layer (else the tiny LLaMA's), the element-wise
    // kernels' rates, on operands cycled through its step's working set.
    const ModelConfig layer = models->layerModel.value_or(tinyLlamaLayer());
    llvm::Expected<MemoryBoundFigures> memoryBound = calibrateMemoryBound(
        quick, kreps, coresPerCluster, clusters, ddrAlone, layer,
        models->layerModel ? models->layerMicroBatchSize : 1,
        modelGemmWorkingSet(stepWorkingSetBytes(layer), fitWorkingSet), notes);
    if (!memoryBound)
      return fail(llvm::toString(memoryBound.takeError()));
    memoryEfficiency = memoryBound->memoryBound;
    optimizerF32 = memoryBound->optimizerF32;
    optimizerF16 = memoryBound->optimizerF16;
    elementwiseF32 = memoryBound->elementwiseF32;
    elementwiseF16 = memoryBound->elementwiseF16;
  }
#elif defined(RATRAIN_HAVE_CBLAS)
  double sgemmRate = 0;
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
#ifndef RATRAIN_HAVE_KERNELS
  attention.forward = 0.6 * gemmEfficiency;
  attention.backward = 0.5 * gemmEfficiency;
  if (!models->calls.empty())
    llvm::errs() << "  warning: --model: this build has no Halide kernels, "
                    "so no GEMM calls are measured (gemm_measured)\n";
#endif

  // Transfers through the runtime.
  // The default progress mode (a progress thread owns MPI) gives the
  // figures; inline progress is measured for comparison.
  RuntimeTransfers transfers, inlineTransfers;
  if (!noMpi && cpus > 1) {
    transfers = measureRuntimeTransfers(argv[0], "thread");
    if (transfers.ok())
      inlineTransfers = measureRuntimeTransfers(argv[0], "inline");
    if (transfers.ok())
      llvm::errs() << llvm::formatv(
          "  runtime: p2p latency {0:f2} us, {1:f1} GB/s; DMA {2:f1} GB/s; "
          "offload+reload {3:f1} GB/s\n",
          transfers.latency * 1e6, transfers.linkBandwidth() / 1e9,
          transfers.dmaBytes / transfers.dmaSeconds / 1e9,
          transfers.offloadBytes / transfers.offloadSeconds / 1e9);
    else if (!transfers.command.empty())
      llvm::errs() << "  warning: `" << transfers.command
                   << "` failed; using the thread figures\n";
  }
  bool runtimeTransfers = transfers.ok();
  double linkBandwidth =
      runtimeTransfers ? transfers.linkBandwidth() : threadBandwidth;
  // Messages between virtual clusters: two ranks per cluster, all computing
  // (network.oversubscribed_latency, the latency of the split machine's
  // links inside the node). The message's bytes at the link bandwidth are
  // taken off.
  RuntimeTransfers loadedTransfers;
  double oversubscribedLatency = 0;
  if (runtimeTransfers) {
    loadedTransfers = measureRuntimeTransfers(argv[0], "thread",
                                              int(2 * clusters), " --loaded");
    if (loadedTransfers.loadedSeconds > 0) {
      oversubscribedLatency = std::max(
          transfers.latency, loadedTransfers.loadedSeconds -
                                 loadedTransfers.loadedBytes / linkBandwidth);
      llvm::errs() << llvm::formatv(
          "  runtime, 2 ranks per cluster computing: {0} KiB one way in "
          "{1:f1} us (mean) -> oversubscribed latency {2:f1} us; progress "
          "threads take {3:f1}% of a core while a message is outstanding\n",
          int64_t(loadedTransfers.loadedBytes) >> 10,
          loadedTransfers.loadedSeconds * 1e6, oversubscribedLatency * 1e6,
          loadedTransfers.progressShare * 100);
    } else {
      llvm::errs() << "  warning: `" << loadedTransfers.command
                   << "` failed; no oversubscribed latency\n";
    }
  }
  double latency = runtimeTransfers ? transfers.latency : threadLatency;
  double dmaBandwidth =
      runtimeTransfers ? transfers.dmaBytes / transfers.dmaSeconds : copyOne;
  double offloadBandwidth =
      runtimeTransfers ? transfers.offloadBytes / transfers.offloadSeconds
                       : copyOne;

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
  // One cluster's DDR is not all of the node's: the simulator shares it.
  if (clusters > 1)
    cs.ddrBandwidthAlone = ddrAlone;
  std::tie(cs.optimizerBandwidth, cs.optimizerBandwidthAlone) = optimizerF32;
  std::tie(cs.optimizerBandwidthF16, cs.optimizerBandwidthAloneF16) =
      optimizerF16;
  cs.elementwiseBandwidth = elementwiseF32;
  cs.elementwiseBandwidthF16 = elementwiseF16;
  cs.dmaBandwidth = dmaBandwidth;
  cs.dmaChannels = 1;
  // The runtime's DMA engine is a thread copying with memcpy on the
  // cluster's cores.
  cs.dmaOnCores = true;
  cs.peakFlopsF32 = fp32PerCore * coresPerCluster;
  cs.peakFlopsF16 = bf16Peak * coresPerCluster;
  cs.efficiency.gemm = gemmEfficiency;
  cs.gemmFit.f32 = gemmFitF32;
  cs.gemmFit.f16 = gemmFitF16;
  cs.gemmMeasured = gemmMeasured;
  cs.efficiency.attentionForward = attention.forward;
  cs.efficiency.attentionBackward = attention.backward;
  cs.efficiency.attentionForwardF16 = attention.forwardF16;
  cs.efficiency.attentionBackwardF16 = attention.backwardF16;
  cs.attentionForwardFit = attention.forwardFit;
  cs.attentionBackwardFit = attention.backwardFit;
  cs.efficiency.memoryBound = memoryEfficiency;
  // The Halide attention kernels are flash-style: no S x S matrix reaches
  // memory, only the per-row lse is saved.
#ifdef RATRAIN_HAVE_KERNELS
  cs.fusedAttention = true;
  // bf16 attention runs its products at the 16-bit peak (vdpbf16ps, or the
  // fp32 FMA where the kernels widen), with its own efficiencies above.
  cs.attentionAtF32Peak = false;
#else
  cs.fusedAttention = false;
#endif
  machine.network.intraNode = {linkBandwidth, latency};
  machine.network.interNode = {linkBandwidth, latency};
  machine.network.collective = CollectiveAlgorithm::Ring;
  machine.network.oversubscribedLatency = oversubscribedLatency;
  // The ranks' cores move their collectives' data (Open MPI's shared
  // memory): what each receives per second while both exchange. [M]
  if (runtimeTransfers && transfers.exchangeSeconds > 0)
    machine.network.coreCopyBandwidth =
        transfers.exchangeBytes / transfers.exchangeSeconds;
  if (oversubscribedLatency > 0)
    machine.network.progressCoreShare = loadedTransfers.progressShare;
  // Offload tier: host RAM the clusters' DDR arenas leave, half of it (the
  // rest for the OS and the processes). [D/U]
  machine.offload.kind = OffloadTierKind::Host;
  machine.offload.bytesPerNode = int64_t(double(ram) * (1 - ddrFraction) / 2);
  machine.offload.bandwidth = offloadBandwidth;
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
#ifdef RATRAIN_KERNELS_ID
     << "# Kernels: the runtime's Halide kernels, build id " RATRAIN_KERNELS_ID
        ".\n"
#endif
     << "# SI base units: bytes, bytes/s, FLOP/s, seconds. Rates are the best "
        "of a few runs, per\n# CPU-second of the measuring threads (the host "
        "is shared), transfers per wall second.\n#\n"
     << "# Measured [M], derived [D], assumed [U]:\n"
     << llvm::formatv("#  [M] caches (sysfs): L2 {0} B per core -> "
                      "am_bytes_per_core; L3 {1} B shared by {2} CPUs -> "
                      "gsm_bytes (the cluster's share)\n",
                      l2.bytes, l3.bytes, l3.sharedBy)
     << llvm::formatv("#  [D] ddr_bytes = MemTotal {0} B * {1} / {2} "
                      "clusters\n",
                      ram, double(ddrFraction), clusters)
     << llvm::formatv("#  [M] peaks: FP32 FMA loop ({0}, -O3 -march=native) "
                      "{1:f1} GFLOP/s per core -> peak_flops_f32; bf16 dot "
                      "loop (vdpbf16ps) {2:f1} GFLOP/s per core{3}\n",
                      fmaIsaName(), fp32PerCore / 1e9, bf16PerCore / 1e9,
                      bf16PerCore <= 0 ? " (unavailable)" : "")
     << llvm::formatv("#  [D] bf16 products: {0} -> peak_flops_f16 = the {1} "
                      "peak\n",
                      bf16AtDotPeak ? "vdpbf16ps"
                      : bf16Widened ? "widened to fp32 (the kernels' fp32 FMA)"
                                    : "no vdpbf16ps loop in this build",
                      bf16AtDotPeak ? "bf16 dot loop's" : "FP32 FMA")
     << llvm::formatv("#  [M] STREAM triad: {0:f1} GB/s with all CPUs "
                      "(ddr_bandwidth = that / clusters), {1:f1} GB/s on one "
                      "cluster alone{2}, {3:f1} GB/s on one CPU\n",
                      triadAll / 1e9, triadCluster / 1e9,
                      clusters > 1
                          ? llvm::formatv(" (-> ddr_bandwidth_alone {0:f1} "
                                          "GB/s, within [ddr_bandwidth, all "
                                          "CPUs])",
                                          ddrAlone / 1e9)
                                .str()
                          : std::string(),
                      triadOne / 1e9);
#ifdef RATRAIN_HAVE_KERNELS
  os << "#  [M] efficiency: the runtime's Halide kernels (ratrain_kernels) on "
     << coresPerCluster << " thread(s), one cluster:\n"
     << "#      gemm = mean of fp32 / FP32 peak and bf16 / bf16 peak over "
        "the GEMMs below;\n"
     << "#      attention_forward / _backward = mean over the first two "
        "attention shapes below of the fp32 kernels' achieved / FP32 peak,\n"
     << "#      attention_forward_f16 / _backward_f16 the same of the bf16 "
        "kernels / bf16 peak\n"
     << "#      (FLOPs 4 S^2/2 D per head "
        "forward, 2.5x backward,\n#      as the cost model counts); "
        "memory_bound = mean of AdamW and RMSNorm / the triad of one "
        "cluster alone, each\n"
     << "#      capped at 1\n"
     << kernelNotes;
#else
  os << llvm::formatv("#  [M] Adam loop {0:f1} GB/s on one core -> "
                      "memory_bound = Adam / triad (the Halide kernels are "
                      "not built: fallback)\n",
                      adamOne / 1e9);
#ifdef RATRAIN_HAVE_CBLAS
  os << llvm::formatv("#  [M] OpenBLAS sgemm {0:f1} GFLOP/s on one core -> "
                      "gemm = sgemm / FP32 peak (the Halide kernels are not "
                      "built: fallback)\n",
                      sgemmRate / 1e9);
#else
  os << "#  [U] gemm efficiency 0.45 (built without the Halide kernels and "
        "OpenBLAS)\n";
#endif
  os << "#  [U] attention_forward = 0.6 * gemm, attention_backward = 0.5 * "
        "gemm\n";
#endif
  os << "#  [D] dma_on_cores true: the runtime's DMA engine (rt.dma) is a "
        "thread copying with memcpy on the cluster's cores\n";
#ifdef RATRAIN_HAVE_KERNELS
  os << "#  [D] fused_attention true: the Halide attention kernels tile the "
        "scores through L2/L1 and save only lse (no S x S matrix)\n"
     << "#  [D] attention_peak f16: the bf16 kernels' products run at the "
        "16-bit peak above (fp16 attention computes in fp32 and is priced as "
        "bf16)\n";
#else
  os << "#  [U] fused_attention false\n";
#endif
  if (runtimeTransfers) {
    os << "#  [M] transfers through the runtime (rt::Runtime, 2 ranks, Open "
          "MPI shared memory): `"
       << transfers.command << "`:\n";
    os << llvm::formatv("#      ping-pong of zero-byte signals: {0:f2} us "
                        "one way -> intra_node.latency (the progress "
                        "threads' wake-ups and polling, every "
                        "RATRAIN_PROGRESS_POLL_US, on shared cores)\n",
                        transfers.latency * 1e6);
    os << "#      ping-pong of DDR buffers, one way:";
    for (auto [bytes, seconds] : transfers.pointToPoint)
      os << llvm::formatv(" {0} MiB {1:f1} us ({2:f1} GB/s);",
                          int64_t(bytes) >> 20, seconds * 1e6,
                          bytes / seconds / 1e9);
    os << llvm::formatv("\n#      intra_node.bandwidth = {0} MiB / (time - "
                        "latency)\n",
                        int64_t(transfers.pointToPoint.back().first) >> 20);
    os << llvm::formatv("#      rt.dma of {0} MiB DDR -> DDR on both ranks "
                        "at once: {1:f1} GB/s -> dma_bandwidth\n",
                        int64_t(transfers.dmaBytes) >> 20, dmaBandwidth / 1e9);
    if (transfers.exchangeSeconds > 0)
      os << llvm::formatv("#      rt.send + rt.recv of {0} MiB both ways at "
                          "once, on both ranks, walking 64 MiB (from "
                          "memory): {1:f1} GB/s received a rank "
                          "-> core_copy_bandwidth (the ranks' cores copy "
                          "and reduce their collectives' data)\n",
                          int64_t(transfers.exchangeBytes) >> 20,
                          transfers.exchangeBytes / transfers.exchangeSeconds /
                              1e9);
    os << llvm::formatv("#      rt.offload + rt.reload of {0} MiB to host "
                        "memory on both ranks at once: {1:f1} GB/s -> "
                        "offload.bandwidth\n",
                        int64_t(transfers.offloadBytes / 2) >> 20,
                        offloadBandwidth / 1e9);
    if (oversubscribedLatency > 0)
      os << llvm::formatv(
          "#  [M] `{0}`: {1} ranks (2 per cluster) as {2} pipelines of 2, "
          "the first stage computing, then sending {3} KiB, the second "
          "waiting for it, then computing: {4:f1} us from send to the "
          "receiver's wait returning (mean) - {3} KiB at "
          "intra_node.bandwidth -> "
          "network.oversubscribed_latency {5:f1} us (the split machine's "
          "intra-node latency: docs/machine-model.md); the progress "
          "threads' CPU time over the time their ranks had a message "
          "outstanding -> network.progress_core_share {6:f3}\n",
          loadedTransfers.command, 2 * clusters, clusters,
          int64_t(loadedTransfers.loadedBytes) >> 10,
          loadedTransfers.loadedSeconds * 1e6, oversubscribedLatency * 1e6,
          loadedTransfers.progressShare);
    if (inlineTransfers.ok())
      os << llvm::formatv("#      (for comparison, RATRAIN_PROGRESS=inline, "
                          "no progress thread: latency {0:f2} us, {1} MiB "
                          "{2:f1} GB/s)\n",
                          inlineTransfers.latency * 1e6,
                          int64_t(inlineTransfers.pointToPoint.back().first) >>
                              20,
                          inlineTransfers.linkBandwidth() / 1e9);
    os << llvm::formatv("#      (for comparison, between threads: memcpy "
                        "{0:f1} GB/s, copy of another thread's buffer "
                        "{1:f1} GB/s, cache-line ping-pong {2:f3} us)\n",
                        copyOne / 1e9, threadBandwidth / 1e9,
                        threadLatency * 1e6);
  } else {
    os << llvm::formatv("#  [M] memcpy {0:f1} GB/s -> dma_bandwidth and "
                        "offload.bandwidth; copying another thread's buffer "
                        "{1:f1} GB/s and cache-line ping-pong {2:f3} us one "
                        "way -> intra_node (the MPI runtime was not measured: "
                        "fallback)\n",
                        copyOne / 1e9, threadBandwidth / 1e9,
                        threadLatency * 1e6);
  }
  os << "#  [U] one node: inter_node repeats intra_node\n"
     << llvm::formatv("#  [D/U] offload tier (host RAM): bytes_per_node = "
                      "MemTotal * (1 - {0}) / 2 (the rest for the OS), "
                      "latency 1 us\n",
                      double(ddrFraction))
     << "# The kernel build reads cluster: gsm_bytes, am_bytes_per_core and "
        "cores as plain integers.\n"
     << body;

  if (outputPath == "-") {
    llvm::outs() << text;
    return sink == 12345.0f ? 2 : 0; // keep `sink` alive
  }
  // Written to a temporary file next to the output and renamed over it:
  // an interrupted or failed write leaves the previous file as it was.
  if (llvm::Error error =
          llvm::writeToOutput(outputPath, [&](llvm::raw_ostream &out) {
            out << text;
            return llvm::Error::success();
          }))
    return fail(outputPath + ": " + llvm::toString(std::move(error)));
  llvm::errs() << llvm::formatv(
      "wrote {0} ({1:f1} s)\n", outputPath,
      std::chrono::duration<double>(Clock::now() - started).count());
  return sink == 12345.0f ? 2 : 0;
}
