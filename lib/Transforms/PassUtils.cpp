//===- PassUtils.cpp - Helpers shared by RATrain passes -------------------===//

#include "ratrain/Transforms/PassUtils.h"

using namespace mlir;
using namespace ratrain;

FailureOr<MachineModel> ratrain::loadPassMachine(ModuleOp module,
                                                 StringRef machineFile) {
  std::string path = machineFile.str();
  if (path.empty())
    if (auto attr = module->getAttrOfType<StringAttr>("ratrain.machine"))
      path = attr.getValue().str();
  if (path.empty()) {
    module.emitError("no machine file: pass machine=<file> or import with "
                     "--machine");
    return failure();
  }
  llvm::Expected<MachineModel> machine = loadMachineModel(path);
  if (!machine) {
    module.emitError(llvm::toString(machine.takeError()));
    return failure();
  }
  return std::move(*machine);
}

Recompute ratrain::toIRRecompute(RecomputePolicy policy) {
  switch (policy) {
  case RecomputePolicy::None:
    return Recompute::None;
  case RecomputePolicy::Selective:
    return Recompute::Selective;
  case RecomputePolicy::Full:
    return Recompute::Full;
  }
  llvm_unreachable("unknown recompute policy");
}

RecomputePolicy ratrain::fromIRRecompute(Recompute recompute) {
  switch (recompute) {
  case Recompute::None:
    return RecomputePolicy::None;
  case Recompute::Selective:
    return RecomputePolicy::Selective;
  case Recompute::Full:
    return RecomputePolicy::Full;
  }
  llvm_unreachable("unknown recompute");
}

Offload ratrain::toIROffload(OffloadPolicy policy) {
  switch (policy) {
  case OffloadPolicy::None:
    return Offload::None;
  case OffloadPolicy::OptimizerStates:
    return Offload::Optimizer;
  case OffloadPolicy::MasterAndOptimizer:
    return Offload::Master;
  }
  llvm_unreachable("unknown offload policy");
}

OffloadPolicy ratrain::fromIROffload(Offload offload) {
  switch (offload) {
  case Offload::None:
    return OffloadPolicy::None;
  case Offload::Optimizer:
    return OffloadPolicy::OptimizerStates;
  case Offload::Master:
    return OffloadPolicy::MasterAndOptimizer;
  }
  llvm_unreachable("unknown offload");
}

ParallelConfig ratrain::toParallelConfig(PlanAttr plan) {
  ParallelConfig config;
  config.pipelineStages = plan.getPp();
  config.dataParallel = plan.getDp();
  config.microBatchSize = plan.getMicroBatchSize();
  config.numMicroBatches = plan.getMicroBatches();
  config.zero = static_cast<ZeroStage>(plan.getZero());
  config.offload = fromIROffload(plan.getOffload());
  int64_t firstDecoder = 0;
  for (int64_t stage = 0; stage < plan.getPp(); ++stage) {
    // Model layer 0 (embedding) is on stage 0, the head on the last stage.
    int64_t decoders = plan.getStageLayers()[stage];
    if (stage == 0)
      --decoders;
    if (stage == plan.getPp() - 1)
      --decoders;
    config.stages.push_back({firstDecoder, decoders});
    firstDecoder += decoders;
    config.recompute.push_back(fromIRRecompute(plan.getRecompute()[stage]));
  }
  return config;
}
