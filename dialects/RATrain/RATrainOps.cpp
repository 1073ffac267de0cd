//===- RATrainOps.cpp - ratrain operations --------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Model/Limits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace ratrain;

#include "RATrain/RATrainInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Interfaces
//===----------------------------------------------------------------------===//

std::string ratrain::detail::describeScheduleOp(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName().getStringRef();
  if (auto transfer = dyn_cast<TransferOpInterface>(op))
    os << " " << stringifyPayload(transfer.getPayload());
  for (Type type : op->getResultTypes())
    if (std::optional<int64_t> layer = getStateLayer(type)) {
      os << " of layer " << *layer;
      break;
    }
  if (op->getNumResults() == 0 && op->getNumOperands() > 0 && !isa<YieldOp>(op))
    if (std::optional<int64_t> layer = getStateLayer(op->getOperandTypes()[0]))
      os << " of layer " << *layer;
  if (auto mb = op->getAttrOfType<IntegerAttr>("micro_batch"))
    os << " mb(" << mb.getInt() << ")";
  return text;
}

std::string ratrain::getTraceLabel(Operation *op) {
  auto layerOf = [](Type type) { return getStateLayer(type).value_or(-1); };
  auto computeLabel = [&](StringRef what, Value view, int64_t microBatch) {
    return (what + " L" + Twine(layerOf(view.getType())) + " mb" +
            Twine(microBatch))
        .str();
  };
  if (auto forward = dyn_cast<ForwardOp>(op))
    return computeLabel("fwd", forward.getView(), forward.getMicroBatch());
  if (auto recompute = dyn_cast<RecomputeOp>(op))
    return computeLabel("recompute", recompute.getView(),
                        recompute.getMicroBatch());
  if (auto backward = dyn_cast<BackwardOp>(op))
    return computeLabel("bwd", backward.getView(), backward.getMicroBatch());
  if (auto input = dyn_cast<BackwardInputOp>(op))
    return computeLabel("bwd-I", input.getView(), input.getMicroBatch());
  if (auto weight = dyn_cast<BackwardWeightOp>(op))
    return computeLabel("bwd-W", weight.getView(), weight.getMicroBatch());
  if (auto transfer = dyn_cast<TransferOpInterface>(op)) {
    auto mb = op->getAttrOfType<IntegerAttr>("micro_batch");
    return ((isa<SendOp>(op) ? "send " : "recv ") +
            Twine(transfer.getPayload() == Payload::Gradient ? "grad" : "act") +
            " mb" + Twine(mb ? mb.getInt() : 0))
        .str();
  }
  if (auto sync = dyn_cast<SyncOp>(op)) {
    // "all-reduce", as the machine's collective kinds are spelled.
    std::string kind = stringifySyncKind(sync.getKind()).str();
    std::replace(kind.begin(), kind.end(), '_', '-');
    return kind + " L" + std::to_string(layerOf(sync.getState().getType()));
  }
  if (auto update = dyn_cast<UpdateOp>(op))
    return ("update L" + Twine(layerOf(update.getGrad().getType()))).str();
  if (auto prefetch = dyn_cast<ViewPrefetchOp>(op))
    return ("view-prefetch L" + Twine(layerOf(prefetch.getMaster().getType())))
        .str();
  if (auto offload = dyn_cast<OffloadOp>(op))
    return ("offload L" + Twine(layerOf(offload.getState().getType()))).str();
  if (auto reload = dyn_cast<ReloadOp>(op))
    return ("reload L" + Twine(layerOf(reload.getPending().getType()))).str();
  if (auto wait = dyn_cast<WaitOp>(op))
    return ("wait L" + Twine(layerOf(wait.getPending().getType()))).str();
  if (isa<GradNormOp>(op))
    return "grad norm: sum of squares";
  return "";
}

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

SmallVector<LayerOp, 8> ModelOp::getLayers() {
  return llvm::to_vector<8>(getBody().front().getOps<LayerOp>());
}

int64_t ModelOp::getNumLayers() { return getLayers().size(); }

