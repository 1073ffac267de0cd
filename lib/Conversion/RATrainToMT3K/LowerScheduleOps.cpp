//===- LowerScheduleOps.cpp - ratrain schedule ops to mt3k ----------------===//
//
// One lowering per scheduled ratrain op (forward, recompute, backward, sync,
// update, send/recv) and the walk over a stage program.
//
//===----------------------------------------------------------------------===//

#include "StageLowering.h"

#include "ratrain/Analysis/AsyncHazards.h"
#include "ratrain/MT3K/Passes.h"

#include <cmath>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::lowering;
namespace mt = ratrain::mt3k;

//===----------------------------------------------------------------------===//
// ratrain ops
//===----------------------------------------------------------------------===//

/// The compute kind under which the runtime's trace records the work of a
/// schedule op; none for ops that only issue or wait for transfers.
static std::optional<mt::TracePhase> getTracePhase(Operation *op) {
  if (isa<ForwardOp>(op))
    return mt::TracePhase::forward;
  if (isa<RecomputeOp>(op))
    return mt::TracePhase::recompute;
  if (isa<BackwardOp, BackwardInputOp, BackwardWeightOp>(op))
    return mt::TracePhase::backward;
  if (isa<UpdateOp>(op))
    return mt::TracePhase::update;
  if (isa<GradNormOp>(op))
    return mt::TracePhase::other;
  return std::nullopt;
}

/// Whether an async value moves a stored activation.
static bool isActivationTransfer(Value pending) {
  return isa<ActivationType>(cast<AsyncType>(pending.getType()).getValue());
}

LogicalResult StageLowering::lowerForward(ForwardOp op) {
  int64_t layer = op.getView().getType().getLayer();
  int64_t mb = op.getMicroBatch();
  bool outlined = layerOp(layer).getKind() == LayerKind::Decoder &&
                  beginOutline("decoder_forward");
  LayerWeights w = weights(computeView(op.getView(), layer), layer, elem);
  Value act = actBase(op.getActivation(), layer, mb);
  switch (layerOp(layer).getKind()) {
  case LayerKind::Embedding: {
    Value ids = slot(act, 0, {dims.tokens}, IntegerType::get(ctx, 32));
    mt::LoadBatchOp::create(b, loc, mt::BatchField::inputs, ids, mb);
    Value out = flowOutput(layer, mb);
    elementwise(mt::ElementwiseKind::embedding,
                {w.get("embed_tokens.weight"), ids}, {out});
    lowerTiedEmbeddingForward(w.get("embed_tokens.weight"));
    return success();
  }
  case LayerKind::Head:
    if (tied) {
      lowerTiedHeadForward();
      addTiedHead(w, nullptr);
    }
    emitHeadForward(w, act, mb, flowInput(layer, mb));
    return success();
  case LayerKind::Decoder:
    break;
  }
  bool inputOnly =
      op.getActivation().getType().getKind() == ActivationKind::Input;
  DecoderActs a;
  if (inputOnly) {
    // Only x is kept; the rest of the forward runs in the scratch area,
    // the SwiGLU output in scratch.w (scratch.forward holds no hact).
    Value rest = ddrBase("scratch.forward", fwdFullOff,
                         regions.lookup("scratch.forward").second);
    a = decoderActs(act, rest, 0, /*hactStored=*/false);
  } else {
    a = decoderActs(act, act, 0, /*hactStored=*/true);
  }
  emitDecoderForward(w, a, flowInput(layer, mb), flowOutput(layer, mb));
  if (outlined)
    endOutline();
  return success();
}

LogicalResult StageLowering::lowerRecompute(RecomputeOp op) {
  int64_t layer = op.getView().getType().getLayer();
  int64_t mb = op.getMicroBatch();
  bool outlined = beginOutline("decoder_recompute");
  LayerWeights w = weights(computeView(op.getView(), layer), layer, elem);
  Value input = actBase(op.getInput(), layer, mb);
  Value recovered = actBase(op.getActivation(), layer, mb);
  DecoderActs a = decoderActs(recovered, recovered, 0, /*hactStored=*/true);
  Value storedX = slot(input, 0, {dims.tokens, dims.hidden}, elem);
  emitDecoderForward(w, a, storedX, Value());
  if (outlined)
    endOutline();
  return success();
}

