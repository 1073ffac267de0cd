//===- StageLowering.cpp - Buffers, views, tokens, kernel helpers ---------===//
//
// The core of StageLowering: the buffers buffer assignment gave each value,
// views into them, the tokens in flight and the waits the schedule asks for,
// outlined layer bodies, and the kernel helpers the layer sequences are
// written with.
//
//===----------------------------------------------------------------------===//

#include "StageLowering.h"

#include <cmath>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::lowering;
namespace mt = ratrain::mt3k;

//===----------------------------------------------------------------------===//
// Assigned buffers
//===----------------------------------------------------------------------===//

std::optional<std::array<int64_t, 2>> StageLowering::assigned(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto attr = RATrainDialect::ArgBuffersAttrHelper(stage->getContext())
                    .getAttr(stage);
    unsigned index = arg.getArgNumber();
    if (!attr || int64_t(attr.size()) < 3 * (index + 1))
      return std::nullopt;
    return std::array<int64_t, 2>{attr[3 * index + 1], attr[3 * index + 2]};
  }
  Operation *def = value.getDefiningOp();
  auto attr =
      def ? RATrainDialect::BuffersAttrHelper(def->getContext()).getAttr(def)
          : DenseI64ArrayAttr();
  unsigned index = cast<OpResult>(value).getResultNumber();
  if (!attr || int64_t(attr.size()) < 3 * (index + 1))
    return std::nullopt;
  return std::array<int64_t, 2>{attr[3 * index + 1], attr[3 * index + 2]};
}

std::optional<std::array<int64_t, 2>>
StageLowering::assignedMessage(Operation *transfer) {
  auto attr = RATrainDialect::BuffersAttrHelper(transfer->getContext())
                  .getAttr(transfer);
  if (!attr || attr.size() < 3)
    return std::nullopt;
  return std::array<int64_t, 2>{attr[1], attr[2]};
}

//===----------------------------------------------------------------------===//
// Buffers and views
//===----------------------------------------------------------------------===//

Value StageLowering::base(mt::MemorySpace space, StringRef name, int64_t offset,
                          int64_t bytes) {
  std::string key = llvm::formatv("{0}@{1}:{2}", name, offset, bytes);
  if (outline) {
    // Inside a function body: the caller's buffer becomes an argument.
    auto captured = outline->argOfKey.find(key);
    if (captured != outline->argOfKey.end())
      return outline->function.getArgument(captured->second);
    std::optional<Outline> body = std::move(outline);
    outline.reset();
    Value outer = base(space, name, offset, bytes);
    outline = std::move(body);
    unsigned index = outline->outer.size();
    Block &entry = outline->function.getBody().front();
    Value arg = entry.addArgument(outer.getType(), loc);
    outline->outer.push_back(outer);
    outline->argOfKey[key] = index;
    outline->rootArg[arg] = index;
    return arg;
  }
  auto it = bases.find(key);
  if (it != bases.end())
    return it->second;
  auto type = mt::BufferType::get(space, {bytes}, IntegerType::get(ctx, 8));
  Value value = mt::BufferOp::create(pro, loc, type, name, offset);
  bases[key] = value;
  return value;
}

Value StageLowering::slot(Value source, int64_t byteOffset,
                          ArrayRef<int64_t> shape, Type type) {
  auto sourceType = cast<mt::BufferType>(source.getType());
  auto resultType = mt::BufferType::get(sourceType.getSpace(), shape, type);
  if (byteOffset == 0 && resultType == sourceType)
    return source;
  assert((!outline || outline->rootArg.count(source)) &&
         "an outlined body takes views of its arguments only");
  auto key = std::make_tuple((const void *)source.getAsOpaquePointer(),
                             byteOffset, resultType.getAsOpaquePointer());
  auto it = views.find(key);
  if (it != views.end())
    return it->second;
  if (outline) {
    // Views of a function argument are taken in the body, where the kernels
    // use them.
    unsigned index = outline->rootArg.lookup(source);
    Value value = mt::ViewOp::create(b, loc, resultType, source, byteOffset);
    outline->rootArg[value] = index;
    views[key] = value;
    return value;
  }
  Value value = mt::ViewOp::create(pro, loc, resultType, source, byteOffset);
  views[key] = value;
  return value;
}