LogicalResult ModelOp::verifyRegions() {
  Type dtype = getDtype();
  if (!dtype.isF32() && !dtype.isF16() && !dtype.isBF16())
    return emitOpError("dtype must be f32, f16 or bf16, got ") << dtype;
  if (getSeqLen() < 1)
    return emitOpError("seq_len must be positive, got ") << getSeqLen();
  if (getSeqLen() > getMaxPositions())
    return emitOpError("seq_len ")
           << getSeqLen() << " exceeds max_positions " << getMaxPositions();
  if (std::optional<int64_t> window = getSlidingWindow())
    if (*window < 1)
      return emitOpError("sliding_window must be positive, got ") << *window;
  if (getRopeScaling() && getPositions() != PositionEncodingKind::Rope)
    return emitOpError("rope_scaling needs rotary positions (positions rope)");

  for (Operation &op : getBody().front())
    if (!isa<LayerOp>(op))
      return op.emitOpError("is not allowed in a ratrain.model; only "
                            "ratrain.layer is");

  SmallVector<LayerOp, 8> layers = getLayers();
  if (layers.size() < 3)
    return emitOpError("needs an embedding, at least one decoder layer and a "
                       "head, got ")
           << layers.size() << " layers";
  int64_t hidden = layers.front().getHidden();
  for (auto [position, layer] : llvm::enumerate(layers)) {
    if (layer.getIndex() != int64_t(position))
      return layer.emitOpError("has index ")
             << layer.getIndex() << " but is layer " << position
             << " of the model";
    LayerKind expected = position == 0                   ? LayerKind::Embedding
                         : position + 1 == layers.size() ? LayerKind::Head
                                                         : LayerKind::Decoder;
    if (layer.getKind() != expected)
      return layer.emitOpError("is a ")
             << stringifyLayerKind(layer.getKind()) << " layer where the model "
             << "needs a " << stringifyLayerKind(expected) << " layer";
    if (layer.getHidden() != hidden)
      return layer.emitOpError("has hidden size ")
             << layer.getHidden() << " but the model's is " << hidden;
  }
  if (*layers.front().getVocab() != *layers.back().getVocab())
    return emitOpError("embedding vocab ")
           << *layers.front().getVocab() << " differs from head vocab "
           << *layers.back().getVocab();

  if (std::optional<PlanAttr> plan = getPlan()) {
    int64_t planned = 0;
    for (int64_t count : plan->getStageLayers())
      planned += count;
    if (planned != int64_t(layers.size()))
      return emitOpError("plan assigns ")
             << planned << " layers to stages but the model has "
             << layers.size();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// LayerOp
//===----------------------------------------------------------------------===//

LogicalResult LayerOp::verify() {
  if (getHidden() < 1)
    return emitOpError("hidden must be positive, got ") << getHidden();
  auto positive = [&](std::optional<uint64_t> value,
                      StringRef name) -> LogicalResult {
    if (!value)
      return emitOpError("of kind '")
             << stringifyLayerKind(getKind()) << "' needs " << name;
    if (int64_t(*value) < 1)
      return emitOpError() << name << " must be positive, got "
                           << int64_t(*value);
    return success();
  };
  auto absent = [&](bool present, StringRef name) -> LogicalResult {
    if (present)
      return emitOpError("of kind '")
             << stringifyLayerKind(getKind()) << "' must not have " << name;
    return success();
  };
  if (getKind() == LayerKind::Decoder) {
    if (failed(positive(getHeads(), "heads")) ||
        failed(positive(getKvHeads(), "kv_heads")) ||
        failed(positive(getFfn(), "ffn")) ||
        failed(absent(getVocab().has_value(), "vocab")))
      return failure();
    if (getHeadDim() && *getHeadDim() <= 0)
      return emitOpError("head_dim must be positive, got ") << *getHeadDim();
    if (!getHeadDim() && getHidden() % int64_t(*getHeads()) != 0)
      return emitOpError("hidden ")
             << getHidden() << " is not a multiple of heads " << *getHeads();
    if (*getHeads() % *getKvHeads() != 0)
      return emitOpError("heads ")
             << *getHeads() << " is not a multiple of kv_heads "
             << *getKvHeads();
    return success();
  }
  return failure(failed(positive(getVocab(), "vocab")) ||
                 failed(absent(getHeads().has_value(), "heads")) ||
                 failed(absent(getKvHeads().has_value(), "kv_heads")) ||
                 failed(absent(getFfn().has_value(), "ffn")) ||
                 failed(absent(getHeadDim().has_value(), "head_dim")) ||
                 failed(absent(getQkvBias(), "qkv_bias")));
}

//===----------------------------------------------------------------------===//
// PipelineOp
//===----------------------------------------------------------------------===//

SmallVector<StageOp, 8> PipelineOp::getStages() {
  return llvm::to_vector<8>(getBody().front().getOps<StageOp>());
}

FailureOr<ModelOp> PipelineOp::lookupModel() {
  auto model =
      SymbolTable::lookupNearestSymbolFrom<ModelOp>(*this, getModelAttr());
  if (!model)
    return emitOpError("refers to '")
               << getModel() << "', which is not a ratrain.model",
           failure();
  return model;
}

LogicalResult PipelineOp::verifyRegions() {
  for (Operation &op : getBody().front())
    if (!isa<StageOp>(op))
      return op.emitOpError("is not allowed in a ratrain.pipeline; only "
                            "ratrain.stage is");
  PlanAttr plan = getPlan();
  SmallVector<StageOp, 8> stages = getStages();
  if (int64_t(stages.size()) != plan.getPp())
    return emitOpError("has ")
           << stages.size() << " stages but its plan has pp = " << plan.getPp();
  // Every virtual stage of the plan runs on exactly one rank, with the
  // plan's layers.
  int64_t numChunks = plan.getNumVirtualStages();
  SmallVector<int64_t> owner(numChunks, -1);
  for (auto [index, stage] : llvm::enumerate(stages)) {
    if (stage.getStage() != int64_t(index))
      return stage.emitOpError("is numbered ")
             << stage.getStage() << " but is stage " << index
             << " of the pipeline";
    for (StageChunkAttr chunk : stage.getChunkList()) {
      int64_t c = chunk.getVirtualStage();
      if (c < 0 || c >= numChunks)
        return stage.emitOpError("runs virtual stage ")
               << c << " but the plan has " << numChunks;
      if (owner[c] >= 0)
        return stage.emitOpError("runs virtual stage ")
               << c << ", which stage " << owner[c] << " runs too";
      owner[c] = int64_t(index);
      if (chunk.getFirstLayer() != plan.getFirstLayer(c) ||
          chunk.getNumLayers() != plan.getStageLayers()[c])
        return stage.emitOpError("owns layers [")
               << chunk.getFirstLayer() << ", " << chunk.getEndLayer()
               << ") in virtual stage " << c << " but the plan gives it ["
               << plan.getFirstLayer(c) << ", "
               << plan.getFirstLayer(c) + plan.getStageLayers()[c] << ")";
    }
  }
  for (auto [c, rank] : llvm::enumerate(owner))
    if (rank < 0)
      return emitOpError("runs virtual stage ") << c << " on no stage";
  return success();
}

LogicalResult PipelineOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto model =
      symbolTable.lookupNearestSymbolFrom<ModelOp>(*this, getModelAttr());
  if (!model)
    return emitOpError("refers to '")
           << getModel() << "', which is not a ratrain.model";
  int64_t planned = 0;
  for (int64_t count : getPlan().getStageLayers())
    planned += count;
  if (planned != model.getNumLayers())
    return emitOpError("plan covers ")
           << planned << " layers but model '" << getModel() << "' has "
           << model.getNumLayers();
  return success();
}

//===----------------------------------------------------------------------===//
// StageOp
//===----------------------------------------------------------------------===//

/// The block argument types of a stage owning `layers` (ascending): per
/// layer its view, master and optimizer state.
static SmallVector<Type> getStageStateTypes(MLIRContext *context,
                                            ArrayRef<int64_t> layers) {
  SmallVector<Type> types;
  for (int64_t layer : layers) {
    types.push_back(ViewType::get(context, layer));
    types.push_back(MasterType::get(context, layer));
    types.push_back(OptStateType::get(context, layer));
  }
  return types;
}

void StageOp::build(OpBuilder &builder, OperationState &state, int64_t stage,
                    int64_t firstLayer, int64_t numLayers) {
  build(builder, state, stage,
        {StageChunkAttr::get(builder.getContext(), stage, firstLayer,
                             numLayers)});
}

void StageOp::build(OpBuilder &builder, OperationState &state, int64_t stage,
                    ArrayRef<StageChunkAttr> chunks) {
  state.addAttribute(getStageAttrName(state.name),
                     builder.getI64IntegerAttr(stage));
  state.addAttribute(getChunksAttrName(state.name),
                     builder.getArrayAttr(
                         SmallVector<Attribute>(chunks.begin(), chunks.end())));
  SmallVector<int64_t> layers;
  for (StageChunkAttr chunk : chunks)
    for (int64_t l = chunk.getFirstLayer(); l < chunk.getEndLayer(); ++l)
      layers.push_back(l);
  Region *body = state.addRegion();
  Block *block = new Block();
  SmallVector<Type> types = getStageStateTypes(builder.getContext(), layers);
  block->addArguments(types,
                      SmallVector<Location>(types.size(), state.location));
  body->push_back(block);
}

SmallVector<StageChunkAttr, 2> StageOp::getChunkList() {
  return llvm::to_vector<2>(getChunks().getAsRange<StageChunkAttr>());
}

SmallVector<int64_t> StageOp::getLayers() {
  SmallVector<int64_t> layers;
  for (StageChunkAttr chunk : getChunkList())
    for (int64_t l = chunk.getFirstLayer(); l < chunk.getEndLayer(); ++l)
      layers.push_back(l);
  return layers;
}

int64_t StageOp::getNumLayers() {
  int64_t count = 0;
  for (StageChunkAttr chunk : getChunkList())
    count += chunk.getNumLayers();
  return count;
}

bool StageOp::ownsLayer(int64_t layer) {
  return llvm::any_of(getChunkList(), [&](StageChunkAttr chunk) {
    return chunk.contains(layer);
  });
}

StageChunkAttr StageOp::getChunkOfLayer(int64_t layer) {
  for (StageChunkAttr chunk : getChunkList())
    if (chunk.contains(layer))
      return chunk;
  llvm_unreachable("the stage does not own the layer");
}

bool StageOp::isInterleaved() {
  SmallVector<StageChunkAttr, 2> chunks = getChunkList();
  return chunks.size() != 1 ||
         chunks.front().getVirtualStage() != int64_t(getStage());
}

/// The index of `layer` among the stage's owned layers.
static int64_t getOwnedLayerIndex(StageOp stage, int64_t layer) {
  int64_t index = 0;
  for (StageChunkAttr chunk : stage.getChunkList()) {
    if (chunk.contains(layer))
      return index + layer - chunk.getFirstLayer();
    index += chunk.getNumLayers();
  }
  llvm_unreachable("the stage does not own the layer");
}

BlockArgument StageOp::getViewArg(int64_t layer) {
  return getBody().getArgument(3 * getOwnedLayerIndex(*this, layer));
}
BlockArgument StageOp::getMasterArg(int64_t layer) {
  return getBody().getArgument(3 * getOwnedLayerIndex(*this, layer) + 1);
}
BlockArgument StageOp::getOptStateArg(int64_t layer) {
  return getBody().getArgument(3 * getOwnedLayerIndex(*this, layer) + 2);
}
YieldOp StageOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

void StageOp::getAsmBlockArgumentNames(Region &region,
                                       OpAsmSetValueNameFn setNameFn) {
  for (BlockArgument arg : region.getArguments()) {
    std::optional<int64_t> layer = getStateLayer(arg.getType());
    if (!layer)
      continue;
    StringRef prefix = isa<ViewType>(arg.getType())     ? "view"
                       : isa<MasterType>(arg.getType()) ? "master"
                                                        : "opt";
    setNameFn(arg, (prefix + Twine(*layer)).str());
  }
}

/// Parses `[first, end)` into a chunk of virtual stage `stage`.
static ParseResult parseLayerRange(OpAsmParser &parser, int64_t stage,
                                   SmallVectorImpl<StageChunkAttr> &chunks) {
  int64_t first, end;
  SMLoc loc = parser.getNameLoc();
  if (parser.parseLSquare() || parser.parseInteger(first) ||
      parser.parseComma() || parser.parseInteger(end) || parser.parseRParen())
    return failure();
  if (first < 0 || end < first)
    return parser.emitError(loc, "layer range [")
           << first << ", " << end << ") "
           << (first < 0 ? "starts below layer 0" : "runs backwards");
  chunks.push_back(
      StageChunkAttr::get(parser.getContext(), stage, first, end - first));
  return success();
}

// ratrain.stage 0 layers [0, 2) states(%a: t, ...) attributes {...} { ... }
// ratrain.stage 0 chunks [0: [0, 2), 2: [4, 6)] states(...) { ... }
ParseResult StageOp::parse(OpAsmParser &parser, OperationState &result) {
  int64_t stage;
  SmallVector<StageChunkAttr> chunks;
  SmallVector<OpAsmParser::Argument> arguments;
  if (parser.parseInteger(stage))
    return failure();
  if (succeeded(parser.parseOptionalKeyword("chunks"))) {
    if (parser.parseCommaSeparatedList(
            OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
              int64_t virtualStage;
              if (parser.parseInteger(virtualStage) || parser.parseColon())
                return failure();
              return parseLayerRange(parser, virtualStage, chunks);
            }))
      return failure();
  } else if (parser.parseKeyword("layers") ||
             parseLayerRange(parser, stage, chunks)) {
    return failure();
  }
  if (parser.parseKeyword("states") ||
      parser.parseArgumentList(arguments, OpAsmParser::Delimiter::Paren,
                               /*allowType=*/true) ||
      parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Builder &builder = parser.getBuilder();
  result.addAttribute(getStageAttrName(result.name),
                      builder.getI64IntegerAttr(stage));
  result.addAttribute(getChunksAttrName(result.name),
                      builder.getArrayAttr(SmallVector<Attribute>(
                          chunks.begin(), chunks.end())));
  Region *body = result.addRegion();
  return parser.parseRegion(*body, arguments);
}

void StageOp::print(OpAsmPrinter &printer) {
  printer << ' ' << getStage();
  if (!isInterleaved()) {
    StageChunkAttr chunk = getChunkList().front();
    printer << " layers [" << chunk.getFirstLayer() << ", "
            << chunk.getEndLayer() << ")";
  } else {
    printer << " chunks [";
    llvm::interleaveComma(getChunkList(), printer, [&](StageChunkAttr chunk) {
      printer << chunk.getVirtualStage() << ": [" << chunk.getFirstLayer()
              << ", " << chunk.getEndLayer() << ")";
    });
    printer << "]";
  }
  printer << " states(";
  llvm::interleaveComma(
      getBody().getArguments(), printer,
      [&](BlockArgument arg) { printer.printRegionArgument(arg); });
  printer << ')';
  printer.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getStageAttrName(), getChunksAttrName()});
  printer << ' ';
  printer.printRegion(getBody(), /*printEntryBlockArgs=*/false);
}

