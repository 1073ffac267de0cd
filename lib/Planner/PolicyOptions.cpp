//===- PolicyOptions.cpp - Command-line options of the policies -----------===//

#include "ratrain/Planner/PolicyOptions.h"
#include "ratrain/Model/Limits.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace ratrain;
namespace cl = llvm::cl;

PolicyOptions::PolicyOptions(cl::OptionCategory &category)
    : inNetwork(
          "in-network", cl::init(""),
          cl::desc("LEVEL:REDUCE[:MULTICAST]: network level LEVEL reduces and "
                   "multicasts in the network that many times faster "
                   "(overrides the machine file's network.in_network; "
                   "docs/machine-model.md)"),
          cl::cat(category)),
      transfers("transfers", cl::init("two-sided"),
                cl::desc("how pipeline messages travel: two-sided (send and "
                         "receive) or one-sided (puts into reserved receive "
                         "buffers; docs/schedule.md, \"One-sided "
                         "transfers\")"),
                cl::cat(category)),
      syncPeriod(
          "sync-period", cl::init(1),
          cl::desc("partial synchronization (DreamDDP): replicas update with "
                   "their own gradients and average each layer's masters once "
                   "every N steps (1: all-reduce every gradient every step; "
                   "docs/schedule.md, \"Partial synchronization\")"),
          cl::cat(category)),
      maxGradNorm(
          "max-grad-norm", cl::init(0),
          cl::desc("clip the gradients to this global norm: no update before "
                   "the norm over every rank, priced in every plan (0: no "
                   "clipping; docs/schedule.md, \"Gradient clipping\")"),
          cl::cat(category)),
      actOffload(
          "act-offload", cl::init(""),
          cl::desc("activation offload (GriNNder): none, all, or offloaded "
                   "decoder layers per stage (\"2,0\"); empty: searched where "
                   "the machine has an offload tier (docs/schedule.md, "
                   "\"Activation offload\")"),
          cl::cat(category)),
      dpShares("dp-shares", cl::init(""),
               cl::desc("uneven data-parallel shares: micro-batches per "
                        "replica (\"3,1\"; docs/planner.md, "
                        "\"Heterogeneous clusters\"); empty: even, or on a "
                        "machine with classes of clusters the planner's"),
               cl::cat(category)),
      classLayout("class-layout", cl::init("search"),
                  cl::desc("on a machine with classes of clusters: even, "
                           "replicas (uneven shares per replica), stages "
                           "(uneven layers per stage) or search"),
                  cl::cat(category)) {}

/// Comma-separated integers in [lo, hi] into `counts` (cleared first);
/// false on anything else.
static bool parseCounts(llvm::StringRef value, int64_t lo, int64_t hi,
                        std::vector<int64_t> &counts) {
  counts.clear();
  llvm::SmallVector<llvm::StringRef> fields;
  value.split(fields, ',');
  for (llvm::StringRef field : fields) {
    int64_t count;
    if (field.trim().getAsInteger(10, count) || count < lo || count > hi)
      return false;
    counts.push_back(count);
  }
  return true;
}

/// The error of an apply*Option function, as a command-line option's.
static llvm::Error asOptionError(llvm::Error error) {
  if (!error)
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "--" + llvm::toString(std::move(error)));
}

llvm::Error PolicyOptions::applyToMachine(MachineModel &machine) const {
  if (inNetwork.empty())
    return llvm::Error::success();
  return asOptionError(applyInNetworkOption(inNetwork, machine));
}

llvm::Error PolicyOptions::applyToRequest(PlanRequest &request) const {
  if (llvm::Error error =
          asOptionError(applyMaxGradNormOption(maxGradNorm, request)))
    return error;
  if (llvm::Error error =
          asOptionError(applyTransfersOption(transfers, request)))
    return error;
  if (llvm::Error error =
          asOptionError(applySyncPeriodOption(syncPeriod, request)))
    return error;
  if (llvm::Error error =
          asOptionError(applyActivationOffloadOption(actOffload, request)))
    return error;
  if (llvm::Error error = asOptionError(applyDpSharesOption(dpShares, request)))
    return error;
  return asOptionError(applyClassLayoutOption(classLayout, request));
}

//===----------------------------------------------------------------------===//
// Option values into a PlanRequest (also used by the --ratrain-plan pass)
//===----------------------------------------------------------------------===//