LogicalResult StageLowering::lowerBackward(BackwardOp op) {
  int64_t layer = op.getView().getType().getLayer();
  int64_t mb = op.getMicroBatch();
  bool acc = op.getAcc() != nullptr;
  bool outlined = layerOp(layer).getKind() == LayerKind::Decoder &&
                  beginOutline("decoder_backward");
  LayerWeights w = weights(computeView(op.getView(), layer), layer, elem);
  Value gradFlatBuffer = gradFlat(op.getGrad(), layer);
  LayerWeights g = weights(gradFlatBuffer, layer, elem);
  Value act = actBase(op.getActivation(), layer, mb);
  switch (layerOp(layer).getKind()) {
  case LayerKind::Embedding: {
    Value ids = slot(act, 0, {dims.tokens}, IntegerType::get(ctx, 32));
    Value table = g.get("embed_tokens.weight");
    // The scatter-add always accumulates: the first micro-batch zeroes.
    if (!acc) {
      mt::FillOp::create(b, loc, table, APFloat(0.0));
    }
    elementwise(mt::ElementwiseKind::embedding_bwd, {ids, gradInput(layer, mb)},
                {table});
    return success();
  }
  case LayerKind::Head:
    if (tied)
      addTiedHead(w, &g);
    emitHeadBackward(w, g, act, gradOutput(layer, mb), acc);
    return success();
  case LayerKind::Decoder:
    break;
  }
  DecoderActs a = decoderActs(act, act, 0, /*hactStored=*/true);
  emitDecoderBackward(w, g, a, gradInput(layer, mb), gradOutput(layer, mb),
                      acc);
  if (outlined)
    endOutline();
  return success();
}

LogicalResult StageLowering::lowerBackwardInput(BackwardInputOp op) {
  int64_t layer = op.getView().getType().getLayer();
  int64_t mb = op.getMicroBatch();
  bool outlined = layerOp(layer).getKind() == LayerKind::Decoder &&
                  beginOutline("decoder_backward_input");
  LayerWeights w = weights(computeView(op.getView(), layer), layer, elem);
  Value act = actBase(op.getActivation(), layer, mb);
  Value deferred = deferredBase(op.getDeferred(), layer, mb);
  // The embedding's and the head's deferred buffer is one [T, h] tensor.
  auto boundary = [&] {
    return slot(deferred, 0, {dims.tokens, dims.hidden}, elem);
  };
  switch (layerOp(layer).getKind()) {
  case LayerKind::Embedding:
    // The scatter-add waits for the weight part: keep the output gradient
    // (the stream it arrives in is overwritten by the next backward).
    copy(gradInput(layer, mb), boundary());
    return success();
  case LayerKind::Head:
    if (tied)
      addTiedHead(w, nullptr);
    emitHeadBackwardInput(w, act, boundary(), gradOutput(layer, mb));
    return success();
  case LayerKind::Decoder:
    break;
  }
  DecoderActs a = decoderActs(act, act, 0, /*hactStored=*/true);
  emitDecoderBackwardInput(w, a, decoderDeferred(deferred),
                           gradInput(layer, mb), gradOutput(layer, mb));
  if (outlined)
    endOutline();
  return success();
}

LogicalResult StageLowering::lowerBackwardWeight(BackwardWeightOp op) {
  int64_t layer = op.getView().getType().getLayer();
  int64_t mb = op.getMicroBatch();
  bool acc = op.getAcc() != nullptr;
  bool outlined = layerOp(layer).getKind() == LayerKind::Decoder &&
                  beginOutline("decoder_backward_weight");
  LayerWeights w = weights(computeView(op.getView(), layer), layer, elem);
  LayerWeights g = weights(gradFlat(op.getGrad(), layer), layer, elem);
  Value act = actBase(op.getActivation(), layer, mb);
  Value deferred = deferredBase(op.getDeferred(), layer, mb);
  // The embedding's and the head's deferred buffer is one [T, h] tensor.
  auto boundary = [&] {
    return slot(deferred, 0, {dims.tokens, dims.hidden}, elem);
  };
  switch (layerOp(layer).getKind()) {
  case LayerKind::Embedding: {
    Value ids = slot(act, 0, {dims.tokens}, IntegerType::get(ctx, 32));
    Value table = g.get("embed_tokens.weight");
    // As the fused backward: the first micro-batch zeroes, then the
    // scatter-add of the output gradient the input part kept.
    if (!acc)
      mt::FillOp::create(b, loc, table, APFloat(0.0));
    elementwise(mt::ElementwiseKind::embedding_bwd, {ids, boundary()}, {table});
    return success();
  }
  case LayerKind::Head:
    if (tied)
      addTiedHead(w, &g);
    emitHeadBackwardWeight(w, g, act, boundary(), acc);
    return success();
  case LayerKind::Decoder:
    break;
  }
  DecoderActs a = decoderActs(act, act, 0, /*hactStored=*/true);
  emitDecoderBackwardWeight(w, g, a, decoderDeferred(deferred), acc);
  if (outlined)
    endOutline();
  return success();
}

