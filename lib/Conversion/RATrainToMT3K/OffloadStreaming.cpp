//===- OffloadStreaming.cpp - Offloaded and streamed optimizer states -----===//
//
// States a plan keeps in the offload tier between steps: reload/offload of
// whole states, chunked streaming through the two halves of a window smaller
// than the state, and the prologue that initializes them in the tier.
//
//===----------------------------------------------------------------------===//

#include "StageLowering.h"

#include <cmath>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::lowering;
namespace mt = ratrain::mt3k;

//===----------------------------------------------------------------------===//
// Offloaded states
//===----------------------------------------------------------------------===//

/// The layer and role ("master" or "adam") of an offloadable state type.
static std::optional<std::pair<int64_t, StringRef>> offloadedRole(Type type) {
  if (auto master = dyn_cast<MasterType>(type))
    return std::make_pair(master.getLayer(), StringRef("master"));
  if (auto opt = dyn_cast<OptStateType>(type))
    return std::make_pair(opt.getLayer(), StringRef("adam"));
  return std::nullopt;
}

LogicalResult StageLowering::planOffloads() {
  // The write-backs name the tier of each offloaded state.
  std::map<std::string, mt::StorageTier> tiers;
  for (Operation &op : stage.getBody().front()) {
    auto offload = dyn_cast<OffloadOp>(op);
    if (!offload)
      continue;
    // Offloaded activations (lowerActivationOffload) need nothing planned.
    if (isa<ActivationType>(offload.getState().getType())) {
      if (!offload.getState().getDefiningOp<ForwardOp>())
        return offload.emitOpError(
            "cannot be lowered: only activations stored by a forward are "
            "offloaded");
      continue;
    }
    auto role = offloadedRole(offload.getState().getType());
    if (!role)
      return offload.emitOpError("cannot be lowered: only master and "
                                 "optimizer states are offloaded, not ")
             << offload.getState().getType();
    tiers[offloadKey(role->first, role->second)] =
        offload.getTier() == StorageTier::Host ? mt::StorageTier::host
                                               : mt::StorageTier::storage;
  }
  for (Operation &op : stage.getBody().front()) {
    auto reload = dyn_cast<ReloadOp>(op);
    if (!reload)
      continue;
    if (auto type = dyn_cast<OffloadedType>(reload.getOffloaded().getType());
        type && isa<ActivationType>(type.getState()))
      continue;
    auto role = offloadedRole(reload.getOffloaded().getType());
    if (!role || !isa<BlockArgument>(reload.getOffloaded()))
      return reload.emitOpError(
          "cannot be lowered: only master and optimizer states that the plan "
          "keeps in the offload tier between steps are reloaded");
    auto [layer, roleName] = *role;
    std::string key = offloadKey(layer, roleName);
    auto tier = tiers.find(key);
    if (tier == tiers.end())
      return reload.emitOpError("cannot be lowered: '")
             << key << "' is reloaded but never written back to the tier";
    auto window = assigned(reload.getPending());
    if (!window)
      return notBufferAssigned();
    int64_t need = offloadedBytes(layer, roleName);
    bool stream = (*window)[1] < need;
    offloaded[key] = {key, tier->second, (*window)[0], (*window)[1], stream};
    if (!stream)
      continue;
    // A window smaller than the state (the machine's offload.chunk_bytes;
    // the planner sizes it as two chunks): the state streams through the
    // window's halves in chunks of whole elements (a multiple of 16, so
    // halves and pieces stay 64-byte aligned); a layer's streamed states
    // share the smallest chunk.
    int64_t perElement = roleName == "adam" ? 8 : 4;
    int64_t chunk = (*window)[1] / 2 / perElement / 16 * 16;
    if (chunk <= 0)
      return reload.emitOpError("cannot be lowered: the window of '")
             << key << "' holds " << (*window)[1]
             << " bytes, too few to stream the state in two chunks of 16 "
                "elements";
    auto [it, inserted] = streamChunk.try_emplace(layer, chunk);
    if (!inserted)
      it->second = std::min(it->second, chunk);
  }
  return success();
}

