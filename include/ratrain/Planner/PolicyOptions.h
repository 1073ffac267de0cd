//===- PolicyOptions.h - Command-line options of the policies --*- C++ -*-===//
//
// The communication and optimizer policies that ratrain-plan and ratrain-sim
// both take on their command lines (--in-network, --transfers, --sync-period,
// --max-grad-norm, --act-offload), declared once: each tool constructs a
// PolicyOptions in its option category and applies it to its machine and its
// plan request. The --ratrain-plan pass takes the same policies as pass options
// and calls the same apply*Option functions.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_PLANNER_POLICYOPTIONS_H
#define RATRAIN_PLANNER_POLICYOPTIONS_H

#include "ratrain/Planner/Planner.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

namespace ratrain {

/// Registers the policy options in `category` on construction (as any
/// llvm::cl::opt; construct one per tool, at namespace scope).
class PolicyOptions {
public:
  explicit PolicyOptions(llvm::cl::OptionCategory &category);

  /// --in-network: the machine's collective-capable level, overriding its
  /// file. The error names the option.
  llvm::Error applyToMachine(MachineModel &machine) const;
  /// --max-grad-norm, --transfers, --sync-period, --act-offload,
  /// --dp-shares and --class-layout, in that order (the sync period checks
  /// the clipping). The error names the option.
  llvm::Error applyToRequest(PlanRequest &request) const;

private:
  llvm::cl::opt<std::string> inNetwork;
  llvm::cl::opt<std::string> transfers;
  llvm::cl::opt<int64_t> syncPeriod;
  llvm::cl::opt<double> maxGradNorm;
  llvm::cl::opt<std::string> actOffload;
  llvm::cl::opt<std::string> dpShares;
  llvm::cl::opt<std::string> classLayout;
};

} // namespace ratrain

#endif // RATRAIN_PLANNER_POLICYOPTIONS_H
