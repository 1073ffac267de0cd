//===- RATrainOps.cpp - ratrain operations --------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Model/Limits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

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
    if (getHidden() % int64_t(*getHeads()) != 0)
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
  for (auto [index, stage] : llvm::enumerate(stages)) {
    if (stage.getStage() != int64_t(index))
      return stage.emitOpError("is numbered ")
             << stage.getStage() << " but is stage " << index
             << " of the pipeline";
    if (stage.getFirstLayer() != plan.getFirstLayer(index) ||
        stage.getNumLayers() != plan.getStageLayers()[index])
      return stage.emitOpError("owns layers [")
             << stage.getFirstLayer() << ", " << stage.getEndLayer()
             << ") but the plan gives it [" << plan.getFirstLayer(index) << ", "
             << plan.getFirstLayer(index) + plan.getStageLayers()[index] << ")";
  }
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

/// The block argument types of a stage owning layers [first, first + count):
/// per layer its view, master and optimizer state.
static SmallVector<Type> getStageStateTypes(MLIRContext *context, int64_t first,
                                            int64_t count) {
  SmallVector<Type> types;
  for (int64_t layer = first; layer < first + count; ++layer) {
    types.push_back(ViewType::get(context, layer));
    types.push_back(MasterType::get(context, layer));
    types.push_back(OptStateType::get(context, layer));
  }
  return types;
}

void StageOp::build(OpBuilder &builder, OperationState &state, int64_t stage,
                    int64_t firstLayer, int64_t numLayers) {
  state.addAttribute(getStageAttrName(state.name),
                     builder.getI64IntegerAttr(stage));
  state.addAttribute(getFirstLayerAttrName(state.name),
                     builder.getI64IntegerAttr(firstLayer));
  state.addAttribute(getNumLayersAttrName(state.name),
                     builder.getI64IntegerAttr(numLayers));
  Region *body = state.addRegion();
  Block *block = new Block();
  SmallVector<Type> types =
      getStageStateTypes(builder.getContext(), firstLayer, numLayers);
  block->addArguments(types,
                      SmallVector<Location>(types.size(), state.location));
  body->push_back(block);
}

BlockArgument StageOp::getViewArg(int64_t layer) {
  return getBody().getArgument(3 * (layer - getFirstLayer()));
}
BlockArgument StageOp::getMasterArg(int64_t layer) {
  return getBody().getArgument(3 * (layer - getFirstLayer()) + 1);
}
BlockArgument StageOp::getOptStateArg(int64_t layer) {
  return getBody().getArgument(3 * (layer - getFirstLayer()) + 2);
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

// ratrain.stage 0 layers [0, 2) states(%a: t, ...) attributes {...} { ... }
ParseResult StageOp::parse(OpAsmParser &parser, OperationState &result) {
  int64_t stage, first, end;
  SmallVector<OpAsmParser::Argument> arguments;
  if (parser.parseInteger(stage) || parser.parseKeyword("layers") ||
      parser.parseLSquare() || parser.parseInteger(first) ||
      parser.parseComma() || parser.parseInteger(end) || parser.parseRParen() ||
      parser.parseKeyword("states") ||
      parser.parseArgumentList(arguments, OpAsmParser::Delimiter::Paren,
                               /*allowType=*/true) ||
      parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  if (first < 0 || end < first)
    return parser.emitError(parser.getNameLoc(), "layer range [")
           << first << ", " << end << ") "
           << (first < 0 ? "starts below layer 0" : "runs backwards");
  Builder &builder = parser.getBuilder();
  result.addAttribute(getStageAttrName(result.name),
                      builder.getI64IntegerAttr(stage));
  result.addAttribute(getFirstLayerAttrName(result.name),
                      builder.getI64IntegerAttr(first));
  result.addAttribute(getNumLayersAttrName(result.name),
                      builder.getI64IntegerAttr(end - first));
  Region *body = result.addRegion();
  return parser.parseRegion(*body, arguments);
}

void StageOp::print(OpAsmPrinter &printer) {
  printer << ' ' << getStage() << " layers [" << getFirstLayer() << ", "
          << getEndLayer() << ") states(";
  llvm::interleaveComma(
      getBody().getArguments(), printer,
      [&](BlockArgument arg) { printer.printRegionArgument(arg); });
  printer << ')';
  printer.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getStageAttrName(), getFirstLayerAttrName(), getNumLayersAttrName()});
  printer << ' ';
  printer.printRegion(getBody(), /*printEntryBlockArgs=*/false);
}

LogicalResult StageOp::verifyRegions() {
  // I64Attr getters are unsigned: compare the signed values, and bound the
  // count before building the expected types (hand-written IR may have a
  // range that runs backwards or spans 2^40 layers).
  int64_t first = static_cast<int64_t>(getFirstLayer());
  int64_t count = static_cast<int64_t>(getNumLayers());
  if (first < 0 || count < 1)
    return emitOpError("must own at least one layer from layer 0 on, got ")
           << count << " layers from layer " << first;
  if (first > limits::kMaxModelLayers ||
      count > limits::kMaxModelLayers - first)
    return emitOpError("owns ")
           << count << " layers from layer " << first << ", past the limit of "
           << limits::kMaxModelLayers << " model layers";
  SmallVector<Type> expected =
      getStageStateTypes(getContext(), getFirstLayer(), getNumLayers());
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

/// Checks that a pipeline transfer goes to the right neighbour: activations
/// flow to stage + 1, gradients to stage - 1.
static LogicalResult verifyTransfer(Operation *op, Payload payload,
                                    int64_t microBatch, int64_t peer,
                                    bool isSend) {
  if (microBatch < 0)
    return op->emitOpError("micro-batch must not be negative");
  auto stage = op->getParentOfType<StageOp>();
  auto pipeline = stage->getParentOfType<PipelineOp>();
  int64_t self = stage.getStage();
  bool forward = payload == Payload::Activation;
  int64_t expected = (forward == isSend) ? self + 1 : self - 1;
  if (peer != expected)
    return op->emitOpError("in stage ")
           << self << " must " << (isSend ? "send " : "receive ")
           << stringifyPayload(payload) << (isSend ? " to" : " from")
           << " stage " << expected << ", not " << peer;
  if (pipeline && (peer < 0 || peer >= pipeline.getPlan().getPp()))
    return op->emitOpError("peer stage ")
           << peer << " does not exist in a pipeline of "
           << pipeline.getPlan().getPp() << " stages";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyTransfer(*this, getPayload(), getMicroBatch(), getPeer(),
                        /*isSend=*/true);
}

LogicalResult RecvOp::verify() {
  return verifyTransfer(*this, getPayload(), getMicroBatch(), getPeer(),
                        /*isSend=*/false);
}

//===----------------------------------------------------------------------===//
// Lifecycle
//===----------------------------------------------------------------------===//

LogicalResult SyncOp::verify() {
  Type state = getState().getType();
  Type result = cast<AsyncType>(getPending().getType()).getValue();
  int64_t layer = *getStateLayer(state);
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
  if (result != synced)
    return emitOpError("must produce !ratrain.async<") << synced << ">";
  return success();
}

LogicalResult UpdateOp::verify() {
  int64_t layer = getGrad().getType().getLayer();
  if (getMaster().getType().getLayer() != layer ||
      getOptState().getType().getLayer() != layer)
    return emitOpError("updates layer ")
           << layer << " with the master or optimizer state of another layer";
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
