//===- Plan.cpp - ratrain plan and ratrain machine ------------------------===//
//
// `ratrain plan` prints the planner's ranking of parallel configurations
// (ratrain-plan); `ratrain machine` prints a machine file split into virtual
// clusters.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using llvm::StringRef;
namespace fs = llvm::sys::fs;

namespace ratrain::driver {

static const char *const kPlanHelp =
    R"(USAGE: ratrain plan MODEL.json --machine FILE [options] [-- ratrain-plan args]

Runs ratrain-plan on the model and the machine (split into virtual clusters
when --ranks exceeds its clusters) and prints its ranking of plans.
)";

static const char *const kMachineHelp =
    R"(USAGE: ratrain machine FILE|host [--ranks-per-cluster K] [-o OUT]
       ratrain machine --calibrate [--quick] [--model MODEL.json
                       [--seq-len N]]
       ratrain machine --host-file

With --ranks-per-cluster, prints the machine file with every cluster split
into K virtual clusters (1/K of the DDR, GSM, compute, DDR and DMA bandwidth
each; see docs/machine-model.md), the machine 'ratrain run' plans for when it
starts more ranks than the machine has clusters; without it, the file as it
is.

'host' is this host's calibrated machine file: ratrain-calibrate measures
the host on first use and the driver caches the result under
~/.cache/ratrain/machines/ by the CPU (vendor, family, model, stepping,
feature flags), the CPU count and the memory, so another CPU generation is
measured afresh. Every command takes --machine host.

OPTIONS:
  -o OUT                write to OUT instead of stdout
  --calibrate           measure this host now (again) and print the file's
                        path
  --quick               with --calibrate: shorter, noisier measurements
  --model MODEL.json    with --calibrate: also time the model's GEMM calls
                        (micro-batches of 1, 2 and 4 sequences) on this host;
                        the simulator and the planner then price those calls
                        at their measured time, not the shape fit's
                        (gemm_measured, docs/machine-model.md)
  --seq-len N           with --model: the training sequence length (default:
                        the config's)
  --host-file           print the path of this host's machine file
                        (measuring it first if there is none)
  -v, --verbose         print the commands run
)";

int planCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv) {
  llvm::Expected<Args> args = parseArgs("plan", argv, getPlanValueFlags(),
                                        {"--help", "-h", "-v", "--verbose"});
  if (!args)
    return fail(args.takeError());
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kPlanHelp << "\n" << kPlanFlagsHelp;
    return 0;
  }
  llvm::Expected<CompileOptions> options =
      getCompileOptions(tools, *args, "plan");
  if (!options)
    return fail(options.takeError());
  if (llvm::Error error = requireFile(tools.planTool, "ratrain-plan"))
    return fail(std::move(error));
  llvm::SmallString<256> dir;
  if (std::error_code ec = fs::createUniqueDirectory("ratrain", dir))
    return fail("cannot create a temporary folder: " + ec.message());
  int status = 1;
  if (llvm::Expected<PlannedMachine> machine = prepareMachine(*options, dir)) {
    std::vector<std::string> command = {tools.planTool,
                                        "--model",
                                        options->model,
                                        "--machine",
                                        machine->file,
                                        "--clusters",
                                        std::to_string(options->ranks),
                                        "--global-batch",
                                        std::to_string(options->globalBatch),
                                        "--policy",
                                        options->policy,
                                        "--schedule",
                                        options->schedule,
                                        "--transfers",
                                        options->transfers,
                                        "--sync-period",
                                        std::to_string(options->syncPeriod)};
    if (!options->actOffload.empty())
      llvm::append_range(command, std::vector<std::string>{
                                      "--act-offload", options->actOffload});
    if (!options->dpShares.empty())
      llvm::append_range(
          command, std::vector<std::string>{"--dp-shares", options->dpShares});
    if (!options->classLayout.empty())
      llvm::append_range(command, std::vector<std::string>{
                                      "--class-layout", options->classLayout});
    if (options->pp)
      llvm::append_range(command, std::vector<std::string>{
                                      "--pp", std::to_string(*options->pp)});
    if (options->zero)
      llvm::append_range(
          command,
          std::vector<std::string>{"--zero", std::to_string(*options->zero)});
    // The model flags the compiler takes too: a plan for what `compile`
    // would build.
    if (options->dp)
      llvm::append_range(command, std::vector<std::string>{
                                      "--dp", std::to_string(*options->dp)});
    if (options->seqLen)
      llvm::append_range(
          command, std::vector<std::string>{"--seq-len",
                                            std::to_string(options->seqLen)});
    if (options->microBatchSize)
      llvm::append_range(command, std::vector<std::string>{
                                      "--micro-batch",
                                      std::to_string(options->microBatchSize)});
    if (!options->dtype.empty())
      llvm::append_range(command,
                         std::vector<std::string>{"--dtype", options->dtype});
    llvm::append_range(command, args->rest);
    if (options->verbose)
      note(formatCommand(command));
    std::vector<StringRef> refs(command.begin(), command.end());
    status = llvm::sys::ExecuteAndWait(command[0], refs);
    if (status < 0)
      status = fail("ratrain-plan could not be run");
  } else {
    status = fail(machine.takeError());
  }
  fs::remove_directories(dir);
  return status;
}

int machineCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv) {
  llvm::Expected<Args> args = parseArgs(
      "machine", argv, {"--ranks-per-cluster", "-o", "--model", "--seq-len"},
      {"--help", "-h", "--calibrate", "--quick", "--host-file", "-v",
       "--verbose"});
  if (!args)
    return fail(args.takeError());
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kMachineHelp;
    return 0;
  }
  bool verbose = args->has("-v") || args->has("--verbose");
  if (args->has("--quick") && !args->has("--calibrate"))
    return fail("--quick goes with --calibrate");
  if (args->get("--model") && !args->has("--calibrate"))
    return fail("--model goes with --calibrate");
  if (args->get("--seq-len") && !args->get("--model"))
    return fail("--seq-len goes with --model");
  llvm::Expected<int64_t> seqLen = getPositive(*args, "--seq-len", 0);
  if (!seqLen)
    return fail(seqLen.takeError());
  std::string model;
  if (std::optional<std::string> path = args->get("--model")) {
    if (!fs::exists(*path))
      return fail(*path + ": no such model file");
    llvm::SmallString<256> absolute(*path);
    fs::make_absolute(absolute);
    model = std::string(absolute);
  }
  if (args->has("--calibrate") || args->has("--host-file")) {
    if (!args->positional.empty() || args->get("--ranks-per-cluster") ||
        args->get("-o"))
      return fail("--calibrate and --host-file take no machine file, "
                  "--ranks-per-cluster or -o");
    llvm::Expected<std::string> file =
        args->has("--calibrate")
            ? calibrateHostMachine(tools, args->has("--quick"), verbose, model,
                                   *seqLen)
            : resolveMachine(tools, "host", verbose);
    if (!file)
      return fail(file.takeError());
    llvm::outs() << *file << "\n";
    return 0;
  }
  if (args->positional.size() != 1)
    return fail("expected one machine file or 'host' (usage: ratrain machine "
                "FILE [--ranks-per-cluster K])");
  llvm::Expected<std::string> file =
      resolveMachine(tools, args->positional[0], verbose);
  if (!file)
    return fail(file.takeError());
  llvm::Expected<int64_t> k = getPositive(*args, "--ranks-per-cluster", 0);
  if (!k)
    return fail(k.takeError());
  llvm::Expected<ratrain::MachineModel> machine =
      ratrain::loadMachineModel(*file);
  if (!machine)
    return fail(machine.takeError());
  std::string text;
  if (*k) {
    llvm::Expected<ratrain::MachineModel> split =
        ratrain::oversubscribe(*machine, *k);
    if (!split)
      return fail(split.takeError());
    text = "# " + *file + " with " + std::to_string(*k) +
           " virtual clusters per cluster (ratrain machine)\n" +
           ratrain::printMachineModel(*split);
  } else {
    text = "# " + *file + " (ratrain machine)\n" +
           ratrain::printMachineModel(*machine);
  }
  std::optional<std::string> out = args->get("-o");
  if (!out || *out == "-") {
    llvm::outs() << text;
    return 0;
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(*out, ec, fs::OF_Text);
  if (ec)
    return fail(llvm::formatv("-o {0}: {1}", *out, ec.message()));
  os << text;
  return 0;
}

} // namespace ratrain::driver
