//===- VerifySchedule.cpp - --ratrain-verify-schedule ---------------------===//
//
// Checks what the dialect's types cannot: the lifecycle order of every
// stage program (ready before sync, sync completed before update, views in
// place before compute, activations stored before backward, no stale
// state), the buffer assignment (no two buffers share addresses while both
// are live), and the pipeline as a whole (every recv is matched by a send
// that can be issued: no deadlock).
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/ModelAndPlan.h"
#include "ratrain/Analysis/PutLanding.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"
#include "ratrain/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <map>
#include <tuple>

namespace ratrain {
#define GEN_PASS_DEF_RATRAINVERIFYSCHEDULE
#include "ratrain/Transforms/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;

namespace {

/// Looks through wait/offload/reload round trips and returns the op that
/// produced the value's content: for `wait(reload(wait(offload(x))))` the
/// producer of x.
Operation *contentProducer(Value value) {
  Operation *def = value.getDefiningOp();
  while (auto wait = dyn_cast_or_null<WaitOp>(def)) {
    Operation *pending = wait.getPending().getDefiningOp();
    if (auto reload = dyn_cast_or_null<ReloadOp>(pending)) {
      auto offloadWait =
          dyn_cast_or_null<WaitOp>(reload.getOffloaded().getDefiningOp());
      auto offload = offloadWait ? dyn_cast_or_null<OffloadOp>(
                                       offloadWait.getPending().getDefiningOp())
                                 : OffloadOp();
      if (!offload)
        return pending;
      def = offload.getState().getDefiningOp();
      continue;
    }
    return wait;
  }
  return def;
}

/// Checks the program of one stage.
class StageChecker {
public:
  /// `offloadsMaster` / `offloadsOptState`: the plan keeps those states in
  /// the offload tier between steps.
  StageChecker(StageOp stage, PlanAttr plan, bool offloadsMaster,
               bool offloadsOptState)
      : stage(stage), plan(plan), offloadsMaster(offloadsMaster),
        offloadsOptState(offloadsOptState) {}

  LogicalResult run();

private:
  LogicalResult checkView(Operation *user, Value view, StringRef what);
  LogicalResult checkNotStale(Operation *user, Value value);
  LogicalResult checkActivation(Operation *user, Value activation,
                                int64_t layer, int64_t microBatch,
                                bool recompute, bool release = true);
  /// Checks the accumulation of a backward (or weight part) into `acc` and
  /// counts the micro-batches in `grad`.
  LogicalResult checkAccumulation(Operation *op, Value acc, Value grad,
                                  int64_t layer);
  /// Checks a weight part against the input part its deferred value comes
  /// from.
  LogicalResult checkWeightPart(BackwardWeightOp weight);

  /// Whether a view value is complete and in place for compute: the
  /// step's view, a re-materialized view (ZeRO 0) or an all-gathered one.
  /// Under ZeRO-3 a compute (`forCompute`) needs a completed all-gather of
  /// the view shard, and the yield returns the shard: the step's view or a
  /// completed re-materialization, not a gathered view.
  bool viewInPlace(Value view, std::string &why, bool forCompute) const;
  /// The partition syncs follow the plan's weight_partition and
  /// grad_partition (docs/schedule.md, "Partitioning").
  LogicalResult checkPartition(SyncOp sync);

  /// Whether the plan keeps states of `type` in the offload tier.
  bool inTier(Type type) const {
    return (isa<MasterType>(type) && offloadsMaster) ||
           (isa<OptStateType>(type) && offloadsOptState);
  }
  LogicalResult checkStateInDDR(UpdateOp update, Value state);
  /// Gradient clipping (the plan's max_grad_norm): the update reads the
  /// completed global norm over every layer of the stage; without it, no
  /// norm.
  LogicalResult checkClip(UpdateOp update);

