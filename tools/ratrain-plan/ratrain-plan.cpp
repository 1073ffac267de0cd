//===- ratrain-plan.cpp - Print the best training plans -------------------===//
//
// ratrain-plan --model examples/models/llama-2-7b.json
//              --machine examples/machines/mt3000.yaml
//              --clusters 1024 --global-batch 1024 [--seq-len 4096]
//              [--policy ratrain|gpu-style|both] [--top 5] [--json]
//              [--pp N] [--dp N] [--micro-batch N] [--zero 0|1|2|3]
//              [--recompute none|selective|full]
//              [--offload none|optimizer|master] [--memory-cap BYTES]
//              [--schedule 1f1b|interleaved-1f1b|zb-h1|zbv|auto]
//              [--virtual-stages N]
//              [--partition flat|zero++|three-level]
//              [--weight-wire native|int8] [--grad-wire native|int8|int4]
//              [--allow-quantized] [--max-grad-norm X]
//              [--transfers two-sided|one-sided] [--sync-period N]
//              [--in-network LEVEL:REDUCE[:MULTICAST]]
//
// Prints the top plans as a table, then each plan's per-stage memory
// breakdown; for an infeasible request, what is missing for the closest
// candidate. `--policy both` plans each policy with its own memory model
// and prints the two best plans side by side with the predicted speedup.
// Errors read "error: <file>: <what>" and exit non-zero.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/HFConfig.h"
#include "ratrain/Planner/Planner.h"
#include "ratrain/Planner/PolicyOptions.h"
#include "ratrain/Support/CrashReport.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace ratrain;
namespace cl = llvm::cl;

static cl::OptionCategory category("ratrain-plan options");
static cl::opt<std::string> modelPath("model", cl::Required,
                                      cl::desc("HuggingFace config.json"),
                                      cl::value_desc("file"),
                                      cl::cat(category));
static cl::opt<std::string> machinePath("machine", cl::Required,
                                        cl::desc("machine file (YAML/JSON)"),
                                        cl::value_desc("file"),
                                        cl::cat(category));
static cl::opt<int64_t> clusters("clusters", cl::Required,
                                 cl::desc("compute clusters to use"),
                                 cl::cat(category));
static cl::opt<int64_t> globalBatch("global-batch", cl::Required,
                                    cl::desc("sequences per iteration"),
                                    cl::cat(category));
static cl::opt<int64_t>
    seqLen("seq-len", cl::init(0),
           cl::desc("sequence length (default: min(max positions, 4096))"),
           cl::cat(category));
static cl::opt<std::string>
    dtypeOverride("dtype", cl::init(""),
                  cl::desc("train in bf16, f16 or f32 (default: the config's "
                           "torch_dtype)"),
                  cl::cat(category));
static cl::opt<std::string>
    policy("policy", cl::init("ratrain"),
           cl::desc("lifecycle: ratrain | gpu-style | both (plan each and "
                    "compare the best plans)"),
           cl::cat(category));
static cl::opt<int64_t> top("top", cl::init(5), cl::desc("plans to print"),
                            cl::cat(category));
static cl::opt<bool> json("json", cl::desc("print JSON instead of tables"),
                          cl::cat(category));
static cl::opt<int64_t> fixedPP("pp", cl::init(0),
                                cl::desc("fix the pipeline depth"),
                                cl::cat(category));
static cl::opt<int64_t> fixedDP("dp", cl::init(0),
                                cl::desc("fix the data-parallel width"),
                                cl::cat(category));
static cl::opt<int64_t> fixedMBS("micro-batch", cl::init(0),
                                 cl::desc("fix the micro-batch size"),
                                 cl::cat(category));
static cl::opt<std::string> scheduleKind(
    "schedule", cl::init("1f1b"),
    cl::desc("pipeline schedule: 1f1b | interleaved-1f1b | zb-h1 | zbv | "
             "auto (search every kind)"),
    cl::cat(category));
static cl::opt<int64_t>
    virtualStages("virtual-stages", cl::init(0),
                  cl::desc("virtual stages per rank (default: 2 and 4 for "
                           "interleaved-1f1b, 2 for zbv, 1 otherwise)"),
                  cl::cat(category));
