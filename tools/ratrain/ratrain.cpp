//===- ratrain.cpp - The user-facing RATrain driver -----------------------===//
//
// One command from a model config and a machine file to a training run:
//
//   ratrain compile MODEL.json --machine M.yaml [plan flags] -o EXE
//   ratrain compile MODEL.json --machine M.yaml [plan flags] --bundle DIR
//   ratrain run MODEL.json --machine M.yaml --ranks N [plan flags]
//               [run flags] [-- mpirun args]
//   ratrain plan MODEL.json --machine M.yaml [--ranks N] [plan flags]
//   ratrain machine M.yaml|host [--ranks-per-cluster K]
//   ratrain machine --calibrate [--quick]
//
// Like a compiler driver it invokes the sibling tools (ratrain-translate,
// ratrain-opt) stage by stage, then compiles the emitted C++ with one
// compiler command against libratrain_program.so, as the build description
// next to the driver (ratrain-program.txt, written by CMake) says. `run`
// caches the executable and starts it under mpirun. See docs/driver.md and
// Driver.h for the files of the driver.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "ratrain/Support/CrashReport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using llvm::StringRef;
using namespace ratrain::driver;

static const char *const kMainHelp =
    R"(OVERVIEW: ratrain - compile an LLM training schedule and run it

USAGE: ratrain <command> [options]

COMMANDS:
  compile   compile MODEL.json for a machine into a training executable
  run       compile (cached) and train under mpirun on N ranks
  plan      print the planner's best parallel configurations (ratrain-plan)
  machine   print a machine file (split into virtual clusters), or
            measure this host into its calibrated machine file

Run 'ratrain <command> --help' for the options of a command.

EXAMPLE:
  ratrain run examples/models/tiny-llama.json \
      --machine examples/machines/host.yaml --ranks 4 --pp 2 --steps 300
)";

int main(int argc, char **argv) {
  ratrain::InitTool init(argc, argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    llvm::errs() << kMainHelp;
    return fail("no command (compile, run, plan or machine)");
  }
  StringRef command = args.front();
  if (command == "--help" || command == "-h" || command == "help") {
    llvm::outs() << kMainHelp;
    return 0;
  }
  Toolchain tools = findToolchain(argv[0]);
  llvm::ArrayRef<std::string> rest = llvm::ArrayRef(args).drop_front();
  if (command == "compile")
    return compileCommand(tools, rest);
  if (command == "run")
    return runCommand(tools, rest);
  if (command == "plan")
    return planCommand(tools, rest);
  if (command == "machine")
    return machineCommand(tools, rest);
  return fail(llvm::formatv("unknown command '{0}' (compile, run, plan or "
                            "machine; see 'ratrain --help')",
                            command));
}