  StageOp stage;
  PlanAttr plan;
  bool offloadsMaster, offloadsOptState;
  /// States whose offload was issued, by the offload; and those whose
  /// offload completed (they are in the tier).
  DenseMap<Value, Operation *> offloadedBy;
  DenseSet<Value> writtenBack;
  /// Values replaced by a newer state and the op that replaced them.
  DenseMap<Value, Operation *> replacedBy;
  /// Micro-batches accumulated into each partial gradient value.
  DenseMap<Value, int64_t> accumulated;
  /// Activations already released by a backward, and by which.
  DenseMap<Value, Operation *> consumedBy;
  /// Deferred values of input parts not yet used by their weight part.
  llvm::MapVector<Value, Operation *> pendingWeights;
  /// Layers whose master was updated this step: the new master.
  DenseMap<int64_t, Value> newMaster;
};

} // namespace

bool StageChecker::viewInPlace(Value view, std::string &why,
                               bool forCompute) const {
  if (plan.getZero() >= 3) {
    auto wait = view.getDefiningOp<WaitOp>();
    auto source = wait ? wait.getPending().getDefiningOp() : nullptr;
    auto gather = dyn_cast_or_null<SyncOp>(source);
    bool gathered = gather && gather.getKind() == SyncKind::AllGather;
    if (forCompute) {
      if (gathered && gather.getScope() == SyncScope::Across &&
          gather.getMembers() != plan.getDp()) {
        why = "it is the secondary partition of the view (an 'all_gather "
              "across' level " +
              std::to_string(*gather.getLevel()) +
              "); a compute reads the full view gathered inside the level "
              "from it";
        return false;
      }
      if (gathered)
        return true;
      why = "under ZeRO-3 the view is this rank's shard; a compute reads the "
            "completed 'ratrain.sync all_gather' of it";
      return false;
    }
    if (isa<BlockArgument>(view) || isa_and_nonnull<ViewPrefetchOp>(source))
      return true;
    why = gathered ? "under ZeRO-3 the next step starts from this rank's "
                     "shard, not a gathered view"
                   : "it is not the step's view shard or a completed view "
                     "prefetch";
    return false;
  }
  if (isa<BlockArgument>(view))
    return true;
  Operation *def = view.getDefiningOp();
  if (auto wait = dyn_cast<WaitOp>(def)) {
    Operation *pending = wait.getPending().getDefiningOp();
    if (auto sync = dyn_cast_or_null<SyncOp>(pending))
      if (sync.getKind() == SyncKind::AllGather)
        return true;
    if (isa_and_nonnull<ViewPrefetchOp>(pending)) {
      if (plan.getZero() == 0)
        return true;
      why = "under ZeRO-" + std::to_string(plan.getZero()) +
            " the re-materialized view is this rank's shard until a "
            "'ratrain.sync all_gather' completes";
      return false;
    }
    if (isa_and_nonnull<ReloadOp>(pending))
      return true;
  }
  why = "it is produced by '" + def->getName().getStringRef().str() +
        "', not by the step's states, a completed view prefetch or an "
        "all-gather";
  return false;
}

LogicalResult StageChecker::checkView(Operation *user, Value view,
                                      StringRef what) {
  std::string why;
  if (viewInPlace(view, why, /*forCompute=*/true))
    return success();
  return user->emitOpError("forward-before-view-in-place: ")
         << what << " uses the view of layer " << *getStateLayer(view.getType())
         << " before it is in place: " << why;
}

LogicalResult StageChecker::checkClip(UpdateOp update) {
  int64_t layer = update.getGrad().getType().getLayer();
  Value clip = update.getClip();
  if (!plan.clipsGradients()) {
    if (clip)
      return update.emitOpError("clip-without-max-grad-norm: the update of "
                                "layer ")
             << layer
             << " clips to a gradient norm, but the plan sets no "
                "max_grad_norm";
    return success();
  }
  auto wait = clip ? clip.getDefiningOp<WaitOp>() : WaitOp();
  auto norm =
      wait ? wait.getPending().getDefiningOp<GradNormOp>() : GradNormOp();
  if (!norm)
    return update.emitOpError("update-before-grad-norm: the plan clips the "
                              "gradients (max_grad_norm = ")
           << plan.getMaxGradNormValue() << ") but the update of layer "
           << layer
           << " does not read a completed 'ratrain.grad_norm' (a "
              "'ratrain.wait' on it)";
  // The norm counts every layer of the stage, each as its synced gradient
  // (the value the stage's own update of that layer reads).
  DenseSet<int64_t> counted;
  for (Value grad : norm.getGrads()) {
    Operation *producer = contentProducer(grad);
    auto syncWait = dyn_cast_or_null<WaitOp>(producer);
    auto sync =
        syncWait ? syncWait.getPending().getDefiningOp<SyncOp>() : SyncOp();
    if (!sync || sync.getKind() == SyncKind::AllGather)
      return norm.emitOpError("grad-norm-before-sync-completes: counts the "
                              "gradient of layer ")
             << cast<GradType>(grad.getType()).getLayer()
             << " before its 'ratrain.sync' completed";
    counted.insert(cast<GradType>(grad.getType()).getLayer());
  }
  for (int64_t owned : stage.getLayers())
    if (!counted.contains(owned))
      return norm.emitOpError("grad-norm-misses-layer: the global norm the "
                              "update of layer ")
             << layer << " reads does not count layer " << owned
             << " of the stage";
  return success();
}

LogicalResult StageChecker::checkStateInDDR(UpdateOp update, Value state) {
  if (!inTier(state.getType()))
    return success();
  Operation *def = state.getDefiningOp();
  auto wait = dyn_cast_or_null<WaitOp>(def);
  if (wait && isa_and_nonnull<ReloadOp>(wait.getPending().getDefiningOp()))
    return success();
  int64_t layer = update.getGrad().getType().getLayer();
  return update.emitOpError("update-on-offloaded-state: the update of layer ")
         << layer << " uses " << state.getType()
         << ", which the plan keeps in the offload tier (offload = "
         << stringifyOffload(plan.getOffload())
         << "), without reloading it: its operand must be the 'ratrain.wait' "
            "of a 'ratrain.reload'";
}

LogicalResult StageChecker::checkNotStale(Operation *user, Value value) {
  // A state written back to the tier is returned by the yield from there.
  if (isa<YieldOp>(user) && writtenBack.contains(value))
    return success();
  if (Operation *offload = offloadedBy.lookup(value)) {
    InFlightDiagnostic diag = user->emitOpError("uses a stale state: the ")
                              << value.getType()
                              << " was moved to the offload tier by '"
                              << offload->getName() << "'";
    diag.attachNote(offload->getLoc()) << "offloaded here";
    return diag;
  }
  Operation *replacer = replacedBy.lookup(value);
  if (!replacer)
    return success();
  InFlightDiagnostic diag = user->emitOpError("uses a stale state: the ")
                            << value.getType() << " was replaced by '"
                            << replacer->getName() << "'";
  diag.attachNote(replacer->getLoc()) << "replaced here";
  return diag;
}

LogicalResult StageChecker::checkActivation(Operation *user, Value activation,
                                            int64_t layer, int64_t microBatch,
                                            bool recompute, bool release) {
  Operation *def = contentProducer(activation);
  std::optional<int64_t> producedFor;
  if (auto forward = dyn_cast_or_null<ForwardOp>(def))
    producedFor = forward.getMicroBatch();
  else if (auto rec = dyn_cast_or_null<RecomputeOp>(def))
    producedFor = rec.getMicroBatch();
  if (!producedFor || *producedFor != microBatch)
    return user->emitOpError("backward-without-activation: ")
           << (recompute ? "the recompute" : "the backward") << " of layer "
           << layer << " micro-batch " << microBatch
           << " has no stored activations: no forward or recompute of that "
              "micro-batch produced its activation operand";
  if (Operation *previous = consumedBy.lookup(activation)) {
    InFlightDiagnostic diag =
        user->emitOpError("backward-without-activation: the activations of "
                          "layer ")
        << layer << " micro-batch " << microBatch
        << " were already released by an earlier '" << previous->getName()
        << "'";
    diag.attachNote(previous->getLoc()) << "released here";
    return diag;
  }
  // The input part of a split backward keeps the activations for its
  // weight part, which releases them.
  if (release)
    consumedBy[activation] = user;
  return success();
}

LogicalResult StageChecker::checkAccumulation(Operation *op, Value acc,
                                              Value grad, int64_t layer) {
  int64_t count = 1;
  if (acc) {
    if (Operation *user = consumedBy.lookup(acc)) {
      InFlightDiagnostic diag =
          op->emitOpError("use-before-ready: accumulates into a partial "
                          "gradient of layer ")
          << layer << " that '" << user->getName()
          << "' already used; each micro-batch must accumulate into the "
             "latest gradient";
      diag.attachNote(user->getLoc()) << "used here";
      return diag;
    }
    consumedBy[acc] = op;
    count = accumulated.lookup(acc) + 1;
  }
  accumulated[grad] = count;
  return success();
}

LogicalResult StageChecker::checkWeightPart(BackwardWeightOp weight) {
  int64_t layer = weight.getView().getType().getLayer();
  int64_t mb = weight.getMicroBatch();
  auto input = weight.getDeferred().getDefiningOp<BackwardInputOp>();
  if (!input)
    return weight.emitOpError("weight-without-input: the weight part of layer ")
           << layer << " micro-batch " << mb
           << " uses a deferred value that no 'ratrain.backward_input' "
              "produced";
  if (!pendingWeights.contains(weight.getDeferred())) {
    InFlightDiagnostic diag =
        weight.emitOpError("weight-without-input: the weight part of layer ")
        << layer << " micro-batch " << mb
        << " uses a deferred value that an earlier weight part already "
           "consumed";
    diag.attachNote(consumedBy.lookup(weight.getDeferred())->getLoc())
        << "consumed here";
    return diag;
  }
  pendingWeights.erase(weight.getDeferred());
  consumedBy[weight.getDeferred()] = weight;
  if (input.getActivation() != weight.getActivation()) {
    InFlightDiagnostic diag =
        weight.emitOpError("backward-without-activation: the weight part of "
                           "layer ")
        << layer << " micro-batch " << mb
        << " uses other activations than its input part";
    diag.attachNote(input.getLoc()) << "input part here";
    return diag;
  }
  return success();
}

LogicalResult StageChecker::checkPartition(SyncOp sync) {
  std::optional<SyncScope> scope = sync.getScope();
  bool partitioned =
      plan.getWeightPartition() >= 0 || plan.getGradPartition() >= 0;
  // The shards are laid out for the partition groups exactly when the plan
  // partitions: then every ZeRO collective runs on them, else none does.
  if (plan.getZero() >= 1 && partitioned != bool(scope))
    return sync.emitOpError("partition-group-mismatch: ")
           << (scope ? "runs on part of the data-parallel group, but the plan "
                       "has no weight_partition or grad_partition"
                     : "runs on the whole data-parallel group, but the plan "
                       "partitions its shards (weight_partition = " +
                           std::to_string(plan.getWeightPartition()) +
                           ", grad_partition = " +
                           std::to_string(plan.getGradPartition()) +
                           "): it runs inside the outermost level");
  if (!scope)
    return success();
  int64_t level = *sync.getLevel();
  if (*scope == SyncScope::Across && sync.getKind() == SyncKind::AllGather &&
      level != plan.getWeightPartition())
    return sync.emitOpError("partition-level-mismatch: gathers the secondary "
                            "partition across level ")
           << level << " but the plan's weight_partition is "
           << plan.getWeightPartition();
  if (*scope == SyncScope::Across &&
      sync.getKind() == SyncKind::ReduceScatter &&
      level != plan.getGradPartition())
    return sync.emitOpError("partition-level-mismatch: reduce-scatters the "
                            "gradient partition across level ")
           << level << " but the plan's grad_partition is "
           << plan.getGradPartition();
  if (sync.getKind() == SyncKind::ReduceScatter &&
      *scope == SyncScope::Across) {
    // Its input is the partition a reduce-scatter inside the same level
    // left.
    auto wait = sync.getState().getDefiningOp<WaitOp>();
    auto inside = wait ? wait.getPending().getDefiningOp<SyncOp>() : SyncOp();
    if (!inside || inside.getScope() != SyncScope::Inside ||
        inside.getLevel() != sync.getLevel())
      return sync.emitOpError("partition-before-reduce: reduce-scatters "
                              "across level ")
             << level
             << " a gradient that is not the completed reduce-scatter "
                "inside that level";
  }
  return success();
}

LogicalResult StageChecker::run() {
  Block &body = stage.getBody().front();
  int64_t m = plan.getMicroBatches();
  SyncKind gradSync =
      plan.getZero() >= 2 ? SyncKind::ReduceScatter : SyncKind::AllReduce;
  /// Async values not (yet) waited, in issue order.
  llvm::MapVector<Value, Operation *> unwaited;

  for (Operation &op : body) {
    for (Value operand : op.getOperands())
      if (failed(checkNotStale(&op, operand)))
        return failure();

    if (auto forward = dyn_cast<ForwardOp>(op)) {
      if (failed(checkView(&op, forward.getView(),
                           "the forward of micro-batch " +
                               std::to_string(forward.getMicroBatch()))))
        return failure();
      continue;
    }
    if (auto recompute = dyn_cast<RecomputeOp>(op)) {
      int64_t layer = recompute.getView().getType().getLayer();
      if (failed(checkView(&op, recompute.getView(), "the recompute")) ||
          failed(checkActivation(&op, recompute.getInput(), layer,
                                 recompute.getMicroBatch(),
                                 /*recompute=*/true)))
        return failure();
      continue;
    }
    if (auto backward = dyn_cast<BackwardOp>(op)) {
      int64_t layer = backward.getView().getType().getLayer();
      if (failed(checkView(&op, backward.getView(), "the backward")) ||
          failed(checkActivation(&op, backward.getActivation(), layer,
                                 backward.getMicroBatch(),
                                 /*recompute=*/false)) ||
          failed(checkAccumulation(&op, backward.getAcc(), backward.getGrad(),
                                   layer)))
        return failure();
      continue;
    }
    if (auto input = dyn_cast<BackwardInputOp>(op)) {
      int64_t layer = input.getView().getType().getLayer();
      if (failed(checkView(&op, input.getView(), "the backward input part")) ||
          failed(checkActivation(&op, input.getActivation(), layer,
                                 input.getMicroBatch(),
                                 /*recompute=*/false, /*release=*/false)))
        return failure();
      pendingWeights.insert({input.getDeferred(), &op});
      continue;
    }
    if (auto weight = dyn_cast<BackwardWeightOp>(op)) {
      int64_t layer = weight.getView().getType().getLayer();
      if (failed(
              checkView(&op, weight.getView(), "the backward weight part")) ||
          failed(checkWeightPart(weight)) ||
          failed(checkActivation(&op, weight.getActivation(), layer,
                                 weight.getMicroBatch(),
                                 /*recompute=*/false)) ||
          failed(
              checkAccumulation(&op, weight.getAcc(), weight.getGrad(), layer)))
        return failure();
      continue;
    }
    if (auto ready = dyn_cast<GradReadyOp>(op)) {
      int64_t layer = ready.getGrad().getType().getLayer();
      int64_t count = accumulated.lookup(ready.getGrad());
      if (count != m)
        return op.emitOpError("use-before-ready: the gradient of layer ")
               << layer << " is marked ready after " << count << " of " << m
               << " micro-batches accumulated into it";
      if (Operation *user = consumedBy.lookup(ready.getGrad())) {
        InFlightDiagnostic diag =
            op.emitOpError("use-before-ready: the gradient of layer ")
            << layer << " is marked ready but '" << user->getName()
            << "' still accumulates into it";
        diag.attachNote(user->getLoc()) << "accumulated here";
        return diag;
      }
      consumedBy[ready.getGrad()] = &op;
      continue;
    }
    if (auto sync = dyn_cast<SyncOp>(op)) {
      if (failed(checkPartition(sync)))
        return failure();
      if (sync.getPeriod()) {
        // Partial synchronization: the averaging of an updated master,
        // in place (the master before it must not be read again).
        // (The op verifier has checked the period against the plan's.)
        int64_t layer = *getStateLayer(sync.getState().getType());
        if (newMaster.lookup(layer) != sync.getState())
          return op.emitOpError("average-before-update: averages the master "
                                "of layer ")
                 << layer << " that is not the result of this step's update";
        replacedBy[sync.getState()] = &op;
        unwaited.insert({sync.getPending(), &op});
        continue;
      }
      if (sync.getKind() != SyncKind::AllGather && sync.getKind() != gradSync)
        return op.emitOpError("synchronizes the gradient of layer ")
               << *getStateLayer(sync.getState().getType()) << " with "
               << stringifySyncKind(sync.getKind()) << " but the plan has "
               << "zero = " << plan.getZero() << ", which needs "
               << stringifySyncKind(gradSync);
      unwaited.insert({sync.getPending(), &op});
      continue;
    }
    if (auto reload = dyn_cast<ReloadOp>(op)) {
      Value source = reload.getOffloaded();
      if (isa<BlockArgument>(source) && !inTier(source.getType()))
        return op.emitOpError("reload-of-resident-state: reloads ")
               << source.getType()
               << " from the step start, but the plan keeps it in DDR "
                  "(offload = "
               << stringifyOffload(plan.getOffload()) << ")";
    }
    if (auto offload = dyn_cast<OffloadOp>(op))
      offloadedBy[offload.getState()] = &op;
    if (isa<ViewPrefetchOp, OffloadOp, ReloadOp, GradNormOp>(op)) {
      unwaited.insert({op.getResult(0), &op});
      if (auto prefetch = dyn_cast<ViewPrefetchOp>(op)) {
        // The new view is written over the layer's view: the old one must
        // not be used any more.
        int64_t layer = prefetch.getMaster().getType().getLayer();
        replacedBy[stage.getViewArg(layer)] = &op;
      }
      continue;
    }
    if (auto wait = dyn_cast<WaitOp>(op)) {
      if (!unwaited.contains(wait.getPending()))
        return op.emitOpError("waits for an async value that is not in "
                              "flight (already waited)");
      unwaited.erase(wait.getPending());
      if (SyncOp average = getAveragingOf(wait.getValue()))
        newMaster[*getStateLayer(average.getState().getType())] =
            wait.getValue();
      if (auto offload =
              dyn_cast_or_null<OffloadOp>(wait.getPending().getDefiningOp()))
        writtenBack.insert(offload.getState());
      continue;
    }
    if (auto update = dyn_cast<UpdateOp>(op)) {
      int64_t layer = update.getGrad().getType().getLayer();
      Operation *producer = contentProducer(update.getGrad());
      auto wait = dyn_cast_or_null<WaitOp>(producer);
      auto sync =
          wait ? dyn_cast_or_null<SyncOp>(wait.getPending().getDefiningOp())
               : SyncOp();
      // Partial synchronization: a replica updates with its own gradient.
      bool own =
          plan.syncsPartially() && isa_and_nonnull<GradReadyOp>(producer);
      if (!own && (!sync || sync.getKind() == SyncKind::AllGather))
        return op.emitOpError("update-before-sync-completes: the update of "
                              "layer ")
               << layer
               << " uses a gradient that is not the result of a completed "
                  "'ratrain.sync' (a 'ratrain.wait' on its all_reduce or "
                  "reduce_scatter)";
      if (failed(checkStateInDDR(update, update.getMaster())) ||
          failed(checkStateInDDR(update, update.getOptState())) ||
          failed(checkClip(update)))
        return failure();
      replacedBy[update.getMaster()] = &op;
      replacedBy[update.getOptState()] = &op;
      newMaster[layer] = update.getNewMaster();
      continue;
    }
    if (auto yield = dyn_cast<YieldOp>(op)) {
      for (auto [index, value] : llvm::enumerate(yield.getStates())) {
        Type type = value.getType();
        int64_t layer = *getStateLayer(type);
        if (inTier(type) && !writtenBack.contains(value) &&
            !(isa<BlockArgument>(value) &&
              cast<BlockArgument>(value).getArgNumber() == index))
          return op.emitOpError("offloaded-state-not-written-back: returns ")
                 << type
                 << ", which the plan keeps in the offload tier (offload = "
                 << stringifyOffload(plan.getOffload())
                 << "), without a completed 'ratrain.offload' of it";
        if (isa<MasterType>(type) && plan.syncsPartially() &&
            newMaster.lookup(layer)) {
          if (!getAveragingOf(value))
            return op.emitOpError("unaveraged-master: returns the updated "
                                  "master of layer ")
                   << layer
                   << " without a completed averaging (a 'ratrain.sync "
                      "all_reduce' of it every "
                   << plan.getSyncPeriod()
                   << " steps): the replicas would never agree on it";
        }
        if (!isa<ViewType>(type))
          continue;
        std::string why;
        if (!viewInPlace(value, why, /*forCompute=*/false))
          return op.emitOpError("forward-before-view-in-place: returns the "
                                "view of layer ")
                 << layer
                 << " for the next step's forward before it is in place: "
                 << why;
        Value master = newMaster.lookup(layer);
        if (!master)
          continue;
        // The view must be re-materialized from the updated master.
        Operation *def = value.getDefiningOp();
        while (auto wait = dyn_cast_or_null<WaitOp>(def)) {
          Operation *pending = wait.getPending().getDefiningOp();
          if (auto gather = dyn_cast_or_null<SyncOp>(pending))
            def = gather.getState().getDefiningOp();
          else
            def = pending;
        }
        auto prefetch = dyn_cast_or_null<ViewPrefetchOp>(def);
        if (!prefetch || prefetch.getMaster() != master)
          return op.emitOpError("uses a stale state: returns a view of layer ")
                 << layer
                 << " that was not re-materialized from its updated master";
      }
      if (!pendingWeights.empty()) {
        Operation *input = pendingWeights.front().second;
        InFlightDiagnostic diag =
            op.emitOpError("input-without-weight: the step ends before the "
                           "weight part of ")
            << cast<ScheduleOpInterface>(input).describe();
        diag.attachNote(input->getLoc()) << "input part here";
        return diag;
      }
      if (!unwaited.empty()) {
        auto [value, issuer] = unwaited.front();
        InFlightDiagnostic diag =
            op.emitOpError("use-before-ready: the step ends with ")
            << unwaited.size() << " async operation(s) never waited, the "
            << "first a '" << issuer->getName() << "' of " << value.getType();
        diag.attachNote(issuer->getLoc()) << "issued here";
        return diag;
      }
      continue;
    }
  }
  return success();
}

namespace {

/// Checks that no two buffers recorded by --ratrain-assign-buffers share
/// addresses while both are live.
LogicalResult checkBufferOverlap(StageBufferAnalysis &buffers) {
  StageOp stage = buffers.getStage();
  FailureOr<bool> present = buffers.readAssigned();
  if (failed(present))
    return failure();
  if (!*present)
    return success();
  SmallVector<unsigned> order;
  for (auto [index, buffer] : llvm::enumerate(buffers.getBuffers()))
    if (buffer.bytes > 0)
      order.push_back(index);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return buffers.getBuffer(a).start < buffers.getBuffer(b).start;
  });
  // Sweep over start positions with the buffers still live.
  SmallVector<unsigned> active;
  for (unsigned index : order) {
    const StageBuffer &buffer = buffers.getBuffer(index);
    llvm::erase_if(active, [&](unsigned other) {
      return buffers.getBuffer(other).end < buffer.start;
    });
    for (unsigned other : active) {
      const StageBuffer &o = buffers.getBuffer(other);
      if (o.offset < buffer.offset + buffer.bytes &&
          buffer.offset < o.offset + o.bytes) {
        int64_t at = std::max(o.start, buffer.start);
        InFlightDiagnostic diag =
            stage.emitOpError("overlapping live buffers: ")
            << o.describe() << " at [" << o.offset << ", " << o.offset + o.bytes
            << ") and " << buffer.describe() << " at [" << buffer.offset << ", "
            << buffer.offset + buffer.bytes << ") are both live at position "
            << at;
        if (at >= 0)
          diag.attachNote(buffers.getOp(at)->getLoc()) << "both live here";
        return diag;
      }
    }
    active.push_back(index);
  }
  return success();
}

