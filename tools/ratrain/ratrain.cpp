//===- ratrain.cpp - The user-facing RATrain driver -----------------------===//
//
// One command from a model config and a machine file to a training run:
//
//   ratrain compile MODEL.json --machine M.yaml [plan flags] -o EXE
//   ratrain run MODEL.json --machine M.yaml --ranks N [plan flags]
//               [run flags] [-- mpirun args]
//   ratrain plan MODEL.json --machine M.yaml [--ranks N] [plan flags]
//   ratrain machine M.yaml --ranks-per-cluster K
//
// Like a compiler driver it invokes the sibling tools (ratrain-translate,
// ratrain-opt) stage by stage, then compiles the emitted C++ with one
// compiler command against libratrain_program.so, as the build description
// next to the driver (ratrain-program.txt, written by CMake) says. `run`
// caches the executable and starts it under mpirun. See docs/driver.md.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Support/CrashReport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using llvm::StringRef;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace {

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

/// Prints `error: <message>` to stderr and returns 1 (the exit status).
int fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

/// Progress notes of the driver (stderr, prefixed "ratrain: ").
void note(const llvm::Twine &message) {
  llvm::errs() << "ratrain: " << message << "\n";
}

const char *const kMainHelp =
    R"(OVERVIEW: ratrain - compile an LLM training schedule and run it

USAGE: ratrain <command> [options]

COMMANDS:
  compile   compile MODEL.json for a machine into a training executable
  run       compile (cached) and train under mpirun on N ranks
  plan      print the planner's best parallel configurations (ratrain-plan)
  machine   print a machine file split into virtual clusters

Run 'ratrain <command> --help' for the options of a command.

EXAMPLE:
  ratrain run examples/models/tiny-llama.json \
      --machine examples/machines/host.yaml --ranks 4 --pp 2 --steps 300
)";

const char *const kPlanFlagsHelp = R"(PLAN OPTIONS:
  --machine FILE        machine file (YAML), required
  --ranks N             MPI ranks = clusters to plan for (default: the
                        machine's clusters); more ranks than clusters split
                        each cluster into N/clusters virtual clusters
  --pp P                pipeline stages (default: the planner's choice)
  --dp D                data-parallel replicas (pp = ranks / D)
  --zero Z              ZeRO stage 0, 1 or 2 (default: the planner's choice)
  --global-batch B      sequences per step (default: 2 x ranks)
  --policy NAME         lifecycle policy: ratrain (default) or gpu-style
  --dtype TYPE          train in bf16 or f16 (default: the config's dtype)
)";

const char *const kCompileHelp =
    R"(USAGE: ratrain compile MODEL.json --machine FILE [options] -o EXE

Runs import -> plan -> schedule-pipeline -> lower-to-mt3k -> mt3k-to-cpp with
ratrain-translate and ratrain-opt, then compiles the C++ program against
libratrain_program.so. Prints the chosen plan.

OPTIONS:
  -o EXE                the executable to write, required
  --keep-temps DIR      keep every stage's output in DIR
  -v, --verbose         print each command
)";

const char *const kRunHelp =
    R"(USAGE: ratrain run MODEL.json --machine FILE --ranks N [options] [-- mpirun args]

Compiles the model (into a cache, keyed by the model, the machine, the plan
options and the tools) and runs 'mpirun -np N EXE ...' (with --oversubscribe
when N exceeds the cores). The exit status is the program's.

RUN OPTIONS:
  --steps N             training steps (default: the program's)
  --data FILE           token file (default: the build tree's corpus,
                        examples/data/corpus.tok)
  --log FILE            JSON lines, one per step (loss, tokens/s, ...)
  --ckpt DIR            checkpoint directory
  --save-every N        save a checkpoint every N steps
  --resume              resume from the checkpoint in --ckpt
  --seed S              data order and initialization seed
  --no-cache            compile afresh into a temporary folder
  -v, --verbose         print each command
  --                    the rest goes to mpirun, before the program

The cache is $XDG_CACHE_HOME/ratrain (or ~/.cache/ratrain).
)";

const char *const kPlanHelp =
    R"(USAGE: ratrain plan MODEL.json --machine FILE [options] [-- ratrain-plan args]

Runs ratrain-plan on the model and the machine (split into virtual clusters
when --ranks exceeds its clusters) and prints its ranking of plans.
)";

const char *const kMachineHelp =
    R"(USAGE: ratrain machine FILE --ranks-per-cluster K [-o OUT]

Prints the machine file with every cluster split into K virtual clusters
(1/K of the DDR, GSM, compute, DDR and DMA bandwidth each; see
docs/machine-model.md), the machine 'ratrain run' plans for when it starts
more ranks than the machine has clusters.

OPTIONS:
  -o OUT                write to OUT instead of stdout
)";

