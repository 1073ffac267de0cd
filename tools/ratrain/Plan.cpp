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
    R"(USAGE: ratrain machine FILE --ranks-per-cluster K [-o OUT]

Prints the machine file with every cluster split into K virtual clusters
(1/K of the DDR, GSM, compute, DDR and DMA bandwidth each; see
docs/machine-model.md), the machine 'ratrain run' plans for when it starts
more ranks than the machine has clusters.

OPTIONS:
  -o OUT                write to OUT instead of stdout
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
  llvm::Expected<CompileOptions> options = getCompileOptions(*args, "plan");
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
                                        options->schedule};
    if (options->pp)
      llvm::append_range(command, std::vector<std::string>{
                                      "--pp", std::to_string(*options->pp)});
    if (options->zero)
      llvm::append_range(
          command,
          std::vector<std::string>{"--zero", std::to_string(*options->zero)});
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

int machineCommand(llvm::ArrayRef<std::string> argv) {
  llvm::Expected<Args> args = parseArgs(
      "machine", argv, {"--ranks-per-cluster", "-o"}, {"--help", "-h"});
  if (!args)
    return fail(args.takeError());
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kMachineHelp;
    return 0;
  }
  if (args->positional.size() != 1)
    return fail("expected one machine file (usage: ratrain machine FILE "
                "--ranks-per-cluster K)");
  llvm::Expected<int64_t> k = getPositive(*args, "--ranks-per-cluster", 0);
  if (!k)
    return fail(k.takeError());
  if (!*k)
    return fail("--ranks-per-cluster K is required");
  llvm::Expected<ratrain::MachineModel> machine =
      ratrain::loadMachineModel(args->positional[0]);
  if (!machine)
    return fail(machine.takeError());
  llvm::Expected<ratrain::MachineModel> split =
      ratrain::oversubscribe(*machine, *k);
  if (!split)
    return fail(split.takeError());
  std::string text = "# " + args->positional[0] + " with " +
                     std::to_string(*k) +
                     " virtual clusters per cluster (ratrain machine)\n" +
                     ratrain::printMachineModel(*split);
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
