//===- FromSchedule.cpp - A simulator program from a scheduled module -----===//

#include "ratrain/Simulator/FromSchedule.h"

#include "RATrain/RATrainDialect.h"
#include "RATrain/RATrainOps.h"
#include "RATrain/RATrainTypes.h"
#include "ratrain/Analysis/BufferSizes.h"
#include "ratrain/Analysis/LayerTiming.h"
#include "ratrain/Analysis/ModelAndPlan.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"
#include "ratrain/Planner/CostModel.h"
#include "ratrain/Simulator/FromPlan.h"
#include "ratrain/Simulator/Synthetic1F1B.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <numeric>

using namespace ratrain;

namespace {

llvm::Error opError(mlir::Operation *op, const llvm::Twine &what) {
  std::string location;
  llvm::raw_string_ostream os(location);
  op->getLoc().print(os);
  auto scheduleOp = llvm::dyn_cast<ScheduleOpInterface>(op);
  std::string name =
      scheduleOp ? scheduleOp.describe() : op->getName().getStringRef().str();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 location + ": " + name + ": " + what.str());
}

/// The layer a state type belongs to (-1 for other types).
int64_t layerOf(mlir::Type type) {
  if (auto view = llvm::dyn_cast<ViewType>(type))
    return view.getLayer();
  if (auto grad = llvm::dyn_cast<GradType>(type))
    return grad.getLayer();
  if (auto master = llvm::dyn_cast<MasterType>(type))
    return master.getLayer();
  if (auto state = llvm::dyn_cast<OptStateType>(type))
    return state.getLayer();
  if (auto act = llvm::dyn_cast<ActivationType>(type))
    return act.getLayer();
  if (auto offloaded = llvm::dyn_cast<OffloadedType>(type))
    return layerOf(offloaded.getState());
  if (auto pending = llvm::dyn_cast<AsyncType>(type))
    return layerOf(pending.getValue());
  return -1;
}

/// Translates one pipeline.
class ScheduleAdapter {
public:
  ScheduleAdapter(PipelineOp pipeline, ModelOp model,
                  const MachineModel &machine)
      : pipeline(pipeline), plan(pipeline.getPlan()), machine(machine),
        config(getModelConfig(model)), costs(config, machine),
        sizes(model, plan, MemoryOptions::forMachine(machine)) {
    for (LayerOp layer : model.getLayers())
      kinds.push_back(layer.getKind());
  }

  llvm::Expected<sim::SimProgram> build();

private:
  llvm::Error buildStage(StageOp stage, sim::StageProgram &program);
  double computeSeconds(mlir::Operation *op) const;
  /// Whether `update` reads the rank's own part of its gradient too (its
  /// reduce-scatter left the last reduction to it).
  bool readsOwnPart(UpdateOp update) const;
  /// Bytes an offload or reload of `value` moves between DDR and the tier:
  /// a master or optimizer state moves whole (this rank's shard) even when
  /// it streams through DDR in chunks; other states move their DDR buffer.
  int64_t transferBytes(mlir::Value value,
                        const StageBufferAnalysis &buffers) const;
  sim::CollectiveSpec collective(SyncOp sync) const;
  int64_t shardParams(int64_t layer) const {
    int64_t params = sizes.params(layer);
    return plan.getZero() >= 1 ? (params + plan.getDp() - 1) / plan.getDp()
                               : params;
  }

  PipelineOp pipeline;
  PlanAttr plan;
  const MachineModel &machine;
  ModelConfig config;
  CostModel costs;
  BufferSizes sizes;
  llvm::SmallVector<LayerKind> kinds;
};

} // namespace