SmallVector<StageLowering::StatePiece, 2>
StageLowering::chunkPieces(int64_t layer, StringRef role, int64_t start,
                           int64_t count, int64_t half) {
  const OffloadedState &state = offloaded.at(offloadKey(layer, role));
  int64_t n = zero() ? shardElements(layer) : layerParams(layer);
  IntegerType i8 = IntegerType::get(ctx, 8);
  SmallVector<StatePiece, 2> pieces;
  int64_t subs = role == "adam" ? 2 : 1;
  for (int64_t sub = 0; sub < subs; ++sub) {
    Value view = chunkView(layer, role, sub, count, half);
    int64_t tierOffset = 4 * (sub * n + start);
    pieces.push_back({slot(view, 0, {4 * count}, i8),
                      llvm::formatv("{0}@{1}", state.key, tierOffset).str()});
  }
  return pieces;
}

Value StageLowering::chunkView(int64_t layer, StringRef role, int64_t sub,
                               int64_t count, int64_t half) {
  int64_t chunk = streamChunk.lookup(layer);
  int64_t subs = role == "adam" ? 2 : 1;
  int64_t byteOffset = 4 * chunk * (half * subs + sub);
  return slot(offloadWindow(layer, role), byteOffset, {count},
              Float32Type::get(ctx));
}

SmallVector<Value> StageLowering::streamChunkOf(int64_t layer, int64_t start,
                                                int64_t half, bool reload) {
  int64_t n = zero() ? shardElements(layer) : layerParams(layer);
  int64_t count = std::min(streamChunk.lookup(layer), n - start);
  SmallVector<Value> tokens;
  for (StringRef role : {StringRef("master"), StringRef("adam")}) {
    if (!streamed(layer, role))
      continue;
    const OffloadedState &state = offloaded.at(offloadKey(layer, role));
    auto tier = mt::StorageTierAttr::get(ctx, state.tier);
    for (const StatePiece &piece :
         chunkPieces(layer, role, start, count, half)) {
      Value token;
      if (reload) {
        token = mt::ReloadOp::create(b, loc, piece.bytes, tier,
                                     b.getStringAttr(piece.key));
        track(token);
      } else {
        token = mt::OffloadOp::create(b, loc, piece.bytes, tier,
                                      b.getStringAttr(piece.key));
        track(token);
        streamTokens[state.key].push_back(token);
      }
      tokens.push_back(token);
    }
  }
  return tokens;
}

void StageLowering::prologueOffload(Value flat, int64_t bytes,
                                    const OffloadedState &state) {
  Value source = slot(flat, 0, {bytes}, IntegerType::get(ctx, 8));
  auto offload = mt::OffloadOp::create(
      pro, loc, source, mt::StorageTierAttr::get(ctx, state.tier),
      pro.getStringAttr(state.key));
  offload->setAttr(kPrologueAttr, UnitAttr::get(ctx));
  auto wait = mt::WaitOp::create(pro, loc, ValueRange{offload.getToken()});
  wait->setAttr(kPrologueAttr, UnitAttr::get(ctx));
}

Value StageLowering::offloadWindow(int64_t layer, StringRef role) {
  const OffloadedState &state = offloaded.at(offloadKey(layer, role));
  // Named like the state (stateBase), so the update, which reads the state
  // through the reload's wait, uses the same buffer.
  return ddrBase(state.key, state.windowOffset, state.windowBytes);
}

//===----------------------------------------------------------------------===//
// Offloaded activations
//===----------------------------------------------------------------------===//

/// The forward that stored an offloaded activation (through its offload's
/// wait and the reload, for a reload's operand).
ForwardOp ratrain::lowering::storingForward(Value activation) {
  if (auto forward = activation.getDefiningOp<ForwardOp>())
    return forward;
  if (auto wait = activation.getDefiningOp<WaitOp>())
    if (auto offload = wait.getPending().getDefiningOp<OffloadOp>())
      return offload.getState().getDefiningOp<ForwardOp>();
  return ForwardOp();
}

std::string StageLowering::activationKey(ForwardOp forward) {
  return llvm::formatv("act.layer{0}.mb{1}",
                       forward.getActivation().getType().getLayer(),
                       forward.getMicroBatch());
}

