//===- ScheduleLifecycle.cpp - --ratrain-schedule-lifecycle ---------------===//
//
// Places the training-state lifecycle of every layer of every stage:
// gradient ready -> asynchronous sync -> wait -> optimizer update -> view
// re-materialization (-> ZeRO all-gather) -> view in place, and the
// activation recovery (recompute) before the backward that needs it, and
// the offload and reload of the activations of layers the plan offloads
// (ActivationOffload.h). Under ZeRO-3 the view is this rank's shard and
// every compute that reads a layer's parameters reads an all-gather of it,
// issued one compute ahead.
//
// `ratrain` places each layer's lifecycle as early as its data allows, with
// the cost model deciding where a sync has completed; `gpu-style` runs each
// lifecycle step as a whole-stage phase at the iteration boundary. States
// the plan keeps in the offload tier are reloaded for the update and written
// back after it, through two buffers (docs/schedule.md, "Offload"). Under
// partial synchronization (the plan's sync_period) a layer's update applies
// the replica's own gradient and its updated master is averaged every
// sync_period steps, in the layer's phase, before the view is cast from it
// (docs/schedule.md, "Partial synchronization").
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/BufferSizes.h"
#include "ratrain/Analysis/LayerTiming.h"
#include "ratrain/Planner/CostModel.h"
#include "ratrain/Planner/SyncPhases.h"
#include "ratrain/Transforms/ActivationOffload.h"
#include "ratrain/Transforms/LayerBackward.h"
#include "ratrain/Transforms/LifecycleCosts.h"
#include "ratrain/Transforms/PassUtils.h"
#include "ratrain/Transforms/Passes.h"
#include "ratrain/Transforms/ShardingLifecycle.h"

#include "mlir/IR/Builders.h"

#include <deque>

namespace ratrain {
#define GEN_PASS_DEF_RATRAINSCHEDULELIFECYCLE
#include "ratrain/Transforms/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;

namespace {

/// The lifecycle values of one layer, filled in as its ops are emitted.
struct LayerLifecycle {
  int64_t layer = 0;
  Value finalGrad;     ///< the gradient after the last micro-batch
  Value pendingGrad;   ///< the sync's async value
  double syncDone = 0; ///< predicted end of the sync (ratrain)
  Value syncedGrad;    ///< the sync's wait, once emitted
  /// Partial synchronization: the layer's phase, the averaging of its
  /// updated master and its predicted end (in the phase's step).
  int64_t phase = 0;
  Value pendingAverage;
  double averageDone = 0;
  /// Offload: the reloads of the offloaded states (null: state in DDR).
  Value pendingMaster, pendingOptState;
  bool reloadIssued = false;
  double reloadDone = 0;
  Value newMaster;   ///< from the update
  Value newOptState; ///< from the update
  Value pendingView; ///< from the view prefetch
  Value newView;     ///< the prefetch's wait, once emitted
  /// ZeRO-1/2: the all-gather of the re-materialized view, once issued.
  Value pendingGather;
  /// Offload: the write-backs of the updated states.
  SmallVector<Value, 2> pendingWriteBack;
  double writeBackDone = 0;
  bool released = false;
};

/// Schedules the lifecycle of one stage.
class StageScheduler {
public:
  StageScheduler(StageOp stage, PlanAttr plan, const StageCosts &costs,
                 const BufferSizes &sizes, const PartitionGroups &groups,
                 StorageTier tier, bool ratrainPolicy, int64_t recomputeAhead)
      : stage(stage), plan(plan), costs(costs), sizes(sizes), groups(groups),
        tier(tier), ratrainPolicy(ratrainPolicy),
        recomputeAhead(recomputeAhead), builder(stage.getContext()) {}