/// "send activation mb(2) to(1)" (and " chunk(c)" when it names one): a
/// transfer as the IR spells it.
std::string describeTransfer(Operation *op) {
  auto transfer = cast<TransferOpInterface>(op);
  bool send = isa<SendOp>(op);
  std::string text = (send ? "send " : "recv ") +
                     stringifyPayload(transfer.getPayload()).str() + " mb(" +
                     std::to_string(transfer.getMicroBatch()) + ")" +
                     (send ? " to(" : " from(") +
                     std::to_string(transfer.getPeer()) + ")";
  if (auto chunk = op->getAttrOfType<IntegerAttr>("chunk"))
    text += " chunk(" + std::to_string(chunk.getInt()) + ")";
  return text;
}

/// Checks that no one-sided put can land in a buffer its receiver still uses:
/// every buffer that shares addresses with the receive's must be dead over
/// the window in which the put may land (PutLandingAnalysis), and a window
/// that reaches into the previous step must not reach that step's consumer of
/// the same receive. `buffers` are the stages' analyses with the recorded
/// offsets read back, in pipeline.getStages() order (before assign-buffers
/// every size is 0 and nothing is checked).
LogicalResult checkPutLandings(PipelineOp pipeline,
                               ArrayRef<const StageBufferAnalysis *> buffers) {
  PutLandingAnalysis landings(pipeline, buffers);
  if (!landings.isValid())
    return success(); // the deadlock check reports why
  SmallVector<StageOp, 8> stages = pipeline.getStages();
  for (const PutLanding &landing : landings.getLandings()) {
    unsigned index = 0;
    while (stages[index].getStage() != uint64_t(landing.receiver))
      ++index;
    const StageBufferAnalysis &b = *buffers[index];
    SendOp send = landing.send;
    RecvOp recv = landing.recv;
    std::optional<unsigned> message = b.lookupTransferBuffer(recv);
    if (!message)
      continue;
    const StageBuffer &target = b.getBuffer(*message);
    if (target.bytes == 0)
      continue;
    auto report = [&](const StageBuffer &other, int64_t at,
                      bool previousStep) -> LogicalResult {
      InFlightDiagnostic diag =
          send.emitOpError("one-sided put '")
          << describeTransfer(send) << "' of stage "
          << send->getParentOfType<StageOp>().getStage()
          << " may land in stage " << landing.receiver << "'s buffer of '"
          << describeTransfer(recv) << "' at [" << target.offset << ", "
          << target.offset + target.bytes << ") while " << other.describe()
          << " at [" << other.offset << ", " << other.offset + other.bytes
          << ") is live there, at position " << at
          << (previousStep ? " of the previous step" : "");
      if (at >= 0)
        diag.attachNote(b.getOp(at)->getLoc())
            << "still in use here (" << b.describeOp(at) << ")";
      diag.attachNote(recv->getLoc())
          << "the put may land from position "
          << (landing.fromPreviousStep ? *landing.fromPreviousStep
                                       : landing.from)
          << (landing.fromPreviousStep ? " of the previous step" : "")
          << " until its consumer at position " << landing.consumer;
      return diag;
    };
    int64_t stepEnd = b.getStepEnd();
    if (landing.fromPreviousStep && *landing.fromPreviousStep <= target.end)
      return report(target, std::max(*landing.fromPreviousStep, target.start),
                    true);
    for (const StageBuffer &other : b.getBuffers()) {
      if (&other == &target || other.bytes == 0 ||
          other.offset >= target.offset + target.bytes ||
          target.offset >= other.offset + other.bytes)
        continue;
      int64_t lo = landing.fromPreviousStep ? -1 : landing.from;
      if (other.start <= landing.consumer && lo <= other.end)
        return report(other, std::max(other.start, lo), false);
      if (landing.fromPreviousStep && other.end >= *landing.fromPreviousStep &&
          other.start <= stepEnd)
        return report(other, std::max(other.start, *landing.fromPreviousStep),
                      true);
    }
  }
  return success();
}