//===----------------------------------------------------------------------===//
// Command lines
//===----------------------------------------------------------------------===//

/// The parsed command line of one subcommand: flags with values, boolean
/// flags, positional arguments and what follows `--`.
struct Args {
  llvm::StringMap<std::string> values;
  std::set<std::string> switches;
  std::vector<std::string> positional;
  std::vector<std::string> rest;

  std::optional<std::string> get(StringRef flag) const {
    auto it = values.find(flag);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  }
  bool has(StringRef flag) const { return switches.count(flag.str()); }
};

/// Parses `argv` against the flags a subcommand knows: `valueFlags` take a
/// value (`--f V` or `--f=V`), `switchFlags` none. Fails on an unknown flag
/// or a missing value.
llvm::Expected<Args> parseArgs(StringRef command,
                               llvm::ArrayRef<std::string> argv,
                               llvm::ArrayRef<StringRef> valueFlags,
                               llvm::ArrayRef<StringRef> switchFlags) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    StringRef arg = argv[i];
    if (arg == "--") {
      args.rest.assign(argv.begin() + i + 1, argv.end());
      break;
    }
    if (!arg.starts_with("-") || arg == "-") {
      args.positional.push_back(arg.str());
      continue;
    }
    auto [flag, inlineValue] = arg.split('=');
    bool hasInline = arg.contains('=');
    if (llvm::is_contained(switchFlags, flag)) {
      if (hasInline)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("{0} takes no value", flag));
      args.switches.insert(flag.str());
      continue;
    }
    if (!llvm::is_contained(valueFlags, flag))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("unknown option '{0}' (see 'ratrain {1} --help')", flag,
                        command));
    if (hasInline) {
      args.values[flag] = inlineValue.str();
    } else {
      if (i + 1 >= argv.size())
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("{0} needs a value", flag));
      args.values[flag] = argv[++i];
    }
  }
  return args;
}

/// Reads a positive integer flag; `fallback` when absent.
llvm::Expected<int64_t> getPositive(const Args &args, StringRef flag,
                                    int64_t fallback) {
  std::optional<std::string> text = args.get(flag);
  if (!text)
    return fallback;
  int64_t value = 0;
  if (StringRef(*text).getAsInteger(10, value) || value < 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: expected a positive integer, got '{1}'", flag,
                      *text));
  return value;
}