  LogicalResult run();

private:
  bool offloads() const {
    return sizes.offloadsMaster() || sizes.offloadsOptState();
  }
  /// ZeRO-1/2: the re-materialized view is this rank's shard, all-gathered
  /// into the full view before the next step.
  bool gathersViews() const {
    return plan.getZero() == 1 || plan.getZero() == 2;
  }
  void placeRecomputes();
  void emitGradReadyAndSync(LayerLifecycle &life);
  void emitSyncWait(LayerLifecycle &life);
  void emitReloads(LayerLifecycle &life, double now);
  void emitUpdate(LayerLifecycle &life);
  /// Gradient clipping: waits for the syncs of `layers` (all of the
  /// stage's), starts the global norm over them and waits for it; the
  /// updates emitted after read it.
  void emitGradNorm(ArrayRef<LayerLifecycle *> layers);
  void emitViewPrefetch(LayerLifecycle &life);
  /// Partial synchronization: starts the averaging of the layer's updated
  /// master (every sync_period steps, in its phase).
  void emitAverage(LayerLifecycle &life);
  /// Waits for the averaging; the averaged master is the layer's new one.
  void emitAverageWait(LayerLifecycle &life);
  void emitWriteBack(LayerLifecycle &life, double now);
  void emitRelease(LayerLifecycle &life);
  /// ZeRO-1/2: waits for the layer's view prefetch and issues the
  /// all-gather of its view (pendingGather).
  void emitViewGather(LayerLifecycle &life);
  /// The views of `layers` in place for the next step: each prefetch waited
  /// for and, under ZeRO-1/2, its all-gather issued (unless already) and
  /// waited for.
  void emitViewInPlace(ArrayRef<LayerLifecycle *> layers);
  /// The algorithm of a sync on the part `scope` of the group at `level`.
  SyncHierarchy hierarchyOf(SyncScope scope, int64_t level) const;
  /// ZeRO-3: one all-gather of the view shard per group of `uses`
  /// (consecutive computes that read the same layer's view), issued right
  /// before the last compute of the group before it (the first at the step
  /// start) and waited right before the group's first compute.
  void emitParameterGathers(ArrayRef<SmallVector<Operation *, 2>> uses);
  /// The first op of the stage's last backward sweep (micro-batch m - 1):
  /// its recv gradient, a hoisted recompute or its first backward.
  Operation *lastSweepStart();