int64_t
ScheduleAdapter::transferBytes(mlir::Value value,
                               const StageBufferAnalysis &buffers) const {
  mlir::Type type = value.getType();
  if (auto async = llvm::dyn_cast<AsyncType>(type))
    type = async.getValue();
  if (auto master = llvm::dyn_cast<MasterType>(type))
    return sizes.masterBytes(master.getLayer());
  if (auto opt = llvm::dyn_cast<OptStateType>(type))
    return sizes.optStateBytes(opt.getLayer());
  std::optional<unsigned> buffer = buffers.lookupBuffer(value);
  if (!buffer)
    for (mlir::Operation *user : value.getUsers())
      if (auto wait = llvm::dyn_cast<WaitOp>(user))
        buffer = buffers.lookupBuffer(wait.getValue());
  return buffer ? buffers.getBuffer(*buffer).bytes : 0;
}

double ScheduleAdapter::computeSeconds(mlir::Operation *op) const {
  if (double seconds =
          computeLayerOpSeconds(op, costs, kinds, plan.getMicroBatchSize()))
    return seconds;
  if (auto update = llvm::dyn_cast<UpdateOp>(op))
    return costs.optimizerUpdate(
        shardParams(layerOf(update.getGrad().getType())), readsOwnPart(update));
  return 0;
}

bool ScheduleAdapter::readsOwnPart(UpdateOp update) const {
  // The lowering's choice (ratrain::averagesInUpdate) for the sync whose
  // wait gave the update its gradient.
  auto wait = update.getGrad().getDefiningOp<WaitOp>();
  auto sync = wait ? wait.getPending().getDefiningOp<SyncOp>() : SyncOp();
  if (!sync || !llvm::isa<GradType>(sync.getState().getType()) ||
      sync.getScope() || sync.getWire())
    return false;
  return averagesInUpdate(plan, costs.getModel().dtype,
                          collective(sync).algorithm ==
                              CollectiveAlgorithm::Ring);
}

sim::CollectiveSpec ScheduleAdapter::collective(SyncOp sync) const {
  const int64_t dp = plan.getDp();
  const int64_t layer = layerOf(sync.getState().getType());
  sim::CollectiveSpec spec;
  switch (sync.getKind()) {
  case SyncKind::AllReduce:
    spec.kind = CollectiveKind::AllReduce;
    break;
  case SyncKind::ReduceScatter:
    spec.kind = CollectiveKind::ReduceScatter;
    break;
  case SyncKind::AllGather:
    spec.kind = CollectiveKind::AllGather;
    break;
  }
  // The full 16-bit gradient (all-reduce, reduce-scatter input) or view
  // (all-gather output); under partial synchronization the fp32 masters.
  spec.bytes = llvm::isa<MasterType>(sync.getState().getType())
                   ? sizes.params(layer) * 4
                   : sizes.viewBytes(layer);
  spec.groupSize = dp;
  // Contiguous groups: cluster id = stage * dp + replica.
  const int64_t perNode = std::max<int64_t>(1, machine.clustersPerNode);
  spec.membersPerNode = (dp % perNode == 0 || perNode % dp == 0)
                            ? std::min(dp, perNode)
                            : std::gcd(dp, perNode);
  // More than two network levels: the group's members on each of them.
  if (machine.network.levels.size() > 2)
    spec.membersPerLevel = sim::groupLevels(machine, dp);
  if (sync.getHierarchy() == SyncHierarchy::Hierarchical)
    spec.algorithm = CollectiveAlgorithm::Hierarchical;
  else
    spec.algorithm =
        machine.network.collective == CollectiveAlgorithm::Hierarchical
            ? CollectiveAlgorithm::Ring
            : machine.network.collective;
  return spec;
}

