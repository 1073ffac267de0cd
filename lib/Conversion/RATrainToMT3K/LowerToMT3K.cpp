//===- LowerToMT3K.cpp - Scheduled ratrain pipeline to mt3k programs ------===//
//
// --ratrain-lower-to-mt3k: every stage of a scheduled, buffer-assigned
// `ratrain.pipeline` becomes one `mt3k.program` that a rank of that stage
// runs for one training step: buffers at the assigned DDR offsets, the
// LLaMA layer kernels, AdamW through GSM staging, collectives on the
// data-parallel group and point-to-point transfers on the pipeline group,
// with tokens waited where the schedule waits, and earlier where an
// operation would otherwise touch memory still in flight (those waits come
// from the ops' declared memory effects: mt3k::insertMissingWaits, the
// model --mt3k-verify checks). Decoder layer kernel sequences are outlined
// into shared `func.func`s. The mapping, the buffer layouts and what an
// emitter does per op are in docs/lowering.md.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Conversion/Passes.h"

#include "StageLowering.h"
#include "ratrain/Transforms/PassUtils.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>

namespace ratrain {
#define GEN_PASS_DEF_RATRAINLOWERTOMT3K
#include "ratrain/Conversion/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;
using namespace ratrain::lowering;
namespace mt = ratrain::mt3k;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct LowerToMT3KPass
    : public ratrain::impl::RATrainLowerToMT3KBase<LowerToMT3KPass> {
  using RATrainLowerToMT3KBase::RATrainLowerToMT3KBase;

  void runOnOperation() override;
};

/// On a machine with classes of clusters: per rank, the fastest class's
/// 16-bit compute peak over that of the rank's class (rank r runs on
/// cluster r); null on a homogeneous machine.
DenseF64ArrayAttr rankSlowdown(const MachineModel &machine, PlanAttr plan,
                               Builder &attrs) {
  if (!machine.heterogeneous())
    return {};
  double fastest = 0;
  for (const ClusterClass &cls : machine.classes)
    fastest = std::max(fastest, cls.cluster.peakFlopsF16);
  SmallVector<double> slowdown;
  int64_t ranks = plan.getPp() * plan.getDp();
  for (int64_t rank = 0; rank < ranks; ++rank) {
    // The planner plans a machine with classes whole: rank r is cluster r.
    int64_t cls =
        machine.classOfCluster(std::min(rank, machine.totalClusters() - 1));
    slowdown.push_back(fastest / machine.classes[cls].cluster.peakFlopsF16);
  }
  return attrs.getDenseF64ArrayAttr(slowdown);
}

/// Rejects what the lowering does not support, with a reason.
LogicalResult checkSupported(PipelineOp pipeline, ModelOp model) {
  PlanAttr plan = pipeline.getPlan();
  ModelConfig config = getModelConfig(model);
  if (model.getTieEmbeddings() && plan.getZero() >= 3)
    return pipeline.emitOpError("cannot be lowered: model @")
           << model.getSymName()
           << " ties its embeddings, whose LM head reads the embedding's full "
              "view, which ZeRO-3 shards; use zero = 2 or less";
  if (model.getTieEmbeddings() && config.normHead)
    return pipeline.emitOpError("cannot be lowered: model @")
           << model.getSymName()
           << " ties its embeddings and has Baichuan2's NormHead, which "
              "normalizes the LM head's rows only";
  if (plan.getZero() >= 3 && config.normHead)
    return pipeline.emitOpError("cannot be lowered: model @")
           << model.getSymName()
           << " has Baichuan2's NormHead, whose weight Jacobian reads the "
              "head's view after the last head backward, when ZeRO-3 has "
              "released its gathered copy; use zero = 2 or less";
  if (plan.getZero() >= 1)
    for (LayerOp layer : model.getLayers())
      if (getLayerParams(layer) % plan.getDp() != 0)
        return pipeline.emitOpError("cannot be lowered: layer ")
               << layer.getIndex() << " has " << getLayerParams(layer)
               << " parameters, not a multiple of dp = " << plan.getDp()
               << " (ZeRO shards must be equal)";
  return success();
}

void LowerToMT3KPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<PipelineOp> pipelines(module.getOps<PipelineOp>());
  if (pipelines.empty()) {
    module.emitError("found no ratrain.pipeline to lower: run "
                     "--ratrain-schedule-pipeline first");
    return signalPassFailure();
  }
  if (pipelines.size() > 1) {
    pipelines[1].emitOpError("is a second pipeline; an mt3k module describes "
                             "one training job");
    return signalPassFailure();
  }
  PipelineOp pipeline = pipelines.front();
  FailureOr<ModelOp> model = pipeline.lookupModel();
  if (failed(model))
    return signalPassFailure();
  if (!pipeline.getPolicy()) {
    pipeline.emitOpError("was not lifecycle-scheduled: run "
                         "--ratrain-schedule-pipeline first");
    return signalPassFailure();
  }
  if (failed(checkSupported(pipeline, *model)))
    return signalPassFailure();
  FailureOr<MachineModel> machine = loadPassMachine(module, machineFile);
  if (failed(machine))
    return signalPassFailure();

