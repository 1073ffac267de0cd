//===- HostMachine.cpp - The calibrated machine file of this host ---------===//
//
// `--machine host` and `ratrain machine --calibrate`: the machine file
// ratrain-calibrate measures on this host, cached under the driver's cache
// by the host's identity (CPU vendor, family, model, stepping, name, a hash
// of its feature flags, logical CPUs and memory), so that a machine of
// another CPU generation is measured afresh instead of reusing numbers that
// are not its own (a Zen 5 file predicts steps about 2x too short on Zen 4).
// The hash covers the kernels' build id too: the file holds the measured
// speed of this build's Halide kernels (the GEMM and attention time fits),
// which a build with other kernels, or a ratrain-calibrate that measures
// other entries, must measure again (runtime/kernels/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/GemmCalls.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <thread>

#ifndef RATRAIN_KERNELS_ID
#define RATRAIN_KERNELS_ID "none" // built without the runtime's kernels
#endif

using llvm::StringRef;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace ratrain::driver {

std::string cacheRoot() {
  llvm::SmallString<256> root;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    root = xdg;
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    root = home;
    path::append(root, ".cache");
  } else {
    path::system_temp_directory(/*ErasedOnReboot=*/false, root);
  }
  path::append(root, "ratrain");
  return std::string(root);
}

/// The first value of `key` in /proc/cpuinfo or /proc/meminfo text.
static StringRef field(StringRef text, StringRef key) {
  llvm::SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (StringRef line : lines) {
    auto [name, value] = line.split(':');
    if (name.trim() == key)
      return value.trim();
  }
  return "";
}

HostIdentity getHostIdentity() {
  std::string cpuinfo, meminfo;
  if (auto buffer = llvm::MemoryBuffer::getFileAsStream("/proc/cpuinfo"))
    cpuinfo = (*buffer)->getBuffer().str();
  if (auto buffer = llvm::MemoryBuffer::getFileAsStream("/proc/meminfo"))
    meminfo = (*buffer)->getBuffer().str();
  HostIdentity host;
  StringRef vendor = field(cpuinfo, "vendor_id");
  StringRef family = field(cpuinfo, "cpu family");
  StringRef model = field(cpuinfo, "model");
  StringRef stepping = field(cpuinfo, "stepping");
  StringRef name = field(cpuinfo, "model name");
  StringRef flags = field(cpuinfo, "flags");
  if (flags.empty())
    flags = field(cpuinfo, "Features"); // AArch64
  unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  StringRef memory = field(meminfo, "MemTotal");
  host.description =
      llvm::formatv("{0} (vendor {1}, family {2}, model {3}, stepping {4}), "
                    "{5} logical CPUs, {6} memory",
                    name.empty() ? "unknown CPU" : name,
                    vendor.empty() ? "?" : vendor,
                    family.empty() ? "?" : family, model.empty() ? "?" : model,
                    stepping.empty() ? "?" : stepping, cpus,
                    memory.empty() ? "?" : memory)
          .str();
  llvm::SHA256 hash;
  hash.update(host.description);
  hash.update(flags);
  hash.update(StringRef("kernels " RATRAIN_KERNELS_ID));
  // What the calibration measures: a file from a calibration that measured
  // less or otherwise (1: before network.core_copy_bandwidth; 2: the
  // exchange repeated one cached 8 MiB slice; 3: the offload store's host
  // copies on 4 KiB pages; 4: before dma_on_cores; 5: before
  // ddr_bandwidth_alone and gemm_measured; 6: before optimizer_bandwidth;
  // 7: before elementwise_bandwidth, with every GEMM operand cycled) is not
  // reused.
  hash.update(StringRef("calibration 8"));
  std::string digest = llvm::toHex(hash.final(), /*LowerCase=*/true);
  host.key =
      llvm::formatv("host-{0}-{1}-{2}-{3}c-{4}",
                    vendor.empty() ? "cpu" : vendor.lower(),
                    family.empty() ? "0" : family, model.empty() ? "0" : model,
                    cpus, StringRef(digest).take_front(12))
          .str();
  return host;
}

std::string hostMachinePath() {
  llvm::SmallString<256> file(cacheRoot());
  path::append(file, "machines", getHostIdentity().key + ".yaml");
  return std::string(file);
}