mt::CollectiveAlgorithm
StageLowering::algorithm(SyncHierarchy hierarchy) const {
  switch (syncAlgorithm(machine.network.collective,
                        hierarchy == SyncHierarchy::Hierarchical)) {
  case CollectiveAlgorithm::Hierarchical:
    return mt::CollectiveAlgorithm::hierarchical;
  case CollectiveAlgorithm::Tree:
    return mt::CollectiveAlgorithm::tree;
  case CollectiveAlgorithm::Ring:
    return mt::CollectiveAlgorithm::ring;
  }
  llvm_unreachable("unknown collective algorithm");
}

LogicalResult StageLowering::lowerSync(SyncOp op) {
  // The whole data-parallel group, or under partitioning the part of it
  // the sync names (docs/schedule.md, "Partitioning").
  auto dp = FlatSymbolRefAttr::get(
      ctx, op.getScope() ? partitionGroupName(*op.getScope(), *op.getLevel())
                         : std::string("dp"));
  auto alg =
      mt::CollectiveAlgorithmAttr::get(ctx, algorithm(op.getHierarchy()));
  // A quantized sync keeps its wire type on the collective (ZeRO++ qwZ /
  // qgZ); the verifier allowed it on view all-gathers and gradient
  // reduce-scatters only.
  mt::WireTypeAttr wire;
  if (std::optional<WireType> w = op.getWire())
    wire = mt::WireTypeAttr::get(
        ctx, *w == WireType::Int4 ? mt::WireType::int4 : mt::WireType::int8);
  Type stateType = op.getState().getType();
  Value token;
  if (auto grad = dyn_cast<GradType>(stateType)) {
    int64_t layer = grad.getLayer();
    // (A reduce-scatter across a level reads the level's partition.)
    Value full = op.getScope() == SyncScope::Across
                     ? Value()
                     : gradFlat(op.getState(), layer);
    if (!zero() && wire)
      return op.emitOpError("a quantized reduce_scatter needs sharded "
                            "gradients (ZeRO >= 1); without ZeRO the "
                            "gradient sync is an all-reduce");
    if (!zero()) {
      token = mt::AllReduceOp::create(
          b, loc, mt::ReduceKindAttr::get(ctx, mt::ReduceKind::avg), full, full,
          dp, alg);
      track(token);
    } else {
      // ZeRO-1: the optimizer only needs this rank's shard of the averaged
      // gradient, so the all-reduce is carried out as a reduce-scatter.
      // ZeRO-2: the shard lands in the buffer of the sync's wait.
      // Partitioned: a reduce-scatter inside a level that leaves a ready
      // gradient writes the level's partition (the buffer of its wait); the
      // one across the level reads it. Both average: the mean over the
      // inside members, then over the level's groups, is the mean over the
      // whole group.
      auto result =
          cast<GradType>(cast<AsyncType>(op.getPending().getType()).getValue());
      bool partial = op.getScope() == SyncScope::Inside &&
                     result.getPhase() == GradPhase::Ready;
      Value source = full;
      if (op.getScope() == SyncScope::Across)
        source = slot(
            stateBase(op.getState(), "grad_partition", layer), 0,
            {shardElements(layer) * static_cast<int64_t>(*op.getMembers())},
            elem);
      Value dest;
      if (partial) {
        WaitOp wait;
        for (Operation *user : op.getPending().getUsers())
          if ((wait = dyn_cast<WaitOp>(user)))
            break;
        if (!wait)
          return op.emitOpError("a reduce-scatter inside a level needs its "
                                "wait (the partition's buffer)");
        dest = slot(stateBase(wait.getValue(), "grad_partition", layer), 0,
                    {shardElements(layer) * plan_.getDp() /
                     static_cast<int64_t>(*op.getMembers())},
                    elem);
      } else {
        dest = gradShard(layer);
      }
      // ZeRO-1 on a ring: the last reduction is left to the update, which
      // reads the rank's own block of the full gradient (still held: the
      // full gradient lives until the update) next to the other members'
      // sum (docs/lowering.md, "The average in the update").
      bool leaveOwn = !partial && !op.getScope() && !wire &&
                      averagesInUpdate(alg.getValue());
      token = mt::ReduceScatterOp::create(
          b, loc, mt::ReduceKindAttr::get(ctx, mt::ReduceKind::avg), source,
          dest, dp, alg, wire, leaveOwn ? b.getUnitAttr() : UnitAttr());
      if (leaveOwn)
        ownGradient[layer] =
            groupSlot(source, "dp", {shardElements(layer)}, elem);
      track(token);
    }
  } else if (auto view = dyn_cast<ViewType>(stateType)) {
    int64_t layer = view.getLayer();
    // With the default sharding policy the view shard is the rank's block
    // of the view (viewShardInPlace): a quantized or partitioned gather
    // would decode into it too, over an FP32 model's master shard.
    if (viewShardInPlace() && (wire || op.getScope()))
      return op.emitOpError("gathers the view ")
             << (wire ? "on a quantized wire" : "inside a partition")
             << ", but the plan's sharding policy is the default (no "
                "weight_wire, no weight_partition), under which the view "
                "shard is the rank's block of the view itself; give the plan "
                "the same policy";
    // ZeRO-1/2 gather in place into the view; ZeRO-3 from the sharded view
    // into the buffer of the gathered view. Partitioned ZeRO-3: a gather
    // across a level (with more than one member inside it) fills the
    // secondary partition, one inside the level reads it.
    bool toSecondary = zero3() && op.getScope() == SyncScope::Across &&
                       *op.getMembers() < plan_.getDp();
    bool fromSecondary = zero3() && !isa<BlockArgument>(op.getState());
    int64_t n = shardElements(layer);
    Value full;
    if (toSecondary)
      full = slot(stateBase(op.getPending(), "secondary_view", layer), 0,
                  {n * static_cast<int64_t>(*op.getMembers())}, elem);
    else
      full = slot(zero3() ? stateBase(op.getPending(), "gathered_view", layer)
                          : stateBase(op.getState(), "view", layer),
                  0, {layerParams(layer)}, elem);
    Value shard = viewShard(layer);
    if (fromSecondary)
      shard = slot(
          stateBase(op.getState(), "secondary_view", layer), 0,
          {n * (plan_.getDp() / static_cast<int64_t>(*op.getMembers()))}, elem);
    token = mt::AllGatherOp::create(b, loc, shard, full, dp, alg, wire);
    track(token);
  } else if (auto master = dyn_cast<MasterType>(stateType);
             master && op.getPeriod()) {
    // Partial synchronization: the layer's fp32 masters (the view itself
    // of an F32 model), averaged in place in the steps of its phase.
    int64_t layer = master.getLayer();
    if (zero())
      return op.emitOpError("partial synchronization averages whole masters; "
                            "the plan shards them (zero = ")
             << plan_.getZero() << ")";
    Value flat = isF32Model()
                     ? stateBase(stage.getViewArg(layer), "view", layer)
                     : stateBase(stage.getMasterArg(layer), "master", layer);
    Value masters = slot(flat, 0, {layerParams(layer)}, Float32Type::get(ctx));
    token = mt::AllReduceOp::create(
        b, loc, mt::ReduceKindAttr::get(ctx, mt::ReduceKind::avg), masters,
        masters, dp, alg, op.getPeriodAttr(), op.getPhaseAttr());
    track(token);
  } else {
    return op.emitOpError("cannot lower a sync of ") << stateType;
  }
  pending[op.getPending()].push_back(token);
  return success();
}

