//===- PolicyOptions.cpp - Command-line options of the policies -----------===//

#include "ratrain/Planner/PolicyOptions.h"

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
          cl::cat(category)) {}

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
  return asOptionError(applyActivationOffloadOption(actOffload, request));
}