/// Quotes a command line for printing.
std::string formatCommand(llvm::ArrayRef<std::string> argv) {
  std::string text;
  for (const std::string &arg : argv) {
    if (!text.empty())
      text += ' ';
    bool plain = !arg.empty() && llvm::all_of(arg, [](char c) {
      return llvm::isAlnum(c) || StringRef("-_./=,:+@%").contains(c);
    });
    text += plain ? arg : "'" + arg + "'";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// The tools next to the driver
//===----------------------------------------------------------------------===//

/// Where the driver lives and what it finds there.
struct Toolchain {
  std::string binDir;
  std::string self;
  std::string translate;   ///< ratrain-translate
  std::string opt;         ///< ratrain-opt
  std::string planTool;    ///< ratrain-plan
  std::string description; ///< ratrain-program.txt
};

Toolchain findToolchain(const char *argv0) {
  Toolchain tools;
  static int anchor;
  tools.self = fs::getMainExecutable(argv0, &anchor);
  tools.binDir = path::parent_path(tools.self).str();
  auto sibling = [&](StringRef name) {
    llvm::SmallString<256> file(tools.binDir);
    path::append(file, name);
    return std::string(file);
  };
  tools.translate = sibling("ratrain-translate");
  tools.opt = sibling("ratrain-opt");
  tools.planTool = sibling("ratrain-plan");
  tools.description = sibling("ratrain-program.txt");
  return tools;
}

llvm::Error requireFile(StringRef file, StringRef what) {
  if (fs::exists(file))
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      llvm::formatv("{0} not found at {1} (it is built with the driver)", what,
                    file));
}

/// The build description of libratrain_program.so (key=value lines).
struct ProgramBuild {
  std::string cxx;
  std::vector<std::string> cxxFlags;
  std::vector<std::string> includeDirs, definitions, options;
  std::vector<std::string> linkFlags, libraries, rpath;
  std::string corpus;
};

std::vector<std::string> splitList(StringRef text, char separator) {
  llvm::SmallVector<StringRef> parts;
  text.split(parts, separator, -1, /*KeepEmpty=*/false);
  std::vector<std::string> result;
  for (StringRef part : parts)
    if (!part.trim().empty())
      result.push_back(part.trim().str());
  return result;
}

llvm::Expected<ProgramBuild> loadProgramBuild(StringRef file) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        buffer.getError(), llvm::formatv("{0}: cannot read the program build "
                                         "description: {1}",
                                         file, buffer.getError().message()));
  ProgramBuild build;
  llvm::SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    if (line.trim().empty() || line.starts_with("#"))
      continue;
    auto [key, value] = line.split('=');
    if (key == "cxx")
      build.cxx = value.trim().str();
    else if (key == "cxx_flags")
      build.cxxFlags = splitList(value, ' ');
    else if (key == "include_dirs")
      build.includeDirs = splitList(value, ';');
    else if (key == "compile_definitions")
      build.definitions = splitList(value, ';');
    else if (key == "compile_options")
      build.options = splitList(value, ';');
    else if (key == "link_flags")
      build.linkFlags = splitList(value, ' ');
    else if (key == "libraries")
      build.libraries = splitList(value, ';');
    else if (key == "rpath")
      build.rpath = splitList(value, ';');
    else if (key == "corpus")
      build.corpus = value.trim().str();
    else
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0}: unknown key '{1}'", file, key));
  }
  if (build.cxx.empty() || build.libraries.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: no compiler or no libraries", file));
  return build;
}

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

/// Runs one stage's command; its stderr goes to `<workDir>/<name>.err` and
/// is passed through (all of it, after a line naming the stage and the
/// command, when the stage fails). Returns the exit status.
int runStage(StringRef name, llvm::ArrayRef<std::string> argv,
             StringRef workDir, bool verbose) {
  if (verbose)
    note(formatCommand(argv));
  llvm::SmallString<256> errFile(workDir);
  path::append(errFile, name + ".err");
  std::vector<StringRef> refs(argv.begin(), argv.end());
  std::optional<StringRef> redirects[] = {std::nullopt, std::nullopt,
                                          StringRef(errFile)};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(argv[0], refs, std::nullopt, redirects,
                                         0, 0, &message);
  std::string diagnostics;
  if (auto buffer = llvm::MemoryBuffer::getFile(errFile, /*IsText=*/true))
    diagnostics = (*buffer)->getBuffer().str();
  if (status != 0) {
    std::string what = status == -1 ? "could not be started: " + message
                       : status == -2
                           ? "crashed: " + message
                           : llvm::formatv("failed (exit {0})", status).str();
    llvm::errs() << "error: stage '" << name << "' " << what << ": "
                 << formatCommand(argv) << "\n";
  }
  llvm::errs() << diagnostics;
  return status;
}

/// The options that decide what is compiled.
struct CompileOptions {
  std::string model;
  std::string machineFile;
  int64_t ranks = 0;
  std::optional<int64_t> pp, dp, zero;
  int64_t globalBatch = 0;
  std::string policy = "ratrain";
  std::string dtype;
  bool verbose = false;
};

const StringRef kPlanValueFlags[] = {"--machine", "--ranks", "--pp",
                                     "--dp",      "--zero",  "--global-batch",
                                     "--policy",  "--dtype"};

