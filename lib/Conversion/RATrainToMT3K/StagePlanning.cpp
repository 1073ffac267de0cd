//===- StagePlanning.cpp - Scratch-area plan and program prologue ---------===//
//
// What a stage needs beyond its assigned buffers (the lowering's scratch
// area: streaming buffers, outboxes, ZeRO shards, GSM staging) and the
// program prologue (buffers, parameter initialization, offloaded states).
//
//===----------------------------------------------------------------------===//

#include "StageLowering.h"

#include <cmath>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::lowering;
namespace mt = ratrain::mt3k;

//===----------------------------------------------------------------------===//
// Planning and the prologue
//===----------------------------------------------------------------------===//

LogicalResult StageLowering::plan(const OutboxSlotCounts &outboxSlots) {
  plan_ = pipeline.getPlan();
  layers = model.getLayers();
  numStages = plan_.getNumVirtualStages();
  stageIndex = stage.getStage();
  dtype = getModelConfig(model).dtype;
  // Slots of the lowering's own layouts are 64-byte aligned; the assigned
  // offsets must be multiples of an explicit alignment, or (auto) set it.
  int64_t A = options.alignment > 0 ? options.alignment : 64;
  int64_t E = elemBytes();

  auto arena =
      RATrainDialect::ArenaBytesAttrHelper(stage->getContext()).getAttr(stage);
  StageBufferAnalysis buffers(stage);
  FailureOr<bool> assignedOk = buffers.readAssigned();
  if (failed(assignedOk))
    return failure();
  if (!*assignedOk || !arena ||
      !RATrainDialect::ScratchBuffersAttrHelper(stage->getContext())
           .isAttrPresent(stage))
    return notBufferAssigned();
  arenaBytes = arena.getInt();

  if (failed(planOffloads()))
    return failure();

  // Every buffer offset must honour the machine's alignment: an explicit
  // one is checked; the automatic one is the largest power of two up to 64
  // that divides every assigned offset (assign-buffers packs buffers
  // without padding, so ZeRO shard sizes can leave offsets 8-aligned only).
  offsetAlignment = A;
  for (const StageBuffer &buffer : buffers.getBuffers()) {
    if (buffer.bytes == 0)
      continue;
    if (options.alignment > 0 && buffer.offset % A != 0)
      return stage.emitOpError("stage ")
             << stageIndex << ": " << buffer.describe() << " is at offset "
             << buffer.offset << ", not a multiple of the alignment " << A;
    while (buffer.offset % offsetAlignment != 0)
      offsetAlignment /= 2;
  }

  int64_t T = dims.tokens;
  // The stored activations must hold what the backward reads.
  int64_t smallestDecoderAct = -1;
  for (const StageBuffer &buffer : buffers.getBuffers()) {
    if (buffer.kind != BufferKind::Activation &&
        buffer.kind != BufferKind::Recomputed)
      continue;
    auto kind = cast<ActivationType>(buffer.type).getKind();
    LayerKind layerKind = layerOp(buffer.layer).getKind();
    int64_t need = 0;
    if (layerKind == LayerKind::Embedding)
      need = 4 * T;
    else if (layerKind == LayerKind::Head)
      need = headLayout(dims, E, A).bytes;
    else if (kind == ActivationKind::Input)
      need = T * dims.hidden * E;
    else {
      need = decoderLayout(dims, E, /*available=*/0, A).bytes;
      if (smallestDecoderAct < 0 || buffer.bytes < smallestDecoderAct)
        smallestDecoderAct = buffer.bytes;
    }
    if (buffer.bytes < need)
      return stage.emitOpError("stage ")
             << stageIndex << ": " << buffer.describe() << " has "
             << buffer.bytes << " bytes but the lowering stores " << need
             << " bytes there";
  }
  // The deferred buffers of split backwards must hold what the input part
  // keeps for the weight part.
  deferredLayout = decoderDeferredLayout(layerShape(dims), E, A);
  for (const StageBuffer &buffer : buffers.getBuffers()) {
    if (buffer.kind != BufferKind::Deferred)
      continue;
    int64_t need =
        deferredBytes(layerShape(dims), E,
                      fromIRLayerKind(layerOp(buffer.layer).getKind()), A);
    if (buffer.bytes < need)
      return stage.emitOpError("stage ")
             << stageIndex << ": " << buffer.describe() << " has "
             << buffer.bytes << " bytes but the lowering keeps " << need
             << " bytes there";
  }
  for (const StageBuffer &buffer : buffers.getBuffers())
    if (buffer.kind == BufferKind::GradientShard && buffer.bytes > 0)
      assignedGradShard[buffer.layer] = {buffer.offset, buffer.bytes};
  fullLayout = decoderLayout(
      dims, E, smallestDecoderAct < 0 ? 0 : smallestDecoderAct, A);
  head = headLayout(dims, E, A);

  // The lowering scratch area, appended to the assigned arena.
  SlotAllocator area{A};
  area.size = alignTo(arenaBytes, A);
  // Region sizes from the planner's LoweringScratch and ZeroShardSizes,
  // which computeStageMemory counts (layer temporaries, outgoing messages,
  // ZeRO shards).
  LoweringScratch sizes = LoweringScratch::of(layerShape(dims), E);
  streamOff = region(area, "scratch.stream", sizes.stream);
  if (sizes.ones > 0)
    onesOff = region(area, "scratch.ones", sizes.ones);
  r1Off = region(area, "scratch.r1", sizes.r1);
  r2Off = region(area, "scratch.r2", sizes.r2);
  int64_t wNeed = sizes.w;
  auto scratchAttr =
      RATrainDialect::ScratchBuffersAttrHelper(stage->getContext())
          .getAttr(stage);
  auto workspace = scratchAttr
                       ? scratchAttr.getAs<DenseI64ArrayAttr>("workspace")
                       : DenseI64ArrayAttr();
  if (workspace && workspace.size() == 3 && workspace[2] >= wNeed) {
    // The assigned kernel workspace holds the MLP-backward temporaries.
    wOff = workspace[1];
    regions["scratch.w"] = {wOff, workspace[2]};
  } else {
    wOff = region(area, "scratch.w", wNeed);
  }
  bool anyInput = llvm::any_of(stage.getBody().front(), [](Operation &op) {
    auto forward = dyn_cast<ForwardOp>(op);
    return forward &&
           forward.getActivation().getType().getKind() == ActivationKind::Input;
  });
  if (anyInput)
    fwdFullOff = region(area, "scratch.forward",
                        decoderLayout(dims, E, /*available=*/0, A).bytes);

  // Outgoing pipeline messages: two slots per direction (more when the
  // schedule runs further ahead of a peer), reused round-robin (see
  // docs/lowering.md, "Messages").
  int64_t slotsPerDir[2] = {outboxSlots.lookup({stageIndex, 0}),
                            outboxSlots.lookup({stageIndex, 1})};
  int64_t sends[2] = {0, 0};
  for (Operation &op : stage.getBody().front()) {
    if (auto send = dyn_cast<SendOp>(op)) {
      int dir = send.getPayload() == Payload::Gradient ? 1 : 0;
      outboxSlot[transferKey(send.getPayload(), send.getMicroBatch(),
                             send.getVirtualStage())] =
          sends[dir]++ % std::max<int64_t>(slotsPerDir[dir], 2);
    } else if (auto recv = dyn_cast<RecvOp>(op)) {
      recvOps[transferKey(recv.getPayload(), recv.getMicroBatch(),
                          recv.getVirtualStage())] = &op;
    }
  }
  for (int dir = 0; dir < 2; ++dir)
    for (int64_t k = 0;
         k < std::min(sends[dir], std::max<int64_t>(slotsPerDir[dir], 2)); ++k)
      outboxOff[dir].push_back(region(
          area,
          llvm::formatv("outbox.{0}.{1}", dir ? "gradient" : "activation", k)
              .str(),
          sizes.message));

  // ZeRO: per layer, this rank's gradient shard (the reduce-scatter output;
  // ZeRO-2 schedules assign it a buffer of its own) and view shard (AdamW's
  // output, the all-gather input; an FP32 model's master shard), unless the
  // view shard is the rank's block of the view (viewShardInPlace).
  if (zero())
    for (int64_t layer : stage.getLayers()) {
      ZeroShardSizes shards =
          ZeroShardSizes::of(layerParams(layer), plan_.getDp(), E);
      if (!assignedGradShard.count(layer))
        gradShardOff[layer] =
            region(area, llvm::formatv("zero.grad_shard.layer{0}", layer).str(),
                   shards.gradShard);
      // ZeRO-3: the assigned view is the view shard (and an FP32 model's
      // master shard).
      if (zero3() || viewShardInPlace())
        continue;
      viewShardOff[layer] =
          region(area, llvm::formatv("zero.view_shard.layer{0}", layer).str(),
                 shards.viewShard);
    }
  // NormHead: the normalized LM-head weight and its row statistics, on the
  // stage that holds the head.
  bool hasHead = false;
  for (int64_t layer : stage.getLayers())
    hasHead |= layerOp(layer).getKind() == LayerKind::Head;
  if (dims.normHead && hasHead) {
    normHeadSlots = normHeadLayout(dims, E, A);
    normHeadOff = region(area, "scratch.normhead", normHeadSlots.bytes);
  }
  if (failed(planTiedEmbeddings(area)))
    return failure();
  programArena = alignTo(area.size, A);
  int64_t capacity = stageDdrBytes(machine, plan_, stageIndex);
  if (programArena > capacity)
    return stage.emitOpError("stage ")
           << stageIndex << " needs " << programArena
           << " bytes of DDR once lowered (" << arenaBytes << " assigned + "
           << programArena - arenaBytes
           << " of kernel temporaries and outgoing messages), but a cluster "
              "has "
           << capacity;

  // AdamW's GSM staging slots (none where the DMA runs on the cores: the
  // update writes the view in place).
  if (machine.cluster.dmaOnCores)
    return success();
  gsmSlotBytes = (machine.cluster.gsmBytes / 2) / A * A;
  if (gsmSlotBytes < A)
    return stage.emitOpError("the machine's GSM (")
           << machine.cluster.gsmBytes
           << " bytes) is too small for two staging slots";
  return success();
}

