//===- ratrain-sim.cpp - Simulate a training step on a machine model
//-------===//
//
// Two inputs:
// - a scheduled `ratrain` module (the positional .mlir file; needs the
//   compiler, RATRAIN_ENABLE_COMPILER), turned into a SimProgram by the
//   schedule adapter;
// - a training plan: --model with --clusters/--global-batch (the planner
//   picks the best plan for the policy, or --pp/--dp/--micro-batch fix it),
//   built into a 1F1B program with the cost model's durations.
// Prints the summary (`key: value` lines), optionally writes a Chrome trace
// (--trace) and an SVG timeline (--svg), and with --measured-step or
// --measured-log compares the simulated step time with a measured one, with
// --measured-trace (a real run's per-op trace) per stage and op class.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/Planner.h"
#include "ratrain/Planner/PolicyOptions.h"
#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/MeasuredTrace.h"
#include "ratrain/Simulator/Simulator.h"
#include "ratrain/Simulator/StepLog.h"
#include "ratrain/Simulator/Timeline.h"
#include "ratrain/Support/CrashReport.h"
#ifdef RATRAIN_SIM_HAVE_SCHEDULE_ADAPTER
#include "ratrain/Simulator/FromSchedule.h"
#endif

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>

using namespace ratrain;
using namespace ratrain::sim;
namespace cl = llvm::cl;

static cl::OptionCategory category("ratrain-sim options");
static cl::opt<std::string> inputPath(cl::Positional,
                                      cl::desc("[scheduled module .mlir]"),
                                      cl::init(""), cl::cat(category));
static cl::opt<std::string> machinePath("machine", cl::Required,
                                        cl::desc("machine file (YAML/JSON)"),
                                        cl::value_desc("file"),
                                        cl::cat(category));
static cl::opt<std::string>
    modelPath("model", cl::init(""),
              cl::desc("HuggingFace config.json (simulate a plan)"),
              cl::value_desc("file"), cl::cat(category));
static cl::opt<int64_t> clusters("clusters", cl::init(0),
                                 cl::desc("plan: compute clusters"),
                                 cl::cat(category));
static cl::opt<int64_t> globalBatch("global-batch", cl::init(0),
                                    cl::desc("plan: sequences per iteration"),
                                    cl::cat(category));
static cl::opt<int64_t> seqLen("seq-len", cl::init(0),
                               cl::desc("plan: sequence length (default: "
                                        "min(max positions, 4096))"),
                               cl::cat(category));
static cl::opt<std::string> policy("policy", cl::init("ratrain"),
                                   cl::desc("lifecycle: ratrain | gpu-style"),
                                   cl::cat(category));
static cl::opt<std::string> schedulePolicy(
    "schedule-policy", cl::init(""),
    cl::desc("plan: lifecycle placement of the simulated program, ratrain | "
             "gpu-style (default: --policy, which picks the plan); e.g. "
             "the ratrain plan scheduled gpu-style isolates the lifecycle "
             "placement"),
    cl::cat(category));
static cl::opt<int64_t> fixedPP("pp", cl::init(0),
                                cl::desc("plan: pipeline stages"),
                                cl::cat(category));
static cl::opt<int64_t> fixedDP("dp", cl::init(0),
                                cl::desc("plan: data-parallel replicas"),
                                cl::cat(category));
static cl::opt<int64_t> fixedMBS("micro-batch", cl::init(0),
                                 cl::desc("plan: micro-batch size"),
                                 cl::cat(category));
static cl::opt<std::string> scheduleKind(
    "schedule", cl::init("1f1b"),
    cl::desc("plan: pipeline schedule: 1f1b | interleaved-1f1b | zb-h1 | zbv | "
             "auto (search every kind)"),
    cl::cat(category));
static cl::opt<int64_t> virtualStages(
    "virtual-stages", cl::init(0),
    cl::desc("plan: virtual stages per rank (default: 2 and 4 for "
             "interleaved-1f1b, 2 for zbv, 1 otherwise)"),
    cl::cat(category));
static cl::opt<std::string> fixedZero("zero", cl::init(""),
                                      cl::desc("plan: ZeRO stage 0|1|2|3"),
                                      cl::cat(category));
static cl::opt<std::string>
    fixedOffload("offload", cl::init(""),
                 cl::desc("plan: offloaded states none|optimizer|master "
                          "(default: searched)"),
                 cl::cat(category));