llvm::Error ScheduleAdapter::buildStage(StageOp stage,
                                        sim::StageProgram &program) {
  // A message between two ranks: micro-batch, receiving virtual stage and
  // direction.
  const int64_t numChunks = plan.getNumVirtualStages();
  auto transferTag = [&](int64_t mb, int64_t receiver, bool gradient) {
    return static_cast<uint64_t>(2 * (mb * numChunks + receiver) +
                                 (gradient ? 1 : 0));
  };
  program.name = llvm::formatv("stage {0}", stage.getStage()).str();
  const LinkClass pipelineLink = plan.getClusters() <= machine.clustersPerNode
                                     ? LinkClass::IntraNode
                                     : LinkClass::InterNode;
  const int64_t message = sizes.boundaryBytes();

  // Buffers and their live ranges: the assignment's if present, else sized
  // by the memory model.
  StageBufferAnalysis buffers(stage);
  {
    std::string diagnostics;
    mlir::ScopedDiagnosticHandler handler(stage.getContext(),
                                          [&](mlir::Diagnostic &diag) {
                                            diagnostics += diag.str() + "\n";
                                            return mlir::success();
                                          });
    mlir::FailureOr<bool> assigned = buffers.readAssigned();
    if (mlir::failed(assigned))
      return opError(stage, "malformed buffer assignment: " + diagnostics);
    if (!*assigned)
      buffers.size(sizes);
  }
  if (mlir::IntegerAttr peak =
          RATrainDialect::PeakBytesAttrHelper(stage.getContext())
              .getAttr(stage))
    program.assignedPeakBytes = peak.getInt();
  const int64_t stepEnd = buffers.getStepEnd();
  // Allocations before position i (index i + 1; index 0 is the step start)
  // and frees after it.
  std::vector<int64_t> allocAt(static_cast<size_t>(stepEnd + 2), 0);
  std::vector<int64_t> freeAt(static_cast<size_t>(stepEnd + 2), 0);
  for (const StageBuffer &buffer : buffers.getBuffers()) {
    if (buffer.bytes <= 0)
      continue;
    allocAt[static_cast<size_t>(std::max<int64_t>(-1, buffer.start) + 1)] +=
        buffer.bytes;
    freeAt[static_cast<size_t>(std::min(stepEnd, buffer.end) + 1)] +=
        buffer.bytes;
  }
  if (allocAt[0] > 0)
    program.addAlloc(allocAt[0], "step-start buffers");

  llvm::DenseMap<mlir::Value, sim::Token> tokens;
  for (int64_t position = 0; position <= stepEnd; ++position) {
    mlir::Operation *op = buffers.getOp(position);
    if (int64_t bytes = allocAt[static_cast<size_t>(position + 1)])
      program.addAlloc(bytes, "buffers");

    const std::string label = getTraceLabel(op);
    if (llvm::isa<ForwardOp>(op)) {
      program.addCompute(sim::ComputeKind::Forward, computeSeconds(op), 0,
                         label);
    } else if (llvm::isa<RecomputeOp>(op)) {
      program.addCompute(sim::ComputeKind::Recompute, computeSeconds(op), 0,
                         label);
    } else if (llvm::isa<BackwardOp, BackwardInputOp, BackwardWeightOp>(op)) {
      program.addCompute(sim::ComputeKind::Backward, computeSeconds(op), 0,
                         label);
    } else if (auto send = llvm::dyn_cast<SendOp>(op)) {
      bool gradient = send.getPayload() == Payload::Gradient;
      if (static_cast<int64_t>(send.getPeer()) >= plan.getPp())
        return opError(op, "peer stage out of range");
      // Between two chunks of this rank the tensor stays in DDR.
      if (send.getPeer() != stage.getStage())
        program.addSend(static_cast<uint32_t>(send.getPeer()), message,
                        transferTag(send.getMicroBatch(),
                                    send.getPeerVirtualStage(), gradient),
                        pipelineLink, label,
                        /*rendezvous=*/!send.getOneSided());
    } else if (auto recv = llvm::dyn_cast<RecvOp>(op)) {
      bool gradient = recv.getPayload() == Payload::Gradient;
      if (static_cast<int64_t>(recv.getPeer()) >= plan.getPp())
        return opError(op, "peer stage out of range");
      if (recv.getPeer() != stage.getStage())
        program.addRecv(
            static_cast<uint32_t>(recv.getPeer()), message,
            transferTag(recv.getMicroBatch(), recv.getVirtualStage(), gradient),
            label);
    } else if (auto sync = llvm::dyn_cast<SyncOp>(op)) {
      sim::CollectiveSpec spec = collective(sync);
      // Partial synchronization: only in the steps of its phase.
      uint32_t period = uint32_t(sync.getPeriod().value_or(1));
      uint32_t phase = uint32_t(sync.getPhase().value_or(0));
      tokens[sync.getPending()] =
          program.addCollective(spec, label, 0, period, phase);
    } else if (auto norm = llvm::dyn_cast<GradNormOp>(op)) {
      // Gradient clipping: the sum of squares of this rank's part of the
      // synced gradients, then the norm's all-reduce over every rank (the
      // data-parallel group, then the stages); the wait on it is free.
      int64_t elements = 0;
      for (mlir::Value grad : norm.getGrads())
        elements += shardParams(layerOf(grad.getType()));
      sim::CollectiveSpec dataParallel;
      dataParallel.groupSize = plan.getDp();
      const int64_t perNode = std::max<int64_t>(1, machine.clustersPerNode);
      dataParallel.membersPerNode =
          (plan.getDp() % perNode == 0 || perNode % plan.getDp() == 0)
              ? std::min(plan.getDp(), perNode)
              : std::gcd(plan.getDp(), perNode);
      sim::appendGlobalNorm(program, stage.getStage(), plan.getPp(),
                            dataParallel, costs.gradSquares(elements),
                            pipelineLink);
      tokens[norm.getPending()] = sim::Token();
    } else if (llvm::isa<UpdateOp>(op)) {
      program.addCompute(sim::ComputeKind::Update, computeSeconds(op), 0, label,
                         /*optimizerStream=*/true);
    } else if (auto prefetch = llvm::dyn_cast<ViewPrefetchOp>(op);
               prefetch && getAveragingOf(prefetch.getMaster())) {
      // Partial synchronization: the view is cast from the averaged master
      // on the compute stream (nothing to do for an F32 model, whose view
      // is its master).
      int64_t layer = layerOf(prefetch.getMaster().getType());
      if (costs.getModel().dtype != DType::F32)
        program.addCompute(sim::ComputeKind::ViewCast,
                           costs.viewCast(sizes.params(layer)), 0, label);
      tokens[prefetch.getPending()] = sim::Token();
    } else if (auto prefetch = llvm::dyn_cast<ViewPrefetchOp>(op)) {
      int64_t layer = layerOf(prefetch.getMaster().getType());
      // The update writes the refreshed view (shard) into a GSM slot and a
      // DMA copies it to the view, unless the view is the master itself.
      // Where the DMA runs on the cores the update writes the view in place:
      // its bytes on the compute stream, nothing to wait for.
      const int64_t viewBytes =
          shardParams(layer) * getDTypeBytes(costs.getModel().dtype);
      if (!updateWritesViewCopy(costs.getModel().dtype == DType::F32)) {
        tokens[prefetch.getPending()] = sim::Token();
      } else if (machine.cluster.dmaOnCores) {
        program.addCompute(sim::ComputeKind::Update,
                           costs.memoryBoundSeconds(double(viewBytes)), 0,
                           label);
        tokens[prefetch.getPending()] = sim::Token();
      } else {
        tokens[prefetch.getPending()] = program.addDma(viewBytes, 0, label);
      }
    } else if (auto offload = llvm::dyn_cast<OffloadOp>(op)) {
      int64_t bytes = transferBytes(offload.getState(), buffers);
      tokens[offload.getPending()] = program.addOffloadTransfer(bytes, label);
    } else if (auto reload = llvm::dyn_cast<ReloadOp>(op)) {
      int64_t bytes = transferBytes(reload.getPending(), buffers);
      tokens[reload.getPending()] = program.addOffloadTransfer(bytes, label);
    } else if (auto wait = llvm::dyn_cast<WaitOp>(op)) {
      auto it = tokens.find(wait.getPending());
      if (it == tokens.end())
        return opError(op, "waits on a value that no earlier asynchronous op "
                           "of the stage produced");
      // (The global norm's tree of messages has already blocked.)
      if (it->second.isValid())
        program.addWait(it->second, false, label);
    } else if (!llvm::isa<GradReadyOp, YieldOp>(op)) {
      return opError(op, "the simulator does not know this op");
    }

    if (int64_t bytes = freeAt[static_cast<size_t>(position + 1)])
      program.addFree(bytes, "buffers");
  }
  return llvm::Error::success();
}