  PlanAttr plan = pipeline.getPlan();
  ModelConfig config = getModelConfig(*model);
  Dims dims;
  dims.batch = plan.getMicroBatchSize();
  dims.seq = config.seqLen;
  dims.tokens = dims.batch * dims.seq;
  dims.hidden = config.hidden;
  dims.heads = config.numHeads;
  dims.kvHeads = config.numKVHeads;
  dims.headDim = config.headDim();
  dims.ffn = config.ffnHidden;
  dims.vocab = config.vocab;
  dims.qDim = dims.heads * dims.headDim;
  dims.kvDim = config.kvDim();
  dims.qkvBias = config.qkvBias;
  dims.alibi = config.positions == PositionEncoding::Alibi;
  // Mistral's sliding window, where the sequence is longer than it (shorter
  // sequences are plain causal attention).
  dims.window = config.slidingWindow > 0 && config.slidingWindow < config.seqLen
                    ? config.slidingWindow
                    : 0;
  dims.packedQkv = config.family == ModelFamily::Baichuan;
  dims.normHead = config.normHead;
  dims.microBatches = plan.getMicroBatches();
  dims.guardedFrom = plan.getMicroBatches();
  for (int64_t share : plan.getDpShares())
    dims.guardedFrom = std::min(dims.guardedFrom, share);
  dims.lossScale = plan.getDpShares().empty()
                       ? 1.0 / double(dims.tokens * dims.microBatches)
                       : double(plan.getDp()) /
                             double(dims.tokens * plan.getTotalMicroBatches());
  Type elem = model->getDtype();

  // Every layer's tensors add up to its parameter count (Baichuan's W_pack
  // holds exactly q_proj, k_proj and v_proj).
  for (LayerOp layer : model->getLayers()) {
    int64_t total = 0;
    for (const ParamTensor &tensor :
         layerParameterTensors(config, layer.getIndex()))
      total += tensor.numel();
    assert(total == getLayerParams(layer) && "tensors miss parameters");
    (void)total;
  }

  std::optional<DecayedParams> decayed =
      llvm::StringSwitch<std::optional<DecayedParams>>(weightDecayParams)
          .Case("matrices", DecayedParams::Matrices)
          .Case("matrices-except-embeddings",
                DecayedParams::MatricesExceptEmbeddings)
          .Case("all", DecayedParams::All)
          .Default(std::nullopt);
  if (!decayed) {
    module.emitError("--ratrain-lower-to-mt3k: weight-decay-params=")
        << weightDecayParams
        << " is not one of matrices, matrices-except-embeddings, all";
    return signalPassFailure();
  }
  LoweringOptions options{
      learningRate,  beta1,      beta2,          epsilon,
      weightDecay,   initStd,    *decayed,       int64_t(alignment),
      outlineLayers, traceSpans, averageInUpdate};
  if (alignment < 0 || (alignment & (alignment - 1)) != 0) {
    module.emitError("--ratrain-lower-to-mt3k: alignment ")
        << int64_t(alignment) << " is not a power of two";
    return signalPassFailure();
  }