Value StageLowering::groupSlot(Value source, StringRef group,
                               ArrayRef<int64_t> shape, Type type) {
  auto sourceType = cast<mt::BufferType>(source.getType());
  auto resultType = mt::BufferType::get(sourceType.getSpace(), shape, type);
  assert(!outline && "group slots are taken in the program");
  auto key = std::make_tuple((const void *)source.getAsOpaquePointer(),
                             group.str(), resultType.getAsOpaquePointer());
  auto it = groupSlots.find(key);
  if (it != groupSlots.end())
    return it->second;
  Value value = mt::GroupSlotOp::create(pro, loc, resultType, source,
                                        FlatSymbolRefAttr::get(ctx, group));
  groupSlots[key] = value;
  return value;
}

Value StageLowering::scratch(StringRef name, int64_t offset,
                             ArrayRef<int64_t> shape, Type type) {
  // A slot of a named region of the lowering's area (or of the assigned
  // workspace): one mt3k.buffer per region, views for its slots.
  auto region = regions.find(name);
  assert(region != regions.end() && "unknown scratch region");
  auto [regionOffset, regionBytes] = region->second;
  Value flat = ddrBase(name, regionOffset, regionBytes);
  return slot(flat, offset - regionOffset, shape, type);
}

Value StageLowering::stateBase(Value state, StringRef role, int64_t layer) {
  auto buffer = assigned(state);
  std::string name = llvm::formatv("{0}.{1}", layerPrefix(layer), role);
  return ddrBase(name, (*buffer)[0], (*buffer)[1]);
}

Value StageLowering::tensorOf(Value flat, const ParamTensor &tensor, Type type,
                              ArrayRef<int64_t> shape) {
  int64_t bytes = type.getIntOrFloatBitWidth() / 8;
  return slot(flat, tensor.offset * bytes,
              shape.empty() ? ArrayRef<int64_t>(tensor.shape) : shape, type);
}

void StageLowering::track(Value token) {
  assert(!outline && "outlined layer bodies start no asynchronous work");
  inflight.push_back(token);
}

void StageLowering::waitTokens(ArrayRef<Value> tokens) {
  SmallVector<Value> live;
  for (Value token : tokens) {
    auto it = llvm::find(inflight, token);
    if (it == inflight.end() || llvm::is_contained(live, token))
      continue;
    live.push_back(token);
    inflight.erase(it);
  }
  if (!live.empty())
    mt::WaitOp::create(b, loc, live);
}

//===----------------------------------------------------------------------===//
// Outlined layer bodies
//===----------------------------------------------------------------------===//

bool StageLowering::beginOutline(StringRef name) {
  if (!options.outlineLayers)
    return false;
  assert(!outline && "outlined bodies do not nest");
  Outline body;
  body.name = name;
  body.function = func::FuncOp::create(moduleBuilder, loc, name,
                                       FunctionType::get(ctx, {}, {}));
  body.function.setPrivate();
  body.function.addEntryBlock();
  body.resume = b.saveInsertionPoint();
  b.setInsertionPointToEnd(&body.function.getBody().front());
  outline = std::move(body);
  return true;
}

void StageLowering::endOutline() {
  Outline body = std::move(*outline);
  outline.reset();
  func::FuncOp function = body.function;
  func::ReturnOp::create(b, loc);
  Block &entry = function.getBody().front();
  function.setFunctionType(
      FunctionType::get(ctx, entry.getArgumentTypes(), {}));
  // Views of the body are memoized by value: forget them with the body.
  for (auto it = views.begin(); it != views.end();) {
    Value value = it->second;
    if (body.rootArg.count(value))
      it = views.erase(it);
    else
      ++it;
  }
  b.restoreInsertionPoint(body.resume);

  // One function per distinct kernel sequence.
  func::FuncOp callee;
  for (func::FuncOp existing : outlined.functions)
    if (existing.getFunctionType() == function.getFunctionType() &&
        OperationEquivalence::isRegionEquivalentTo(
            &existing.getBody(), &function.getBody(),
            OperationEquivalence::IgnoreLocations)) {
      callee = existing;
      break;
    }
  if (callee) {
    function.erase();
  } else {
    callee = function;
    callee.setSymName(
        llvm::formatv("{0}_{1}", body.name, outlined.functions.size()).str());
    outlined.functions.push_back(callee);
  }

  func::CallOp::create(b, loc, callee, body.outer);
}