bool StageLowering::averagesInUpdate(mt::CollectiveAlgorithm algorithm) const {
  // ZeRO-2 releases the full gradient at the sync's wait, and clipping
  // takes the norm of the averaged shards before the update; the kernels
  // average fp32 and bf16 gradients (ratrain::averagesInUpdate).
  return options.averageInUpdate &&
         ratrain::averagesInUpdate(plan_, toDType(elem),
                                   algorithm == mt::CollectiveAlgorithm::ring);
}

LogicalResult StageLowering::lowerUpdate(UpdateOp op) {
  int64_t layer = op.getMaster().getType().getLayer();
  int64_t n = zero() ? shardElements(layer) : layerParams(layer);
  Type f32 = Float32Type::get(ctx);
  // Gradient (this rank's shard with ZeRO), master (the view itself for
  // FP32 models), Adam m and v, and where the refreshed view goes.
  Value grad = zero() ? gradShard(layer) : gradFlat(op.getGrad(), layer);
  Value viewFlat = stateBase(stage.getViewArg(layer), "view", layer);
  Value master;
  if (zero() && isF32Model())
    master = masterShard(layer);
  else if (isF32Model())
    master = slot(viewFlat, 0, {n}, f32);
  else if (!streamed(layer, "master"))
    master = slot(stateBase(op.getMaster(), "master", layer), 0, {n}, f32);
  Value m, v;
  if (!streamed(layer, "adam")) {
    Value opt = stateBase(op.getOptState(), "adam", layer);
    m = slot(opt, 0, {n}, f32);
    v = slot(opt, n * 4, {n}, f32);
  }
  // Under partial synchronization the view is cast from the averaged master
  // after the update (lowerViewPrefetch), so the update's copy is not moved.
  Value viewDest;
  if (updateWritesViewCopy(isF32Model())) {
    if (zero())
      viewDest = viewShard(layer);
    else if (!plan_.syncsPartially())
      viewDest = slot(viewFlat, 0, {n}, elem);
  }

  Value clip = op.getClip() ? gradNormBuffer(op.getClip()) : Value();
  // The rank's own contribution, where the reduce-scatter left it.
  Value own = zero() ? ownGradient.lookup(layer) : Value();
  if (own && clip)
    return op.emitOpError("clips a gradient whose reduce-scatter left its "
                          "average to the update");
  int64_t E = elemBytes();
  // The update runs in chunks of a GSM staging slot, or in one call where
  // it writes the view in place (the DMA runs on the cores).
  int64_t chunk = machine.cluster.dmaOnCores
                      ? std::max<int64_t>(1, n)
                      : std::max<int64_t>(1, gsmSlotBytes / E);
  SmallVector<Value> &tokens = updateTokens[layer];
  tokens.clear();
  // Streamed states (docs/lowering.md, "Streaming in chunks"): elements
  // [s, s + c) at a time, chunk k in half k % 2 of the windows; the reload
  // of chunk k + 1 into the other half overlaps AdamW on chunk k, then
  // chunk k is offloaded back (a reload into a half waits for the half's
  // write-back through the hazard tracking).
  int64_t stream = streamChunk.lookup(layer);
  int64_t streamStep = stream ? stream : n;
  for (int64_t s = 0, k = 0; s < n; s += streamStep, ++k) {
    int64_t c = std::min(streamStep, n - s);
    if (stream && s + streamStep < n)
      streamChunkOf(layer, s + streamStep, (k + 1) % 2, /*reload=*/true);
    Value gc = grad, oc = own, mc = master, m0 = m, v0 = v, dc = viewDest;
    if (stream) {
      gc = slot(grad, s * E, {c}, elem);
      if (own)
        oc = slot(own, s * E, {c}, elem);
      mc = streamed(layer, "master") ? chunkView(layer, "master", 0, c, k % 2)
                                     : slot(master, s * 4, {c}, f32);
      if (streamed(layer, "adam")) {
        m0 = chunkView(layer, "adam", 0, c, k % 2);
        v0 = chunkView(layer, "adam", 1, c, k % 2);
      } else {
        m0 = slot(m, s * 4, {c}, f32);
        v0 = slot(v, s * 4, {c}, f32);
      }
      if (viewDest)
        dc = slot(viewDest, s * E, {c}, elem);
    }
    if (failed(updateRange(gc, oc, mc, m0, v0, dc, c, std::min(chunk, c),
                           tokens, clip, layer, s)))
      return failure();
    if (stream)
      streamChunkOf(layer, s, k % 2, /*reload=*/false);
  }
  return success();
}