  StageOp stage;
  PlanAttr plan;
  const StageCosts &costs;
  const BufferSizes &sizes;
  const PartitionGroups &groups;
  StorageTier tier;
  bool ratrainPolicy;
  int64_t recomputeAhead;
  OpBuilder builder;
  /// Predicted time the offload stream is free (ratrain).
  double offloadFree = 0;
  /// Gradient clipping: the step's squared global norm, once waited for.
  Value clipNorm;
};

} // namespace

void StageScheduler::placeRecomputes() {
  Block &body = stage.getBody().front();
  // Just in time: each recompute right before the backward (or the input
  // part of a split backward) that uses it.
  for (RecomputeOp recompute : llvm::to_vector(body.getOps<RecomputeOp>())) {
    for (Operation *user : recompute.getActivation().getUsers())
      if (isa<BackwardOp, BackwardInputOp>(user)) {
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
        if (std::optional<int64_t> mb = getBackwardMicroBatch(op))
          if (*mb != int64_t(recv.getMicroBatch()))
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

Operation *StageScheduler::lastSweepStart() {
  int64_t last = plan.getMicroBatches() - 1;
  for (Operation &op : stage.getBody().front()) {
    if (auto recv = dyn_cast<RecvOp>(op))
      if (recv.getPayload() == Payload::Gradient &&
          int64_t(recv.getMicroBatch()) == last)
        return &op;
    if (auto recompute = dyn_cast<RecomputeOp>(op))
      if (int64_t(recompute.getMicroBatch()) == last)
        return &op;
    if (std::optional<int64_t> mb = getBackwardMicroBatch(&op))
      if (*mb == last)
        return &op;
  }
  return stage.getYield();
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
  // Partial synchronization: the replica updates with its own gradient.
  if (plan.syncsPartially()) {
    life.syncedGrad = ready;
    return;
  }
  Type synced = GradType::get(context, layer, GradPhase::Synced);
  std::optional<WireType> wire = costs.syncKind() == SyncKind::ReduceScatter
                                     ? groups.gradWire
                                     : std::nullopt;
  if (!groups.active()) {
    life.pendingGrad =
        groups
            .createSync(builder, loc, synced, costs.syncKind(), ready,
                        costs.hierarchy(), std::nullopt, 0, wire)
            .getPending();
    return;
  }
  // Partitioned (docs/schedule.md, "Partitioning"): inside the gradient
  // level into its partition, then across the level's groups into the
  // shard; a level whose groups hold the whole data-parallel group (or
  // none) reduce-scatters over all of it at once.
  int64_t level = groups.gradLevel;
  if (level < 0 || groups.acrossMembers(level) == 1) {
    life.pendingGrad =
        groups
            .createSync(builder, loc, synced, SyncKind::ReduceScatter, ready,
                        hierarchyOf(SyncScope::Inside, groups.outermost()),
                        SyncScope::Inside, groups.outermost(), wire)
            .getPending();
    return;
  }
  Value partial =
      groups
          .createSync(builder, loc, ready.getType(), SyncKind::ReduceScatter,
                      ready, hierarchyOf(SyncScope::Inside, level),
                      SyncScope::Inside, level, wire)
          .getPending();
  Value partition =
      WaitOp::create(builder, loc, ready.getType(), partial).getValue();
  life.pendingGrad =
      groups
          .createSync(builder, loc, synced, SyncKind::ReduceScatter, partition,
                      hierarchyOf(SyncScope::Across, level), SyncScope::Across,
                      level, wire)
          .getPending();
}

SyncHierarchy StageScheduler::hierarchyOf(SyncScope scope,
                                          int64_t level) const {
  // Hierarchical when the part of the group spans more than one level with
  // more than one member each (the runtime's N-level decomposition).
  int64_t spanned = 0;
  for (int64_t l = 0; l <= groups.outermost(); ++l) {
    bool inPart = scope == SyncScope::Inside ? l <= level : l > level;
    int64_t below = l == 0 ? 1 : groups.insideMembers(l - 1);
    if (inPart && groups.insideMembers(l) > below)
      ++spanned;
  }
  return spanned > 1 && costs.hierarchy() == SyncHierarchy::Hierarchical
             ? SyncHierarchy::Hierarchical
             : SyncHierarchy::Flat;
}

void StageScheduler::emitSyncWait(LayerLifecycle &life) {
  if (life.syncedGrad)
    return;
  life.syncedGrad =
      WaitOp::create(builder, stage.getLoc(),
                     cast<AsyncType>(life.pendingGrad.getType()).getValue(),
                     life.pendingGrad)
          .getValue();
}

void StageScheduler::emitReloads(LayerLifecycle &life, double now) {
  if (life.reloadIssued)
    return;
  life.reloadIssued = true;
  Location loc = stage.getLoc();
  MLIRContext *context = stage.getContext();
  if (sizes.offloadsMaster()) {
    BlockArgument master = stage.getMasterArg(life.layer);
    life.pendingMaster =
        ReloadOp::create(builder, loc,
                         AsyncType::get(context, master.getType()), master)
            .getPending();
  }
  if (sizes.offloadsOptState()) {
    BlockArgument optState = stage.getOptStateArg(life.layer);
    life.pendingOptState =
        ReloadOp::create(builder, loc,
                         AsyncType::get(context, optState.getType()), optState)
            .getPending();
  }
  offloadFree = std::max(offloadFree, now) + costs.offloadSeconds(life.layer);
  life.reloadDone = offloadFree;
}

void StageScheduler::emitUpdate(LayerLifecycle &life) {
  Location loc = stage.getLoc();
  int64_t layer = life.layer;
  emitSyncWait(life);
  auto inDDR = [&](Value pending, BlockArgument state) -> Value {
    if (!pending)
      return state;
    return WaitOp::create(builder, loc, state.getType(), pending).getValue();
  };
  Value master = inDDR(life.pendingMaster, stage.getMasterArg(layer));
  Value optState = inDDR(life.pendingOptState, stage.getOptStateArg(layer));
  assert((clipNorm || !plan.clipsGradients()) &&
         "a clipped step's updates follow the norm");
  auto update = UpdateOp::create(builder, loc, master.getType(),
                                 optState.getType(), Optimizer::AdamW,
                                 life.syncedGrad, master, optState, clipNorm);
  life.newMaster = update.getNewMaster();
  life.newOptState = update.getNewOptState();
}

void StageScheduler::emitGradNorm(ArrayRef<LayerLifecycle *> layers) {
  MLIRContext *context = stage.getContext();
  Location loc = stage.getLoc();
  SmallVector<Value> synced;
  for (LayerLifecycle *life : layers) {
    emitSyncWait(*life);
    synced.push_back(life->syncedGrad);
  }
  Type norm = GradNormType::get(context);
  Value pending =
      GradNormOp::create(builder, loc, AsyncType::get(context, norm), synced)
          .getPending();
  clipNorm = WaitOp::create(builder, loc, norm, pending).getValue();
}

void StageScheduler::emitViewPrefetch(LayerLifecycle &life) {
  life.pendingView =
      ViewPrefetchOp::create(
          builder, stage.getLoc(),
          AsyncType::get(stage.getContext(),
                         ViewType::get(stage.getContext(), life.layer)),
          life.newMaster)
          .getPending();
}

void StageScheduler::emitAverage(LayerLifecycle &life) {
  MLIRContext *context = stage.getContext();
  Type master = life.newMaster.getType();
  life.pendingAverage =
      SyncOp::create(builder, stage.getLoc(), AsyncType::get(context, master),
                     SyncKind::AllReduce, life.newMaster, costs.hierarchy(),
                     SyncScopeAttr(), IntegerAttr(), IntegerAttr(),
                     WireTypeAttr(),
                     builder.getI64IntegerAttr(plan.getSyncPeriod()),
                     builder.getI64IntegerAttr(life.phase))
          .getPending();
}

void StageScheduler::emitAverageWait(LayerLifecycle &life) {
  life.newMaster = WaitOp::create(builder, stage.getLoc(),
                                  life.newMaster.getType(), life.pendingAverage)
                       .getValue();
}

void StageScheduler::emitWriteBack(LayerLifecycle &life, double now) {
  MLIRContext *context = stage.getContext();
  auto writeBack = [&](Value state) {
    life.pendingWriteBack.push_back(
        OffloadOp::create(
            builder, stage.getLoc(),
            AsyncType::get(context,
                           OffloadedType::get(context, state.getType())),
            state, tier)
            .getPending());
  };
  if (sizes.offloadsMaster())
    writeBack(life.newMaster);
  if (sizes.offloadsOptState())
    writeBack(life.newOptState);
  offloadFree = std::max(offloadFree, now) + costs.offloadSeconds(life.layer);
  life.writeBackDone = offloadFree;
}

void StageScheduler::emitRelease(LayerLifecycle &life) {
  if (life.released)
    return;
  life.released = true;
  Location loc = stage.getLoc();
  // The cast reads the offloaded master: it completes before the buffer is
  // reused.
  if (sizes.offloadsMaster() && !life.newView)
    life.newView = WaitOp::create(builder, loc,
                                  ViewType::get(stage.getContext(), life.layer),
                                  life.pendingView)
                       .getValue();
  for (Value pending : life.pendingWriteBack)
    WaitOp::create(builder, loc, cast<AsyncType>(pending.getType()).getValue(),
                   pending);
}

void StageScheduler::emitViewGather(LayerLifecycle &life) {
  Location loc = stage.getLoc();
  Type viewType = ViewType::get(stage.getContext(), life.layer);
  if (!life.newView)
    life.newView =
        WaitOp::create(builder, loc, viewType, life.pendingView).getValue();
  // Under partitioning the shards are laid out for the partition groups:
  // the whole group's is the outermost level's inside group.
  std::optional<SyncScope> scope;
  if (groups.active())
    scope = SyncScope::Inside;
  life.pendingGather =
      groups
          .createSync(builder, loc, viewType, SyncKind::AllGather, life.newView,
                      scope ? hierarchyOf(*scope, groups.outermost())
                            : costs.hierarchy(),
                      scope, groups.outermost(), groups.weightWire)
          .getPending();
}

void StageScheduler::emitViewInPlace(ArrayRef<LayerLifecycle *> layers) {
  Location loc = stage.getLoc();
  MLIRContext *context = stage.getContext();
  bool gathers = gathersViews();
  for (LayerLifecycle *life : layers) {
    if (gathers && !life->pendingGather)
      emitViewGather(*life);
    else if (!life->newView)
      life->newView =
          WaitOp::create(builder, loc, ViewType::get(context, life->layer),
                         life->pendingView)
              .getValue();
  }
  if (!gathers)
    return;
  for (LayerLifecycle *life : layers)
    life->newView =
        WaitOp::create(
            builder, loc,
            cast<AsyncType>(life->pendingGather.getType()).getValue(),
            life->pendingGather)
            .getValue();
}

/// The view a compute op reads (null for other ops): forward, recompute,
/// backward and both parts of a split backward.
static OpOperand *getViewOperand(Operation *op) {
  if (auto forward = dyn_cast<ForwardOp>(op))
    return &forward.getViewMutable();
  if (auto recompute = dyn_cast<RecomputeOp>(op))
    return &recompute.getViewMutable();
  if (auto backward = dyn_cast<BackwardOp>(op))
    return &backward.getViewMutable();
  if (auto input = dyn_cast<BackwardInputOp>(op))
    return &input.getViewMutable();
  if (auto weight = dyn_cast<BackwardWeightOp>(op))
    return &weight.getViewMutable();
  return nullptr;
}

void StageScheduler::emitParameterGathers(
    ArrayRef<SmallVector<Operation *, 2>> uses) {
  Location loc = stage.getLoc();
  // Partitioned: the secondary partition of each layer's view, gathered
  // across the weight level's groups at the layer's first use in the step.
  int64_t level = groups.weightLevel;
  bool secondary = groups.active() && level >= 0 &&
                   groups.acrossMembers(level) > 1 &&
                   groups.insideMembers(level) > 1;
  DenseMap<int64_t, Value> secondaryOf;
  auto issue = [&](ArrayRef<Operation *> group) {
    Value shard = getViewOperand(group.front())->get();
    Type type = shard.getType();
    if (!groups.active())
      return groups
          .createSync(builder, loc, type, SyncKind::AllGather, shard,
                      costs.hierarchy(), std::nullopt, 0, groups.weightWire)
          .getPending();
    if (!secondary) {
      int64_t outer = groups.outermost();
      // A level whose groups hold one member each: the secondary partition
      // is the whole view, gathered across them once.
      bool whole = level >= 0 && groups.insideMembers(level) == 1;
      SyncScope scope = whole ? SyncScope::Across : SyncScope::Inside;
      int64_t at = whole ? level : outer;
      return groups
          .createSync(builder, loc, type, SyncKind::AllGather, shard,
                      hierarchyOf(scope, at), scope, at, groups.weightWire)
          .getPending();
    }
    int64_t layer = cast<ViewType>(type).getLayer();
    Value &part = secondaryOf[layer];
    if (!part) {
      Value pending =
          groups
              .createSync(builder, loc, type, SyncKind::AllGather, shard,
                          hierarchyOf(SyncScope::Across, level),
                          SyncScope::Across, level, groups.weightWire)
              .getPending();
      part = WaitOp::create(builder, loc, type, pending).getValue();
    }
    return groups
        .createSync(builder, loc, type, SyncKind::AllGather, part,
                    hierarchyOf(SyncScope::Inside, level), SyncScope::Inside,
                    level, groups.weightWire)
        .getPending();
  };
  if (uses.empty())
    return;
  builder.setInsertionPointToStart(&stage.getBody().front());
  Value pending = issue(uses.front());
  for (auto [index, group] : llvm::enumerate(uses)) {
    builder.setInsertionPoint(group.front());
    Value gathered =
        WaitOp::create(builder, loc,
                       getViewOperand(group.front())->get().getType(), pending)
            .getValue();
    for (Operation *reader : group)
      getViewOperand(reader)->set(gathered);
    // The next group's gather overlaps this group's last compute.
    if (index + 1 < uses.size()) {
      builder.setInsertionPoint(group.back());
      pending = issue(uses[index + 1]);
    }
  }
}

LogicalResult StageScheduler::run() {
  Block &body = stage.getBody().front();
  for (Operation &op : body)
    if (isa<GradReadyOp, SyncOp, UpdateOp, ViewPrefetchOp, WaitOp, OffloadOp,
            ReloadOp>(op))
      return op.emitOpError("stage ")
             << stage.getStage()
             << " already has lifecycle operations; "
                "--ratrain-schedule-lifecycle runs once, after "
                "--ratrain-expand-1f1b";

  placeRecomputes();
  placeActivationOffloads(
      stage, plan, tier,
      [&](Operation *op) { return costs.computeSeconds(op); },
      costs.activationTransferSeconds());

  // ZeRO-3: the computes that read a layer's parameters, in program order;
  // each reads a gather of the view shard (emitParameterGathers).
  // Consecutive readers of the same view (a recompute and its backward, a
  // split backward's input and weight parts) share one gather.
  bool zero3 = plan.getZero() >= 3;
  SmallVector<SmallVector<Operation *, 2>> paramUses;
  DenseMap<Operation *, size_t> useOfLastReader, useOfFirstReader;
  if (zero3) {
    for (Operation &op : body) {
      OpOperand *view = getViewOperand(&op);
      if (!view)
        continue;
      if (paramUses.empty() ||
          getViewOperand(paramUses.back().front())->get() != view->get())
        paramUses.emplace_back();
      paramUses.back().push_back(&op);
    }
    for (auto [index, group] : llvm::enumerate(paramUses)) {
      useOfFirstReader[group.front()] = index;
      useOfLastReader[group.back()] = index;
    }
  }

  // The last backward of each layer (its gradient has no further use as an
  // accumulator): a fused backward or, split, the weight part of the last
  // micro-batch (not its input part).
  SmallVector<int64_t> ownedLayers = stage.getLayers();
  SmallVector<LayerLifecycle> lives(ownedLayers.size());
  DenseMap<int64_t, LayerLifecycle *> lifeOfLayer;
  for (auto [layer, life] : llvm::zip(ownedLayers, lives)) {
    life.layer = layer;
    lifeOfLayer[layer] = &life;
  }
  DenseMap<Operation *, LayerLifecycle *> lastBackward;
  for (Operation &op : body) {
    Value grad;
    if (auto backward = dyn_cast<BackwardOp>(op))
      grad = backward.getGrad();
    else if (auto weight = dyn_cast<BackwardWeightOp>(op))
      grad = weight.getGrad();
    else
      continue;
    int64_t layer = cast<GradType>(grad.getType()).getLayer();
    lifeOfLayer.lookup(layer)->finalGrad = grad;
  }
  // Partial synchronization: each layer's phase, spreading the stage's
  // fp32 master bytes over the period.
  bool partial = plan.syncsPartially();
  if (partial) {
    SmallVector<int64_t> bytes;
    for (LayerLifecycle &life : lives)
      bytes.push_back(sizes.params(life.layer) * 4);
    for (auto [life, phase] :
         llvm::zip(lives, assignSyncPhases(bytes, plan.getSyncPeriod())))
      life.phase = phase;
  }
  for (LayerLifecycle &life : lives) {
    if (!life.finalGrad)
      return stage.emitOpError("has no backward of layer ")
             << life.layer << "; run --ratrain-expand-pipeline first";
    lastBackward[life.finalGrad.getDefiningOp()] = &life;
  }
  // Layers in the order their gradients become ready: the order of the
  // syncs, the updates and the offload stream.
  SmallVector<LayerLifecycle *> order;
  for (Operation &op : body)
    if (LayerLifecycle *life = lastBackward.lookup(&op))
      order.push_back(life);
  DenseMap<LayerLifecycle *, size_t> rank;
  for (auto [index, life] : llvm::enumerate(order))
    rank[life] = index;

  YieldOp yield = stage.getYield();
  SmallVector<LayerLifecycle *> updated;
  if (!ratrainPolicy) {
    // Whole-stage phases at the iteration boundary, layers in the order
    // their gradients became ready.
    builder.setInsertionPoint(yield);
    for (LayerLifecycle *life : order)
      emitGradReadyAndSync(*life);
    for (LayerLifecycle *life : order)
      emitSyncWait(*life);
    if (plan.clipsGradients())
      emitGradNorm(order);
    // Offloaded states stream through two buffers: the reload of a layer
    // right before its update, its write-back right after; the buffer of
    // the layer before last is released first. The cast of an offloaded
    // master runs before its write-back.
    for (auto [index, life] : llvm::enumerate(order)) {
      if (offloads()) {
        if (index >= 2)
          emitRelease(*order[index - 2]);
        emitReloads(*life, 0);
      }
      emitUpdate(*life);
      if (sizes.offloadsMaster())
        emitViewPrefetch(*life);
      if (offloads())
        emitWriteBack(*life, 0);
    }
    if (partial) {
      for (LayerLifecycle *life : order)
        emitAverage(*life);
      for (LayerLifecycle *life : order)
        emitAverageWait(*life);
    }
    if (!sizes.offloadsMaster())
      for (LayerLifecycle *life : order)
        emitViewPrefetch(*life);
    for (LayerLifecycle *life : order)
      emitRelease(*life);
    updated = order;
  } else {
    // Walk the program with a compute-stream clock; the communication
    // stream runs the syncs in issue order, the offload stream the reloads
    // and write-backs in issue order.
    std::deque<LayerLifecycle *> inFlight;
    // ZeRO-2: reduce-scatters issued and not yet waited, in issue order.
    std::deque<LayerLifecycle *> unwaitedScatters;
    // Offload: layers whose reload waits for the buffer of the layer two
    // updates earlier (order index of the layer to reload).
    std::deque<size_t> refills;
    // Partial synchronization: averagings issued, not yet waited for, and
    // when the communication stream is free in each phase's step (the
    // layers of other phases do not average in it).
    std::deque<LayerLifecycle *> averaging;
    SmallVector<double> phaseCommFree(partial ? plan.getSyncPeriod() : 0, 0);
    bool zero2 = plan.getZero() >= 2;
    double clock = 0, commFree = 0;
    // ZeRO-3: the parameter gathers share the FIFO communication stream;
    // the gather of use k is issued when the last compute of use k - 1
    // starts.
    SmallVector<double> gatherDone(paramUses.size(), 0);
    auto issueGather = [&](size_t index, double at) {
      Operation *reader = paramUses[index].front();
      int64_t layer =
          cast<ViewType>(getViewOperand(reader)->get().getType()).getLayer();
      commFree = std::max(commFree, at) + costs.gatherSeconds(layer);
      gatherDone[index] = commFree;
    };
    if (!paramUses.empty())
      issueGather(0, 0);
    auto refill = [&](size_t index) {
      emitRelease(*order[index - 2]);
      emitReloads(*order[index], clock);
    };
    // ZeRO-1/2: the all-gather of each re-materialized view is issued in
    // the step, overlapping the rest of it, instead of at its end: the view
    // of the layer updated before is gathered right after the next update
    // (its prefetch had that update's time to complete). Views under
    // partial synchronization or offloaded masters are gathered at the end.
    bool gathersEarly = gathersViews() && !partial && !sizes.offloadsMaster();
    LayerLifecycle *ungathered = nullptr;
    auto retire = [&](Operation *before) {
      LayerLifecycle *life = inFlight.front();
      inFlight.pop_front();
      builder.setInsertionPoint(before);
      size_t index = rank[life];
      if (!refills.empty() && refills.front() == index) {
        refills.pop_front();
        refill(index);
      }
      emitUpdate(*life);
      clock = std::max({clock, life->syncDone, life->reloadDone}) +
              costs.updateSeconds(life->layer);
      if (ungathered) {
        emitViewGather(*ungathered);
        commFree =
            std::max(commFree, clock) + costs.gatherSeconds(ungathered->layer);
        ungathered = nullptr;
      }
      if (partial) {
        // The cast follows the averaging, waited for where it is predicted
        // done in the layer's phase step (at once in the others).
        emitAverage(*life);
        double &free = phaseCommFree[life->phase];
        free = std::max(free, clock) + costs.averageSeconds(life->layer);
        life->averageDone = free;
        averaging.push_back(life);
      } else {
        emitViewPrefetch(*life);
        if (gathersEarly)
          ungathered = life;
      }
      if (offloads()) {
        emitWriteBack(*life, clock);
        if (index + 2 < order.size())
          refills.push_back(index + 2);
      }
      llvm::erase(unwaitedScatters, life);
      updated.push_back(life);
    };
    // The stage's last gradient send is on the critical path of the
    // pipeline drain (stage s - 1 waits for it, then s - 2 for that one):
    // no update is placed before it. Under gradient clipping no update
    // runs before the global norm, which needs every layer's sync: all
    // updates go to the end of the step.
    Operation *lastSend = nullptr;
    for (SendOp send : body.getOps<SendOp>())
      if (send.getPayload() == Payload::Gradient)
        lastSend = send;
    bool drained = lastSend == nullptr && !plan.clipsGradients();
    // The first two layers' offloaded states are reloaded when the last
    // backward sweep starts, overlapping it.
    Operation *sweepStart = offloads() ? lastSweepStart() : nullptr;
    for (Operation *op = &body.front(); op != yield.getOperation();) {
      Operation *next = op->getNextNode();
      builder.setInsertionPoint(op);
      if (op == sweepStart)
        for (size_t index = 0; index < std::min<size_t>(2, order.size());
             ++index)
          emitReloads(*order[index], clock);
      // A buffer of the window is free once its write-back completed.
      while (!refills.empty() &&
             order[refills.front() - 2]->writeBackDone <= clock) {
        refill(refills.front());
        refills.pop_front();
      }
      // ZeRO-2: a completed reduce-scatter frees the full gradient; with
      // m = 1 at most one is in flight when a backward starts (the full
      // gradients are double-buffered).
      while (zero2 && !unwaitedScatters.empty() &&
             (unwaitedScatters.front()->syncDone <= clock ||
              (plan.getMicroBatches() == 1 &&
               isa<BackwardOp, BackwardWeightOp>(op) &&
               unwaitedScatters.size() >= 2))) {
        LayerLifecycle *life = unwaitedScatters.front();
        unwaitedScatters.pop_front();
        emitSyncWait(*life);
        clock = std::max(clock, life->syncDone);
      }
      // Averagings complete out of issue order now (one stream per phase's
      // step): each is waited where it is predicted done.
      for (auto it = averaging.begin(); it != averaging.end();) {
        if ((*it)->averageDone > clock) {
          ++it;
          continue;
        }
        emitAverageWait(**it);
        emitViewPrefetch(**it);
        it = averaging.erase(it);
      }
      // An update goes where its sync and its states' reload are predicted
      // complete.
      while (drained && !inFlight.empty() &&
             inFlight.front()->syncDone <= clock &&
             (!offloads() || (inFlight.front()->reloadIssued &&
                              inFlight.front()->reloadDone <= clock)))
        retire(op);
      if (op == lastSend && !plan.clipsGradients())
        drained = true;
      if (auto use = useOfFirstReader.find(op); use != useOfFirstReader.end())
        clock = std::max(clock, gatherDone[use->second]);
      if (auto use = useOfLastReader.find(op);
          use != useOfLastReader.end() && use->second + 1 < paramUses.size())
        issueGather(use->second + 1, clock);
      clock += costs.computeSeconds(op);
      if (LayerLifecycle *life = lastBackward.lookup(op)) {
        builder.setInsertionPointAfter(op);
        emitGradReadyAndSync(*life);
        if (partial) {
          life->syncDone = clock;
        } else {
          double start = std::max(commFree, clock);
          commFree = start + costs.syncSeconds(life->layer);
          life->syncDone = commFree;
        }
        inFlight.push_back(life);
        if (zero2)
          unwaitedScatters.push_back(life);
        // Ops inserted after `op` are not revisited.
        Value last = partial ? life->syncedGrad : life->pendingGrad;
        next = last.getDefiningOp()->getNextNode();
      }
      op = next;
    }
    if (plan.clipsGradients()) {
      builder.setInsertionPoint(yield);
      emitGradNorm(order);
      // The norm's all-reduce runs on the communication stream after the
      // last sync; a scalar, so its latency is what it costs here.
      clock = std::max(clock, commFree);
    }
    while (!inFlight.empty())
      retire(yield);
    builder.setInsertionPoint(yield);
    for (LayerLifecycle *life : averaging) {
      emitAverageWait(*life);
      emitViewPrefetch(*life);
    }
    for (LayerLifecycle *life : updated)
      emitRelease(*life);
  }

  // Views in place for the next step, the stage's first layer first.
  llvm::sort(updated, [](LayerLifecycle *a, LayerLifecycle *b) {
    return a->layer < b->layer;
  });
  builder.setInsertionPoint(yield);
  emitViewInPlace(updated);
  if (zero3)
    emitParameterGathers(paramUses);

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
      FailureOr<ModelOp> model = pipeline.lookupModel();
      if (failed(model))
        return signalPassFailure();
      PlanAttr plan = pipeline.getPlan();
      ModelConfig config = getModelConfig(*model);
      CostModel costModel(config, *machine);
      BufferSizes sizes(*model, plan, MemoryOptions::forMachine(*machine));
      SmallVector<LayerKind> kinds;
      for (LayerOp layer : model->getLayers())
        kinds.push_back(layer.getKind());
      if (plan.getOffload() != Offload::None && !machine->offload.present()) {
        pipeline.emitOpError("plan keeps ")
            << (plan.getOffload() == Offload::Master
                    ? "the master weights and optimizer states"
                    : "the optimizer states")
            << " in the offload tier, but machine '" << machine->name
            << "' has none (no 'offload:' in its machine file)";
        return signalPassFailure();
      }
      if (plan.offloadsAnyActivations() && !machine->offload.present()) {
        pipeline.emitOpError("plan offloads the activations of some layers "
                             "(act_offload), but machine '")
            << machine->name
            << "' has no offload tier (no 'offload:' in its machine file)";
        return signalPassFailure();
      }
      StorageTier tier = machine->offload.kind == OffloadTierKind::Storage
                             ? StorageTier::Storage
                             : StorageTier::Host;
      for (StageOp stage : pipeline.getStages()) {
        StageCosts costs(costModel, sizes, plan, kinds, stage.getStage(),
                         machine->clustersPerNode);
        FailureOr<PartitionGroups> groups =
            PartitionGroups::get(plan, *machine, stage.getStage(),
                                 [&] { return pipeline.emitOpError(); });
        if (failed(groups))
          return signalPassFailure();
        if (failed(StageScheduler(stage, plan, costs, sizes, *groups, tier,
                                  ratrainPolicy, recomputeAhead)
                       .run()))
          return signalPassFailure();
      }
      pipeline.setPolicy(ratrainPolicy ? SchedulePolicy::RATrain
                                       : SchedulePolicy::GpuStyle);
    }
  }
};

} // namespace