mt::StorageTier StageLowering::tierOf(StorageTier tier) {
  return tier == StorageTier::Host ? mt::StorageTier::host
                                   : mt::StorageTier::storage;
}

LogicalResult StageLowering::lowerActivationOffload(OffloadOp op) {
  ForwardOp forward = storingForward(op.getState());
  int64_t layer = forward.getActivation().getType().getLayer();
  auto buffer = assigned(op.getState());
  if (!buffer)
    return notBufferAssigned();
  int64_t bytes = (*buffer)[1];
  Value act = actBase(op.getState(), layer, forward.getMicroBatch());
  Value source = slot(act, 0, {bytes}, IntegerType::get(ctx, 8));
  Value token = mt::OffloadOp::create(
      b, loc, source, mt::StorageTierAttr::get(ctx, tierOf(op.getTier())),
      b.getStringAttr(activationKey(forward)));
  track(token);
  pending[op.getPending()] = {token};
  activationTiers[op.getPending()] = tierOf(op.getTier());
  activationBytes[activationKey(forward)] = bytes;
  return success();
}

LogicalResult StageLowering::lowerActivationReload(ReloadOp op) {
  auto wait = op.getOffloaded().getDefiningOp<WaitOp>();
  ForwardOp forward = storingForward(op.getOffloaded());
  if (!wait || !forward)
    return op.emitOpError("cannot be lowered: the reloaded activation is not "
                          "the waited offload of a forward's");
  std::string key = activationKey(forward);
  int64_t layer = forward.getActivation().getType().getLayer();
  int64_t bytes = activationBytes.lookup(key);
  auto buffer = assigned(op.getPending());
  if (!buffer)
    return notBufferAssigned();
  if ((*buffer)[1] < bytes)
    return op.emitOpError("cannot be lowered: the reload buffer of '")
           << key << "' has " << (*buffer)[1] << " bytes, the offloaded "
           << "activation " << bytes;
  Value dest =
      slot(reloadedActBase(op.getPending(), layer, forward.getMicroBatch()), 0,
           {bytes}, IntegerType::get(ctx, 8));
  Value token = mt::ReloadOp::create(
      b, loc, dest,
      mt::StorageTierAttr::get(ctx, activationTiers.lookup(wait.getPending())),
      b.getStringAttr(key));
  track(token);
  pending[op.getPending()] = {token};
  return success();
}

//===----------------------------------------------------------------------===//
// Offloaded states (continued)
//===----------------------------------------------------------------------===//

void StageLowering::lowerReload(ReloadOp op) {
  auto [layer, role] = *offloadedRole(op.getOffloaded().getType());
  const OffloadedState &state = offloaded.at(offloadKey(layer, role));
  if (state.streamed) {
    // The first chunk into the first half; the update streams the rest.
    SmallVector<Value> tokens;
    int64_t n = zero() ? shardElements(layer) : layerParams(layer);
    auto tier = mt::StorageTierAttr::get(ctx, state.tier);
    for (const StatePiece &piece : chunkPieces(
             layer, role, 0, std::min(streamChunk.lookup(layer), n), 0)) {
      Value token = mt::ReloadOp::create(b, loc, piece.bytes, tier,
                                         b.getStringAttr(piece.key));
      track(token);
      tokens.push_back(token);
    }
    pending[op.getPending()] = tokens;
    return;
  }
  Value window = slot(offloadWindow(layer, role), 0,
                      {offloadedBytes(layer, role)}, IntegerType::get(ctx, 8));
  Value token = mt::ReloadOp::create(b, loc, window,
                                     mt::StorageTierAttr::get(ctx, state.tier),
                                     b.getStringAttr(state.key));
  track(token);
  pending[op.getPending()] = {token};
}

void StageLowering::lowerOffload(OffloadOp op) {
  auto [layer, role] = *offloadedRole(op.getState().getType());
  const OffloadedState &state = offloaded.at(offloadKey(layer, role));
  if (state.streamed) {
    // The update offloaded every chunk; its wait waits the ones in flight.
    pending[op.getPending()] = streamTokens[state.key];
    streamTokens[state.key].clear();
    return;
  }
  Value flat = stateBase(op.getState(), role, layer);
  Value source =
      slot(flat, 0, {offloadedBytes(layer, role)}, IntegerType::get(ctx, 8));
  Value token = mt::OffloadOp::create(b, loc, source,
                                      mt::StorageTierAttr::get(ctx, state.tier),
                                      b.getStringAttr(state.key));
  track(token);
  pending[op.getPending()] = {token};
}

