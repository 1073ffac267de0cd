//===- Options.cpp - Messages and command lines of the driver -------------===//
//
// How the driver reports errors and progress, parses a subcommand's command
// line, and reads the model, machine and plan flags every compiling
// subcommand takes.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "ratrain/Model/Limits.h"
#include "ratrain/Planner/Planner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using llvm::StringRef;
namespace fs = llvm::sys::fs;

namespace ratrain::driver {

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

int fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

int fail(llvm::Error error) { return fail(llvm::toString(std::move(error))); }

void note(const llvm::Twine &message) {
  llvm::errs() << "ratrain: " << message << "\n";
}

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

const char *const kPlanFlagsHelp = R"(PLAN OPTIONS:
  --machine FILE|host   machine file (YAML), required; 'host': this host's,
                        measured on first use (ratrain machine --help)
  --ranks N             MPI ranks = clusters to plan for (default: the
                        machine's clusters); more ranks than clusters split
                        each cluster into N/clusters virtual clusters
  --pp P                pipeline stages (default: the planner's choice)
  --dp D                data-parallel replicas (pp = ranks / D)
  --zero Z              ZeRO stage 0, 1, 2 or 3 (default: the planner's choice)
  --partition NAME      hierarchical ZeRO partitioning: flat, zero++ or
                        three-level (docs/schedule.md, "Partitioning")
  --weight-wire W       wire type of the weight all-gathers: native, int8
                        or int4 (ZeRO++ qwZ)
  --grad-wire W         wire type of the gradient reduce-scatters: native,
                        int8 or int4 (ZeRO++ qgZ)
  --global-batch B      sequences per step (default: 2 x ranks)
  --micro-batch-size N  sequences per micro-batch (default: the planner's
                        choice)
  --seq-len N           training sequence length (default: the config's
                        max_position_embeddings, at most 4096)
  --policy NAME         lifecycle policy: ratrain (default) or gpu-style
  --schedule NAME       pipeline schedule: 1f1b (default), interleaved-1f1b,
                        zb-h1, zbv, or auto (the planner picks the fastest)
  --transfers MODE      pipeline messages: two-sided (default: send and
                        receive) or one-sided (puts into the receiver's
                        reserved buffer; docs/schedule.md, "One-sided
                        transfers")
  --sync-period N       partial synchronization (DreamDDP): each replica
                        updates with its own gradient and every layer's
                        masters are averaged once every N steps, the layers
                        spread over the N phases (default 1: all-reduce
                        every gradient every step; docs/schedule.md,
                        "Partial synchronization")
  --act-offload WHAT    activation offload (GriNNder): none, all, or the
                        offloaded decoder layers per stage ("2,0"; default:
                        the planner's choice where the machine has an
                        offload tier; docs/schedule.md, "Activation
                        offload")
  --dp-shares M,...     micro-batches per data-parallel replica ("3,1";
                        docs/planner.md, "Heterogeneous clusters"; default:
                        even, or the planner's on a machine with classes)
  --class-layout WHAT   on a machine with classes of clusters: even,
                        replicas, stages or search (default)
  --dtype TYPE          train in bf16 or f16 (default: the config's dtype)
  --max-grad-norm X     clip the gradients to this global L2 norm before any
                        update, as PyTorch's clip_grad_norm_ (default: no
                        clipping; docs/schedule.md, "Gradient clipping")
  --weight-decay-params P  which parameters AdamW decays: matrices (default:
                        every 2-D weight, not the norm weights and biases),
                        matrices-except-embeddings, or all
)";

//===----------------------------------------------------------------------===//
// Command lines
//===----------------------------------------------------------------------===//

std::optional<std::string> Args::get(StringRef flag) const {
  auto it = values.find(flag);
  if (it == values.end())
    return std::nullopt;
  return it->second;
}

bool Args::has(StringRef flag) const { return switches.count(flag.str()); }

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
        return makeError(llvm::formatv("{0} takes no value", flag));
      args.switches.insert(flag.str());
      continue;
    }
    if (!llvm::is_contained(valueFlags, flag))
      return makeError(llvm::formatv(
          "unknown option '{0}' (see 'ratrain {1} --help')", flag, command));
    if (hasInline) {
      args.values[flag] = inlineValue.str();
    } else {
      if (i + 1 >= argv.size())
        return makeError(llvm::formatv("{0} needs a value", flag));
      args.values[flag] = argv[++i];
    }
  }
  return args;
}

llvm::Expected<int64_t> getPositive(const Args &args, StringRef flag,
                                    int64_t fallback) {
  std::optional<std::string> text = args.get(flag);
  if (!text)
    return fallback;
  int64_t value = 0;
  if (StringRef(*text).getAsInteger(10, value) || value < 1)
    return makeError(llvm::formatv(
        "{0}: expected a positive integer, got '{1}'", flag, *text));
  return value;
}

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
// Model, machine and plan flags
//===----------------------------------------------------------------------===//

llvm::ArrayRef<StringRef> getPlanValueFlags() {
  static const StringRef flags[] = {"--machine",
                                    "--ranks",
                                    "--pp",
                                    "--dp",
                                    "--zero",
                                    "--global-batch",
                                    "--policy",
                                    "--dtype",
                                    "--schedule",
                                    "--transfers",
                                    "--sync-period",
                                    "--act-offload",
                                    "--dp-shares",
                                    "--class-layout",
                                    "--partition",
                                    "--weight-wire",
                                    "--grad-wire",
                                    "--seq-len",
                                    "--micro-batch-size",
                                    "--max-grad-norm",
                                    "--weight-decay-params"};
  return flags;
}

llvm::Expected<CompileOptions>
getCompileOptions(const Toolchain &tools, const Args &args, StringRef command) {
  CompileOptions options;
  if (args.positional.empty())
    return makeError(llvm::formatv("no model config (usage: ratrain {0} "
                                   "MODEL.json --machine FILE ...)",
                                   command));
  if (args.positional.size() > 1)
    return makeError(llvm::formatv("unexpected argument '{0}' (one model "
                                   "config per command)",
                                   args.positional[1]));
  options.model = args.positional[0];
  if (!fs::exists(options.model))
    return makeError(options.model + ": no such model config");
  std::optional<std::string> machine = args.get("--machine");
  if (!machine)
    return makeError("--machine FILE is required");
  options.verbose = args.has("--verbose") || args.has("-v");
  llvm::Expected<std::string> resolved =
      resolveMachine(tools, *machine, options.verbose);
  if (!resolved)
    return resolved.takeError();
  options.machineFile = *resolved;
  if (!fs::exists(options.machineFile))
    return makeError(options.machineFile + ": no such machine file");

  for (StringRef flag : {"--ranks", "--pp", "--dp", "--global-batch",
                         "--seq-len", "--micro-batch-size"})
    if (llvm::Expected<int64_t> value = getPositive(args, flag, 0); !value)
      return value.takeError();
    else if (*value) {
      if (flag == "--ranks")
        options.ranks = *value;
      else if (flag == "--pp")
        options.pp = *value;
      else if (flag == "--dp")
        options.dp = *value;
      else if (flag == "--seq-len")
        options.seqLen = *value;
      else if (flag == "--micro-batch-size")
        options.microBatchSize = *value;
      else
        options.globalBatch = *value;
    }
  // This host's file prices the model's own GEMM calls as they run here:
  // the first use of a model (of this sequence length) times them into it.
  if (*machine == "host")
    measureModelGemms(tools, options.machineFile, options.model, options.seqLen,
                      options.microBatchSize, options.verbose);
  if (std::optional<std::string> zero = args.get("--zero")) {
    if (*zero != "0" && *zero != "1" && *zero != "2" && *zero != "3")
      return makeError("--zero: expected 0, 1, 2 or 3, got '" + *zero + "'");
    options.zero = std::stoll(*zero);
  }
  if (std::optional<std::string> partition = args.get("--partition")) {
    if (*partition != "flat" && *partition != "zero++" &&
        *partition != "three-level")
      return makeError("--partition: expected flat, zero++ or three-level, "
                       "got '" +
                       *partition + "'");
    options.partition = *partition;
  }
  for (StringRef flag : {"--weight-wire", "--grad-wire"})
    if (std::optional<std::string> wire = args.get(flag)) {
      if (*wire != "native" && *wire != "int8" && *wire != "int4")
        return makeError(flag + ": expected native, int8 or int4, got '" +
                         *wire + "'");
      (flag == "--weight-wire" ? options.weightWire : options.gradWire) = *wire;
    }
  if (std::optional<std::string> norm = args.get("--max-grad-norm")) {
    double value = 0;
    if (StringRef(*norm).getAsDouble(value) || !std::isfinite(value) ||
        value <= 0)
      return makeError("--max-grad-norm: expected a finite number > 0, got '" +
                       *norm + "'");
    options.maxGradNorm = value;
  }
  if (std::optional<std::string> period = args.get("--sync-period")) {
    int64_t value = 0;
    if (StringRef(*period).getAsInteger(10, value) || value < 1 ||
        value > limits::kMaxSyncPeriod)
      return makeError("--sync-period: expected a step count from 1 to " +
                       std::to_string(limits::kMaxSyncPeriod) + ", got '" +
                       *period + "'");
    if (value > 1 && options.maxGradNorm > 0)
      return makeError("--sync-period " + *period +
                       " cannot be combined with --max-grad-norm: under "
                       "partial synchronization replicas update with their "
                       "own gradients, so there is no global norm to clip "
                       "to");
    options.syncPeriod = value;
  }
  if (std::optional<std::string> offload = args.get("--act-offload")) {
    // none, all, or counts (the planner checks them against the split).
    llvm::SmallVector<StringRef> counts;
    StringRef(*offload).split(counts, ',');
    bool valid = *offload == "none" || *offload == "all";
    if (!valid) {
      valid = true;
      for (StringRef count : counts) {
        int64_t value = 0;
        valid &= !count.getAsInteger(10, value) && value >= 0 &&
                 value <= limits::kMaxModelLayers;
      }
    }
    if (!valid)
      return makeError("--act-offload: expected none, all or comma-separated "
                       "counts of offloaded layers per stage (0 to " +
                       std::to_string(limits::kMaxModelLayers) + "), got '" +
                       *offload + "'");
    options.actOffload = *offload;
  }
  if (std::optional<std::string> shares = args.get("--dp-shares")) {
    ratrain::PlanRequest request;
    if (llvm::Error error = ratrain::applyDpSharesOption(*shares, request))
      return makeError("--" + llvm::toString(std::move(error)));
    options.dpShares = *shares;
  }
  if (std::optional<std::string> layout = args.get("--class-layout")) {
    ratrain::PlanRequest request;
    if (llvm::Error error = ratrain::applyClassLayoutOption(*layout, request))
      return makeError("--" + llvm::toString(std::move(error)));
    options.classLayout = *layout;
  }
  if (std::optional<std::string> decayed = args.get("--weight-decay-params")) {
    if (*decayed != "matrices" && *decayed != "matrices-except-embeddings" &&
        *decayed != "all")
      return makeError("--weight-decay-params: expected matrices, "
                       "matrices-except-embeddings or all, got '" +
                       *decayed + "'");
    options.weightDecayParams = *decayed;
  }
  if (std::optional<std::string> policy = args.get("--policy")) {
    if (*policy != "ratrain" && *policy != "gpu-style")
      return makeError("--policy: expected ratrain or gpu-style, got '" +
                       *policy + "'");
    options.policy = *policy;
  }
  if (std::optional<std::string> schedule = args.get("--schedule")) {
    static const char *const kinds[] = {"1f1b", "interleaved-1f1b", "zb-h1",
                                        "zbv", "auto"};
    if (!llvm::is_contained(kinds, StringRef(*schedule)))
      return makeError("--schedule: expected 1f1b, interleaved-1f1b, zb-h1, "
                       "zbv or auto, got '" +
                       *schedule + "'");
    options.schedule = *schedule;
  }
  if (std::optional<std::string> transfers = args.get("--transfers")) {
    if (*transfers != "two-sided" && *transfers != "one-sided")
      return makeError("--transfers: expected two-sided or one-sided, got '" +
                       *transfers + "'");
    options.transfers = *transfers;
  }
  if (std::optional<std::string> dtype = args.get("--dtype")) {
    if (*dtype != "bf16" && *dtype != "f16" && *dtype != "f32")
      return makeError("--dtype: expected bf16, f16 or f32, got '" + *dtype +
                       "'");
    options.dtype = *dtype;
  }
  return options;
}

} // namespace ratrain::driver