llvm::Expected<sim::SimProgram> ScheduleAdapter::build() {
  sim::SimProgram program;
  llvm::StringRef policy = "not lifecycle-scheduled";
  if (std::optional<SchedulePolicy> scheduled = pipeline.getPolicy())
    policy = *scheduled == SchedulePolicy::RATrain ? "ratrain" : "gpu-style";
  program.name = llvm::formatv("{0} {1} ({2})", pipeline.getSymName(),
                               toParallelConfig(plan).describe(), policy)
                     .str();
  const int64_t dp = plan.getDp();
  program.dataParallel = dp;
  program.sixteenBitGradients = getDTypeBytes(costs.getModel().dtype) < 4;
  program.replicaMajor = plan.getRankOrder() == RankOrder::ReplicaMajor;
  program.stageReplicasPerNode =
      std::min(dp, std::max<int64_t>(1, machine.clustersPerNode));
  ParallelConfig parallel;
  parallel.pipelineStages = plan.getPp();
  parallel.dataParallel = dp;
  parallel.microBatchSize = plan.getMicroBatchSize();
  parallel.numMicroBatches = plan.getMicroBatches();
  program.tokensPerIteration = static_cast<double>(parallel.globalBatch()) *
                               static_cast<double>(config.seqLen);
  program.modelFlopsPerIteration =
      sim::modelFlopsPerIteration(config, parallel);
  llvm::SmallVector<StageOp, 8> stages = pipeline.getStages();
  if (static_cast<int64_t>(stages.size()) != plan.getPp())
    return opError(pipeline, llvm::formatv("has {0} stages, its plan {1}",
                                           stages.size(), plan.getPp()));
  program.stages.resize(stages.size());
  for (auto [index, stage] : llvm::enumerate(stages))
    if (llvm::Error error = buildStage(stage, program.stages[index]))
      return std::move(error);
  return program;
}