LogicalResult StageOp::verifyRegions() {
  // Bound the chunks before building the expected types (hand-written IR may
  // have a range that runs backwards or spans 2^40 layers).
  SmallVector<StageChunkAttr, 2> chunks = getChunkList();
  if (chunks.empty())
    return emitOpError("must run at least one virtual stage");
  int64_t previousEnd = 0, previousStage = -1;
  for (StageChunkAttr chunk : chunks) {
    int64_t first = chunk.getFirstLayer(), count = chunk.getNumLayers();
    if (first < 0 || count < 1)
      return emitOpError("must own at least one layer from layer 0 on per "
                         "virtual stage, got ")
             << count << " layers from layer " << first;
    if (first > limits::kMaxModelLayers ||
        count > limits::kMaxModelLayers - first)
      return emitOpError("owns ") << count << " layers from layer " << first
                                  << ", past the limit of "
                                  << limits::kMaxModelLayers << " model layers";
    if (chunk.getVirtualStage() <= previousStage || first < previousEnd)
      return emitOpError("virtual stages must ascend with their layers; "
                         "virtual stage ")
             << chunk.getVirtualStage() << " at layer " << first
             << " follows virtual stage " << previousStage
             << " ending at layer " << previousEnd;
    previousStage = chunk.getVirtualStage();
    previousEnd = chunk.getEndLayer();
  }
  SmallVector<Type> expected = getStageStateTypes(getContext(), getLayers());
  TypeRange actual = getBody().getArgumentTypes();
  if (expected != SmallVector<Type>(actual))
    return emitOpError("states must be, per owned layer in order, its view, "
                       "master and opt_state (")
           << expected.size() << " block arguments starting with "
           << expected.front() << ")";

  // The terminator is a ratrain.yield: the core verifier and
  // SingleBlockImplicitTerminator ensure it.
  YieldOp yield = getYield();
  if (SmallVector<Type>(yield.getStates().getTypes()) != expected)
    return yield.emitOpError("must return the stage's states, in the order of "
                             "its block arguments");

  return success();
}