/// Reads and checks the model, machine and plan flags.
llvm::Expected<CompileOptions> getCompileOptions(const Args &args,
                                                 StringRef command) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  CompileOptions options;
  if (args.positional.empty())
    return error(llvm::formatv("no model config (usage: ratrain {0} "
                               "MODEL.json --machine FILE ...)",
                               command));
  if (args.positional.size() > 1)
    return error(llvm::formatv("unexpected argument '{0}' (one model config "
                               "per command)",
                               args.positional[1]));
  options.model = args.positional[0];
  if (!fs::exists(options.model))
    return error(options.model + ": no such model config");
  std::optional<std::string> machine = args.get("--machine");
  if (!machine)
    return error("--machine FILE is required");
  options.machineFile = *machine;
  if (!fs::exists(options.machineFile))
    return error(options.machineFile + ": no such machine file");
  options.verbose = args.has("--verbose") || args.has("-v");

  for (StringRef flag : {"--ranks", "--pp", "--dp", "--global-batch"})
    if (llvm::Expected<int64_t> value = getPositive(args, flag, 0); !value)
      return value.takeError();
    else if (*value) {
      if (flag == "--ranks")
        options.ranks = *value;
      else if (flag == "--pp")
        options.pp = *value;
      else if (flag == "--dp")
        options.dp = *value;
      else
        options.globalBatch = *value;
    }
  if (std::optional<std::string> zero = args.get("--zero")) {
    if (*zero != "0" && *zero != "1" && *zero != "2")
      return error("--zero: expected 0, 1 or 2, got '" + *zero + "'");
    options.zero = std::stoll(*zero);
  }
  if (std::optional<std::string> policy = args.get("--policy")) {
    if (*policy != "ratrain" && *policy != "gpu-style")
      return error("--policy: expected ratrain or gpu-style, got '" + *policy +
                   "'");
    options.policy = *policy;
  }
  if (std::optional<std::string> dtype = args.get("--dtype")) {
    if (*dtype != "bf16" && *dtype != "f16" && *dtype != "f32")
      return error("--dtype: expected bf16, f16 or f32, got '" + *dtype + "'");
    options.dtype = *dtype;
  }
  return options;
}

/// The machine to plan for: the machine file, split into virtual clusters
/// when there are more ranks than clusters. Fills in the default ranks,
/// pp (from dp) and global batch.
struct PlannedMachine {
  std::string file; ///< the machine file the stages read
  ratrain::MachineModel model;
  int64_t ranksPerCluster = 1;
};

llvm::Expected<PlannedMachine> prepareMachine(CompileOptions &options,
                                              StringRef workDir) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  llvm::Expected<ratrain::MachineModel> machine =
      ratrain::loadMachineModel(options.machineFile);
  if (!machine)
    return machine.takeError();
  int64_t clusters = machine->totalClusters();
  if (!options.ranks)
    options.ranks = clusters;
  PlannedMachine planned{options.machineFile, *machine, 1};
  if (options.ranks > clusters) {
    if (options.ranks % clusters)
      return error(llvm::formatv(
          "--ranks {0}: machine '{1}' has {2} clusters; more ranks than "
          "clusters must be a multiple of them (each cluster is split into "
          "equal virtual clusters)",
          options.ranks, machine->name, clusters));
    planned.ranksPerCluster = options.ranks / clusters;
    llvm::Expected<ratrain::MachineModel> split =
        ratrain::oversubscribe(*machine, planned.ranksPerCluster);
    if (!split)
      return split.takeError();
    planned.model = *split;
    llvm::SmallString<256> file(workDir);
    path::append(file, "machine.yaml");
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec, fs::OF_Text);
    if (ec)
      return error(llvm::formatv("{0}: {1}", file, ec.message()));
    os << "# " << options.machineFile << " with " << planned.ranksPerCluster
       << " virtual clusters per cluster (ratrain driver)\n"
       << ratrain::printMachineModel(*split);
    planned.file = std::string(file);
    note(llvm::formatv("{0} ranks on machine '{1}' ({2} clusters): each "
                       "cluster split into {3} virtual clusters (machine "
                       "'{4}', 1/{3} of the DDR, compute and bandwidth each)",
                       options.ranks, machine->name, clusters,
                       planned.ranksPerCluster, split->name));
  }
  if (options.dp) {
    if (options.ranks % *options.dp)
      return error(llvm::formatv("--dp {0} does not divide --ranks {1}",
                                 *options.dp, options.ranks));
    int64_t pp = options.ranks / *options.dp;
    if (options.pp && *options.pp != pp)
      return error(llvm::formatv("--pp {0} x --dp {1} is not --ranks {2}",
                                 *options.pp, *options.dp, options.ranks));
    options.pp = pp;
  }
  if (options.pp && options.ranks % *options.pp)
    return error(llvm::formatv("--pp {0} does not divide --ranks {1}",
                               *options.pp, options.ranks));
  if (!options.globalBatch)
    options.globalBatch = 2 * options.ranks;
  return planned;
}

