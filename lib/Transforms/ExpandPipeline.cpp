//===- ExpandPipeline.cpp - --ratrain-expand-pipeline ---------------------===//
//
// Turns every planned ratrain.model into a ratrain.pipeline whose stages run
// the actions of a pipeline schedule (ratrain/Schedule/PipelineSchedule.h):
// the one the plan names, one given by name, or one read from a CSV action
// list. Each rank's actions become, in order, the rank's transfers and layer
// ops; transfers follow the data unless the schedule places them itself.
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/ModelAndPlan.h"
#include "ratrain/Schedule/PipelineSchedule.h"
#include "ratrain/Transforms/LayerBackward.h"
#include "ratrain/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/MemoryBuffer.h"

namespace ratrain {
#define GEN_PASS_DEF_RATRAINEXPANDPIPELINE
#define GEN_PASS_DEF_RATRAINEXPAND1F1B
#include "ratrain/Transforms/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;
using schedule::Action;
using schedule::ActionKind;
using schedule::PipelineSchedule;

namespace {

/// Builds the program of one rank from its actions.
class RankProgramBuilder {
public:
  RankProgramBuilder(StageOp stage, PlanAttr plan, ArrayRef<LayerKind> kinds,
                     const PipelineSchedule &schedule, bool splitBackward)
      : stage(stage), plan(plan), kinds(kinds), schedule(schedule),
        splitBackward(splitBackward), interleaved(stage.isInterleaved()),
        builder(&stage.getBody().front(), stage.getBody().front().end()) {
    for (StageChunkAttr chunk : stage.getChunkList())
      chunks[chunk.getVirtualStage()] = chunk;
  }

  /// Emits the rank's actions, then the yield.
  void build(ArrayRef<Action> actions);

private:
  void forward(StageChunkAttr chunk, int64_t mb);
  /// How a backward action is built: B, I, or a B as I then W per layer.
  enum class BackwardPart { Fused, Input, InputThenWeight };
  void backward(StageChunkAttr chunk, int64_t mb, BackwardPart part);
  /// W: the weight parts of the chunk's layers, in backward order.
  void backwardWeight(StageChunkAttr chunk, int64_t mb);
  /// A transfer of `payload` for micro-batch `mb` leaving virtual stage
  /// `from` towards its neighbour; a transfer to a virtual stage of the same
  /// rank is received at once (its receive copies the outbox).
  void send(Payload payload, int64_t mb, int64_t from);
  /// A receive into virtual stage `into`, unless its sender is this rank
  /// (received when sent).
  void recv(Payload payload, int64_t mb, int64_t into);

  /// Whether virtual stage `c` runs on this rank: a transfer to it is no
  /// message, and the schedule's explicit transfers never name it.
  bool isLocal(int64_t c) {
    return schedule.stageToRank[c] == int64_t(stage.getStage());
  }

  /// A transfer between ranks is a one-sided put when the plan says so; one
  /// between two chunks of this rank is a copy either way.
  bool isOneSided(bool local) {
    return !local && plan.getTransfers() == TransferMode::OneSided;
  }

  IntegerAttr chunkAttr(int64_t virtualStage) {
    return interleaved ? builder.getI64IntegerAttr(virtualStage)
                       : IntegerAttr();
  }