  OpBuilder moduleBuilder(module.getContext());
  moduleBuilder.setInsertionPoint(*model);
  Location loc = pipeline.getLoc();
  bool hierarchical = false;
  pipeline.walk([&](SyncOp sync) {
    hierarchical |= sync.getHierarchy() == SyncHierarchy::Hierarchical;
  });

  OutlinedFunctions outlined;
  OutboxSlotCounts outboxSlots = planOutboxSlots(pipeline);
  SmallVector<std::unique_ptr<StageLowering>> stages;
  for (StageOp stage : pipeline.getStages()) {
    stages.push_back(std::make_unique<StageLowering>(
        *model, pipeline, stage, *machine, options, dims, elem, moduleBuilder,
        outlined));
    if (failed(stages.back()->plan(outboxSlots)))
      return signalPassFailure();
  }

  int64_t machineAlignment = alignment;
  if (machineAlignment == 0) {
    machineAlignment = 64;
    for (auto &stage : stages)
      machineAlignment =
          std::min(machineAlignment, stage->getOffsetAlignment());
  }
  const ClusterSpec &cluster = machine->cluster;
  // With classes of clusters, the most any class has: each stage's arena
  // was checked against its own ranks' classes (stageDdrBytes).
  int64_t ddrBytes = cluster.ddrBytes;
  for (const ClusterClass &cls : machine->classes)
    ddrBytes = std::max(ddrBytes, cls.cluster.ddrBytes);
  auto machineOp = mt::MachineOp::create(
      moduleBuilder, loc, machine->name, ddrBytes, cluster.gsmBytes,
      cluster.amBytesPerCore, cluster.cores, cluster.dmaChannels,
      machineAlignment, /*offload_host_cache=*/nullptr);
  if (int64_t cache = machine->offloadHostCacheBytesPerCluster())
    machineOp.setOffloadHostCacheAttr(moduleBuilder.getI64IntegerAttr(cache));
  mt::GroupOp::create(moduleBuilder, loc, "dp", mt::GroupKind::data_parallel,
                      plan.getDp(), /*level=*/nullptr);
  mt::GroupOp::create(moduleBuilder, loc, "pp", mt::GroupKind::pipeline,
                      plan.getPp(), /*level=*/nullptr);
  if (hierarchical)
    mt::GroupOp::create(moduleBuilder, loc, "node", mt::GroupKind::node_local,
                        machine->clustersPerNode, /*level=*/nullptr);
  // Gradient clipping: the global norm is all-reduced over every rank.
  if (plan.clipsGradients())
    mt::GroupOp::create(moduleBuilder, loc, "world", mt::GroupKind::world,
                        plan.getPp() * plan.getDp(), /*level=*/nullptr);
  // The partition groups the syncs run on (docs/schedule.md,
  // "Partitioning"), one per scope and level; every stage's has the same
  // size.
  std::map<std::pair<int, int64_t>, SyncOp> partitionGroups;
  WalkResult partitionWalk = pipeline.walk([&](SyncOp sync) {
    if (!sync.getScope())
      return WalkResult::advance();
    auto key = std::make_pair(int(*sync.getScope()), int64_t(*sync.getLevel()));
    auto [it, inserted] = partitionGroups.insert({key, sync});
    if (!inserted && it->second.getMembers() != sync.getMembers()) {
      sync.emitOpError("runs ")
          << stringifySyncScope(*sync.getScope()) << " level "
          << *sync.getLevel() << " on " << *sync.getMembers()
          << " members, but another stage's group there has "
          << *it->second.getMembers();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (partitionWalk.wasInterrupted())
    return signalPassFailure();
  for (auto &[key, sync] : partitionGroups) {
    bool inside = *sync.getScope() == SyncScope::Inside;
    mt::GroupOp::create(
        moduleBuilder, loc, partitionGroupName(*sync.getScope(), key.second),
        inside ? mt::GroupKind::data_inside : mt::GroupKind::data_across,
        *sync.getMembers(), moduleBuilder.getI64IntegerAttr(key.second));
  }
  for (auto &stage : stages)
    if (failed(stage->lower()))
      return signalPassFailure();
  // Outlined layer bodies come before the programs that call them (C++
  // declares a function before its use).
  if (auto first = *module.getOps<mt::ProgramOp>().begin())
    for (func::FuncOp function : outlined.functions)
      function->moveBefore(first);
  // What the driver and the runtime need besides the programs, as the mt3k
  // dialect's own module attributes (the ratrain ops and attributes go
  // away): the model (the runtime's ModelConfig: sizes, dtype, norm and RoPE
  // constants) and the job (pp, dp, micro-batching, ZeRO, the stage layer
  // split, the policy).
  MLIRContext *ctx = module.getContext();
  Builder attrs(ctx);
  auto modelAttr = mt::ModelAttr::get(
      ctx, model->getSymNameAttr(), model->getFamilyAttr(), elem,
      config.numLayers, config.hidden, config.numHeads, config.numKVHeads,
      config.ffnHidden, config.vocab, config.seqLen, config.maxPositions,
      model->getRmsEpsAttr(), model->getRopeThetaAttr(),
      attrs.getBoolAttr(config.qkvBias), attrs.getBoolAttr(config.normHead),
      config.tieEmbeddings ? attrs.getBoolAttr(true) : BoolAttr(),
      config.headDimension ? attrs.getI64IntegerAttr(config.headDimension)
                           : IntegerAttr());
  std::optional<SchedulePolicy> policy = pipeline.getPolicy();
  // With virtual stages, the rank of each (the runtime's layer ownership).
  DenseI64ArrayAttr stageRanks;
  if (plan.getVirtualStages() > 1 ||
      llvm::any_of(pipeline.getStages(),
                   [](StageOp stage) { return stage.isInterleaved(); })) {
    SmallVector<int64_t> ranks(plan.getNumVirtualStages(), 0);
    for (StageOp stage : pipeline.getStages())
      for (StageChunkAttr chunk : stage.getChunkList())
        ranks[chunk.getVirtualStage()] = stage.getStage();
    stageRanks = attrs.getDenseI64ArrayAttr(ranks);
  }
  auto jobAttr = mt::JobAttr::get(
      ctx, plan.getClusters(), plan.getPp(), plan.getDp(),
      plan.getMicroBatchSize(), plan.getMicroBatches(), plan.getZero(),
      attrs.getDenseI64ArrayAttr(plan.getStageLayers()),
      attrs.getStringAttr(policy ? stringifySchedulePolicy(*policy) : ""),
      stageRanks,
      plan.getDpShares().empty()
          ? DenseI64ArrayAttr()
          : attrs.getDenseI64ArrayAttr(plan.getDpShares()),
      plan.getRankOrder() == RankOrder::ReplicaMajor ? attrs.getBoolAttr(true)
                                                     : BoolAttr(),
      rankSlowdown(*machine, plan, attrs));
  mt::MT3KDialect::ModelAttrHelper(ctx).setAttr(module, modelAttr);
  mt::MT3KDialect::JobAttrHelper(ctx).setAttr(module, jobAttr);
  // The machine file the import recorded is the ratrain dialect's; the
  // programs carry the machine (mt3k.machine).
  RATrainDialect::MachineAttrHelper(ctx).removeAttr(module);
  pipeline.erase();
  model->erase();
}

} // namespace
