//===- ScheduleLifecycle.cpp - --ratrain-schedule-lifecycle ---------------===//
//
// Places the training-state lifecycle of every layer of every stage:
// gradient ready -> asynchronous sync -> wait -> optimizer update -> view
// re-materialization (-> ZeRO all-gather) -> view in place, and the
// activation recovery (recompute) before the backward that needs it.
//
// `ratrain` places each layer's lifecycle as early as its data allows, with
// the cost model deciding where a sync has completed; `gpu-style` runs each
// lifecycle step as a whole-stage phase at the iteration boundary.
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Planner/CostModel.h"
#include "ratrain/Transforms/PassUtils.h"
#include "ratrain/Transforms/Passes.h"
#include "ratrain/Transforms/ScheduleUtils.h"

#include "mlir/IR/Builders.h"

#include <deque>

namespace ratrain {
#define GEN_PASS_DEF_RATRAINSCHEDULELIFECYCLE
#include "ratrain/Transforms/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;

namespace {

/// Predicted seconds of the ops of one stage (one cluster), from the cost
/// model.
class StageCosts {
public:
  StageCosts(const CostModel &costs, const BufferSizes &sizes, PlanAttr plan,
             ArrayRef<LayerKind> kinds, int64_t stage, int64_t clustersPerNode)
      : costs(costs), sizes(sizes), plan(plan), kinds(kinds),
        spansNodes(dataParallelGroupSpansNodes(stage, plan.getDp(),
                                               clustersPerNode)) {}

  /// Compute-stream seconds of `op` (0 for ops that only issue work).
  double computeSeconds(Operation *op) const {
    int64_t b = plan.getMicroBatchSize();
    if (auto forward = dyn_cast<ForwardOp>(op)) {
      switch (kinds[forward.getView().getType().getLayer()]) {
      case LayerKind::Embedding:
        return costs.embeddingForward(b);
      case LayerKind::Head:
        return costs.headForward(b);
      case LayerKind::Decoder:
        return costs.layerForward(b);
      }
    }
    if (isa<RecomputeOp>(op))
      return costs.layerRecompute(b, RecomputePolicy::Full);
    if (auto backward = dyn_cast<BackwardOp>(op)) {
      switch (kinds[backward.getView().getType().getLayer()]) {
      case LayerKind::Embedding:
        return costs.embeddingBackward(b);
      case LayerKind::Head:
        return costs.headBackward(b);
      case LayerKind::Decoder: {
        double seconds = costs.layerBackward(b);
        // A selective backward recomputes its attention core itself.
        if (backward.getActivation().getType().getKind() ==
            ActivationKind::Selective)
          seconds += costs.layerRecompute(b, RecomputePolicy::Selective);
        return seconds;
      }
      }
    }
    return 0;
  }

  /// Seconds of the optimizer update of `layer` (its shard with ZeRO >= 1).
  double updateSeconds(int64_t layer) const {
    int64_t params = sizes.params(layer);
    if (plan.getZero() >= 1)
      params = (params + plan.getDp() - 1) / plan.getDp();
    return costs.optimizerUpdate(params);
  }

  /// Seconds of the gradient sync of `layer` over the data-parallel group.
  double syncSeconds(int64_t layer) const {
    int64_t bytes = sizes.viewBytes(layer); // the full 16-bit gradient
    return costs.collective(syncKind() == SyncKind::ReduceScatter
                                ? CollectiveKind::ReduceScatter
                                : CollectiveKind::AllReduce,
                            bytes, plan.getDp());
  }