//===----------------------------------------------------------------------===//
// Compute and transfers
//===----------------------------------------------------------------------===//

/// The micro-batch an activation value was produced for, if known.
static std::optional<int64_t> getProducerMicroBatch(Value activation) {
  Operation *def = activation.getDefiningOp();
  if (auto forward = dyn_cast_or_null<ForwardOp>(def))
    return forward.getMicroBatch();
  if (auto recompute = dyn_cast_or_null<RecomputeOp>(def))
    return recompute.getMicroBatch();
  return std::nullopt;
}

ActivationKind ForwardOp::getStoredActivationKind(LayerKind layer,
                                                  Recompute recompute) {
  if (layer != LayerKind::Decoder)
    return ActivationKind::Full;
  switch (recompute) {
  case Recompute::None:
    return ActivationKind::Full;
  case Recompute::Selective:
    return ActivationKind::Selective;
  case Recompute::Full:
    return ActivationKind::Input;
  }
  llvm_unreachable("unknown recompute policy");
}

LogicalResult ForwardOp::verify() {
  // I64Attr getters are unsigned: compare the signed value.
  if (static_cast<int64_t>(getMicroBatch()) < 0)
    return emitOpError("micro-batch must not be negative");
  if (getView().getType().getLayer() != getActivation().getType().getLayer())
    return emitOpError("produces activations of layer ")
           << getActivation().getType().getLayer() << " from the view of layer "
           << getView().getType().getLayer();
  return success();
}