static cl::opt<std::string> fixedZero("zero", cl::init(""),
                                      cl::desc("fix the ZeRO stage: 0|1|2|3"),
                                      cl::cat(category));
static cl::opt<std::string>
    fixedRecompute("recompute", cl::init(""),
                   cl::desc("same recompute on every stage: "
                            "none|selective|full"),
                   cl::cat(category));
static cl::opt<std::string>
    fixedOffload("offload", cl::init(""),
                 cl::desc("fix the offload policy: none|optimizer|master "
                          "(default: searched when the machine has an "
                          "offload tier)"),
                 cl::cat(category));
static cl::opt<double>
    memoryCap("memory-cap", cl::init(0),
              cl::desc("DDR cap per cluster in bytes (default: the machine "
                       "file's cluster.ddr_bytes)"),
              cl::cat(category));
static cl::opt<std::string> fixedPartition(
    "partition", cl::init(""),
    cl::desc("fix the sharding policy: flat|zero++|three-level (default: "
             "searched with the ZeRO stage)"),
    cl::cat(category));
static cl::opt<std::string>
    weightWire("weight-wire", cl::init(""),
               cl::desc("with --partition: the wire format of the ZeRO-3 "
                        "weight all-gathers: native|int8"),
               cl::cat(category));
static cl::opt<std::string>
    gradWire("grad-wire", cl::init(""),
             cl::desc("with --partition: the wire format of the gradient "
                      "reduce-scatters: native|int8|int4"),
             cl::cat(category));
static cl::opt<bool> allowQuantized(
    "allow-quantized",
    cl::desc("also search quantized communication (qwZ int8 weight gathers, "
             "qgZ int8/int4 gradient reduce-scatters; changes the numerics)"),
    cl::cat(category));
static PolicyOptions policyOptions(category);
static cl::opt<bool> noBreakdown("no-breakdown",
                                 cl::desc("omit the per-stage breakdowns"),
                                 cl::cat(category));

