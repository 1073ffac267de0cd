//===- Run.cpp - ratrain run ----------------------------------------------===//
//
// `ratrain run MODEL.json --machine FILE --ranks N [flags] [-- mpirun args]`
// compiles the model into a cache (keyed by the model, the machine, the plan
// options and the tools) and starts the executable under mpirun.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdlib>
#include <thread>
#include <unistd.h>

using llvm::StringRef;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace ratrain::driver {

/// The program's flags `run` passes on (--data separately).
static const StringRef kRunValueFlags[] = {
    "--steps",       "--data",        "--log",          "--ckpt",
    "--save-every",  "--seed",        "--init-seed",    "--init-from",
    "--lr",          "--lr-schedule", "--warmup-steps", "--min-lr",
    "--decay-steps", "--eval-every",  "--eval-steps",   "--eval-data",
    "--eval-split",  "--trace",       "--trace-steps"};

static const char *const kRunHelp =
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
  --init-from DIR       start from a HuggingFace model directory (config.json
                        + safetensors); with --steps 0 and --ckpt, convert it
                        into a step-0 checkpoint
  --seed S              data order (the order windows are drawn in)
  --init-seed S         initialization of the weights (default 0)
  --lr X                peak learning rate (default: the compiled one)
  --lr-schedule NAME    constant (default), cosine or linear decay
  --warmup-steps N      linear warm-up from 0 over N steps
  --min-lr X            where the decay ends (default 0)
  --decay-steps N       the step the decay ends at (default: --steps)
  --eval-every N        validation every N steps and after the last:
                        "eval_loss" in the log
  --eval-data FILE      held-out token file for validation, or
  --eval-split F        hold out the last fraction F of --data's windows
  --eval-steps K        validation steps per evaluation (default 1)
  --trace FILE          write a Chrome/Perfetto trace of every rank's
                        schedule ops, kernels, waits and transfers
                        (ui.perfetto.dev); compare it with the simulator:
                        ratrain-sim PROGRAM --measured-trace FILE
  --trace-steps A[-B]   the steps to trace (default 2-4)
  --no-cache            compile afresh into a temporary folder
  -v, --verbose         print each command
  --                    the rest goes to mpirun, before the program

The cache is $XDG_CACHE_HOME/ratrain (or ~/.cache/ratrain).
)";

/// Adds the size and modification time of `file` to `hash` (the identity
/// of a tool binary).
static void hashFileIdentity(llvm::SHA256 &hash, StringRef file) {
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
static void hashFileContents(llvm::SHA256 &hash, StringRef file) {
  if (auto buffer = llvm::MemoryBuffer::getFile(file))
    hash.update((*buffer)->getBuffer());
  hash.update(StringRef("\n"));
}

int runCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv) {
  std::vector<StringRef> valueFlags(getPlanValueFlags().begin(),
                                    getPlanValueFlags().end());
  for (StringRef flag : kRunValueFlags)
    valueFlags.push_back(flag);
  llvm::Expected<Args> args =
      parseArgs("run", argv, valueFlags,
                {"--help", "-h", "-v", "--verbose", "--resume", "--no-cache"});
  if (!args)
    return fail(args.takeError());
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kRunHelp << "\n" << kPlanFlagsHelp;
    return 0;
  }
  llvm::Expected<CompileOptions> options =
      getCompileOptions(tools, *args, "run");
  if (!options)
    return fail(options.takeError());
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
      return fail(build.takeError());
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
    hash.update(("partition=" + options->partition +
                 " weight-wire=" + options->weightWire +
                 " grad-wire=" + options->gradWire + "\n"));
    // Every plan option (transfers, sync period, activation offload, dp
    // shares, ...), as the --ratrain-plan pass gets them.
    hash.update(planPassOptions(*options) + "\n");
    hash.update(llvm::formatv("schedule={0} seq-len={1} micro-batch-size={2} "
                              "max-grad-norm={3:e16} weight-decay-params={4}\n",
                              options->schedule, options->seqLen,
                              options->microBatchSize, options->maxGradNorm,
                              options->weightDecayParams)
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
  for (StringRef flag : kRunValueFlags)
    if (std::optional<std::string> value = args->get(flag);
        value && flag != "--data") {
      command.push_back(flag.str());
      command.push_back(*value);
    }
  if (args->has("--resume"))
    command.push_back("--resume");
  // A machine with classes of clusters: on this host each rank runs as
  // slowly as its class (the program's --emulate-classes).
  if (llvm::Expected<ratrain::MachineModel> machine =
          ratrain::loadMachineModel(options->machineFile)) {
    if (machine->heterogeneous()) {
      command.push_back("--emulate-classes");
      note(llvm::formatv("machine '{0}' has classes of clusters: each rank "
                         "runs as slowly as its class (--emulate-classes)",
                         machine->name));
    }
  } else {
    llvm::consumeError(machine.takeError());
  }
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

} // namespace ratrain::driver