  StageOp stage;
  PlanAttr plan;
  ArrayRef<LayerKind> kinds;
  const PipelineSchedule &schedule;
  /// Every B as its I immediately followed by its W.
  bool splitBackward;
  bool interleaved;
  OpBuilder builder;
  DenseMap<int64_t, StageChunkAttr> chunks;
  /// Stored activations by (layer, micro-batch).
  DenseMap<std::pair<int64_t, int64_t>, Value> activations;
  /// The gradient accumulated so far, by layer.
  DenseMap<int64_t, Value> gradients;
  /// What each input part left for its weight part, by (layer, micro-batch).
  DenseMap<std::pair<int64_t, int64_t>, PendingWeight> pendingWeights;
  /// Whether the rank's actions place their transfers themselves.
  bool explicitTransfers = false;
};

} // namespace

void RankProgramBuilder::send(Payload payload, int64_t mb, int64_t from) {
  Location loc = stage.getLoc();
  int64_t to = payload == Payload::Activation ? from + 1 : from - 1;
  int64_t peer = schedule.stageToRank[to];
  bool local = peer == int64_t(stage.getStage());
  SendOp::create(builder, loc, payload, mb, peer, chunkAttr(from),
                 isOneSided(local));
  if (local)
    RecvOp::create(builder, loc, payload, mb, peer, chunkAttr(to),
                   /*one_sided=*/false);
}

void RankProgramBuilder::recv(Payload payload, int64_t mb, int64_t into) {
  int64_t from = payload == Payload::Activation ? into - 1 : into + 1;
  int64_t peer = schedule.stageToRank[from];
  if (peer == int64_t(stage.getStage()))
    return;
  RecvOp::create(builder, stage.getLoc(), payload, mb, peer, chunkAttr(into),
                 isOneSided(/*local=*/false));
}

void RankProgramBuilder::forward(StageChunkAttr chunk, int64_t mb) {
  MLIRContext *context = builder.getContext();
  Location loc = stage.getLoc();
  int64_t c = chunk.getVirtualStage(), last = plan.getNumVirtualStages() - 1;
  if (c > 0 && !explicitTransfers)
    recv(Payload::Activation, mb, c);
  for (int64_t layer = chunk.getFirstLayer(); layer < chunk.getEndLayer();
       ++layer) {
    ActivationKind kind = ForwardOp::getStoredActivationKind(
        kinds[layer], plan.getLayerRecompute(layer));
    auto type = ActivationType::get(context, layer, kind);
    activations[{layer, mb}] =
        ForwardOp::create(builder, loc, type, stage.getViewArg(layer), mb)
            .getActivation();
  }
  if (c < last && (!explicitTransfers || isLocal(c + 1)))
    send(Payload::Activation, mb, c);
}

void RankProgramBuilder::backward(StageChunkAttr chunk, int64_t mb,
                                  BackwardPart part) {
  Location loc = stage.getLoc();
  int64_t c = chunk.getVirtualStage(), last = plan.getNumVirtualStages() - 1;
  if (c < last && !explicitTransfers)
    recv(Payload::Gradient, mb, c);
  for (int64_t layer = chunk.getEndLayer() - 1; layer >= chunk.getFirstLayer();
       --layer) {
    Value view = stage.getViewArg(layer);
    Value stored = activations.lookup({layer, mb});
    Value acc = gradients.lookup(layer);
    if (part == BackwardPart::Fused) {
      gradients[layer] = buildBackward(builder, loc, view, stored, acc, mb);
      continue;
    }
    PendingWeight pending = buildBackwardInput(builder, loc, view, stored, mb);
    if (part == BackwardPart::InputThenWeight)
      gradients[layer] = buildBackwardWeight(builder, loc, pending, acc);
    else
      pendingWeights[{layer, mb}] = pending;
  }
  if (c > 0 && (!explicitTransfers || isLocal(c - 1)))
    send(Payload::Gradient, mb, c);
}

void RankProgramBuilder::backwardWeight(StageChunkAttr chunk, int64_t mb) {
  for (int64_t layer = chunk.getEndLayer() - 1; layer >= chunk.getFirstLayer();
       --layer) {
    // checkSchedule proved that the input part ran before.
    PendingWeight pending = pendingWeights.lookup({layer, mb});
    gradients[layer] = buildBackwardWeight(builder, stage.getLoc(), pending,
                                           gradients.lookup(layer));
    pendingWeights.erase({layer, mb});
  }
}

void RankProgramBuilder::build(ArrayRef<Action> actions) {
  explicitTransfers = llvm::any_of(
      actions, [](const Action &action) { return !action.isCompute(); });
  for (const Action &action : actions) {
    StageChunkAttr chunk = chunks.lookup(action.stage);
    switch (action.kind) {
    case ActionKind::Forward:
      forward(chunk, action.microBatch);
      break;
    case ActionKind::Backward:
      backward(chunk, action.microBatch,
               splitBackward ? BackwardPart::InputThenWeight
                             : BackwardPart::Fused);
      break;
    case ActionKind::BackwardInput:
      backward(chunk, action.microBatch, BackwardPart::Input);
      break;
    case ActionKind::BackwardWeight:
      backwardWeight(chunk, action.microBatch);
      break;
    // A transfer between two chunks of this rank comes with its action.
    case ActionKind::SendForward:
      if (!isLocal(action.stage + 1))
        send(Payload::Activation, action.microBatch, action.stage);
      break;
    case ActionKind::SendBackward:
      if (!isLocal(action.stage - 1))
        send(Payload::Gradient, action.microBatch, action.stage);
      break;
    case ActionKind::RecvForward:
      recv(Payload::Activation, action.microBatch, action.stage);
      break;
    case ActionKind::RecvBackward:
      recv(Payload::Gradient, action.microBatch, action.stage);
      break;
    }
  }
  YieldOp::create(builder, stage.getLoc(), stage.getBody().getArguments());
}

namespace {

/// The schedule for `model` under `plan`: the file's, the named one or the
/// plan's; checked. Errors go on the model.
FailureOr<PipelineSchedule> getSchedule(ModelOp model, PlanAttr plan,
                                        StringRef scheduleName,
                                        StringRef scheduleFile) {
  int64_t pp = plan.getPp(), v = plan.getVirtualStages(),
          m = plan.getMicroBatches();
  auto fail = [&](const Twine &message) -> FailureOr<PipelineSchedule> {
    model.emitError(message);
    return failure();
  };
  PipelineSchedule result;
  if (!scheduleFile.empty()) {
    std::string path = scheduleFile.str();
    if (!scheduleName.empty())
      return fail("give a schedule or a schedule file, not both");
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buffer)
      return fail("cannot read schedule file '" + path +
                  "': " + buffer.getError().message());
    llvm::Expected<PipelineSchedule> read =
        schedule::readCSV((*buffer)->getBuffer());
    if (!read)
      return fail("schedule file '" + path +
                  "': " + llvm::toString(read.takeError()));
    result = std::move(*read);
    if (result.ranks != pp || result.numStages() != plan.getNumVirtualStages())
      return fail("schedule file '" + path + "' has " + Twine(result.ranks) +
                  " ranks and " + Twine(result.numStages()) +
                  " stages but the plan has pp = " + Twine(pp) + " and " +
                  Twine(plan.getNumVirtualStages()) + " virtual stages");
    if (result.microBatches != m)
      return fail("schedule file '" + path + "' runs " +
                  Twine(result.microBatches) +
                  " micro-batches but the plan has " + Twine(m));
  } else {
    schedule::ScheduleKind kind = fromIRSchedule(plan.getSchedule());
    if (!scheduleName.empty()) {
      std::optional<schedule::ScheduleKind> named =
          schedule::parseScheduleKind(scheduleName);
      if (!named || *named == schedule::ScheduleKind::Custom)
        return fail("unknown schedule '" + scheduleName +
                    "'; expected 1f1b, interleaved-1f1b, zb-h1 or zbv (or "
                    "schedule-file=<csv>)");
      kind = *named;
    }
    if (kind == schedule::ScheduleKind::Custom)
      return fail("the plan's schedule is custom: give its schedule-file");
    llvm::Expected<PipelineSchedule> generated =
        schedule::generateSchedule(kind, pp, v, m);
    if (!generated)
      return fail("cannot build schedule " +
                  schedule::stringifyScheduleKind(kind) +
                  " for the plan (pp = " + Twine(pp) + ", " + Twine(v) +
                  " virtual stages per rank, " + Twine(m) +
                  " micro-batches): " + llvm::toString(generated.takeError()));
    result = std::move(*generated);
  }
  if (llvm::Error error = schedule::checkSchedule(result))
    return fail("schedule " + schedule::stringifyScheduleKind(result.kind) +
                " is refused: " + llvm::toString(std::move(error)));
  return result;
}

/// Expands every planned model of `module` that has no pipeline yet.
LogicalResult expandPipelines(ModuleOp module, StringRef scheduleName,
                              StringRef scheduleFile, bool splitBackward) {
  MLIRContext *context = module.getContext();
  // Models that already have a pipeline are left alone.
  DenseSet<StringRef> expanded;
  for (PipelineOp pipeline : module.getOps<PipelineOp>())
    expanded.insert(pipeline.getModel());

  SymbolTable symbols(module);
  for (ModelOp model : llvm::to_vector(module.getOps<ModelOp>())) {
    std::optional<PlanAttr> plan = model.getPlan();
    if (!plan || expanded.contains(model.getSymName()))
      continue;
    FailureOr<PipelineSchedule> schedule =
        getSchedule(model, *plan, scheduleName, scheduleFile);
    if (failed(schedule))
      return failure();
    SmallVector<LayerKind> kinds;
    for (LayerOp layer : model.getLayers())
      kinds.push_back(layer.getKind());

    // The plan records the schedule the pipeline runs.
    PlanAttr p = *plan;
    PlanAttr scheduled = PlanAttr::get(
        context, p.getClusters(), p.getPp(), p.getDp(), p.getMicroBatchSize(),
        p.getMicroBatches(), p.getZero(), p.getStageLayers(), p.getRecompute(),
        p.getStepUs(), p.getPeakBytes(), p.getOffload(),
        toIRSchedule(schedule->kind), p.getVirtualStages(),
        p.getWeightPartition(), p.getGradPartition(), p.getWeightWire(),
        p.getGradWire(), p.getMaxGradNorm(), p.getTransfers(),
        p.getSyncPeriod(), p.getActOffload(), p.getDpShares(),
        p.getRankOrder());

    OpBuilder builder(model);
    builder.setInsertionPointAfter(model);
    auto pipeline = PipelineOp::create(
        builder, model.getLoc(),
        builder.getStringAttr(model.getSymName() + "_step"),
        FlatSymbolRefAttr::get(model.getSymNameAttr()), scheduled,
        /*policy=*/nullptr);
    // Renames on a clash with an existing symbol.
    symbols.insert(pipeline);
    Block *body = &pipeline.getBody().emplaceBlock();
    builder.setInsertionPointToEnd(body);
    for (int64_t rank = 0; rank < p.getPp(); ++rank) {
      SmallVector<StageChunkAttr> chunks;
      for (int64_t c : schedule->stagesOfRank(rank))
        chunks.push_back(StageChunkAttr::get(context, c, p.getFirstLayer(c),
                                             p.getStageLayers()[c]));
      auto stage = StageOp::create(builder, model.getLoc(), rank, chunks);
      RankProgramBuilder(stage, scheduled, kinds, *schedule, splitBackward)
          .build(schedule->programs[rank]);
    }
  }
  return success();
}

struct ExpandPipelinePass
    : public ratrain::impl::RATrainExpandPipelineBase<ExpandPipelinePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(expandPipelines(getOperation(), scheduleName, scheduleFile,
                               splitBackward)))
      signalPassFailure();
  }
};

struct Expand1F1BPass
    : public ratrain::impl::RATrainExpand1F1BBase<Expand1F1BPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(expandPipelines(getOperation(), "1f1b", "", splitBackward)))
      signalPassFailure();
  }
};

} // namespace