  SyncKind syncKind() const {
    return plan.getZero() >= 2 ? SyncKind::ReduceScatter : SyncKind::AllReduce;
  }
  SyncHierarchy hierarchy() const {
    return spansNodes ? SyncHierarchy::Hierarchical : SyncHierarchy::Flat;
  }

private:
  const CostModel &costs;
  const BufferSizes &sizes;
  PlanAttr plan;
  ArrayRef<LayerKind> kinds;
  bool spansNodes;
};

/// The new states of one layer once its lifecycle ran.
struct LayerLifecycle {
  int64_t layer = 0;
  Value finalGrad;   ///< the gradient after the last micro-batch
  Value pendingGrad; ///< the sync's async value
  Value newMaster;   ///< from the update
  Value newOptState; ///< from the update
  Value pendingView; ///< from the view prefetch
  Value newView;     ///< the view in place for the next step
};

/// Schedules the lifecycle of one stage.
class StageScheduler {
public:
  StageScheduler(StageOp stage, PlanAttr plan, const StageCosts &costs,
                 bool ratrainPolicy, int64_t recomputeAhead)
      : stage(stage), plan(plan), costs(costs), ratrainPolicy(ratrainPolicy),
        recomputeAhead(recomputeAhead), builder(stage.getContext()) {}

  LogicalResult run();

private:
  void placeRecomputes();
  void emitGradReadyAndSync(LayerLifecycle &life);
  void emitWaitUpdatePrefetch(LayerLifecycle &life);
  void emitViewInPlace(ArrayRef<LayerLifecycle *> layers);