LogicalResult RecomputeOp::verify() {
  int64_t layer = getView().getType().getLayer();
  if (getInput().getType().getLayer() != layer ||
      getActivation().getType().getLayer() != layer)
    return emitOpError("mixes states of different layers");
  if (std::optional<int64_t> mb = getProducerMicroBatch(getInput()))
    if (*mb != getMicroBatch())
      return emitOpError("recomputes micro-batch ")
             << getMicroBatch() << " from the input of micro-batch " << *mb;
  return success();
}

/// Verifies the activations of a backward part of `layer` for `microBatch`.
static LogicalResult verifyBackwardActivation(Operation *op, Value activation,
                                              int64_t layer,
                                              int64_t microBatch) {
  int64_t actLayer = cast<ActivationType>(activation.getType()).getLayer();
  if (actLayer != layer)
    return op->emitOpError("uses activations of layer ")
           << actLayer << " in the backward of layer " << layer;
  if (std::optional<int64_t> mb = getProducerMicroBatch(activation))
    if (*mb != microBatch)
      return op->emitOpError("is the backward of micro-batch ")
             << microBatch << " but uses the activations of micro-batch "
             << *mb;
  return success();
}

LogicalResult BackwardInputOp::verify() {
  if (static_cast<int64_t>(getMicroBatch()) < 0)
    return emitOpError("micro-batch must not be negative");
  return verifyBackwardActivation(
      *this, getActivation(), getView().getType().getLayer(), getMicroBatch());
}