//===----------------------------------------------------------------------===//
// Kernel helpers
//===----------------------------------------------------------------------===//

void StageLowering::gemm(Value a, Value bm, Value c, bool ta, bool tb,
                         bool acc) {
  mt::GemmOp::create(b, loc, a, bm, c, ta, tb, acc, FloatAttr());
}

void StageLowering::copy(Value from, Value to) {
  elementwise(mt::ElementwiseKind::cast, {from}, {to});
}

void StageLowering::elementwise(mt::ElementwiseKind kind, ArrayRef<Value> ins,
                                ArrayRef<Value> outs,
                                std::optional<double> theta,
                                std::optional<double> scale) {
  mt::ElementwiseOp::create(
      b, loc, kind, ins, outs, theta ? b.getF64FloatAttr(*theta) : FloatAttr(),
      scale ? b.getF64FloatAttr(*scale) : FloatAttr(), mt::RopeScalingAttr());
}

void StageLowering::rope(Value in, Value out, bool backward) {
  mt::RopeScalingAttr scaling;
  if (RopeScalingAttr modelScaling = model.getRopeScalingAttr())
    scaling = mt::RopeScalingAttr::get(
        b.getContext(),
        modelScaling.getMethod() == RopeScalingMethod::Linear
            ? mt::RopeScalingMethod::linear
            : mt::RopeScalingMethod::llama3,
        modelScaling.getFactor(), modelScaling.getLowFreqFactor(),
        modelScaling.getHighFreqFactor(),
        modelScaling.getOriginalMaxPositions());
  mt::ElementwiseOp::create(b, loc,
                            backward ? mt::ElementwiseKind::rope_bwd
                                     : mt::ElementwiseKind::rope,
                            ValueRange{in}, ValueRange{out},
                            model.getRopeThetaAttr(), FloatAttr(), scaling);
}

void StageLowering::rmsnormFwd(Value x, Value w, Value y, Value rstd) {
  mt::RMSNormFwdOp::create(
      b, loc, x, w, y, rstd,
      APFloat(double(model.getRmsEps().convertToDouble())));
}

void StageLowering::rmsnormBwd(Value x, Value w, Value rstd, Value dy, Value dx,
                               Value dw, bool acc) {
  mt::RMSNormBwdOp::create(b, loc, x, w, rstd, dy, dx, dw, acc);
}

Value StageLowering::matrix(Value buffer, int64_t cols) {
  auto type = cast<mt::BufferType>(buffer.getType());
  return slot(buffer, 0, {type.getNumElements() / cols, cols},
              type.getElementType());
}

//===----------------------------------------------------------------------===//
// Layer weights and activations
//===----------------------------------------------------------------------===//

Value StageLowering::LayerWeights::get(StringRef suffix) const {
  for (const auto &[name, value] : views)
    if (StringRef(name).ends_with(suffix))
      return value;
  for (auto [tensor, value] : llvm::zip_equal(*names, tensors))
    if (StringRef(tensor.name).ends_with(suffix))
      return value;
  llvm_unreachable("unknown parameter tensor");
}

StageLowering::LayerWeights StageLowering::weights(Value flat, int64_t layer,
                                                   Type type) {
  LayerWeights result;
  auto [it, inserted] = tensorCache.try_emplace(layer);
  if (inserted)
    it->second = layerTensors(layer);
  const SmallVector<ParamTensor> &tensors = it->second;
  result.names = &tensors;
  for (const ParamTensor &tensor : tensors) {
    result.tensors.push_back(tensorOf(flat, tensor, type));
    if (!StringRef(tensor.name).ends_with("self_attn.W_pack.weight"))
      continue;
    // W_pack rows: q [0, qDim), k [qDim, qDim + kvDim), v after.
    int64_t h = dims.hidden, offset = tensor.offset;
    for (auto [name, rows] :
         {std::pair<StringRef, int64_t>{"q_proj.weight", dims.qDim},
          {"k_proj.weight", dims.kvDim},
          {"v_proj.weight", dims.kvDim}}) {
      ParamTensor view{name.str(), {rows, h}, tensor.init, offset};
      result.views.emplace_back(name.str(), tensorOf(flat, view, type));
      offset += rows * h;
    }
  }
  return result;
}