/// Runs all stages' sends and receives together: a stage advances until it
/// reaches a recv whose message has not been sent; sends are buffered.
/// Messages match by (sender, receiver, payload, micro-batch, receiving
/// virtual stage).
LogicalResult checkDeadlock(PipelineOp pipeline) {
  SmallVector<StageOp, 8> stages = pipeline.getStages();
  SmallVector<SmallVector<Operation *>> transfers(stages.size());
  for (auto [index, stage] : llvm::enumerate(stages))
    for (Operation &op : stage.getBody().front())
      if (isa<SendOp, RecvOp>(op))
        transfers[index].push_back(&op);

  using Key = std::tuple<int64_t, int64_t, int, int64_t, int64_t>;
  std::map<Key, SmallVector<Operation *, 1>> inFlight;
  SmallVector<size_t> pc(stages.size(), 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (auto [index, stage] : llvm::enumerate(stages)) {
      int64_t self = stage.getStage();
      while (pc[index] < transfers[index].size()) {
        Operation *op = transfers[index][pc[index]];
        if (auto send = dyn_cast<SendOp>(op)) {
          inFlight[{self, int64_t(send.getPeer()), int(send.getPayload()),
                    int64_t(send.getMicroBatch()), send.getPeerVirtualStage()}]
              .push_back(op);
        } else {
          auto recv = cast<RecvOp>(op);
          auto it = inFlight.find(
              {int64_t(recv.getPeer()), self, int(recv.getPayload()),
               int64_t(recv.getMicroBatch()), recv.getVirtualStage()});
          if (it == inFlight.end() || it->second.empty())
            break;
          it->second.erase(it->second.begin());
        }
        ++pc[index];
        progress = true;
      }
    }
  }

  SmallVector<Operation *> stuck;
  for (auto [index, list] : llvm::enumerate(transfers))
    if (pc[index] < list.size())
      stuck.push_back(list[pc[index]]);
  if (!stuck.empty()) {
    InFlightDiagnostic diag = pipeline.emitOpError("deadlocks: ")
                              << stuck.size()
                              << " stage(s) block on a recv whose send is "
                                 "never issued:";
    for (Operation *op : stuck) {
      diag << " stage " << op->getParentOfType<StageOp>().getStage() << " at '"
           << describeTransfer(op) << "'";
      diag.attachNote(op->getLoc()) << "blocks here";
    }
    return diag;
  }
  for (auto &[key, sends] : inFlight)
    if (!sends.empty()) {
      auto send = cast<SendOp>(sends.front());
      return send.emitOpError("sends ")
             << stringifyPayload(send.getPayload()) << " mb("
             << send.getMicroBatch() << ") to stage " << send.getPeer()
             << ", which never receives it";
    }
  return success();
}