LogicalResult BackwardWeightOp::verify() {
  if (static_cast<int64_t>(getMicroBatch()) < 0)
    return emitOpError("micro-batch must not be negative");
  if (failed(verifyBackwardActivation(*this, getActivation(),
                                      getView().getType().getLayer(),
                                      getMicroBatch())))
    return failure();
  if (auto input = getDeferred().getDefiningOp<BackwardInputOp>())
    if (input.getMicroBatch() != getMicroBatch())
      return emitOpError("is the weight part of micro-batch ")
             << getMicroBatch()
             << " but uses the deferred value of the input part of "
                "micro-batch "
             << input.getMicroBatch();
  return success();
}

LogicalResult BackwardOp::verify() {
  int64_t layer = getView().getType().getLayer();
  if (getActivation().getType().getLayer() != layer)
    return emitOpError("uses activations of layer ")
           << getActivation().getType().getLayer()
           << " in the backward of layer " << layer;
  if (std::optional<int64_t> mb = getProducerMicroBatch(getActivation()))
    if (*mb != getMicroBatch())
      return emitOpError("is the backward of micro-batch ")
             << getMicroBatch() << " but uses the activations of micro-batch "
             << *mb;
  return success();
}

/// The virtual stage of one side of a transfer in `stage`: `chunk` when
/// given, else the rank's number.
static int64_t getTransferVirtualStage(Operation *op,
                                       std::optional<uint64_t> chunk) {
  if (chunk)
    return static_cast<int64_t>(*chunk);
  auto stage = op->getParentOfType<StageOp>();
  return stage ? static_cast<int64_t>(stage.getStage()) : 0;
}

/// The virtual stage on the other side: activations flow to virtual stage
/// + 1, gradients to virtual stage - 1.
static int64_t getTransferPeerVirtualStage(int64_t self, Payload payload,
                                           bool isSend) {
  bool forward = payload == Payload::Activation;
  return (forward == isSend) ? self + 1 : self - 1;
}