void StageLowering::prologueStream(int64_t layer, StringRef role,
                                   ArrayRef<ParamTensor> tensors) {
  const OffloadedState &state = offloaded.at(offloadKey(layer, role));
  IntegerType i64 = IntegerType::get(ctx, 64);
  int64_t n = zero() ? shardElements(layer) : layerParams(layer);
  int64_t chunk = streamChunk.lookup(layer);
  bool adam = role == "adam";
  auto tier = mt::StorageTierAttr::get(ctx, state.tier);
  // Each init names the tier copy of its piece (the key without '@' and the
  // byte offset in the unchunked layout, where a tensor's pieces are
  // contiguous): ratrain.offload_bytes is the size of the whole tensor (or
  // shard) there, and an init of a later piece (ratrain.offload_piece > 0)
  // is not registered again.
  auto mark = [&](mt::InitParamOp op, int64_t byteOffset, int64_t piece,
                  int64_t bytes) {
    op.setOffloadKeyAttr(pro.getStringAttr(state.key));
    op.setOffloadOffsetAttr(IntegerAttr::get(i64, byteOffset));
    op.setOffloadPieceAttr(IntegerAttr::get(i64, piece));
    op.setOffloadBytesAttr(IntegerAttr::get(i64, bytes));
  };
  auto create = [&](mt::InitKind kind, Value dest, StringRef param,
                    int64_t elementOffset) {
    return mt::InitParamOp::create(
        pro, loc, kind, dest, param,
        kind == mt::InitKind::normal ? pro.getF64FloatAttr(options.initStd)
                                     : FloatAttr(),
        elementOffset ? IntegerAttr::get(i64, elementOffset) : IntegerAttr());
  };
  for (int64_t start = 0; start < n; start += chunk) {
    int64_t count = std::min(chunk, n - start);
    for (int64_t sub = 0; sub < (adam ? 2 : 1); ++sub) {
      Value half = chunkView(layer, role, sub, count, 0);
      StringRef suffix = !adam ? "" : sub ? ".exp_avg_sq" : ".exp_avg";
      mt::InitKind zeros = mt::InitKind::zeros;
      if (zero()) {
        // This rank's shard piece [start, start + count): the emitter adds
        // r * n + ratrain.dp_shard_offset to the element offsets.
        std::string prefix = layerPrefix(layer);
        auto op = create(adam ? zeros : mt::InitKind::normal, half,
                         prefix + suffix.str(), 0);
        op.setDpShardAttr(IntegerAttr::get(i64, n));
        op.setDpShardOffsetAttr(IntegerAttr::get(i64, start));
        if (!adam)
          op.setDpShardTensorsAttr(shardTensorsAttr(tensors));
        mark(op, 4 * (sub * n + start), start, 4 * n);
        continue;
      }
      for (const ParamTensor &tensor : tensors) {
        int64_t lo = std::max(start, tensor.offset);
        int64_t hi = std::min(start + count, tensor.offset + tensor.numel());
        if (lo >= hi)
          continue;
        Value dest =
            slot(half, 4 * (lo - start), {hi - lo}, Float32Type::get(ctx));
        auto op = create(adam ? zeros : toInitKind(tensor.init), dest,
                         tensor.name + suffix.str(), lo - tensor.offset);
        mark(op, 4 * (sub * n + tensor.offset), lo - tensor.offset,
             4 * tensor.numel());
      }
    }
    for (const StatePiece &piece : chunkPieces(layer, role, start, count, 0)) {
      auto offload = mt::OffloadOp::create(pro, loc, piece.bytes, tier,
                                           pro.getStringAttr(piece.key));
      offload->setAttr(kPrologueAttr, UnitAttr::get(ctx));
      auto wait = mt::WaitOp::create(pro, loc, ValueRange{offload.getToken()});
      wait->setAttr(kPrologueAttr, UnitAttr::get(ctx));
    }
  }
}