struct VerifySchedulePass
    : public ratrain::impl::RATrainVerifyScheduleBase<VerifySchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool ok = true;
    for (PipelineOp pipeline : module.getOps<PipelineOp>()) {
      // FP32 models keep no separate master: only Adam m, v are offloaded.
      PlanAttr plan = pipeline.getPlan();
      bool lowPrecision = true;
      if (FailureOr<ModelOp> model = pipeline.lookupModel(); succeeded(model))
        lowPrecision = getDTypeBytes(getModelConfig(*model).dtype) < 4;
      else
        ok = false;
      bool offloadsOptState = plan.getOffload() != Offload::None;
      bool offloadsMaster =
          plan.getOffload() == Offload::Master && lowPrecision;
      SmallVector<const StageBufferAnalysis *> buffers;
      for (StageOp stage : pipeline.getStages()) {
        auto &stageBuffers = getChildAnalysis<StageBufferAnalysis>(stage);
        buffers.push_back(&stageBuffers);
        if (failed(StageChecker(stage, plan, offloadsMaster, offloadsOptState)
                       .run()))
          ok = false;
        else if (failed(checkBufferOverlap(stageBuffers)))
          ok = false;
      }
      if (ok && failed(checkDeadlock(pipeline)))
        ok = false;
      if (ok && failed(checkPutLandings(pipeline, buffers)))
        ok = false;
    }
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
