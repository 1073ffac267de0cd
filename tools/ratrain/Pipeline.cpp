//===- Pipeline.cpp - The stages from a model config to an executable -----===//
//
// Like a compiler driver, `ratrain compile` runs the sibling tools stage by
// stage (import -> plan -> schedule-pipeline -> lower-to-mt3k (+ verify) ->
// mt3k-to-cpp), then compiles the emitted C++ with one compiler command
// against libratrain_program.so. Every stage's output and diagnostics stay in
// a work folder (--keep-temps keeps it).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using llvm::StringRef;
namespace fs = llvm::sys::fs;

namespace ratrain::driver {

/// Runs one stage's command; its stderr goes to `<workDir>/<name>.err` and
/// is passed through (all of it, after a line naming the stage and the
/// command, when the stage fails). Returns the exit status.
static int runStage(StringRef name, llvm::ArrayRef<std::string> argv,
                    StringRef workDir, bool verbose) {
  if (verbose)
    note(formatCommand(argv));
  std::string errFile = joinPath(workDir, (name + ".err").str());
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

llvm::Expected<PlannedMachine> prepareMachine(CompileOptions &options,
                                              StringRef workDir) {
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
      return makeError(llvm::formatv(
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
    std::string file = joinPath(workDir, "machine.yaml");
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec, fs::OF_Text);
    if (ec)
      return makeError(llvm::formatv("{0}: {1}", file, ec.message()));
    os << "# " << options.machineFile << " with " << planned.ranksPerCluster
       << " virtual clusters per cluster (ratrain driver)\n"
       << ratrain::printMachineModel(*split);
    planned.file = file;
    note(llvm::formatv("{0} ranks on machine '{1}' ({2} clusters): each "
                       "cluster split into {3} virtual clusters (machine "
                       "'{4}', 1/{3} of the DDR, compute and bandwidth each)",
                       options.ranks, machine->name, clusters,
                       planned.ranksPerCluster, split->name));
  }
  if (options.dp) {
    if (options.ranks % *options.dp)
      return makeError(llvm::formatv("--dp {0} does not divide --ranks {1}",
                                     *options.dp, options.ranks));
    int64_t pp = options.ranks / *options.dp;
    if (options.pp && *options.pp != pp)
      return makeError(llvm::formatv("--pp {0} x --dp {1} is not --ranks {2}",
                                     *options.pp, *options.dp, options.ranks));
    options.pp = pp;
  }
  if (options.pp && options.ranks % *options.pp)
    return makeError(llvm::formatv("--pp {0} does not divide --ranks {1}",
                                   *options.pp, options.ranks));
  if (!options.globalBatch)
    options.globalBatch = 2 * options.ranks;
  return planned;
}

std::string planPassOptions(const CompileOptions &options) {
  std::string text =
      llvm::formatv("clusters={0} global-batch={1} policy={2}", options.ranks,
                    options.globalBatch, options.policy);
  if (options.pp)
    text += llvm::formatv(" pp={0}", *options.pp).str();
  if (options.zero)
    text += llvm::formatv(" zero={0}", *options.zero).str();
  if (options.microBatchSize)
    text +=
        llvm::formatv(" micro-batch-size={0}", options.microBatchSize).str();
  if (!options.partition.empty())
    text += " partition=" + options.partition;
  if (!options.weightWire.empty())
    text += " weight-wire=" + options.weightWire;
  if (!options.gradWire.empty())
    text += " grad-wire=" + options.gradWire;
  if (options.schedule != "1f1b")
    text += " schedule=" + options.schedule;
  if (options.transfers != "two-sided")
    text += " transfers=" + options.transfers;
  if (options.syncPeriod > 1)
    text += " sync-period=" + std::to_string(options.syncPeriod);
  if (!options.actOffload.empty())
    text += " act-offload=" + options.actOffload;
  if (!options.dpShares.empty())
    text += " dp-shares=" + options.dpShares;
  if (!options.classLayout.empty())
    text += " class-layout=" + options.classLayout;
  if (options.maxGradNorm > 0) {
    char norm[32];
    std::snprintf(norm, sizeof(norm), "%.17g", options.maxGradNorm);
    text += std::string(" max-grad-norm=") + norm;
  }
  return text;
}

/// One line describing the `#ratrain.plan<...>` in a planned module.
static std::optional<std::string> describePlan(StringRef planned,
                                               StringRef policy) {
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
  // The schedule, when not 1F1B: `schedule = zbv, virtual_stages = 2`.
  std::string schedule;
  if (size_t at = attr.find("schedule = "); at != StringRef::npos) {
    schedule = (", schedule " + attr.substr(at + 11).take_while([](char c) {
                 return llvm::isAlnum(c) || c == '_';
               })).str();
    if (int64_t v = field("virtual_stages"); v > 1)
      schedule += llvm::formatv(" with {0} virtual stages per rank", v).str();
  }
  if (attr.contains("transfers = one_sided"))
    schedule += ", one-sided transfers";
  if (int64_t h = field("sync_period"); h > 1)
    schedule += llvm::formatv(", each layer averaged every {0} steps", h).str();
  if (size_t at = attr.find("act_offload = ["); at != StringRef::npos) {
    int64_t layers = 0;
    StringRef list =
        attr.substr(at + 15).take_until([](char c) { return c == ']'; });
    llvm::SmallVector<StringRef> counts;
    list.split(counts, ',');
    for (StringRef count : counts) {
      int64_t value = 0;
      if (!count.trim().getAsInteger(10, value))
        layers += value;
    }
    schedule +=
        llvm::formatv(", activations of {0} layers offloaded", layers).str();
  }
  if (size_t at = attr.find("dp_shares = ["); at != StringRef::npos)
    schedule += (", micro-batches per replica " +
                 attr.substr(at + 13).take_until([](char c) {
                   return c == ']';
                 })).str();
  if (attr.contains("rank_order = replica_major"))
    schedule += ", ranks replica-major";
  return llvm::formatv("pp {0} x dp {1}, ZeRO-{2}, {3} micro-batches of {4}"
                       "{8}, predicted step {5:f3} s, peak {6:f2} GiB per "
                       "rank (policy {7})",
                       field("pp"), field("dp"), field("zero"),
                       field("micro_batches"), field("micro_batch_size"),
                       stepSeconds, peakGiB, policy, schedule)
      .str();
}

int compileProgram(const Toolchain &tools, CompileOptions &options,
                   StringRef workDir, StringRef exe, const LinkMode &link) {
  for (auto [file, what] :
       {std::pair<StringRef, StringRef>{tools.translate, "ratrain-translate"},
        {tools.opt, "ratrain-opt"},
        {tools.description, "the program build description"}})
    if (llvm::Error error = requireFile(file, what))
      return fail(std::move(error));
  llvm::Expected<ProgramBuild> build = loadProgramBuild(tools.description);
  if (!build)
    return fail(build.takeError());
  llvm::Expected<PlannedMachine> machine = prepareMachine(options, workDir);
  if (!machine)
    return fail(machine.takeError());

  auto temp = [&](StringRef name) { return joinPath(workDir, name); };
  std::string imported = temp("model.mlir"), planned = temp("planned.mlir"),
              scheduled = temp("scheduled.mlir"), lowered = temp("mt3k.mlir"),
              source = temp("program.cpp");

  std::vector<std::string> import = {tools.translate, "--import-hf-config",
                                     options.model,   "--machine",
                                     machine->file,   "-o",
                                     imported};
  if (!options.dtype.empty())
    import.push_back("--dtype=" + options.dtype);
  if (options.seqLen)
    import.push_back("--seq-len=" + std::to_string(options.seqLen));
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
  // The lowered programs are checked for races (--mt3k-verify: the hazard
  // model of the ops' declared effects) before any C++ is written.
  if (runStage("lower-to-mt3k",
               {tools.opt, scheduled,
                "--ratrain-lower-to-mt3k=weight-decay-params=" +
                    options.weightDecayParams,
                "--mt3k-verify", "-o", lowered},
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
  llvm::append_range(compile, link.linkFlags);
  llvm::append_range(compile, build->libraries);
  for (const std::string &dir : link.rpath ? *link.rpath : build->rpath)
    compile.push_back("-Wl,-rpath," + dir);
  if (runStage("compile", compile, workDir, options.verbose))
    return 1;
  return 0;
}

} // namespace ratrain::driver