LogicalResult StageLowering::lowerViewPrefetch(ViewPrefetchOp op) {
  int64_t layer = op.getMaster().getType().getLayer();
  // The update wrote the view from its master, unless the plan synchronizes
  // partially: then the view is cast from the averaged master (an F32
  // model's view is its master, averaged in place).
  if (!plan_.syncsPartially()) {
    pending[op.getPending()] = updateTokens.lookup(layer);
    return success();
  }
  if (!getAveragingOf(op.getMaster()))
    return op.emitOpError("re-materializes the view of layer ")
           << layer
           << " from a master that is not averaged, but the plan "
              "synchronizes partially (sync_period = "
           << plan_.getSyncPeriod()
           << "): the update left the view to the cast from the averaged "
              "master";
  if (isF32Model())
    return success();
  int64_t n = layerParams(layer);
  Value masters = slot(stateBase(stage.getMasterArg(layer), "master", layer), 0,
                       {n}, Float32Type::get(ctx));
  Value view =
      slot(stateBase(stage.getViewArg(layer), "view", layer), 0, {n}, elem);
  copy(masters, view);
  return success();
}

Value StageLowering::gradNormBuffer(Value norm) {
  std::optional<std::array<int64_t, 2>> buffer = assigned(norm);
  assert(buffer && "the norm has a buffer (--ratrain-assign-buffers)");
  return slot(ddrBase("grad_norm", (*buffer)[0], (*buffer)[1]), 0, {},
              Float32Type::get(ctx));
}

LogicalResult StageLowering::lowerGradNorm(GradNormOp op) {
  if (!assigned(op.getPending()))
    return op.emitOpError("has no buffer; run --ratrain-assign-buffers first");
  Value acc = gradNormBuffer(op.getPending());
  mt::FillOp::create(b, loc, acc, APFloat(0.0));
  for (Value grad : op.getGrads()) {
    int64_t layer = cast<GradType>(grad.getType()).getLayer();
    // The buffer the layer's update reads: with ZeRO this rank's shard of
    // the averaged gradient (the shards of the group partition it); without,
    // the whole averaged gradient, which every replica holds, so each
    // counts 1 / dp of it.
    Value source =
        zero() ? gradShard(layer)
               : slot(gradFlat(grad, layer), 0, {layerParams(layer)}, elem);
    double weight = zero() ? 1.0 : 1.0 / double(plan_.getDp());
    mt::SumSquaresOp::create(b, loc, source, acc, b.getF64FloatAttr(weight));
  }
  Value token = mt::AllReduceOp::create(
      b, loc, mt::ReduceKindAttr::get(ctx, mt::ReduceKind::sum), acc, acc,
      FlatSymbolRefAttr::get(ctx, "world"),
      mt::CollectiveAlgorithmAttr::get(ctx, mt::CollectiveAlgorithm::ring));
  track(token);
  pending[op.getPending()].push_back(token);
  return success();
}