LogicalResult StageLowering::emitPrologue() {
  Type f32 = Float32Type::get(ctx);
  IntegerType i64 = IntegerType::get(ctx, 64);
  for (int64_t i = 0; gsmSlotBytes > 0 && i < 2; ++i)
    gsmSlots.push_back(base(mt::MemorySpace::gsm,
                            llvm::formatv("gsm.staging.{0}", i).str(),
                            i * gsmSlotBytes, gsmSlotBytes));
  // An init of (a piece of) an offloaded state names the tier copy it ends
  // up in (key, byte offset), so the emitter registers that copy for
  // checkpoints.
  auto markOffloaded = [&](mt::InitParamOp op, int64_t layer, StringRef role,
                           int64_t byteOffset) {
    auto it = offloaded.find(offloadKey(layer, role));
    if (it == offloaded.end())
      return;
    op.setOffloadKeyAttr(pro.getStringAttr(it->second.key));
    op.setOffloadOffsetAttr(IntegerAttr::get(i64, byteOffset));
  };
  auto init = [&](mt::InitKind kind, Value dest, StringRef param,
                  std::optional<int64_t> elementOffset = std::nullopt) {
    return mt::InitParamOp::create(
        pro, loc, kind, dest, param,
        kind == mt::InitKind::normal ? pro.getF64FloatAttr(options.initStd)
                                     : FloatAttr(),
        elementOffset ? IntegerAttr::get(i64, *elementOffset) : IntegerAttr());
  };
  for (int64_t layer : stage.getLayers()) {
    SmallVector<ParamTensor> tensors = layerTensors(layer);
    Value view = stateBase(stage.getViewArg(layer), "view", layer);
    // An offloaded state is initialized in its reload window and then
    // offloaded, so the first step's reload finds it in the tier.
    auto stateOf = [&](Value arg, StringRef role) {
      return offloaded.count(offloadKey(layer, role))
                 ? offloadWindow(layer, role)
                 : stateBase(arg, role, layer);
    };
    auto writeBack = [&](Value flat, StringRef role) {
      auto it = offloaded.find(offloadKey(layer, role));
      if (it != offloaded.end())
        prologueOffload(flat, offloadedBytes(layer, role), it->second);
    };
    // The FP32 master of a 16-bit model, whole (not a ZeRO shard), tensor by
    // tensor, then written to the tier when it is offloaded.
    auto initWholeMaster = [&] {
      Value master = stateOf(stage.getMasterArg(layer), "master");
      for (const ParamTensor &tensor : tensors)
        markOffloaded(init(toInitKind(tensor.init),
                           tensorOf(master, tensor, f32), tensor.name),
                      layer, "master", tensor.offset * 4);
      writeBack(master, "master");
    };
    // Streamed states are initialized chunk by chunk (after the view).
    bool streamMaster = streamed(layer, "master");
    bool streamAdam = streamed(layer, "adam");
    Value opt =
        streamAdam ? Value() : stateOf(stage.getOptStateArg(layer), "adam");
    int64_t n = zero() ? shardElements(layer) : layerParams(layer);
    // The view (the master itself for FP32 models), tensor by tensor; under
    // ZeRO-3 this rank's shard of it (an FP32 model's is the master shard,
    // initialized below; a 16-bit view shard is initialized before the
    // master shard, whose init the emitter registers for the layer).
    if (!zero3())
      for (const ParamTensor &tensor : tensors)
        init(toInitKind(tensor.init), tensorOf(view, tensor, elem),
             tensor.name);
    else if (!isF32Model()) {
      auto op = mt::InitParamOp::create(
          pro, loc, mt::InitKind::normal, viewShard(layer), layerPrefix(layer),
          pro.getF64FloatAttr(options.initStd), IntegerAttr());
      op.setDpShardAttr(IntegerAttr::get(i64, n));
      op.setDpShardTensorsAttr(shardTensorsAttr(tensors));
    }
    if (streamMaster)
      prologueStream(layer, "master", tensors);
    if (streamAdam)
      prologueStream(layer, "adam", tensors);
    if (streamAdam) {
      // Only the master stays whole (in its window or its buffer; an FP32
      // model's is its view, or with ZeRO its shard).
      if (streamMaster || (isF32Model() && !zero()))
        continue;
      if (!zero()) {
        initWholeMaster();
        continue;
      }
      Value masterFlat =
          isF32Model() ? Value() : stateOf(stage.getMasterArg(layer), "master");
      auto op = mt::InitParamOp::create(
          pro, loc, mt::InitKind::normal,
          isF32Model() ? masterShard(layer) : slot(masterFlat, 0, {n}, f32),
          layerPrefix(layer), pro.getF64FloatAttr(options.initStd),
          IntegerAttr());
      op.setDpShardAttr(IntegerAttr::get(i64, n));
      op.setDpShardTensorsAttr(shardTensorsAttr(tensors));
      if (masterFlat) {
        markOffloaded(op, layer, "master", 0);
        writeBack(masterFlat, "master");
      }
      continue;
    }
    if (!zero()) {
      if (!isF32Model() && !streamMaster)
        initWholeMaster();
      for (const ParamTensor &tensor : tensors) {
        markOffloaded(init(mt::InitKind::zeros, tensorOf(opt, tensor, f32),
                           tensor.name + ".exp_avg"),
                      layer, "adam", tensor.offset * 4);
        ParamTensor second = tensor;
        second.offset += n;
        markOffloaded(init(mt::InitKind::zeros, tensorOf(opt, second, f32),
                           tensor.name + ".exp_avg_sq"),
                      layer, "adam", second.offset * 4);
      }
      writeBack(opt, "adam");
      continue;
    }
    // ZeRO-1: the master, m and v hold this rank's shard of the layer's
    // flattened parameters, elements [r * n, (r + 1) * n) for data-parallel
    // index r. The shard is initialized tensor piece by tensor piece; the
    // emitter adds r * n to the element offsets (ratrain.dp_shard).
    Value masterFlat = isF32Model() || streamMaster
                           ? Value()
                           : stateOf(stage.getMasterArg(layer), "master");
    Value master = isF32Model() ? masterShard(layer)
                   : masterFlat ? slot(masterFlat, 0, {n}, f32)
                                : Value();
    Value m = slot(opt, 0, {n}, f32);
    Value v = slot(opt, 4 * n, {n}, f32);
    auto shardInit = [&](mt::InitKind kind, Value dest,
                         StringRef param) -> mt::InitParamOp {
      auto op = mt::InitParamOp::create(
          pro, loc, kind, dest, param,
          kind == mt::InitKind::normal ? pro.getF64FloatAttr(options.initStd)
                                       : FloatAttr(),
          IntegerAttr());
      op.setDpShardAttr(IntegerAttr::get(i64, n));
      if (kind == mt::InitKind::zeros)
        return op;
      op.setDpShardTensorsAttr(shardTensorsAttr(tensors));
      return op;
    };
    std::string prefix = layerPrefix(layer);
    if (!streamMaster) {
      auto masterInit = shardInit(mt::InitKind::normal, master, prefix);
      if (!isF32Model()) {
        markOffloaded(masterInit, layer, "master", 0);
        writeBack(masterFlat, "master");
      }
    }
    markOffloaded(shardInit(mt::InitKind::zeros, m, prefix + ".exp_avg"), layer,
                  "adam", 0);
    markOffloaded(shardInit(mt::InitKind::zeros, v, prefix + ".exp_avg_sq"),
                  layer, "adam", 4 * n);
    writeBack(opt, "adam");
  }
  return success();
}