llvm::Error ratrain::applyMaxGradNormOption(double maxGradNorm,
                                            PlanRequest &request) {
  // Written so that NaN fails too.
  if (!(std::isfinite(maxGradNorm) && maxGradNorm >= 0))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("max-grad-norm: expected a finite number >= 0 (0: no "
                      "clipping), got {0}",
                      maxGradNorm));
  request.maxGradNorm = maxGradNorm;
  return llvm::Error::success();
}

llvm::Error ratrain::applyTransfersOption(llvm::StringRef transfers,
                                          PlanRequest &request) {
  std::optional<TransferPolicy> policy = parseTransferPolicy(transfers);
  if (!policy)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "transfers: expected two-sided or one-sided, got '" + transfers + "'");
  request.transfers = *policy;
  return llvm::Error::success();
}

llvm::Error ratrain::applySyncPeriodOption(int64_t syncPeriod,
                                           PlanRequest &request) {
  if (syncPeriod < 1 || syncPeriod > limits::kMaxSyncPeriod)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "sync-period: expected 1 (every step) to " +
                                       std::to_string(limits::kMaxSyncPeriod) +
                                       ", got " + std::to_string(syncPeriod));
  if (syncPeriod > 1 && request.maxGradNorm > 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "sync-period: partial synchronization (" + std::to_string(syncPeriod) +
            ") cannot clip gradients (max-grad-norm): replicas update with "
            "their own gradients, so there is no global norm");
  request.syncPeriod = syncPeriod;
  return llvm::Error::success();
}

llvm::Error ratrain::applyActivationOffloadOption(llvm::StringRef value,
                                                  PlanRequest &request) {
  using Mode = PlanRequest::ActivationOffloadMode;
  request.activationOffloadCounts.clear();
  if (value.empty()) {
    request.activationOffload = Mode::Search;
    return llvm::Error::success();
  }
  if (value == "none" || value == "all") {
    request.activationOffload = value == "none" ? Mode::None : Mode::All;
    return llvm::Error::success();
  }
  if (!parseCounts(value, 0, limits::kMaxModelLayers,
                   request.activationOffloadCounts))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "act-offload: expected none, all or comma-separated counts of "
        "offloaded layers per stage (0 to " +
            std::to_string(limits::kMaxModelLayers) + "), got '" + value + "'");
  request.activationOffload = Mode::Counts;
  return llvm::Error::success();
}

llvm::Error ratrain::applyDpSharesOption(llvm::StringRef value,
                                         PlanRequest &request) {
  request.dpShares.clear();
  if (value.empty())
    return llvm::Error::success();
  if (!parseCounts(value, 1, limits::kMaxMicroBatches, request.dpShares))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "dp-shares: expected comma-separated micro-batch counts per replica "
        "(1 to " +
            std::to_string(limits::kMaxMicroBatches) + "), got '" + value +
            "'");
  if (int64_t(request.dpShares.size()) > limits::kMaxClusters)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("dp-shares: {0} replicas exceed the limit of {1}",
                      request.dpShares.size(), limits::kMaxClusters));
  return llvm::Error::success();
}

llvm::Error ratrain::applyClassLayoutOption(llvm::StringRef value,
                                            PlanRequest &request) {
  using Layout = PlanRequest::ClassLayout;
  std::optional<Layout> layout =
      llvm::StringSwitch<std::optional<Layout>>(value)
          .Cases({"", "search"}, Layout::Search)
          .Case("even", Layout::Even)
          .Case("replicas", Layout::Replicas)
          .Case("stages", Layout::Stages)
          .Default(std::nullopt);
  if (!layout)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "class-layout: expected search, even, replicas or stages, got '" +
            value + "'");
  request.classLayout = *layout;
  return llvm::Error::success();
}

llvm::Error ratrain::applyScheduleOption(llvm::StringRef name,
                                         int64_t virtualStages,
                                         PlanRequest &request) {
  if (name == "auto") {
    request.searchSchedules = true;
  } else if (std::optional<schedule::ScheduleKind> kind =
                 schedule::parseScheduleKind(name);
             kind && *kind != schedule::ScheduleKind::Custom) {
    request.schedule = *kind;
  } else {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "schedule: expected 1f1b, interleaved-1f1b, zb-h1, zbv or auto, got '" +
            name + "'");
  }
  if (virtualStages < 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("virtual stages must be positive, got {0}",
                      virtualStages));
  if (virtualStages > 0)
    request.virtualStages = virtualStages;
  return llvm::Error::success();
}