/// The --ratrain-plan options of `options`.
std::string planPassOptions(const CompileOptions &options) {
  std::string text =
      llvm::formatv("clusters={0} global-batch={1} policy={2}", options.ranks,
                    options.globalBatch, options.policy);
  if (options.pp)
    text += llvm::formatv(" pp={0}", *options.pp).str();
  if (options.zero)
    text += llvm::formatv(" zero={0}", *options.zero).str();
  return text;
}

/// One line describing the `#ratrain.plan<...>` in a planned module.
std::optional<std::string> describePlan(StringRef planned, StringRef policy) {
  size_t start = planned.find("#ratrain.plan<");
  if (start == StringRef::npos)
    return std::nullopt;
  StringRef attr = planned.substr(start);
  attr = attr.take_until([](char c) { return c == '>'; });
  auto field = [&](StringRef key) -> int64_t {
    size_t at = attr.find((key + " = ").str());
    if (at == StringRef::npos)
      return -1;
    int64_t value = -1;
    StringRef digits =
        attr.substr(at + key.size() + 3).take_while(llvm::isDigit);
    if (digits.getAsInteger(10, value))
      return -1;
    return value;
  };
  double stepSeconds = double(field("step_us")) * 1e-6;
  double peakGiB = double(field("peak_bytes")) / double(1ll << 30);
  return llvm::formatv("pp {0} x dp {1}, ZeRO-{2}, {3} micro-batches of {4}, "
                       "predicted step {5:f3} s, peak {6:f2} GiB per rank "
                       "(policy {7})",
                       field("pp"), field("dp"), field("zero"),
                       field("micro_batches"), field("micro_batch_size"),
                       stepSeconds, peakGiB, policy)
      .str();
}

/// Compiles `options` into `exe`, with every stage's output in `workDir`.
/// Writes the plan line to `<workDir>/plan.txt` and prints it.
int compileProgram(const Toolchain &tools, CompileOptions options,
                   StringRef workDir, StringRef exe) {
  for (auto [file, what] :
       {std::pair<StringRef, StringRef>{tools.translate, "ratrain-translate"},
        {tools.opt, "ratrain-opt"},
        {tools.description, "the program build description"}})
    if (llvm::Error error = requireFile(file, what))
      return fail(llvm::toString(std::move(error)));
  llvm::Expected<ProgramBuild> build = loadProgramBuild(tools.description);
  if (!build)
    return fail(llvm::toString(build.takeError()));
  llvm::Expected<PlannedMachine> machine = prepareMachine(options, workDir);
  if (!machine)
    return fail(llvm::toString(machine.takeError()));

  auto temp = [&](StringRef name) {
    llvm::SmallString<256> file(workDir);
    path::append(file, name);
    return std::string(file);
  };
  std::string imported = temp("model.mlir"), planned = temp("planned.mlir"),
              scheduled = temp("scheduled.mlir"), lowered = temp("mt3k.mlir"),
              source = temp("program.cpp");

  std::vector<std::string> import = {tools.translate, "--import-hf-config",
                                     options.model,   "--machine",
                                     machine->file,   "-o",
                                     imported};
  if (!options.dtype.empty())
    import.push_back("--dtype=" + options.dtype);
  if (runStage("import", import, workDir, options.verbose))
    return 1;
  if (runStage("plan",
               {tools.opt, imported,
                "--ratrain-plan=" + planPassOptions(options), "-o", planned},
               workDir, options.verbose))
    return 1;
  std::string plan = "(no plan found in " + planned + ")";
  if (auto text = llvm::MemoryBuffer::getFile(planned, /*IsText=*/true))
    if (std::optional<std::string> line =
            describePlan((*text)->getBuffer(), options.policy))
      plan = *line;
  note("plan: " + plan);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temp("plan.txt"), ec, fs::OF_Text);
    if (!ec)
      os << plan << "\n";
  }
  if (runStage("schedule-pipeline",
               {tools.opt, planned,
                "--ratrain-schedule-pipeline=policy=" + options.policy, "-o",
                scheduled},
               workDir, options.verbose))
    return 1;
  if (runStage("lower-to-mt3k",
               {tools.opt, scheduled, "--ratrain-lower-to-mt3k", "-o", lowered},
               workDir, options.verbose))
    return 1;
  if (runStage("mt3k-to-cpp",
               {tools.translate, "--mt3k-to-cpp", lowered, "-o", source},
               workDir, options.verbose))
    return 1;

  std::vector<std::string> compile = {build->cxx};
  llvm::append_range(compile, build->cxxFlags);
  llvm::append_range(compile, build->options);
  for (const std::string &definition : build->definitions)
    compile.push_back("-D" + definition);
  for (const std::string &dir : build->includeDirs)
    compile.push_back("-I" + dir);
  llvm::append_range(compile,
                     std::vector<std::string>{source, "-o", exe.str()});
  llvm::append_range(compile, build->linkFlags);
  llvm::append_range(compile, build->libraries);
  for (const std::string &dir : build->rpath)
    compile.push_back("-Wl,-rpath," + dir);
  if (runStage("compile", compile, workDir, options.verbose))
    return 1;
  return 0;
}

