//===- Driver.h - Shared pieces of the ratrain driver -----------*- C++ -*-===//
//
// The `ratrain` driver (docs/driver.md) in files by concern:
//   Options.cpp    messages, command lines, the model/machine/plan flags
//   Toolchain.cpp  the sibling tools and the program build description
//   Pipeline.cpp   the stages: machine, import, plan, schedule, lower, emit,
//                  compile
//   Compile.cpp    `ratrain compile`
//   Bundle.cpp     `ratrain compile --bundle`: the executable and the
//                  libraries it needs, in one folder
//   Run.cpp        `ratrain run`: the program cache and mpirun
//   Plan.cpp       `ratrain plan` and `ratrain machine`
//   HostMachine.cpp  `--machine host`: this host's calibrated machine file,
//                  cached by CPU
//   ratrain.cpp    main(): the subcommands
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TOOLS_RATRAIN_DRIVER_H
#define RATRAIN_TOOLS_RATRAIN_DRIVER_H

#include "ratrain/Machine/MachineModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ratrain::driver {

//===----------------------------------------------------------------------===//
// Messages and command lines (Options.cpp)
//===----------------------------------------------------------------------===//

/// Prints `error: <message>` to stderr and returns 1 (the exit status).
int fail(const llvm::Twine &message);

/// Prints `error: <message of error>` to stderr and returns 1.
int fail(llvm::Error error);

/// Progress notes of the driver (stderr, prefixed "ratrain: ").
void note(const llvm::Twine &message);

/// An llvm::Error carrying `message`.
llvm::Error makeError(const llvm::Twine &message);

/// The help of the plan flags every compiling subcommand takes.
extern const char *const kPlanFlagsHelp;

/// The parsed command line of one subcommand: flags with values, boolean
/// flags, positional arguments and what follows `--`.
struct Args {
  llvm::StringMap<std::string> values;
  std::set<std::string> switches;
  std::vector<std::string> positional;
  std::vector<std::string> rest;

  std::optional<std::string> get(llvm::StringRef flag) const;
  bool has(llvm::StringRef flag) const;
};

/// Parses `argv` against the flags a subcommand knows: `valueFlags` take a
/// value (`--f V` or `--f=V`), `switchFlags` none. Fails on an unknown flag
/// or a missing value.
llvm::Expected<Args> parseArgs(llvm::StringRef command,
                               llvm::ArrayRef<std::string> argv,
                               llvm::ArrayRef<llvm::StringRef> valueFlags,
                               llvm::ArrayRef<llvm::StringRef> switchFlags);

/// Reads a positive integer flag; `fallback` when absent.
llvm::Expected<int64_t> getPositive(const Args &args, llvm::StringRef flag,
                                    int64_t fallback);

/// Quotes a command line for printing.
std::string formatCommand(llvm::ArrayRef<std::string> argv);

/// The flags with values of every compiling subcommand (--machine, --ranks,
/// --pp, ...).
llvm::ArrayRef<llvm::StringRef> getPlanValueFlags();

/// The options that decide what is compiled.
struct CompileOptions {
  std::string model;
  std::string machineFile;
  int64_t ranks = 0;
  std::optional<int64_t> pp, dp, zero;
  /// The sharding preset and wire types (--ratrain-plan partition=,
  /// weight-wire=, grad-wire=; empty: the planner's default).
  std::string partition, weightWire, gradWire;
  int64_t globalBatch = 0;
  /// --seq-len (the import's training sequence length; 0: the config's,
  /// capped at 4096) and --micro-batch-size (0: the planner's choice).
  int64_t seqLen = 0, microBatchSize = 0;
  std::string policy = "ratrain";
  /// The pipeline schedule the plan is made for (`auto`: searched).
  std::string schedule = "1f1b";
  /// --transfers: how pipeline messages travel (two-sided or one-sided).
  std::string transfers = "two-sided";
  /// --sync-period: partial synchronization every N steps (1: every step).
  int64_t syncPeriod = 1;
  /// --act-offload: none, all or per-stage counts (empty: searched).
  std::string actOffload;
  /// --dp-shares: micro-batches per replica ("3,1"; empty: even or, on a
  /// machine with classes of clusters, the planner's).
  std::string dpShares;
  /// --class-layout: even, replicas, stages or search (the default).
  std::string classLayout;
  /// --max-grad-norm: global gradient-norm clipping (0: none).
  double maxGradNorm = 0;
  /// --weight-decay-params: matrices, matrices-except-embeddings or all.
  std::string weightDecayParams = "matrices";
  std::string dtype;
  bool verbose = false;
};

/// The --ratrain-plan options of `options` (also what the program cache
/// keys on).
std::string planPassOptions(const CompileOptions &options);

struct Toolchain;
/// Reads and checks the model, machine and plan flags; `--machine host` is
/// this host's calibrated machine file (resolveMachine).
llvm::Expected<CompileOptions> getCompileOptions(const Toolchain &tools,
                                                 const Args &args,
                                                 llvm::StringRef command);

//===----------------------------------------------------------------------===//
// The tools next to the driver (Toolchain.cpp)
//===----------------------------------------------------------------------===//

/// Where the driver lives and what it finds there.
struct Toolchain {
  std::string binDir;
  std::string self;
  std::string translate;   ///< ratrain-translate
  std::string opt;         ///< ratrain-opt
  std::string planTool;    ///< ratrain-plan
  std::string calibrate;   ///< ratrain-calibrate
  std::string description; ///< ratrain-program.txt
};

Toolchain findToolchain(const char *argv0);

/// Fails unless `file` exists; `what` names it in the message.
llvm::Error requireFile(llvm::StringRef file, llvm::StringRef what);