SmallVector<int64_t> StageLowering::noDecayRanges(int64_t layer) const {
  SmallVector<int64_t> ranges;
  if (options.decayed == DecayedParams::All)
    return ranges;
  for (const ParamTensor &tensor : layerTensors(layer)) {
    bool exempt = tensor.shape.size() < 2 ||
                  (options.decayed == DecayedParams::MatricesExceptEmbeddings &&
                   tensor.name == "model.embed_tokens.weight");
    if (!exempt)
      continue;
    int64_t begin = tensor.offset, end = tensor.offset + tensor.numel();
    if (!ranges.empty() && ranges.back() == begin)
      ranges.back() = end; // adjacent exempt tensors: one range
    else
      ranges.append({begin, end});
  }
  return ranges;
}

void StageLowering::setNoDecay(mt::AdamWOp adam, ArrayRef<int64_t> exempt,
                               int64_t layer, int64_t first, int64_t count) {
  IntegerType i64 = IntegerType::get(ctx, 64);
  if (zero() && plan_.getDp() > 1) {
    adam.setNoDecayAttr(b.getDenseI64ArrayAttr(exempt));
    adam.setFirstElementAttr(IntegerAttr::get(i64, first));
    adam.setShardElementsAttr(IntegerAttr::get(i64, shardElements(layer)));
    return;
  }
  // One replica's program updates known elements: keep the ranges it
  // touches.
  SmallVector<int64_t> touched;
  int64_t covered = 0;
  for (size_t i = 0; i < exempt.size(); i += 2) {
    int64_t begin = std::max(exempt[i], first);
    int64_t end = std::min(exempt[i + 1], first + count);
    if (begin >= end)
      continue;
    touched.append({exempt[i], exempt[i + 1]});
    covered += end - begin;
  }
  if (touched.empty())
    return;
  if (covered == count) {
    adam.setWeightDecayAttr(b.getF64FloatAttr(0.0));
    return;
  }
  adam.setNoDecayAttr(b.getDenseI64ArrayAttr(touched));
  adam.setFirstElementAttr(IntegerAttr::get(i64, first));
}

LogicalResult StageLowering::updateRange(Value grad, Value own, Value master,
                                         Value m, Value v, Value viewDest,
                                         int64_t n, int64_t chunk,
                                         SmallVector<Value> &tokens, Value clip,
                                         int64_t layer, int64_t firstElement) {
  SmallVector<int64_t> exempt =
      options.weightDecay != 0 ? noDecayRanges(layer) : SmallVector<int64_t>();
  Type f32 = Float32Type::get(ctx);
  int64_t E = elemBytes();
  for (int64_t start = 0; start < n; start += chunk) {
    int64_t count = std::min(chunk, n - start);
    Value gi = slot(grad, start * E, {count}, elem);
    Value mi = slot(master, start * 4, {count}, f32);
    Value m1 = slot(m, start * 4, {count}, f32);
    Value v1 = slot(v, start * 4, {count}, f32);
    // The two GSM slots alternate over all updates of the step, so a layer's
    // first chunk does not wait for the previous layer's last DMA. Without
    // a view to refresh (an FP32 model's master is its view) the update
    // writes no copy: its view is the master itself. Where the DMA runs on
    // the compute cores (a CPU host) staging buys no overlap, only a copy
    // on them: the update writes the view in place.
    Value staged = mi, dest;
    if (viewDest) {
      if (!machine.cluster.dmaOnCores)
        staged = slot(gsmSlots[gsmNext++ % 2], 0, {count}, elem);
      dest = slot(viewDest, start * E, {count}, elem);
      if (machine.cluster.dmaOnCores)
        staged = dest;
    }
    auto adam = mt::AdamWOp::create(b, loc, gi, mi, m1, v1, staged, options.lr,
                                    options.beta1, options.beta2, options.eps,
                                    options.weightDecay);
    if (own) {
      adam.getOwnMutable().assign(slot(own, start * E, {count}, elem));
      adam.setMembersAttr(b.getI64IntegerAttr(plan_.getDp()));
    }
    if (clip) {
      adam.getClipMutable().assign(clip);
      adam.setMaxGradNormAttr(b.getF64FloatAttr(plan_.getMaxGradNormValue()));
    }
    if (!exempt.empty())
      setNoDecay(adam, exempt, layer, firstElement + start, count);
    if (!viewDest || staged == dest)
      continue; // the view is the master, or written in place
    Value token =
        mt::DmaOp::create(b, loc, staged, dest, IntegerAttr(), IntegerAttr());
    track(token);
    tokens.push_back(token);
  }
  return success();
}