StageLowering::DecoderActs StageLowering::decoderActs(Value inputBase,
                                                      Value restBase,
                                                      int64_t restOffset,
                                                      bool hactStored) {
  const DecoderLayout &l = fullLayout;
  int64_t T = dims.tokens, B = dims.batch, S = dims.seq;
  Type f32 = Float32Type::get(ctx);
  auto at = [&](int64_t offset) { return restOffset + offset; };
  DecoderActs a;
  a.x = slot(inputBase, 0, {T, dims.hidden}, elem);
  a.xn1 = slot(restBase, at(l.xn1), {T, dims.hidden}, elem);
  a.q2 = slot(restBase, at(l.q), {T, dims.qDim}, elem);
  a.k2 = slot(restBase, at(l.k), {T, dims.kvDim}, elem);
  a.v2 = slot(restBase, at(l.v), {T, dims.kvDim}, elem);
  a.o2 = slot(restBase, at(l.o), {T, dims.qDim}, elem);
  a.q4 = slot(restBase, at(l.q), {B, S, dims.heads, dims.headDim}, elem);
  a.k4 = slot(restBase, at(l.k), {B, S, dims.kvHeads, dims.headDim}, elem);
  a.v4 = slot(restBase, at(l.v), {B, S, dims.kvHeads, dims.headDim}, elem);
  a.o4 = slot(restBase, at(l.o), {B, S, dims.heads, dims.headDim}, elem);
  a.x2 = slot(restBase, at(l.x2), {T, dims.hidden}, elem);
  a.xn2 = slot(restBase, at(l.xn2), {T, dims.hidden}, elem);
  a.gate = slot(restBase, at(l.gate), {T, dims.ffn}, elem);
  a.up = slot(restBase, at(l.up), {T, dims.ffn}, elem);
  if (hactStored && l.hact >= 0)
    a.hact = slot(restBase, at(l.hact), {T, dims.ffn}, elem);
  a.rstd1 = slot(restBase, at(l.rstd1), {T}, f32);
  a.rstd2 = slot(restBase, at(l.rstd2), {T}, f32);
  a.lse = slot(restBase, at(l.lse), {B, dims.heads, S}, f32);
  return a;
}

StageLowering::DecoderDeferred StageLowering::decoderDeferred(Value base) {
  const DecoderDeferredLayout &l = deferredLayout;
  int64_t T = dims.tokens, B = dims.batch, S = dims.seq;
  DecoderDeferred d;
  d.dy = slot(base, l.dy, {T, dims.hidden}, elem);
  d.dgate = slot(base, l.dgate, {T, dims.ffn}, elem);
  d.dup = slot(base, l.dup, {T, dims.ffn}, elem);
  d.dxn2 = slot(base, l.dxn2, {T, dims.hidden}, elem);
  d.dres = slot(base, l.dres, {T, dims.hidden}, elem);
  d.dq2 = slot(base, l.dq, {T, dims.qDim}, elem);
  d.dk2 = slot(base, l.dk, {T, dims.kvDim}, elem);
  d.dv2 = slot(base, l.dv, {T, dims.kvDim}, elem);
  d.dq4 = slot(base, l.dq, {B, S, dims.heads, dims.headDim}, elem);
  d.dk4 = slot(base, l.dk, {B, S, dims.kvHeads, dims.headDim}, elem);
  d.dv4 = slot(base, l.dv, {B, S, dims.kvHeads, dims.headDim}, elem);
  d.dxn1 = slot(base, l.dxn1, {T, dims.hidden}, elem);
  return d;
}

Value StageLowering::deferredBase(Value deferred, int64_t layer, int64_t mb) {
  auto buffer = assigned(deferred);
  std::string name = llvm::formatv("deferred.layer{0}.mb{1}", layer, mb);
  return ddrBase(name, (*buffer)[0], (*buffer)[1]);
}