//===----------------------------------------------------------------------===//
// Subcommands
//===----------------------------------------------------------------------===//

int compileCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv) {
  std::vector<StringRef> valueFlags(std::begin(kPlanValueFlags),
                                    std::end(kPlanValueFlags));
  valueFlags.push_back("-o");
  valueFlags.push_back("--keep-temps");
  llvm::Expected<Args> args = parseArgs("compile", argv, valueFlags,
                                        {"--help", "-h", "-v", "--verbose"});
  if (!args)
    return fail(llvm::toString(args.takeError()));
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kCompileHelp << "\n" << kPlanFlagsHelp;
    return 0;
  }
  if (!args->rest.empty())
    return fail("'--' is only for 'ratrain run' and 'ratrain plan'");
  llvm::Expected<CompileOptions> options = getCompileOptions(*args, "compile");
  if (!options)
    return fail(llvm::toString(options.takeError()));
  std::optional<std::string> exe = args->get("-o");
  if (!exe)
    return fail("-o EXE is required");

  std::string workDir;
  bool keep = false;
  if (std::optional<std::string> keepDir = args->get("--keep-temps")) {
    if (std::error_code ec = fs::create_directories(*keepDir))
      return fail(
          llvm::formatv("--keep-temps {0}: {1}", *keepDir, ec.message()));
    workDir = *keepDir;
    keep = true;
  } else {
    llvm::SmallString<256> dir;
    if (std::error_code ec = fs::createUniqueDirectory("ratrain", dir))
      return fail("cannot create a temporary folder: " + ec.message());
    workDir = std::string(dir);
  }
  int status = compileProgram(tools, *options, workDir, *exe);
  if (!keep)
    fs::remove_directories(workDir);
  if (status == 0)
    note("wrote " + *exe);
  return status;
}

/// Adds the size and modification time of `file` to `hash` (the identity
/// of a tool binary).
void hashFileIdentity(llvm::SHA256 &hash, StringRef file) {
  fs::file_status status;
  hash.update(file);
  if (!fs::status(file, status)) {
    hash.update(llvm::formatv(
                    "|{0}|{1}", status.getSize(),
                    status.getLastModificationTime().time_since_epoch().count())
                    .str());
  }
  hash.update(StringRef("\n"));
}

/// Adds the contents of `file` to `hash`.
void hashFileContents(llvm::SHA256 &hash, StringRef file) {
  if (auto buffer = llvm::MemoryBuffer::getFile(file))
    hash.update((*buffer)->getBuffer());
  hash.update(StringRef("\n"));
}

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

int runCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv) {
  std::vector<StringRef> valueFlags(std::begin(kPlanValueFlags),
                                    std::end(kPlanValueFlags));
  for (StringRef flag :
       {"--steps", "--data", "--log", "--ckpt", "--save-every", "--seed"})
    valueFlags.push_back(flag);
  llvm::Expected<Args> args =
      parseArgs("run", argv, valueFlags,
                {"--help", "-h", "-v", "--verbose", "--resume", "--no-cache"});
  if (!args)
    return fail(llvm::toString(args.takeError()));
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kRunHelp << "\n" << kPlanFlagsHelp;
    return 0;
  }
  llvm::Expected<CompileOptions> options = getCompileOptions(*args, "run");
  if (!options)
    return fail(llvm::toString(options.takeError()));
  if (!args->get("--ranks"))
    return fail("--ranks N is required (the MPI ranks to start)");
  for (StringRef flag : {"--steps", "--save-every", "--seed"})
    if (std::optional<std::string> text = args->get(flag)) {
      uint64_t value;
      if (StringRef(*text).getAsInteger(10, value))
        return fail(llvm::formatv("{0}: expected a non-negative integer, got "
                                  "'{1}'",
                                  flag, *text));
    }
  if (args->has("--resume") && !args->get("--ckpt"))
    return fail("--resume needs --ckpt DIR");

  // The data file, checked before anything is compiled or started.
  std::string data;
  if (std::optional<std::string> file = args->get("--data")) {
    data = *file;
  } else {
    llvm::Expected<ProgramBuild> build = loadProgramBuild(tools.description);
    if (!build)
      return fail(llvm::toString(build.takeError()));
    data = build->corpus;
    if (data.empty())
      return fail("no --data FILE and no default corpus in " +
                  tools.description);
  }
  if (!fs::exists(data) || fs::is_directory(data))
    return fail(data + ": no such data file (--data FILE: a token file from "
                       "ratrain-tokenize; the build tree's default is built "
                       "by the target ratrain-corpus)");
  std::string mpirun;
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("mpirun"))
    mpirun = *found;
  else
    return fail("mpirun not found on PATH (install Open MPI)");

  // The executable: from the cache, or compiled into it.
  std::string exe;
  std::string scratch; // a folder to remove after the run
  if (args->has("--no-cache")) {
    llvm::SmallString<256> dir;
    if (std::error_code ec = fs::createUniqueDirectory("ratrain", dir))
      return fail("cannot create a temporary folder: " + ec.message());
    scratch = std::string(dir);
    exe = scratch + "/program";
    if (int status = compileProgram(tools, *options, scratch, exe)) {
      fs::remove_directories(scratch);
      return status;
    }
  } else {
    llvm::SHA256 hash;
    hashFileContents(hash, options->model);
    hashFileContents(hash, options->machineFile);
    hash.update(llvm::formatv("ranks={0} pp={1} dp={2} zero={3} batch={4} "
                              "policy={5} dtype={6}\n",
                              options->ranks, options->pp.value_or(0),
                              options->dp.value_or(0),
                              options->zero.value_or(-1), options->globalBatch,
                              options->policy, options->dtype)
                    .str());
    for (StringRef tool : {StringRef(tools.self), StringRef(tools.translate),
                           StringRef(tools.opt)})
      hashFileIdentity(hash, tool);
    hashFileContents(hash, tools.description);
    if (llvm::Expected<ProgramBuild> build =
            loadProgramBuild(tools.description))
      for (const std::string &library : build->libraries)
        hashFileIdentity(hash, library);
    else
      llvm::consumeError(build.takeError());
    std::array<uint8_t, 32> digest = hash.final();
    std::string key =
        llvm::toHex(llvm::ArrayRef<uint8_t>(digest).take_front(12), true);
    std::string root = cacheRoot();
    std::string entry = root + "/" + key;
    exe = entry + "/program";
    if (fs::exists(exe)) {
      std::string plan = "(unknown)";
      if (auto text = llvm::MemoryBuffer::getFile(entry + "/plan.txt"))
        plan = (*text)->getBuffer().trim().str();
      note("plan: " + plan);
      note("using the cached program " + exe);
    } else {
      if (std::error_code ec = fs::create_directories(root))
        return fail(llvm::formatv("cache {0}: {1}", root, ec.message()));
      llvm::SmallString<256> dir;
      if (std::error_code ec =
              fs::createUniqueDirectory(root + "/tmp-" + key, dir))
        return fail(llvm::formatv("cache {0}: {1}", root, ec.message()));
      std::string building = std::string(dir);
      if (int status = compileProgram(tools, *options, building,
                                      building + "/program")) {
        fs::remove_directories(building);
        return status;
      }
      // Publish the entry; a concurrent driver may have published it first.
      if (fs::rename(building, entry))
        fs::remove_directories(building);
      if (!fs::exists(exe))
        return fail("cache entry " + entry + " has no program");
      note("cached the program as " + exe);
    }
  }

  // Start it.
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> command = {mpirun, "-np",
                                      std::to_string(options->ranks)};
  if (uint64_t(options->ranks) > cores)
    command.push_back("--oversubscribe");
  llvm::append_range(command, args->rest);
  command.push_back(exe);
  command.push_back("--data");
  command.push_back(data);
  for (StringRef flag :
       {"--steps", "--log", "--ckpt", "--save-every", "--seed"})
    if (std::optional<std::string> value = args->get(flag)) {
      command.push_back(flag.str());
      command.push_back(*value);
    }
  if (args->has("--resume"))
    command.push_back("--resume");
  if (geteuid() == 0) {
    // Open MPI refuses to run as root without these.
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", /*overwrite=*/0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", /*overwrite=*/0);
  }
  note(formatCommand(command));
  std::vector<StringRef> refs(command.begin(), command.end());
  std::string message;
  int status =
      llvm::sys::ExecuteAndWait(mpirun, refs, std::nullopt, {}, 0, 0, &message);
  if (!scratch.empty())
    fs::remove_directories(scratch);
  if (status < 0)
    return fail(llvm::formatv("mpirun {0}: {1}",
                              status == -1 ? "could not be started" : "crashed",
                              message));
  if (status != 0)
    note(llvm::formatv("the program exited with status {0}", status));
  return status;
}

int planCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv) {
  llvm::Expected<Args> args = parseArgs("plan", argv, kPlanValueFlags,
                                        {"--help", "-h", "-v", "--verbose"});
  if (!args)
    return fail(llvm::toString(args.takeError()));
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kPlanHelp << "\n" << kPlanFlagsHelp;
    return 0;
  }
  llvm::Expected<CompileOptions> options = getCompileOptions(*args, "plan");
  if (!options)
    return fail(llvm::toString(options.takeError()));
  if (llvm::Error error = requireFile(tools.planTool, "ratrain-plan"))
    return fail(llvm::toString(std::move(error)));
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
                                        options->policy};
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
    status = fail(llvm::toString(machine.takeError()));
  }
  fs::remove_directories(dir);
  return status;
}

int machineCommand(llvm::ArrayRef<std::string> argv) {
  llvm::Expected<Args> args = parseArgs(
      "machine", argv, {"--ranks-per-cluster", "-o"}, {"--help", "-h"});
  if (!args)
    return fail(llvm::toString(args.takeError()));
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kMachineHelp;
    return 0;
  }
  if (args->positional.size() != 1)
    return fail("expected one machine file (usage: ratrain machine FILE "
                "--ranks-per-cluster K)");
  llvm::Expected<int64_t> k = getPositive(*args, "--ranks-per-cluster", 0);
  if (!k)
    return fail(llvm::toString(k.takeError()));
  if (!*k)
    return fail("--ranks-per-cluster K is required");
  llvm::Expected<ratrain::MachineModel> machine =
      ratrain::loadMachineModel(args->positional[0]);
  if (!machine)
    return fail(llvm::toString(machine.takeError()));
  llvm::Expected<ratrain::MachineModel> split =
      ratrain::oversubscribe(*machine, *k);
  if (!split)
    return fail(llvm::toString(split.takeError()));
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

} // namespace

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
    return machineCommand(rest);
  return fail(llvm::formatv("unknown command '{0}' (compile, run, plan or "
                            "machine; see 'ratrain --help')",
                            command));
}