FailureOr<int64_t> StageLowering::peerReceiveOffset(SendOp send) {
  auto pipeline = stage->getParentOfType<PipelineOp>();
  for (StageOp peer : pipeline.getStages()) {
    if (int64_t(peer.getStage()) != int64_t(send.getPeer()))
      continue;
    for (auto recv : peer.getBody().front().getOps<RecvOp>()) {
      if (recv.getPeer() != uint64_t(stageIndex) ||
          recv.getPayload() != send.getPayload() ||
          recv.getMicroBatch() != send.getMicroBatch() ||
          recv.getVirtualStage() != send.getPeerVirtualStage())
        continue;
      if (!recv.getOneSided())
        return send.emitOpError("is one-sided but its receive in stage ")
               << peer.getStage() << " is not";
      if (std::optional<std::array<int64_t, 2>> buffer = assignedMessage(recv))
        return (*buffer)[0];
      return send.emitOpError("puts into stage ")
             << peer.getStage()
             << "'s receive buffer, which has no assigned offset (run "
                "--ratrain-assign-buffers first)";
    }
  }
  return send.emitOpError("has no matching receive in stage ")
         << send.getPeer();
}

LogicalResult StageLowering::lowerTransfer(Operation *op, bool send) {
  auto transfer = cast<TransferOpInterface>(op);
  Payload payload = transfer.getPayload();
  int64_t mb = transfer.getMicroBatch();
  int64_t peer = transfer.getPeer();
  int64_t chunk = transfer.getVirtualStage();
  int dir = payload == Payload::Gradient ? 1 : 0;
  // The tag names the message between two ranks: its micro-batch and
  // payload, and with interleaving the receiving virtual stage.
  int64_t receiver = send ? transfer.getPeerVirtualStage() : chunk;
  int64_t tag = stage.isInterleaved() ? 2 * (mb * numStages + receiver) + dir
                                      : 2 * mb + dir;
  auto pp = FlatSymbolRefAttr::get(ctx, "pp");
  IntegerType i64 = IntegerType::get(ctx, 64);
  if (send) {
    // A transfer between two virtual stages of this rank: its receive
    // (placed right after) copies the outbox.
    if (peer == stageIndex)
      return success();
    Value buffer = outbox(payload, mb, chunk);
    IntegerAttr putOffset;
    if (transfer.getOneSided()) {
      FailureOr<int64_t> offset = peerReceiveOffset(cast<SendOp>(op));
      if (failed(offset))
        return failure();
      putOffset = IntegerAttr::get(i64, *offset);
    }
    Value token =
        mt::SendOp::create(b, loc, buffer, IntegerAttr::get(i64, peer), pp,
                           IntegerAttr::get(i64, tag), putOffset);
    track(token);
    return success();
  }
  Value buffer = received(payload, mb, chunk);
  if (peer == stageIndex) {
    copy(outbox(payload, mb, transfer.getPeerVirtualStage()), buffer);
    return success();
  }
  auto recv = mt::RecvOp::create(b, loc, buffer, IntegerAttr::get(i64, peer),
                                 pp, IntegerAttr::get(i64, tag));
  recv.setOneSided(transfer.getOneSided());
  Value token = recv.getToken();
  track(token);
  return success();
}

std::optional<int64_t> StageLowering::microBatchOf(Operation &op) {
  if (auto mb = op.getAttrOfType<IntegerAttr>("micro_batch"))
    return mb.getInt();
  Value activation;
  if (auto offload = dyn_cast<OffloadOp>(op))
    activation = offload.getState();
  else if (auto reload = dyn_cast<ReloadOp>(op))
    activation = reload.getOffloaded();
  if (!activation || !isa<ActivationType>(activation.getType()))
    return std::nullopt;
  if (ForwardOp forward = storingForward(activation))
    return forward.getMicroBatch();
  return std::nullopt;
}

LogicalResult StageLowering::guardMicroBatch(Operation &op, Operation *before) {
  std::optional<int64_t> mb = microBatchOf(op);
  if (!mb || *mb < dims.guardedFrom)
    return success();
  // Views and buffers are pure: only the ops with effects are guarded. A
  // collective must run on every member: none may be skipped.
  auto attr = b.getI64IntegerAttr(*mb);
  for (Operation *lowered = before->getNextNode(); lowered;
       lowered = lowered->getNextNode()) {
    if (isa<mt::ViewOp, mt::BufferOp>(lowered))
      continue;
    if (isa<mt::AllReduceOp, mt::ReduceScatterOp, mt::AllGatherOp,
            mt::BroadcastOp, mt::BarrierOp>(lowered))
      return op.emitOpError("lowers to a collective (")
             << lowered->getName()
             << ") that the replicas whose dp share is below micro-batch "
             << *mb << " would skip";
    lowered->setAttr(mt::kMicroBatchGuard, attr);
  }
  return success();
}