static cl::opt<std::string> partition(
    "partition", cl::init(""),
    cl::desc("plan: ZeRO state partitioning flat|zero++|three-level (the "
             "presets on the machine's network levels)"),
    cl::cat(category));
static cl::opt<std::string>
    weightWire("weight-wire", cl::init(""),
               cl::desc("plan: wire format of the weight all-gathers "
                        "native|int8 (qwZ)"),
               cl::cat(category));
static cl::opt<std::string>
    gradWire("grad-wire", cl::init(""),
             cl::desc("plan: wire format of the gradient reduce-scatters "
                      "native|int8|int4 (qgZ)"),
             cl::cat(category));
static cl::opt<std::string>
    fixedRecompute("recompute", cl::init(""),
                   cl::desc("plan: none|selective|full on every stage"),
                   cl::cat(category));
static cl::opt<std::string>
    algorithm("algorithm", cl::init(""),
              cl::desc("gradient sync: ring|tree|hierarchical (default: the "
                       "machine file's)"),
              cl::cat(category));
static PolicyOptions policyOptions(category);
static cl::opt<unsigned> iterations("iterations", cl::init(3),
                                    cl::desc("iterations to simulate"),
                                    cl::cat(category));
static cl::opt<std::string> tracePath("trace", cl::init(""),
                                      cl::desc("write a Chrome trace JSON"),
                                      cl::value_desc("file"),
                                      cl::cat(category));
static cl::opt<std::string> svgPath("svg", cl::init(""),
                                    cl::desc("write an SVG timeline"),
                                    cl::value_desc("file"), cl::cat(category));
static cl::opt<unsigned> traceIterations(
    "trace-iterations", cl::init(0),
    cl::desc("iterations to record for --trace/--svg, the last ones (default: "
             "all when the program has fewer than 200000 tasks, else 1)"),
    cl::cat(category));
static cl::opt<double> measuredStep(
    "measured-step", cl::init(0),
    cl::desc("measured step time of a real run (seconds): print the error"),
    cl::cat(category));

static cl::opt<std::string> measuredLog(
    "measured-log", cl::init(""),
    cl::desc("the runtime's per-step JSON log of a real run: compare its "
             "median step time (first step excluded) with the simulated one"),
    cl::value_desc("file"), cl::cat(category));

static cl::opt<std::string> measuredTrace(
    "measured-trace", cl::init(""),
    cl::desc("the per-op trace of a real run of the same program (its "
             "--trace FILE): print simulated against measured time per "
             "stage and op class"),
    cl::value_desc("file"), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "ratrain-sim") << message << "\n";
  return 1;
}

namespace {
/// What the plan path adds to the summary.
struct PlanInfo {
  std::string description;
  double predictedStep = 0;
  /// On a machine with classes of clusters or with uneven dp shares: the
  /// programs of the plan's groups of ranks (buildRankGroupPrograms), each
  /// simulated on its class; empty otherwise.
  std::vector<RankGroupProgram> groups;
  /// The planner's reason for the layout (Plan::layout).
  std::string layout;
  /// The whole plan's tokens and model FLOPs per iteration, and the peak
  /// 16-bit FLOP/s of all its clusters (each of its class), for the report
  /// of the groups.
  double tokensPerIteration = 0, modelFlopsPerIteration = 0, peakFlops = 0;
};
} // namespace