  StageOp stage;
  PlanAttr plan;
  const StageCosts &costs;
  bool ratrainPolicy;
  int64_t recomputeAhead;
  OpBuilder builder;
};

} // namespace

void StageScheduler::placeRecomputes() {
  Block &body = stage.getBody().front();
  // Just in time: each recompute right before the backward that uses it.
  for (RecomputeOp recompute : llvm::to_vector(body.getOps<RecomputeOp>())) {
    for (Operation *user : recompute.getActivation().getUsers())
      if (isa<BackwardOp>(user)) {
        recompute->moveBefore(user);
        break;
      }
  }
  if (!ratrainPolicy || recomputeAhead <= 0)
    return;
  // Ahead of the gradient: the first `recomputeAhead` recomputes of a
  // micro-batch's backward sweep run before its `recv gradient`, so they
  // overlap the wait for the downstream stage.
  for (RecvOp recv : llvm::to_vector(body.getOps<RecvOp>())) {
    if (recv.getPayload() != Payload::Gradient)
      continue;
    int64_t hoisted = 0;
    for (Operation *op = recv->getNextNode(); op && hoisted < recomputeAhead;
         op = op->getNextNode()) {
      if (isa<SendOp, RecvOp, YieldOp>(op))
        break;
      auto recompute = dyn_cast<RecomputeOp>(op);
      if (!recompute) {
        if (auto backward = dyn_cast<BackwardOp>(op))
          if (backward.getMicroBatch() != recv.getMicroBatch())
            break;
        continue;
      }
      if (recompute.getMicroBatch() != recv.getMicroBatch())
        break;
      Operation *next = op->getPrevNode();
      recompute->moveBefore(recv);
      op = next;
      ++hoisted;
    }
  }
}

void StageScheduler::emitGradReadyAndSync(LayerLifecycle &life) {
  MLIRContext *context = stage.getContext();
  Location loc = stage.getLoc();
  int64_t layer = life.layer;
  Value ready =
      GradReadyOp::create(builder, loc,
                          GradType::get(context, layer, GradPhase::Ready),
                          life.finalGrad)
          .getReady();
  life.pendingGrad =
      SyncOp::create(builder, loc,
                     AsyncType::get(context, GradType::get(context, layer,
                                                           GradPhase::Synced)),
                     costs.syncKind(), ready, costs.hierarchy())
          .getPending();
}

void StageScheduler::emitWaitUpdatePrefetch(LayerLifecycle &life) {
  Location loc = stage.getLoc();
  int64_t layer = life.layer;
  Value synced =
      WaitOp::create(builder, loc,
                     cast<AsyncType>(life.pendingGrad.getType()).getValue(),
                     life.pendingGrad)
          .getValue();
  auto update = UpdateOp::create(
      builder, loc, stage.getMasterArg(layer).getType(),
      stage.getOptStateArg(layer).getType(), Optimizer::AdamW, synced,
      stage.getMasterArg(layer), stage.getOptStateArg(layer));
  life.newMaster = update.getNewMaster();
  life.newOptState = update.getNewOptState();
}

void StageScheduler::emitViewInPlace(ArrayRef<LayerLifecycle *> layers) {
  Location loc = stage.getLoc();
  MLIRContext *context = stage.getContext();
  SmallVector<Value> gathers;
  for (LayerLifecycle *life : layers) {
    Type viewType = ViewType::get(context, life->layer);
    life->newView =
        WaitOp::create(builder, loc, viewType, life->pendingView).getValue();
    if (plan.getZero() >= 1)
      gathers.push_back(
          SyncOp::create(builder, loc, AsyncType::get(context, viewType),
                         SyncKind::AllGather, life->newView, costs.hierarchy())
              .getPending());
  }
  for (auto [life, pending] : llvm::zip(layers, gathers))
    life->newView =
        WaitOp::create(builder, loc,
                       cast<AsyncType>(pending.getType()).getValue(), pending)
            .getValue();
}

LogicalResult StageScheduler::run() {
  Block &body = stage.getBody().front();
  for (Operation &op : body)
    if (isa<GradReadyOp, SyncOp, UpdateOp, ViewPrefetchOp, WaitOp>(op))
      return op.emitOpError("stage ")
             << stage.getStage()
             << " already has lifecycle operations; "
                "--ratrain-schedule-lifecycle runs once, after "
                "--ratrain-expand-1f1b";

  placeRecomputes();

  // The last backward of each layer (its gradient has no further use as an
  // accumulator).
  SmallVector<LayerLifecycle> lives(stage.getNumLayers());
  DenseMap<Operation *, LayerLifecycle *> lastBackward;
  for (BackwardOp backward : body.getOps<BackwardOp>()) {
    int64_t layer = backward.getGrad().getType().getLayer();
    LayerLifecycle &life = lives[layer - stage.getFirstLayer()];
    life.layer = layer;
    life.finalGrad = backward.getGrad();
  }
  for (LayerLifecycle &life : lives) {
    if (!life.finalGrad)
      return stage.emitOpError("has no backward of layer ")
             << (&life - lives.data()) + stage.getFirstLayer()
             << "; run --ratrain-expand-1f1b first";
    lastBackward[life.finalGrad.getDefiningOp()] = &life;
  }

  YieldOp yield = stage.getYield();
  SmallVector<LayerLifecycle *> updated;
  if (!ratrainPolicy) {
    // Whole-stage phases at the iteration boundary, layers in the order
    // their gradients became ready.
    SmallVector<LayerLifecycle *> order;
    for (Operation &op : body)
      if (LayerLifecycle *life = lastBackward.lookup(&op))
        order.push_back(life);
    builder.setInsertionPoint(yield);
    for (LayerLifecycle *life : order)
      emitGradReadyAndSync(*life);
    SmallVector<Value> synced;
    for (LayerLifecycle *life : order)
      synced.push_back(
          WaitOp::create(
              builder, stage.getLoc(),
              cast<AsyncType>(life->pendingGrad.getType()).getValue(),
              life->pendingGrad)
              .getValue());
    for (auto [life, grad] : llvm::zip(order, synced)) {
      auto update = UpdateOp::create(
          builder, stage.getLoc(), stage.getMasterArg(life->layer).getType(),
          stage.getOptStateArg(life->layer).getType(), Optimizer::AdamW, grad,
          stage.getMasterArg(life->layer), stage.getOptStateArg(life->layer));
      life->newMaster = update.getNewMaster();
      life->newOptState = update.getNewOptState();
    }
    for (LayerLifecycle *life : order)
      life->pendingView =
          ViewPrefetchOp::create(
              builder, stage.getLoc(),
              AsyncType::get(stage.getContext(),
                             ViewType::get(stage.getContext(), life->layer)),
              life->newMaster)
              .getPending();
    updated = order;
  } else {
    // Walk the program with a compute-stream clock; the communication
    // stream runs the syncs in issue order.
    struct PendingSync {
      LayerLifecycle *life;
      double done;
    };
    std::deque<PendingSync> inFlight;
    double clock = 0, commFree = 0;
    auto retire = [&](Operation *before) {
      PendingSync next = inFlight.front();
      inFlight.pop_front();
      builder.setInsertionPoint(before);
      emitWaitUpdatePrefetch(*next.life);
      next.life->pendingView =
          ViewPrefetchOp::create(
              builder, stage.getLoc(),
              AsyncType::get(
                  stage.getContext(),
                  ViewType::get(stage.getContext(), next.life->layer)),
              next.life->newMaster)
              .getPending();
      clock =
          std::max(clock, next.done) + costs.updateSeconds(next.life->layer);
      updated.push_back(next.life);
    };
    // The stage's last gradient send is on the critical path of the
    // pipeline drain (stage s - 1 waits for it, then s - 2 for that one):
    // no update is placed before it.
    Operation *lastSend = nullptr;
    for (SendOp send : body.getOps<SendOp>())
      if (send.getPayload() == Payload::Gradient)
        lastSend = send;
    bool drained = lastSend == nullptr;
    for (Operation *op = &body.front(); op != yield.getOperation();) {
      Operation *next = op->getNextNode();
      while (drained && !inFlight.empty() && inFlight.front().done <= clock)
        retire(op);
      if (op == lastSend)
        drained = true;
      clock += costs.computeSeconds(op);
      if (LayerLifecycle *life = lastBackward.lookup(op)) {
        builder.setInsertionPointAfter(op);
        emitGradReadyAndSync(*life);
        double start = std::max(commFree, clock);
        commFree = start + costs.syncSeconds(life->layer);
        inFlight.push_back({life, commFree});
        // Ops inserted after `op` are not revisited.
        next = life->pendingGrad.getDefiningOp()->getNextNode();
      }
      op = next;
    }
    while (!inFlight.empty())
      retire(yield);
  }

  // Views in place for the next step, the stage's first layer first.
  llvm::sort(updated, [](LayerLifecycle *a, LayerLifecycle *b) {
    return a->layer < b->layer;
  });
  builder.setInsertionPoint(yield);
  emitViewInPlace(updated);

  SmallVector<Value> states;
  for (LayerLifecycle &life : lives) {
    states.push_back(life.newView);
    states.push_back(life.newMaster);
    states.push_back(life.newOptState);
  }
  yield->setOperands(states);
  return success();
}

namespace {

struct ScheduleLifecyclePass
    : public ratrain::impl::RATrainScheduleLifecycleBase<
          ScheduleLifecyclePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto pipelines = llvm::to_vector(module.getOps<PipelineOp>());
    if (pipelines.empty())
      return;
    bool ratrainPolicy;
    if (policy == "ratrain")
      ratrainPolicy = true;
    else if (policy == "gpu-style" || policy == "gpu_style")
      ratrainPolicy = false;
    else {
      module.emitError("--ratrain-schedule-lifecycle: unknown policy '")
          << policy << "' (ratrain or gpu-style)";
      return signalPassFailure();
    }
    FailureOr<MachineModel> machine = loadPassMachine(module, machineFile);
    if (failed(machine))
      return signalPassFailure();

    for (PipelineOp pipeline : pipelines) {
      FailureOr<ModelOp> model = lookupPipelineModel(pipeline);
      if (failed(model))
        return signalPassFailure();
      PlanAttr plan = pipeline.getPlan();
      ModelConfig config = model->toModelConfig();
      CostModel costModel(config, *machine);
      BufferSizes sizes(*model, plan, MemoryOptions::forMachine(*machine));
      SmallVector<LayerKind> kinds;
      for (LayerOp layer : model->getLayers())
        kinds.push_back(layer.getKind());
      for (StageOp stage : pipeline.getStages()) {
        StageCosts costs(costModel, sizes, plan, kinds, stage.getStage(),
                         machine->clustersPerNode);
        if (failed(StageScheduler(stage, plan, costs, ratrainPolicy,
                                  recomputeAhead)
                       .run()))
          return signalPassFailure();
      }
      pipeline.setPolicy(ratrainPolicy ? SchedulePolicy::RATrain
                                       : SchedulePolicy::GpuStyle);
    }
  }
};

} // namespace