llvm::Expected<sim::SimProgram>
sim::buildProgramFromSchedule(mlir::ModuleOp module,
                              const MachineModel &machine) {
  auto pipelines = llvm::to_vector(module.getOps<PipelineOp>());
  if (pipelines.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the module has no ratrain.pipeline: run --ratrain-expand-1f1b and "
        "--ratrain-schedule-lifecycle first");
  PipelineOp pipeline = pipelines.front();
  // One program per stage at the machine's speed: uneven shares and classes
  // of clusters are the plan-level simulator's (buildRankGroupPrograms).
  if (pipeline.getPlan().hasUnevenShares() || machine.heterogeneous())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: a scheduled module is simulated as one program "
                      "per stage on one class of clusters; this plan has "
                      "uneven dp shares or the machine '{1}' classes of "
                      "clusters: simulate the plan instead (ratrain-sim "
                      "--model ... --machine ...; docs/simulator.md, "
                      "\"Heterogeneous clusters\")",
                      pipeline.getSymName(), machine.name));
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(module.getContext(),
                                        [&](mlir::Diagnostic &diag) {
                                          diagnostics += diag.str() + "\n";
                                          return mlir::success();
                                        });
  mlir::FailureOr<ModelOp> model = pipeline.lookupModel();
  if (mlir::failed(model))
    return opError(pipeline, "no model: " + diagnostics);
  ScheduleAdapter adapter(pipeline, *model, machine);
  return adapter.build();
}

llvm::Expected<sim::SimProgram>
sim::loadScheduledProgram(llvm::StringRef path, const MachineModel &machine) {
  mlir::MLIRContext context;
  context.getOrLoadDialect<RATrainDialect>();
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = mlir::openInputFile(path, &error);
  if (!file)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + error);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": cannot parse:\n" + diagnostics);
  return buildProgramFromSchedule(*module, machine);
}