/// The build description of libratrain_program.so (key=value lines).
struct ProgramBuild {
  std::string cxx;
  std::vector<std::string> cxxFlags;
  std::vector<std::string> includeDirs, definitions, options;
  std::vector<std::string> linkFlags, libraries, rpath;
  std::string corpus;
};

llvm::Expected<ProgramBuild> loadProgramBuild(llvm::StringRef file);

/// `dir/name`.
std::string joinPath(llvm::StringRef dir, llvm::StringRef name);

/// Runs `argv` and waits; `env` replaces the environment when given, and
/// stdout goes to `stdoutFile` when it is not empty. Returns the exit status
/// (-1: could not be started, -2: crashed; `message` says why).
int execute(llvm::ArrayRef<std::string> argv, llvm::StringRef stdoutFile,
            const std::optional<std::vector<std::string>> &env,
            std::string &message);

//===----------------------------------------------------------------------===//
// The stages (Pipeline.cpp)
//===----------------------------------------------------------------------===//

/// How the executable is linked: against the build tree's library (the
/// build description's rpath), or for a bundle, with the libraries looked
/// up next to the executable.
struct LinkMode {
  /// Replaces the build description's rpath when set.
  std::optional<std::vector<std::string>> rpath;
  /// Extra linker flags.
  std::vector<std::string> linkFlags;
};

/// Compiles `options` into `exe`, with every stage's output in `workDir`.
/// Writes the plan line to `<workDir>/plan.txt` and prints it. Fills in the
/// defaults of `options` (ranks, pp, global batch). Returns the exit status.
int compileProgram(const Toolchain &tools, CompileOptions &options,
                   llvm::StringRef workDir, llvm::StringRef exe,
                   const LinkMode &link = {});

/// The machine to plan for: the machine file, split into virtual clusters
/// when there are more ranks than clusters. Fills in the default ranks,
/// pp (from dp) and global batch.
struct PlannedMachine {
  std::string file; ///< the machine file the stages read
  ratrain::MachineModel model;
  int64_t ranksPerCluster = 1;
};

llvm::Expected<PlannedMachine> prepareMachine(CompileOptions &options,
                                              llvm::StringRef workDir);

//===----------------------------------------------------------------------===//
// Bundles (Bundle.cpp)
//===----------------------------------------------------------------------===//

/// The name of the file that marks a folder as a bundle and lists its files.
extern const char *const kBundleManifest;

/// Checks that `dir` can receive a bundle: absent, empty, or a previous
/// bundle (its manifest lists what it wrote). Returns the files the previous
/// bundle wrote (relative to `dir`), empty for a new folder.
llvm::Expected<std::vector<std::string>> checkBundleDir(llvm::StringRef dir);

/// Compiles `options` and writes the bundle into `dir` (checked with
/// checkBundleDir): `dir/program`, linked with the rpath `$ORIGIN/lib`, every
/// library it needs beyond the system's and Open MPI's in `dir/lib`, the
/// token file `data` (when not empty) and the manifest. Returns the exit
/// status.
int writeBundle(const Toolchain &tools, CompileOptions &options,
                llvm::StringRef workDir, llvm::StringRef dir,
                llvm::StringRef data);

//===----------------------------------------------------------------------===//
// Subcommands
//===----------------------------------------------------------------------===//

int compileCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv);
int runCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv);
int planCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv);
int machineCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv);

//===----------------------------------------------------------------------===//
// This host's calibrated machine file (HostMachine.cpp)
//===----------------------------------------------------------------------===//

/// The driver's cache folder: $XDG_CACHE_HOME/ratrain or ~/.cache/ratrain.
std::string cacheRoot();

/// What identifies this host's hardware for its machine file.
struct HostIdentity {
  /// "AMD EPYC (vendor AuthenticAMD, family 25, model 17, stepping 1), 2
  /// logical CPUs, 8 GB memory".
  std::string description;
  /// File-name key: vendor, family, model, CPUs and a hash of the
  /// description, the CPU feature flags and the kernels' build id (the
  /// calibration measures the kernels as well as the CPU).
  std::string key;
};
HostIdentity getHostIdentity();
/// Where this host's calibrated machine file is cached.
std::string hostMachinePath();
/// Runs ratrain-calibrate into hostMachinePath() (atomically); returns it.
/// With `model` (a config.json), the file also lists the model's GEMM calls
/// as measured here (`gemm_measured`; `seqLen` 0: the config's length).
llvm::Expected<std::string> calibrateHostMachine(const Toolchain &tools,
                                                 bool quick, bool verbose,
                                                 llvm::StringRef model = {},
                                                 int64_t seqLen = 0);
/// Adds to `machineFile` (this host's) the GEMM calls of `model` it does
/// not list yet, timed here by `ratrain-calibrate --add-gemms`: micro-batches
/// of 1, 2 and 4 sequences and of `microBatch` when given (`seqLen` 0: the
/// config's length). Nothing to do when the file lists them all or has no
/// kernel measurements; a config that does not load is left to the
/// compiler's message, and a failed measurement is a warning (the fit then
/// prices those calls).
void measureModelGemms(const Toolchain &tools, llvm::StringRef machineFile,
                       llvm::StringRef model, int64_t seqLen,
                       int64_t microBatch, bool verbose);
/// `machine`, or for "host" this host's calibrated file, measured on first
/// use.
llvm::Expected<std::string>
resolveMachine(const Toolchain &tools, llvm::StringRef machine, bool verbose);

} // namespace ratrain::driver

#endif // RATRAIN_TOOLS_RATRAIN_DRIVER_H