/// Builds the program of a plan from the command line.
static llvm::Expected<SimProgram> programFromPlan(const MachineModel &machine,
                                                  PlanInfo &info) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  HFImportOptions importOptions;
  importOptions.seqLen = seqLen;
  llvm::Expected<ModelConfig> model = loadHFConfig(modelPath, importOptions);
  if (!model)
    return model.takeError();
  std::optional<LifecyclePolicy> lifecycle = parseLifecyclePolicy(policy);
  if (!lifecycle)
    return error("--policy: expected ratrain or gpu-style, got '" + policy +
                 "'");
  if (clusters <= 0 || globalBatch <= 0)
    return error("--model needs --clusters and --global-batch");

  PlanRequest request;
  request.clusters = clusters;
  request.globalBatch = globalBatch;
  request.seqLen = seqLen;
  request.policy = *lifecycle;
  request.topK = 1;
  if (fixedPP)
    request.pipelineStages = fixedPP;
  if (fixedDP)
    request.dataParallel = fixedDP;
  if (fixedMBS)
    request.microBatchSize = fixedMBS;
  if (!fixedZero.empty()) {
    std::optional<ZeroStage> zero = parseZeroStage(fixedZero);
    if (!zero)
      return error("--zero: expected 0, 1, 2 or 3, got '" + fixedZero + "'");
    request.zero = *zero;
  }
  if (!fixedOffload.empty()) {
    std::optional<OffloadPolicy> offload = parseOffloadPolicy(fixedOffload);
    if (!offload)
      return error("--offload: expected none, optimizer or master, got '" +
                   fixedOffload + "'");
    request.offload = *offload;
  }
  // The sharding policy: a preset, then the wire formats.
  std::optional<ShardingPolicy> sharding;
  if (!partition.empty()) {
    sharding =
        shardingPreset(partition, int64_t(machine.networkLevels().size()));
    if (!sharding)
      return error("--partition: expected flat, zero++ or three-level (the "
                   "last two need two network levels; machine '" +
                   machine.name + "' has " +
                   llvm::Twine(machine.networkLevels().size()) + "), got '" +
                   partition + "'");
  }
  for (auto [flag, value, target] :
       {std::tuple<const char *, std::string, bool>{"weight-wire", weightWire,
                                                    true},
        {"grad-wire", gradWire, false}}) {
    if (value.empty())
      continue;
    std::optional<WireFormat> wire = parseWireFormat(value);
    if (!wire || (target && *wire == WireFormat::Int4))
      return error(llvm::Twine("--") + flag + ": expected " +
                   (target ? "native or int8" : "native, int8 or int4") +
                   ", got '" + value + "'");
    if (!sharding)
      sharding = ShardingPolicy();
    (target ? sharding->weightWire : sharding->gradWire) = *wire;
  }
  if (sharding) {
    if (!request.zero || *request.zero < ZeroStage::Gradients)
      return error("--partition, --weight-wire and --grad-wire need --zero 2 "
                   "or 3");
    request.sharding = sharding;
  }
  if (!fixedRecompute.empty()) {
    std::optional<RecomputePolicy> r = parseRecomputePolicy(fixedRecompute);
    if (!r)
      return error("--recompute: expected none, selective or full, got '" +
                   fixedRecompute + "'");
    request.recompute = *r;
  }
  if (llvm::Error err =
          applyScheduleOption(scheduleKind, virtualStages, request))
    return error("--" + llvm::toString(std::move(err)));
  if (llvm::Error err = policyOptions.applyToRequest(request))
    return std::move(err);
  llvm::Expected<PlanResult> plans = planTraining(*model, machine, request);
  if (!plans)
    return plans.takeError();
  if (plans->plans.empty())
    return error("the planner found no plan");
  Plan best = plans->plans.front();
  // The requested policy, whether or not the planner prices it.
  if (sharding)
    best.config.sharding = *sharding;
  info.description = best.config.describe();
  info.predictedStep = best.time.total;
  info.layout = best.layout;

  PlanProgramOptions options;
  options.policy = *lifecycle;
  if (!schedulePolicy.empty()) {
    std::optional<LifecyclePolicy> placement =
        parseLifecyclePolicy(schedulePolicy);
    if (!placement)
      return error("--schedule-policy: expected ratrain or gpu-style, got '" +
                   schedulePolicy + "'");
    options.policy = *placement;
    if (*placement != *lifecycle)
      info.predictedStep =
          predictStepTime(CostModel(*model, machine), best.config, *placement)
              .total;
  }
  if (!algorithm.empty()) {
    std::optional<CollectiveAlgorithm> a = parseCollectiveAlgorithm(algorithm);
    if (!a)
      return error("--algorithm: expected ring, tree or hierarchical, got '" +
                   algorithm + "'");
    options.algorithm = *a;
  }
  llvm::Expected<std::vector<RankGroupProgram>> groups =
      buildRankGroupPrograms(*model, machine, best.config, options);
  if (!groups)
    return groups.takeError();
  if (groups->size() == 1 && groups->front().label.empty())
    return std::move(groups->front().program);
  info.groups = std::move(*groups);
  info.tokensPerIteration =
      double(best.config.globalBatch()) * double(model->seqLen);
  ParallelConfig one = best.config;
  one.dataParallel = one.microBatchSize = one.numMicroBatches = 1;
  one.replicaMicroBatches.clear();
  info.modelFlopsPerIteration =
      modelFlopsPerIteration(*model, one) * double(best.config.globalBatch());
  for (int64_t c = 0; c < best.config.clusters(); ++c)
    info.peakFlops +=
        machine.classes.empty()
            ? machine.cluster.peakFlopsF16
            : machine.classes[machine.classOfCluster(c)].cluster.peakFlopsF16;
  return info.groups.front().program;
}