LogicalResult StageLowering::lower() {
  loc = stage.getLoc();
  program = mt::ProgramOp::create(moduleBuilder, loc,
                                  llvm::formatv("stage{0}", stageIndex).str(),
                                  stageIndex, programArena);
  if (program.getBody().empty())
    program.getBody().emplaceBlock();
  Block &body = program.getBodyBlock();
  b.setInsertionPointToEnd(&body);
  sentinel = mt::WaitOp::create(b, loc, ValueRange());
  pro.setInsertionPoint(sentinel);
  if (failed(emitPrologue()))
    return failure();
  if (dims.qkvBias) {
    // The ones vector of the bias GEMMs (rewritten every step: a fill is
    // not a prologue op).
    Value ones = scratch("scratch.ones", onesOff, {dims.tokens, 1}, elem);
    mt::FillOp::create(b, loc, ones, APFloat(1.0));
  }

  for (Operation &op : stage.getBody().front()) {
    loc = op.getLoc();
    // The last op before this one's: the ops after it are this op's.
    Operation *before = &body.back();
    // The span of a compute op's work for the runtime's per-op trace, under
    // the simulator's name for it.
    std::optional<mt::TracePhase> phase =
        options.traceSpans ? getTracePhase(&op) : std::nullopt;
    mt::TraceBeginOp span;
    if (phase)
      span = mt::TraceBeginOp::create(b, loc, getTraceLabel(&op), *phase);
    LogicalResult result = success();
    if (auto forward = dyn_cast<ForwardOp>(op))
      result = lowerForward(forward);
    else if (auto recompute = dyn_cast<RecomputeOp>(op))
      result = lowerRecompute(recompute);
    else if (auto backward = dyn_cast<BackwardOp>(op))
      result = lowerBackward(backward);
    else if (auto input = dyn_cast<BackwardInputOp>(op))
      result = lowerBackwardInput(input);
    else if (auto weight = dyn_cast<BackwardWeightOp>(op))
      result = lowerBackwardWeight(weight);
    else if (isa<SendOp>(op))
      result = lowerTransfer(&op, /*send=*/true);
    else if (isa<RecvOp>(op))
      result = lowerTransfer(&op, /*send=*/false);
    else if (auto reload = dyn_cast<ReloadOp>(op)) {
      if (isActivationTransfer(reload.getPending()))
        result = lowerActivationReload(reload);
      else
        lowerReload(reload);
    } else if (auto offload = dyn_cast<OffloadOp>(op)) {
      if (isa<ActivationType>(offload.getState().getType()))
        result = lowerActivationOffload(offload);
      else
        lowerOffload(offload);
    } else if (auto ready = dyn_cast<GradReadyOp>(op)) {
      // The gradient is complete: nothing to run, except the NormHead's
      // Jacobian for the head.
      if (dims.normHead &&
          layerOp(ready.getGrad().getType().getLayer()).getKind() ==
              LayerKind::Head)
        emitNormHeadJacobian(ready);
      // Tied embeddings: the LM head's gradient joins the embedding's.
      lowerTiedGradReady(ready);
    } else if (auto sync = dyn_cast<SyncOp>(op))
      result = lowerSync(sync);
    else if (auto norm = dyn_cast<GradNormOp>(op))
      result = lowerGradNorm(norm);
    else if (auto wait = dyn_cast<WaitOp>(op))
      waitTokens(pending.lookup(wait.getPending()));
    else if (auto update = dyn_cast<UpdateOp>(op)) {
      if (update.getOptimizer() != Optimizer::AdamW)
        return update.emitOpError("only AdamW updates are lowered");
      result = lowerUpdate(update);
    } else if (auto prefetch = dyn_cast<ViewPrefetchOp>(op)) {
      result = lowerViewPrefetch(prefetch);
    } else if (isa<YieldOp>(op)) {
      waitTokens(SmallVector<Value>(inflight));
    } else {
      llvm_unreachable("every ratrain stage op is handled above");
    }
    if (failed(result))
      return failure();
    // An op without work of its own (the embedding's input gradient) has
    // no span, as it has no task in the simulator.
    if (span && span->getNextNode() == nullptr)
      span->erase();
    else if (span)
      mt::TraceEndOp::create(b, loc);
    if (failed(guardMicroBatch(op, before)))
      return failure();
  }
  sentinel->erase();
  // The waits the hazards of the program need, from the ops' declared
  // memory effects (the one hazard model of --mt3k-verify).
  mt::insertMissingWaits(program, mt::AsyncHazardAnalysis(program));
  return success();
}