/// Runs ratrain-calibrate's `command` (printing it first with -v); its exit
/// status, and in `message` why it could not run.
static int runCalibrate(llvm::ArrayRef<std::string> command, bool verbose,
                        std::string &message) {
  if (verbose)
    note(formatCommand(command));
  return execute(command, /*stdoutFile=*/"", std::nullopt, message);
}

llvm::Expected<std::string> calibrateHostMachine(const Toolchain &tools,
                                                 bool quick, bool verbose,
                                                 StringRef model,
                                                 int64_t seqLen) {
  if (llvm::Error error = requireFile(tools.calibrate, "ratrain-calibrate"))
    return std::move(error);
  std::string target = hostMachinePath();
  if (std::error_code ec = fs::create_directories(path::parent_path(target)))
    return makeError(llvm::formatv("{0}: cannot create the cache folder: {1}",
                                   path::parent_path(target), ec.message()));
  // ratrain-calibrate writes a temporary file and renames it into place
  // once complete: an interrupted calibration leaves no half machine file.
  std::vector<std::string> command = {tools.calibrate, "-o", target};
  if (quick)
    command.push_back("--quick");
  if (!model.empty()) {
    command.push_back("--model");
    command.push_back(model.str());
    if (seqLen > 0)
      command.push_back("--seq-len=" + std::to_string(seqLen));
  }
  note(llvm::formatv("calibrating this host ({0}) into {1}; this takes "
                     "{2} seconds",
                     getHostIdentity().description, target,
                     quick ? "15 to 25" : "25 to 45")
           .str());
  std::string message;
  int status = runCalibrate(command, verbose, message);
  if (status != 0)
    return makeError(
        llvm::formatv("ratrain-calibrate failed ({0}){1}",
                      status < 0 ? "could not be run"
                                 : "exit status " + std::to_string(status),
                      message.empty() ? "" : ": " + message));
  return target;
}

void measureModelGemms(const Toolchain &tools, StringRef machineFile,
                       StringRef model, int64_t seqLen, int64_t microBatch,
                       bool verbose) {
  HFImportOptions importOptions;
  importOptions.seqLen = seqLen;
  llvm::Expected<ModelConfig> config = loadHFConfig(model, importOptions);
  if (!config) {
    llvm::consumeError(config.takeError());
    return;
  }
  llvm::Expected<MachineModel> machine = loadMachineModel(machineFile);
  if (!machine) {
    llvm::consumeError(machine.takeError());
    return;
  }
  const ClusterSpec &cluster = machine->cluster;
  if (!cluster.gemmFit.f16.present() && !cluster.gemmFit.f32.present())
    return; // calibrated without the kernels: nothing to time them with
  std::vector<int64_t> sizes(std::begin(kMeasuredMicroBatchSizes),
                             std::end(kMeasuredMicroBatchSizes));
  if (microBatch > 0 && !llvm::is_contained(sizes, microBatch))
    sizes.push_back(microBatch);
  size_t missing = unmeasuredGemmCalls(distinctGemmCalls(*config, sizes),
                                       cluster.gemmMeasured)
                       .size();
  if (missing == 0)
    return;
  std::vector<std::string> command = {
      tools.calibrate,
      "--add-gemms",
      machineFile.str(),
      "--model",
      model.str(),
      "--micro-batch-sizes=" +
          llvm::join(llvm::map_range(
                         sizes, [](int64_t b) { return std::to_string(b); }),
                     ",")};
  if (seqLen > 0)
    command.push_back("--seq-len=" + std::to_string(seqLen));
  note(llvm::formatv("timing {0} GEMM calls of {1} on this host into {2} "
                     "(once per model and sequence length)",
                     missing, path::filename(model), machineFile)
           .str());
  std::string message;
  int status = runCalibrate(command, verbose, message);
  if (status != 0)
    note(llvm::formatv("warning: timing the GEMM calls failed ({0}); the "
                       "shape fit prices them",
                       status < 0 ? message
                                  : "exit status " + std::to_string(status))
             .str());
}

llvm::Expected<std::string> resolveMachine(const Toolchain &tools,
                                           StringRef machine, bool verbose) {
  if (machine != "host")
    return machine.str();
  std::string cached = hostMachinePath();
  if (fs::exists(cached)) {
    if (verbose)
      note("--machine host: " + cached);
    return cached;
  }
  return calibrateHostMachine(tools, /*quick=*/false, verbose);
}

} // namespace ratrain::driver