static llvm::Expected<SimProgram>
programFromSchedule(const MachineModel &machine) {
#ifdef RATRAIN_SIM_HAVE_SCHEDULE_ADAPTER
  return loadScheduledProgram(inputPath, machine);
#else
  (void)machine;
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      inputPath + ": this ratrain-sim was built without the compiler "
                  "(RATRAIN_ENABLE_COMPILER=OFF) and cannot read .mlir; "
                  "simulate a plan with --model instead");
#endif
}

namespace {
/// The run's kernel time against the simulated one (ratrain-sim
/// --measured-log): the ranks' mean time inside kernels against the stages'
/// mean busy time; on a machine split into virtual clusters, where a
/// kernel's wall time holds the other ranks' turns on its core (which depend
/// on how the ranks overlap), the CPU time inside kernels against the compute
/// tasks' seconds on a whole core (1 / K of theirs on the split cluster).
struct KernelSpeed {
  double measured = 0, simulated = 0;
  bool cpuBased = false;
};
} // namespace

static KernelSpeed kernelSpeed(const MeasuredSteps &steps,
                               const SimReport &report,
                               const SimProgram &program,
                               const MachineModel &machine) {
  KernelSpeed speed;
  if (machine.virtualClustersPerCluster > 1 &&
      steps.medianKernelCpuSeconds > 0) {
    speed.cpuBased = true;
    speed.measured = steps.medianKernelCpuSeconds;
    for (const StageProgram &stage : program.stages)
      speed.simulated += stage.computeSeconds() /
                         double(machine.virtualClustersPerCluster) /
                         double(program.stages.size());
    return speed;
  }
  speed.measured = steps.medianKernelSeconds;
  for (const StageReport &stage : report.stageReports)
    speed.simulated += stage.totalBusy() / double(report.stageReports.size());
  return speed;
}

/// `program` with its compute at the run's kernel speed. Where the log has
/// every rank of the program (and the program is one group of ranks), each
/// stage's compute takes its slowest rank's kernel time, since the replicas
/// of a stage wait for the slowest; otherwise all compute is scaled by the
/// ranks' mean.
static SimProgram atRunKernelSpeed(const SimProgram &program,
                                   const SimReport &report,
                                   const MeasuredSteps &steps,
                                   const KernelSpeed &speed,
                                   const MachineModel &machine, bool oneGroup) {
  SimProgram scaled = program;
  const std::vector<double> &perRank = speed.cpuBased
                                           ? steps.rankMedianKernelCpuSeconds
                                           : steps.rankMedianKernelSeconds;
  const size_t numStages = program.stages.size();
  if (!oneGroup || program.clustersPerStage != 1 ||
      int64_t(perRank.size()) != program.totalClusters()) {
    scaled.scaleCompute(speed.measured / speed.simulated);
    return scaled;
  }
  std::vector<double> slowest(numStages, 0);
  for (auto [rank, seconds] : llvm::enumerate(perRank)) {
    double &stage = slowest[size_t(program.stageOfRank(int64_t(rank)))];
    stage = std::max(stage, seconds);
  }
  for (size_t s = 0; s < numStages; ++s) {
    double own = speed.cpuBased ? program.stages[s].computeSeconds() /
                                      double(machine.virtualClustersPerCluster)
                                : report.stageReports[s].totalBusy();
    if (slowest[s] > 0 && own > 0)
      scaled.stages[s].scaleCompute(slowest[s] / own);
  }
  return scaled;
}