/// The header, the plan table and (unless --no-breakdown) each plan's
/// per-stage breakdown; or the JSON.
static void printResult(llvm::raw_ostream &os, const ModelConfig &model,
                        const MachineModel &machine, const PlanRequest &request,
                        const PlanResult &result) {
  if (json) {
    printPlanJSON(os, result);
    return;
  }
  double params = double(model.totalParams());
  std::string paramText = params >= 1e9
                              ? llvm::formatv("{0:f2}B", params / 1e9).str()
                              : llvm::formatv("{0:f2}M", params / 1e6).str();
  os << llvm::formatv(
      "model {0} ({1} params, seq {2}) on {3} ({4} "
      "clusters of {5} usable DDR), global batch {6}, policy "
      "{7}\n",
      model.name, paramText, request.seqLen ? request.seqLen : model.seqLen,
      machine.name, request.clusters, formatBytes(result.memoryCapBytes),
      request.globalBatch, stringifyLifecyclePolicy(request.policy));
  if (result.offloadCapBytes > 0)
    os << llvm::formatv("offload tier: {0}, {1} per cluster, {2}/s\n",
                        stringifyOffloadTierKind(machine.offload.kind),
                        formatBytes(result.offloadCapBytes),
                        formatBytes(int64_t(machine.offload.bandwidth)));
  os << llvm::formatv("candidates evaluated: {0} ({1} feasible); "
                      "combinations: {2} visited, {3} pruned by the memory "
                      "bound; stage evaluations: {4}\n\n",
                      result.candidatesEvaluated, result.feasiblePlans,
                      result.combinationsVisited, result.combinationsPruned,
                      result.stageEvaluations);
  printPlanTable(os, result.plans);
  os << "(layers and recompute per stage, stage 0 first; AxN = A for N "
        "stages)\n";
  if (noBreakdown)
    return;
  int64_t rank = 1;
  for (const Plan &plan : result.plans) {
    os << llvm::formatv("\nplan {0}: {1}\n", rank++, plan.config.describe());
    printStageBreakdown(os, plan, result.memoryCapBytes);
  }
}

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "ratrain-plan") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  ratrain::InitTool init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "RATrain resource-aware training planner\n");

  HFImportOptions importOptions;
  importOptions.seqLen = seqLen;
  if (!dtypeOverride.empty()) {
    importOptions.dtype = parseDType(dtypeOverride);
    if (!importOptions.dtype)
      return fail("--dtype: expected bf16, f16 or f32, got '" + dtypeOverride +
                  "'");
  }
  llvm::Expected<ModelConfig> model = loadHFConfig(modelPath, importOptions);
  if (!model)
    return fail(llvm::toString(model.takeError()));
  llvm::Expected<MachineModel> machine = loadMachineModel(machinePath);
  if (!machine)
    return fail(llvm::toString(machine.takeError()));
  if (llvm::Error error = policyOptions.applyToMachine(*machine))
    return fail(llvm::toString(std::move(error)));

  PlanRequest request;
  request.clusters = clusters;
  request.globalBatch = globalBatch;
  request.seqLen = seqLen;
  request.topK = top;
  // Written so that NaN fails too.
  if (!(memoryCap >= 0 && memoryCap <= 9e18))
    return fail("--memory-cap: expected a byte count from 0 to 9e18, got " +
                llvm::formatv("{0}", double(memoryCap)).str());
  request.memoryCapBytes = int64_t(memoryCap);
  bool both = policy == "both";
  if (both)
    request.policy = LifecyclePolicy::RATrain;
  else if (std::optional<LifecyclePolicy> p = parseLifecyclePolicy(policy))
    request.policy = *p;
  else
    return fail("--policy: expected ratrain, gpu-style or both, got '" +
                policy + "'");
  if (fixedPP.getNumOccurrences())
    request.pipelineStages = fixedPP;
  if (fixedDP.getNumOccurrences())
    request.dataParallel = fixedDP;
  if (fixedMBS.getNumOccurrences())
    request.microBatchSize = fixedMBS;
  if (!fixedZero.empty()) {
    std::optional<ZeroStage> zero = parseZeroStage(fixedZero);
    if (!zero)
      return fail("--zero: expected 0, 1, 2 or 3, got '" + fixedZero + "'");
    request.zero = *zero;
  }
  request.allowQuantized = allowQuantized;
  if (llvm::Error error = policyOptions.applyToRequest(request))
    return fail(llvm::toString(std::move(error)));
  if (!fixedPartition.empty()) {
    int64_t levels = int64_t(machine->networkLevels().size());
    std::optional<ShardingPolicy> policy =
        shardingPreset(fixedPartition, levels);
    if (!policy)
      return fail(llvm::formatv("--partition: expected flat, zero++ or "
                                "three-level (the last two need 2 network "
                                "levels, machine '{0}' has {1}), got '{2}'",
                                machine->name, levels, fixedPartition)
                      .str());
    auto wire = [&](const std::string &option, const std::string &value,
                    WireFormat &out) -> bool {
      if (value.empty())
        return true;
      std::optional<WireFormat> parsed = parseWireFormat(value);
      if (!parsed)
        return false;
      out = *parsed;
      return true;
    };
    if (!wire("weight-wire", weightWire, policy->weightWire) ||
        policy->weightWire == WireFormat::Int4)
      return fail("--weight-wire: expected native or int8, got '" + weightWire +
                  "'");
    if (!wire("grad-wire", gradWire, policy->gradWire))
      return fail("--grad-wire: expected native, int8 or int4, got '" +
                  gradWire + "'");
    request.sharding = *policy;
  } else if (!weightWire.empty() || !gradWire.empty()) {
    return fail("--weight-wire and --grad-wire need --partition");
  }
  if (!fixedRecompute.empty()) {
    std::optional<RecomputePolicy> r = parseRecomputePolicy(fixedRecompute);
    if (!r)
      return fail("--recompute: expected none, selective or full, got '" +
                  fixedRecompute + "'");
    request.recompute = *r;
  }

  if (llvm::Error err =
          applyScheduleOption(scheduleKind, virtualStages, request))
    return fail("--" + llvm::toString(std::move(err)));
  if (!fixedOffload.empty()) {
    std::optional<OffloadPolicy> o = parseOffloadPolicy(fixedOffload);
    if (!o)
      return fail("--offload: expected none, optimizer or master, got '" +
                  fixedOffload + "'");
    request.offload = *o;
  }

  if (!both) {
    llvm::Expected<PlanResult> result = planTraining(*model, *machine, request);
    if (!result)
      return fail(llvm::toString(result.takeError()));
    printResult(llvm::outs(), *model, *machine, request, *result);
    return 0;
  }

  // Both policies, each with its own memory model.
  PlanRequest ratrainRequest = request, gpuRequest = request;
  ratrainRequest.policy = LifecyclePolicy::RATrain;
  gpuRequest.policy = LifecyclePolicy::GpuStyle;
  llvm::Expected<PlanResult> ratrainResult =
      planTraining(*model, *machine, ratrainRequest);
  llvm::Expected<PlanResult> gpuResult =
      planTraining(*model, *machine, gpuRequest);
  if (!ratrainResult && !gpuResult) {
    std::string gpuError = llvm::toString(gpuResult.takeError());
    return fail("ratrain: " + llvm::toString(ratrainResult.takeError()) +
                "\ngpu-style: " + gpuError);
  }
  std::string ratrainError, gpuError;
  if (!ratrainResult)
    ratrainError = llvm::toString(ratrainResult.takeError());
  if (!gpuResult)
    gpuError = llvm::toString(gpuResult.takeError());
  const Plan *bestRatrain =
      ratrainResult ? &ratrainResult->plans.front() : nullptr;
  const Plan *bestGpu = gpuResult ? &gpuResult->plans.front() : nullptr;
  double speedup = bestRatrain && bestGpu
                       ? bestGpu->time.total / bestRatrain->time.total
                       : 0;
  llvm::raw_ostream &os = llvm::outs();
  if (json) {
    // {"ratrain": <result or error>, "gpu-style": ..., "speedup": x}
    auto emit = [&](llvm::Expected<PlanResult> &r, const std::string &error) {
      if (r) {
        std::string text;
        llvm::raw_string_ostream ts(text);
        printPlanJSON(ts, *r);
        os << llvm::StringRef(text).rtrim();
      } else {
        os << "{\"error\": " << llvm::formatv("{0}", llvm::json::Value(error))
           << "}";
      }
    };
    os << "{\n\"ratrain\": ";
    emit(ratrainResult, ratrainError);
    os << ",\n\"gpu-style\": ";
    emit(gpuResult, gpuError);
    os << ",\n\"speedup\": ";
    if (speedup > 0)
      os << llvm::formatv("{0:f4}", speedup);
    else
      os << "null";
    os << "\n}\n";
    return 0;
  }
  if (ratrainResult)
    printResult(os, *model, *machine, ratrainRequest, *ratrainResult);
  else
    os << "policy ratrain: " << ratrainError << "\n";
  os << "\n";
  if (gpuResult)
    printResult(os, *model, *machine, gpuRequest, *gpuResult);
  else
    os << "policy gpu-style: " << gpuError << "\n";
  os << "\nbest plan of each policy:\n";
  os << llvm::formatv("{0,-10} {1,4} {2,5} {3,4} {4,5} {5,4} {6,-9} {7,-14} "
                      "{8,-20} {9,9} {10,10} {11,11}\n",
                      "policy", "pp", "dp", "mbs", "m", "zero", "offload",
                      "layers", "recompute", "peak", "step", "tokens/s");
  for (const Plan *plan : {bestRatrain, bestGpu}) {
    const char *name = plan == bestRatrain ? "ratrain" : "gpu-style";
    if (!plan) {
      os << llvm::formatv("{0,-10} no feasible plan\n", name);
      continue;
    }
    const ParallelConfig &c = plan->config;
    os << llvm::formatv(
        "{0,-10} {1,4} {2,5} {3,4} {4,5} {5,4} {6,-9} {7,-14} {8,-20} {9,9} "
        "{10,10} {11,11:f1}\n",
        name, c.pipelineStages, c.dataParallel, c.microBatchSize,
        c.numMicroBatches, stringifyZeroStage(c.zero),
        stringifyOffloadPolicy(c.offload), formatLayerSplit(c),
        formatRecompute(c), formatBytes(plan->peakBytes()),
        formatSeconds(plan->time.total), plan->tokensPerSecond);
  }
  if (speedup > 0)
    os << llvm::formatv("predicted speedup ratrain / gpu-style: {0:f3}x\n",
                        speedup);
  else
    os << "predicted speedup ratrain / gpu-style: n/a ("
       << (bestRatrain ? "gpu-style" : "ratrain") << " has no plan)\n";
  return 0;
}