/// Checks that a pipeline transfer goes to the right neighbour: the rank
/// that runs the neighbouring virtual stage.
static LogicalResult verifyTransfer(Operation *op, Payload payload,
                                    int64_t microBatch, int64_t peer,
                                    std::optional<uint64_t> chunk,
                                    bool oneSided, bool isSend) {
  if (microBatch < 0)
    return op->emitOpError("micro-batch must not be negative");
  auto stage = op->getParentOfType<StageOp>();
  if (oneSided && peer == int64_t(stage.getStage()))
    return op->emitOpError("between two virtual stages of rank ")
           << peer << " is a copy, not a one-sided put";
  auto pipeline = stage->getParentOfType<PipelineOp>();
  int64_t self = getTransferVirtualStage(op, chunk);
  if (chunk) {
    bool owned = llvm::any_of(stage.getChunkList(), [&](StageChunkAttr c) {
      return c.getVirtualStage() == self;
    });
    if (!owned)
      return op->emitOpError("names virtual stage ")
             << self << ", which stage " << stage.getStage() << " does not run";
  }
  int64_t expected = getTransferPeerVirtualStage(self, payload, isSend);
  if (!pipeline)
    return success();
  PlanAttr plan = pipeline.getPlan();
  if (expected < 0 || expected >= plan.getNumVirtualStages())
    return op->emitOpError("in virtual stage ")
           << self << " cannot " << (isSend ? "send " : "receive ")
           << stringifyPayload(payload) << (isSend ? " to" : " from")
           << " virtual stage " << expected << ": the pipeline has "
           << plan.getNumVirtualStages();
  // The rank that runs the neighbour; without interleaving the stage itself.
  int64_t rank = expected;
  for (StageOp other : pipeline.getStages())
    for (StageChunkAttr c : other.getChunkList())
      if (c.getVirtualStage() == expected)
        rank = other.getStage();
  if (peer != rank)
    return op->emitOpError("in stage ")
           << stage.getStage() << " must " << (isSend ? "send " : "receive ")
           << stringifyPayload(payload) << (isSend ? " to" : " from")
           << " stage " << rank << ", not " << peer;
  return success();
}

int64_t SendOp::getVirtualStage() {
  return getTransferVirtualStage(*this, getChunk());
}
int64_t SendOp::getPeerVirtualStage() {
  return getTransferPeerVirtualStage(getVirtualStage(), getPayload(),
                                     /*isSend=*/true);
}
int64_t RecvOp::getVirtualStage() {
  return getTransferVirtualStage(*this, getChunk());
}
int64_t RecvOp::getPeerVirtualStage() {
  return getTransferPeerVirtualStage(getVirtualStage(), getPayload(),
                                     /*isSend=*/false);
}

LogicalResult SendOp::verify() {
  return verifyTransfer(*this, getPayload(), getMicroBatch(), getPeer(),
                        getChunk(), getOneSided(), /*isSend=*/true);
}

LogicalResult RecvOp::verify() {
  return verifyTransfer(*this, getPayload(), getMicroBatch(), getPeer(),
                        getChunk(), getOneSided(), /*isSend=*/false);
}

//===----------------------------------------------------------------------===//
// Lifecycle
//===----------------------------------------------------------------------===//

SyncOp ratrain::getAveragingOf(Value value) {
  auto wait = value.getDefiningOp<WaitOp>();
  auto sync = wait ? wait.getPending().getDefiningOp<SyncOp>() : SyncOp();
  return sync && sync.getPeriod() ? sync : SyncOp();
}