Value StageLowering::actBase(Value act, int64_t layer, int64_t mb) {
  auto buffer = assigned(act);
  StringRef suffix = act.getDefiningOp<RecomputeOp>() ? ".recomputed"
                     : act.getDefiningOp<WaitOp>()    ? ".reloaded"
                                                      : "";
  std::string name = llvm::formatv("act.layer{0}.mb{1}{2}", layer, mb, suffix);
  return ddrBase(name, (*buffer)[0], (*buffer)[1]);
}

Value StageLowering::reloadedActBase(Value pending, int64_t layer, int64_t mb) {
  auto buffer = assigned(pending);
  std::string name = llvm::formatv("act.layer{0}.mb{1}.reloaded", layer, mb);
  return ddrBase(name, (*buffer)[0], (*buffer)[1]);
}

Value StageLowering::gradFlat(Value grad, int64_t layer) {
  auto buffer = assigned(grad);
  std::string name = llvm::formatv("{0}.grad", layerPrefix(layer));
  Value flat = ddrBase(name, (*buffer)[0], (*buffer)[1]);
  return slot(flat, 0, {layerParams(layer)}, elem);
}

/// The name suffix of a boundary buffer of virtual stage `chunk` (none
/// without interleaving, so those programs keep their names).
static std::string chunkSuffix(StageOp stage, int64_t chunk) {
  return stage.isInterleaved() ? llvm::formatv(".vs{0}", chunk).str() : "";
}

Value StageLowering::received(Payload payload, int64_t mb, int64_t chunk) {
  Operation *recv = recvOps.at(transferKey(payload, mb, chunk));
  auto buffer = assignedMessage(recv);
  Value flat = ddrBase(
      llvm::formatv("recv.{0}.mb{1}{2}",
                    payload == Payload::Gradient ? "gradient" : "activation",
                    mb, chunkSuffix(stage, chunk))
          .str(),
      (*buffer)[0], (*buffer)[1]);
  return slot(flat, 0, {dims.tokens, dims.hidden}, elem);
}

Value StageLowering::outbox(Payload payload, int64_t mb, int64_t chunk) {
  int gradient = payload == Payload::Gradient ? 1 : 0;
  int64_t k = outboxSlot.at(transferKey(payload, mb, chunk));
  return scratch(
      llvm::formatv("outbox.{0}.{1}", gradient ? "gradient" : "activation", k)
          .str(),
      outboxOff[gradient][k], {dims.tokens, dims.hidden}, elem);
}

Value StageLowering::stream() {
  return scratch("scratch.stream", streamOff, {dims.tokens, dims.hidden}, elem);
}

Value StageLowering::flowInput(int64_t layer, int64_t mb) {
  StageChunkAttr chunk = stage.getChunkOfLayer(layer);
  if (layer == chunk.getFirstLayer() && chunk.getVirtualStage() > 0)
    return received(Payload::Activation, mb, chunk.getVirtualStage());
  return stream();
}

Value StageLowering::flowOutput(int64_t layer, int64_t mb) {
  StageChunkAttr chunk = stage.getChunkOfLayer(layer);
  if (layer == chunk.getEndLayer() - 1 &&
      chunk.getVirtualStage() + 1 < numStages)
    return outbox(Payload::Activation, mb, chunk.getVirtualStage());
  return stream();
}

Value StageLowering::gradInput(int64_t layer, int64_t mb) {
  StageChunkAttr chunk = stage.getChunkOfLayer(layer);
  if (layer == chunk.getEndLayer() - 1 &&
      chunk.getVirtualStage() + 1 < numStages)
    return received(Payload::Gradient, mb, chunk.getVirtualStage());
  return stream();
}

Value StageLowering::gradOutput(int64_t layer, int64_t mb) {
  StageChunkAttr chunk = stage.getChunkOfLayer(layer);
  if (layer == chunk.getFirstLayer() && chunk.getVirtualStage() > 0)
    return outbox(Payload::Gradient, mb, chunk.getVirtualStage());
  return stream();
}