int main(int argc, char **argv) {
  ratrain::InitTool init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv, "RATrain simulator: a training step, event by event\n");

  llvm::Expected<MachineModel> machine = loadMachineModel(machinePath);
  if (!machine)
    return fail(llvm::toString(machine.takeError()));
  if (llvm::Error error = policyOptions.applyToMachine(*machine))
    return fail(llvm::toString(std::move(error)));
  if (inputPath.empty() == modelPath.empty())
    return fail("give either a scheduled module (.mlir) or --model");
  if (iterations == 0)
    return fail("--iterations: at least 1");
  // Written so that NaN fails too.
  if (measuredStep.getNumOccurrences() &&
      !(measuredStep > 0 && std::isfinite(measuredStep)))
    return fail("--measured-step: expected a positive number of seconds, "
                "got " +
                llvm::formatv("{0}", double(measuredStep)).str());

  // The real run's trace, read before anything is printed.
  std::optional<MeasuredTrace> trace;
  if (!measuredTrace.empty()) {
    llvm::Expected<MeasuredTrace> loaded = loadMeasuredTrace(measuredTrace);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    trace = std::move(*loaded);
  }

  PlanInfo info;
  llvm::Expected<SimProgram> program = modelPath.empty()
                                           ? programFromSchedule(*machine)
                                           : programFromPlan(*machine, info);
  if (!program)
    return fail(llvm::toString(program.takeError()));

  SimOptions options;
  options.iterations = iterations;
  // Collectives every few iterations (partial synchronization): the steady
  // state (iterations 2..N) covers each phase of the period equally often.
  if (uint32_t period = program->longestPeriod(); period > 1) {
    unsigned rounds =
        std::max(1u, (unsigned(iterations) - 1 + period - 1) / period);
    options.iterations = 1 + rounds * period;
    if (options.iterations != iterations)
      llvm::errs() << "note: simulating " << options.iterations
                   << " iterations, so that the steady state covers each of "
                      "the "
                   << period << " phases of the sync period "
                   << (rounds == 1 ? "once" : "equally often") << "\n";
  }
  options.recordTrace = !tracePath.empty() || !svgPath.empty();
  options.traceIterations = traceIterations;
  if (options.recordTrace && traceIterations.getNumOccurrences() == 0)
    options.traceIterations = program->totalTasks() < 200000 ? 0 : 1;
  // Groups of ranks on different classes: each simulated on its class; the
  // slowest sets the step and is the one reported in full.
  const MachineModel *simulated = &*machine;
  if (!info.groups.empty()) {
    size_t slowest = 0;
    double slowestStep = -1;
    for (auto [i, group] : llvm::enumerate(info.groups)) {
      llvm::Expected<SimReport> own =
          simulate(group.program, group.machine, options);
      if (!own)
        return fail(modelPath + ": " + group.label + ": " +
                    llvm::toString(own.takeError()));
      llvm::outs() << "group: " << group.label
                   << "\ngroup-step-s: " << formatNumber(own->stepTime) << "\n";
      if (own->stepTime > slowestStep) {
        slowestStep = own->stepTime;
        slowest = i;
      }
    }
    if (!info.layout.empty())
      llvm::outs() << "layout: " << info.layout << "\n";
    *program = std::move(info.groups[slowest].program);
    simulated = &info.groups[slowest].machine;
  }
  llvm::Expected<SimReport> report = simulate(*program, *simulated, options);
  if (!report)
    return fail((inputPath.empty() ? modelPath : inputPath) + ": " +
                llvm::toString(report.takeError()));
  if (!info.groups.empty() && report->stepTime > 0) {
    // The slowest group's step, the whole plan's tokens and FLOPs.
    report->tokensPerIteration = info.tokensPerIteration;
    report->modelFlopsPerIteration = info.modelFlopsPerIteration;
    report->tokensPerSecond = info.tokensPerIteration / report->stepTime;
    if (info.peakFlops > 0)
      report->mfu =
          info.modelFlopsPerIteration / (report->stepTime * info.peakFlops);
  }

  llvm::raw_ostream &os = llvm::outs();
  if (!info.description.empty())
    os << "plan: " << info.description << "\n";
  report->print(os);
  if (info.predictedStep > 0)
    os << "planner-step-s: " << formatNumber(info.predictedStep)
       << "\nsimulated-vs-planner-percent: "
       << llvm::formatv("{0:f2}", stepTimeErrorPercent(report->stepTime,
                                                       info.predictedStep))
       << "\n";
  double measured = measuredStep;
  std::optional<std::pair<double, double>> measuredQuartiles;
  // The step simulated with the compute tasks at the speed the run's kernels
  // measured (0: the log has no kernel times).
  double measuredKernel = 0, simulatedKernel = 0, stepAtKernelSpeed = 0;
  bool kernelCpuBased = false;
  // Shared cores: the progress threads' CPU per step, measured (the log's
  // progress_cpu_s) and simulated (the stages' mean); 0 when not both.
  double measuredProgressCpu = 0, simulatedProgressCpu = 0;
  if (!measuredLog.empty()) {
    llvm::Expected<MeasuredSteps> steps = loadStepLog(measuredLog);
    if (!steps)
      return fail(llvm::toString(steps.takeError()));
    measured = steps->medianStepSeconds;
    if (simulated->virtualClustersPerCluster > 1 &&
        simulated->network.progressCoreShare > 0 &&
        !steps->progressCpuSeconds.empty()) {
      measuredProgressCpu = steps->medianProgressCpuSeconds;
      for (const StageReport &stage : report->stageReports)
        simulatedProgressCpu +=
            stage.progressCpu / double(report->stageReports.size());
    }
    KernelSpeed speed = kernelSpeed(*steps, *report, *program, *simulated);
    measuredKernel = speed.measured;
    simulatedKernel = speed.simulated;
    kernelCpuBased = speed.cpuBased;
    if (measuredKernel > 0 && simulatedKernel > 0) {
      SimProgram atKernelSpeed = atRunKernelSpeed(
          *program, *report, *steps, speed, *simulated, info.groups.empty());
      SimOptions plain = options;
      plain.recordTrace = false;
      llvm::Expected<SimReport> rescaled =
          simulate(atKernelSpeed, *simulated, plain);
      if (!rescaled)
        return fail(llvm::toString(rescaled.takeError()));
      stepAtKernelSpeed = rescaled->stepTime;
    }
    measuredQuartiles.emplace(steps->lowerQuartileStepSeconds,
                              steps->upperQuartileStepSeconds);
    os << "measured-steps: " << steps->stepSeconds.size() << "\n";
    if (steps->peakArenaBytes > 0)
      os << "measured-peak-arena-gib: "
         << llvm::formatv("{0:f3}", double(steps->peakArenaBytes) /
                                        (1024.0 * 1024.0 * 1024.0))
         << "\n";
  }
  if (trace) {
    if (int64_t(trace->stages.size()) > int64_t(report->stageReports.size()))
      return fail(llvm::formatv("{0}: the trace has {1} stages, the program "
                                "{2}: not a run of this program",
                                std::string(measuredTrace),
                                trace->stages.size(),
                                report->stageReports.size())
                      .str());
    printTraceComparison(*report, *trace, os);
  }
  if (measured > 0)
    os << "measured-step-s: " << formatNumber(measured) << "\nerror-percent: "
       << llvm::formatv("{0:f2}",
                        stepTimeErrorPercent(report->stepTime, measured))
       << "\n";
  if (measured > 0 && stepAtKernelSpeed > 0)
    os << (kernelCpuBased ? "measured-kernel-cpu-s: " : "measured-kernel-s: ")
       << formatNumber(measuredKernel)
       << (kernelCpuBased ? "\nsimulated-kernel-cpu-s: "
                          : "\nsimulated-kernel-s: ")
       << formatNumber(simulatedKernel) << "\nkernel-speed-ratio: "
       << llvm::formatv("{0:f3}", simulatedKernel / measuredKernel)
       << "\nstep-at-measured-kernel-speed-s: "
       << formatNumber(stepAtKernelSpeed)
       << "\nerror-at-measured-kernel-speed-percent: "
       << llvm::formatv("{0:f2}",
                        stepTimeErrorPercent(stepAtKernelSpeed, measured))
       << "\n";
  if (measured > 0 && simulatedProgressCpu > 0)
    os << "measured-progress-cpu-s: " << formatNumber(measuredProgressCpu)
       << "\nsimulated-progress-cpu-s: " << formatNumber(simulatedProgressCpu)
       << "\n";
  if (measuredQuartiles && measured > 0)
    os << "measured-quartiles-s: " << formatNumber(measuredQuartiles->first)
       << " " << formatNumber(measuredQuartiles->second)
       << "\nmeasured-spread-percent: "
       << llvm::formatv("{0:f2}",
                        (measuredQuartiles->second - measuredQuartiles->first) /
                            measured * 100)
       << "\n";

  auto writeFile = [&](const std::string &path, auto writer) -> bool {
    std::error_code ec;
    llvm::raw_fd_ostream file(path, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      fail(path + ": " + ec.message());
      return false;
    }
    writer(file);
    return true;
  };
  if (!tracePath.empty() && !writeFile(tracePath, [&](llvm::raw_ostream &file) {
        writeChromeTrace(*report, *program, file);
      }))
    return 1;
  if (!svgPath.empty() && !writeFile(svgPath, [&](llvm::raw_ostream &file) {
        SvgOptions svg;
        svg.title = program->name;
        writeSvgTimeline(*report, *program, file, svg);
      }))
    return 1;
  return 0;
}