LogicalResult SyncOp::verify() {
  Type state = getState().getType();
  Type result = cast<AsyncType>(getPending().getType()).getValue();
  int64_t layer = *getStateLayer(state);
  if (std::optional<WireType> wire = getWire()) {
    bool quantizable =
        (getKind() == SyncKind::AllGather && isa<ViewType>(state)) ||
        getKind() == SyncKind::ReduceScatter;
    if (!quantizable)
      return emitOpError("only an all_gather of a view (qwZ) or a "
                         "reduce_scatter of a gradient (qgZ) may be quantized; "
                         "this ")
             << stringifySyncKind(getKind()) << " of " << state << " has wire "
             << stringifyWireType(*wire);
  }
  if (bool(getScope()) != bool(getLevel()) ||
      bool(getScope()) != bool(getMembers()))
    return emitOpError("a sync's scope, level and members come together");
  if (getScope() && getKind() == SyncKind::AllReduce)
    return emitOpError("an all_reduce runs on the whole data-parallel "
                       "group; only all_gather and reduce_scatter take a "
                       "scope");
  if (bool(getPeriod()) != bool(getPhase()))
    return emitOpError("a sync's period and phase come together");
  if (getPeriod()) {
    // Partial synchronization: the averaging of an updated master.
    if (getKind() != SyncKind::AllReduce || !isa<MasterType>(state) ||
        getWire())
      return emitOpError("only an all_reduce of a master (the averaging of "
                         "partial synchronization) runs every few steps; "
                         "this is a ")
             << stringifySyncKind(getKind()) << " of " << state;
    if (*getPhase() >= *getPeriod())
      return emitOpError("phase ") << *getPhase() << " must be below the "
                                   << "period " << *getPeriod();
    auto pipeline = (*this)->getParentOfType<PipelineOp>();
    if (pipeline && pipeline.getPlan().getSyncPeriod() != *getPeriod())
      return emitOpError("averages the master of layer ")
             << layer << " every " << *getPeriod()
             << " steps, but the plan's sync_period is "
             << pipeline.getPlan().getSyncPeriod();
    if (result != state)
      return emitOpError("averaging must produce ") << state;
    return success();
  }
  if (isa<MasterType>(state) && getKind() == SyncKind::AllReduce)
    return emitOpError("an all_reduce of a master averages it under partial "
                       "synchronization and needs `every <period> phase "
                       "<phase>`");
  if (getKind() == SyncKind::AllGather) {
    if (!isa<ViewType, MasterType>(state))
      return emitOpError("all_gather re-assembles parameters; it takes a "
                         "view or master, not ")
             << state;
    if (result != state)
      return emitOpError("all_gather must produce ") << state;
    return success();
  }
  auto grad = dyn_cast<GradType>(state);
  if (!grad || grad.getPhase() != GradPhase::Ready)
    return emitOpError() << stringifySyncKind(getKind())
                         << " synchronizes a ready gradient, not " << state;
  Type synced = GradType::get(getContext(), layer, GradPhase::Synced);
  // A reduce-scatter inside a level may leave the level's partition of the
  // gradient, still to be reduced across the level's groups.
  if (result == state && getScope() == SyncScope::Inside)
    return success();
  if (result != synced) {
    InFlightDiagnostic diag = emitOpError("must produce !ratrain.async<")
                              << synced << ">";
    if (getScope() == SyncScope::Inside)
      diag << " or, inside a level, !ratrain.async<" << state << ">";
    return diag;
  }
  return success();
}

LogicalResult UpdateOp::verify() {
  int64_t layer = getGrad().getType().getLayer();
  if (getMaster().getType().getLayer() != layer ||
      getOptState().getType().getLayer() != layer)
    return emitOpError("updates layer ")
           << layer << " with the master or optimizer state of another layer";
  // A replica's own gradient is applied only under partial synchronization.
  if (getGrad().getType().getPhase() == GradPhase::Ready) {
    auto pipeline = (*this)->getParentOfType<PipelineOp>();
    if (pipeline && !pipeline.getPlan().syncsPartially())
      return emitOpError("applies the ready (unsynced) gradient of layer ")
             << layer
             << ", but the plan synchronizes every step (sync_period = 1); "
                "only partial synchronization updates with a replica's own "
                "gradient";
    if (getClip())
      return emitOpError("cannot clip a replica's own gradient: there is no "
                         "global norm under partial synchronization");
  }
  return success();
}

LogicalResult GradNormOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one synced gradient");
  auto async = dyn_cast<AsyncType>(getPending().getType());
  if (!async || !isa<GradNormType>(async.getValue()))
    return emitOpError("result must be !ratrain.async<!ratrain.grad_norm>, "
                       "not ")
           << getPending().getType();
  llvm::SmallDenseSet<int64_t, 8> layers;
  for (Value grad : getGrads()) {
    int64_t layer = cast<GradType>(grad.getType()).getLayer();
    if (!layers.insert(layer).second)
      return emitOpError("counts the gradient of layer ") << layer << " twice";
  }
  return success();
}

LogicalResult ReloadOp::verify() {
  Value operand = getOffloaded();
  if (isa<OffloadedType>(operand.getType()))
    return success();
  // A state in the tier between steps: only the step-start value.
  auto arg = dyn_cast<BlockArgument>(operand);
  if (!arg || arg.getOwner()->getParentOp() != (*this)->getParentOp())
    return emitOpError("reloads ")
           << operand.getType()
           << " that is not in the offload tier: only an "
              "!ratrain.offloaded value or a state argument of the stage "
              "can be reloaded";
  return success();
}

#define GET_OP_CLASSES
#include "RATrain/RATrainOps.cpp.inc"
