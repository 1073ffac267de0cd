//===- StageBufferAnalysis.cpp - Buffers of a stage program ---------------===//

#include "ratrain/Analysis/StageBufferAnalysis.h"
#include "ratrain/Analysis/BufferSizes.h"

#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>

using namespace mlir;
using namespace ratrain;

//===----------------------------------------------------------------------===//
// StageBuffer
//===----------------------------------------------------------------------===//

StringRef ratrain::stringifyBufferKind(BufferKind kind) {
  switch (kind) {
  case BufferKind::View:
    return "view";
  case BufferKind::GatheredView:
    return "gathered_view";
  case BufferKind::SecondaryView:
    return "secondary_view";
  case BufferKind::GradientPartition:
    return "grad_partition";
  case BufferKind::Master:
    return "master";
  case BufferKind::OptState:
    return "opt_state";
  case BufferKind::Gradient:
    return "gradient";
  case BufferKind::GradientShard:
    return "gradient_shard";
  case BufferKind::Activation:
    return "activation";
  case BufferKind::Recomputed:
    return "recomputed";
  case BufferKind::Deferred:
    return "deferred";
  case BufferKind::RecvMessage:
    return "recv";
  case BufferKind::SendMessage:
    return "send";
  case BufferKind::Reloaded:
    return "reloaded";
  case BufferKind::GradNorm:
    return "grad_norm";
  case BufferKind::Workspace:
    return "workspace";
  case BufferKind::SyncStaging:
    return "sync_staging";
  case BufferKind::AttentionScratch:
    return "attention_scratch";
  case BufferKind::Other:
    return "other";
  }
  llvm_unreachable("unknown buffer kind");
}

std::string StageBuffer::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  switch (kind) {
  case BufferKind::View:
    os << "view of layer " << layer;
    break;
  case BufferKind::GatheredView:
    os << "gathered view of layer " << layer;
    break;
  case BufferKind::SecondaryView:
    os << "secondary view partition of layer " << layer;
    break;
  case BufferKind::GradientPartition:
    os << "gradient partition of layer " << layer;
    break;
  case BufferKind::Master:
    os << "master of layer " << layer;
    break;
  case BufferKind::OptState:
    os << "opt_state of layer " << layer;
    break;
  case BufferKind::Gradient:
    os << "gradient of layer " << layer;
    break;
  case BufferKind::GradientShard:
    os << "gradient shard of layer " << layer;
    break;
  case BufferKind::Activation:
    os << "activations of layer " << layer << " mb " << microBatch;
    break;
  case BufferKind::Recomputed:
    os << "recomputed activations of layer " << layer << " mb " << microBatch;
    break;
  case BufferKind::Deferred:
    os << "deferred weight-gradient inputs of layer " << layer << " mb "
       << microBatch;
    break;
  case BufferKind::RecvMessage:
  case BufferKind::SendMessage: {
    os << (kind == BufferKind::RecvMessage ? "received " : "outgoing ")
       << (transfer
               ? stringifyPayload(TransferOpInterface(transfer).getPayload())
               : "message")
       << " mb " << microBatch;
    break;
  }
  case BufferKind::Reloaded:
    os << "reloaded state of layer " << layer;
    break;
  case BufferKind::GradNorm:
    os << "global gradient norm";
    break;
  case BufferKind::Workspace:
  case BufferKind::SyncStaging:
  case BufferKind::AttentionScratch:
    os << scratchName;
    break;
  case BufferKind::Other:
    os << "buffer of " << type;
    break;
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Building the buffers
//===----------------------------------------------------------------------===//

namespace ratrain::detail {

/// Builds the buffers of one stage into a StageBufferAnalysis.
class StageBufferBuilder {
public:
  StageBufferBuilder(StageOp stage, StageBufferAnalysis &result)
      : stage(stage), result(result) {}

  void run();

private:
  unsigned newBuffer(BufferKind kind, Type type, int64_t layer, int64_t start,
                     int64_t microBatch = -1) {
    StageBuffer buffer;
    buffer.kind = kind;
    buffer.type = type;
    buffer.layer = layer;
    buffer.microBatch = microBatch;
    buffer.start = buffer.end = start;
    result.buffers.push_back(buffer);
    return result.buffers.size() - 1;
  }
  void join(Value value, unsigned buffer, int64_t position) {
    result.bufferOf[value] = buffer;
    result.buffers[buffer].values.push_back(value);
    extend(buffer, position);
  }
  void extend(unsigned buffer, int64_t position) {
    StageBuffer &b = result.buffers[buffer];
    b.start = std::min(b.start, position);
    b.end = std::max(b.end, position);
  }
  /// Marks a use of `value` at `position`.
  void use(Value value, int64_t position) {
    auto it = result.bufferOf.find(value);
    if (it != result.bufferOf.end())
      extend(it->second, position);
  }
  void visit(Operation *op, int64_t position);

  StageOp stage;
  StageBufferAnalysis &result;
  /// The view buffer of each layer (its block argument's).
  DenseMap<int64_t, unsigned> viewBuffer;
  /// Offload in flight: the async value -> the state it moves out.
  DenseMap<Value, Value> offloading;
  /// States whose offload completed: they are in the tier, not in DDR.
  DenseSet<Value> offloaded;
  /// View prefetch in flight: the async value -> the master it reads.
  DenseMap<Value, Value> prefetchSource;
  /// Gathers in flight from a secondary view partition: the async value ->
  /// the partition it reads.
  DenseMap<Value, Value> asyncSource;
  /// Recvs waiting for their consumer, by (payload, micro-batch).
  DenseMap<std::tuple<int, int64_t, int64_t>, unsigned> pendingRecv;
  /// Position of the last producer of an outgoing message, by (payload,
  /// micro-batch).
  DenseMap<std::tuple<int, int64_t, int64_t>, int64_t> lastProducer;
};

} // namespace ratrain::detail

void ratrain::detail::StageBufferBuilder::visit(Operation *op,
                                                int64_t position) {
  // Boundary layers of the virtual stage (chunk) that owns `layer`.
  auto chunkOf = [&](int64_t layer) { return stage.getChunkOfLayer(layer); };
  // The yield's operands are handled once all ops are visited.
  if (isa<YieldOp>(op))
    return;
  for (Value operand : op->getOperands())
    use(operand, position);

  if (auto forward = dyn_cast<ForwardOp>(op)) {
    ActivationType type = forward.getActivation().getType();
    join(forward.getActivation(),
         newBuffer(BufferKind::Activation, type, type.getLayer(), position,
                   forward.getMicroBatch()),
         position);
    int64_t layer = type.getLayer();
    StageChunkAttr chunk = chunkOf(layer);
    auto key = std::make_tuple(int(Payload::Activation),
                               int64_t(forward.getMicroBatch()),
                               chunk.getVirtualStage());
    if (layer == chunk.getFirstLayer()) {
      auto it = pendingRecv.find(key);
      if (it != pendingRecv.end()) {
        extend(it->second, position);
        pendingRecv.erase(it);
      }
    }
    if (layer == chunk.getEndLayer() - 1)
      lastProducer[key] = position;
    return;
  }
  if (auto recompute = dyn_cast<RecomputeOp>(op)) {
    ActivationType type = recompute.getActivation().getType();
    join(recompute.getActivation(),
         newBuffer(BufferKind::Recomputed, type, type.getLayer(), position,
                   recompute.getMicroBatch()),
         position);
    return;
  }
  // The ops that consume a received gradient and produce the one sent: a
  // fused backward or the input part of a split one.
  auto gradientFlow = [&](int64_t layer, int64_t microBatch) {
    StageChunkAttr chunk = chunkOf(layer);
    auto key = std::make_tuple(int(Payload::Gradient), microBatch,
                               chunk.getVirtualStage());
    if (layer == chunk.getEndLayer() - 1) {
      auto it = pendingRecv.find(key);
      if (it != pendingRecv.end()) {
        extend(it->second, position);
        pendingRecv.erase(it);
      }
    }
    if (layer == chunk.getFirstLayer())
      lastProducer[key] = position;
  };
  // A fused backward or a weight part accumulates into its accumulator's
  // buffer (the first micro-batch starts the gradient's buffer).
  auto accumulate = [&](Value grad, Value acc) {
    int64_t layer = cast<GradType>(grad.getType()).getLayer();
    auto accIt = acc ? result.bufferOf.find(acc) : result.bufferOf.end();
    unsigned buffer =
        accIt != result.bufferOf.end()
            ? accIt->second
            : newBuffer(BufferKind::Gradient, grad.getType(), layer, position);
    join(grad, buffer, position);
  };
  if (auto backward = dyn_cast<BackwardOp>(op)) {
    accumulate(backward.getGrad(), backward.getAcc());
    gradientFlow(backward.getGrad().getType().getLayer(),
                 backward.getMicroBatch());
    return;
  }
  if (auto input = dyn_cast<BackwardInputOp>(op)) {
    Value deferred = input.getDeferred();
    int64_t layer = input.getView().getType().getLayer();
    join(deferred,
         newBuffer(BufferKind::Deferred, deferred.getType(), layer, position,
                   input.getMicroBatch()),
         position);
    gradientFlow(layer, input.getMicroBatch());
    return;
  }
  if (auto weight = dyn_cast<BackwardWeightOp>(op)) {
    accumulate(weight.getGrad(), weight.getAcc());
    return;
  }
  if (auto recv = dyn_cast<RecvOp>(op)) {
    unsigned buffer = newBuffer(BufferKind::RecvMessage, Type(), -1, position,
                                recv.getMicroBatch());
    result.buffers[buffer].transfer = cast<TransferOpInterface>(op);
    result.transferBuffer[op] = buffer;
    pendingRecv[{int(recv.getPayload()), int64_t(recv.getMicroBatch()),
                 recv.getVirtualStage()}] = buffer;
    return;
  }
  if (auto send = dyn_cast<SendOp>(op)) {
    auto key =
        std::make_tuple(int(send.getPayload()), int64_t(send.getMicroBatch()),
                        send.getVirtualStage());
    auto it = lastProducer.find(key);
    int64_t start = it != lastProducer.end() ? it->second : position;
    unsigned buffer = newBuffer(BufferKind::SendMessage, Type(), -1, start,
                                send.getMicroBatch());
    extend(buffer, position);
    result.buffers[buffer].transfer = cast<TransferOpInterface>(op);
    result.transferBuffer[op] = buffer;
    return;
  }
  if (auto ready = dyn_cast<GradReadyOp>(op)) {
    auto it = result.bufferOf.find(ready.getGrad());
    if (it != result.bufferOf.end())
      join(ready.getReady(), it->second, position);
    return;
  }
  if (auto sync = dyn_cast<SyncOp>(op)) {
    // ZeRO-3: the full view is gathered from the shard into a buffer of its
    // own, written from the gather's issue on.
    auto pipeline = stage->getParentOfType<PipelineOp>();
    if (sync.getKind() == SyncKind::AllGather && pipeline &&
        pipeline.getPlan().getZero() >= 3) {
      Type type = sync.getState().getType();
      // Partitioned: a gather across a level with more than one member
      // inside it fills the secondary partition; the gathers inside read it
      // until they complete.
      bool secondary = sync.getScope() == SyncScope::Across &&
                       *sync.getMembers() < pipeline.getPlan().getDp();
      unsigned buffer = newBuffer(
          secondary ? BufferKind::SecondaryView : BufferKind::GatheredView,
          type, getStateLayer(type).value_or(-1), position);
      if (secondary)
        result.buffers[buffer].shards = *sync.getMembers();
      join(sync.getPending(), buffer, position);
      if (!isa<BlockArgument>(sync.getState()))
        asyncSource[sync.getPending()] = sync.getState();
      return;
    }
    auto it = result.bufferOf.find(sync.getState());
    if (it != result.bufferOf.end())
      join(sync.getPending(), it->second, position);
    return;
  }
  if (auto wait = dyn_cast<WaitOp>(op)) {
    auto off = offloading.find(wait.getPending());
    if (off != offloading.end()) {
      // The state leaves DDR once the offload completes.
      use(off->second, position);
      offloaded.insert(off->second);
      return;
    }
    auto prefetch = prefetchSource.find(wait.getPending());
    if (prefetch != prefetchSource.end())
      // The cast reads the master until it completes.
      use(prefetch->second, position);
    auto source = asyncSource.find(wait.getPending());
    if (source != asyncSource.end())
      // A gather inside a level reads the secondary partition until then.
      use(source->second, position);
    auto it = result.bufferOf.find(wait.getPending());
    if (it == result.bufferOf.end())
      return;
    auto sync = dyn_cast_or_null<SyncOp>(wait.getPending().getDefiningOp());
    // Over a group of one the shard is the whole gradient, in place.
    auto pipeline = stage->getParentOfType<PipelineOp>();
    bool sharded = !pipeline || pipeline.getPlan().getDp() > 1;
    if (sync && pipeline && sync.getKind() == SyncKind::ReduceScatter &&
        sharded && sync.getScope() == SyncScope::Inside &&
        sync.getPending().getType() ==
            AsyncType::get(sync.getContext(), sync.getState().getType())) {
      // Partitioned: the full gradient is free once the reduce-scatter
      // inside a level completes; the level's partition lands in a buffer
      // of its own, read by the reduce-scatter across the level.
      Type type = wait.getValue().getType();
      unsigned buffer = newBuffer(BufferKind::GradientPartition, type,
                                  getStateLayer(type).value_or(-1), position);
      result.buffers[buffer].shards =
          pipeline.getPlan().getDp() / *sync.getMembers();
      join(wait.getValue(), buffer, position);
      return;
    }
    if (sync && sync.getKind() == SyncKind::ReduceScatter && sharded) {
      // The full gradient is free once the reduce-scatter completes; this
      // rank's shard lands in a buffer of its own.
      Type type = wait.getValue().getType();
      join(wait.getValue(),
           newBuffer(BufferKind::GradientShard, type,
                     getStateLayer(type).value_or(-1), position),
           position);
      return;
    }
    join(wait.getValue(), it->second, position);
    return;
  }
  if (auto update = dyn_cast<UpdateOp>(op)) {
    auto master = result.bufferOf.find(update.getMaster());
    if (master != result.bufferOf.end())
      join(update.getNewMaster(), master->second, position);
    auto opt = result.bufferOf.find(update.getOptState());
    if (opt != result.bufferOf.end())
      join(update.getNewOptState(), opt->second, position);
    return;
  }
  if (auto prefetch = dyn_cast<ViewPrefetchOp>(op)) {
    // The new view is written over the layer's view buffer.
    int64_t layer = prefetch.getMaster().getType().getLayer();
    auto it = viewBuffer.find(layer);
    if (it != viewBuffer.end())
      join(prefetch.getPending(), it->second, position);
    prefetchSource[prefetch.getPending()] = prefetch.getMaster();
    return;
  }
  if (auto offload = dyn_cast<OffloadOp>(op)) {
    offloading[offload.getPending()] = offload.getState();
    return;
  }
  if (auto reload = dyn_cast<ReloadOp>(op)) {
    Type state = cast<AsyncType>(reload.getPending().getType()).getValue();
    join(reload.getPending(),
         newBuffer(BufferKind::Reloaded, state,
                   getStateLayer(state).value_or(-1), position),
         position);
    return;
  }
  if (auto norm = dyn_cast<GradNormOp>(op)) {
    join(norm.getPending(),
         newBuffer(BufferKind::GradNorm, norm.getPending().getType(), -1,
                   position),
         position);
    return;
  }
  if (isa<YieldOp>(op))
    return;
  // Unknown ops: each result is a buffer of its own.
  for (Value value : op->getResults())
    join(value,
         newBuffer(BufferKind::Other, value.getType(),
                   getStateLayer(value.getType()).value_or(-1), position),
         position);
}

void ratrain::detail::StageBufferBuilder::run() {
  Block &body = stage.getBody().front();
  for (Operation &op : body) {
    result.position[&op] = result.ops.size();
    result.ops.push_back(&op);
  }
  int64_t stepEnd = result.getStepEnd();
  for (BlockArgument arg : body.getArguments()) {
    Type type = arg.getType();
    int64_t layer = *getStateLayer(type);
    BufferKind kind = isa<ViewType>(type)     ? BufferKind::View
                      : isa<MasterType>(type) ? BufferKind::Master
                                              : BufferKind::OptState;
    unsigned buffer = newBuffer(kind, type, layer, -1);
    join(arg, buffer, -1);
    if (kind == BufferKind::View)
      viewBuffer[layer] = buffer;
  }
  for (auto [position, op] : llvm::enumerate(result.ops))
    visit(op, position);
  // The states returned for the next step live to the end, except those
  // written back to the offload tier.
  for (Value value : stage.getYield().getStates())
    if (!offloaded.contains(value))
      use(value, stepEnd);
  // Layer states persist across steps even when the yield returns another
  // value of the same buffer; so does a ZeRO-2 gradient shard.
  for (StageBuffer &buffer : result.buffers)
    if (buffer.kind == BufferKind::View || buffer.kind == BufferKind::Master ||
        buffer.kind == BufferKind::OptState ||
        buffer.kind == BufferKind::GradientShard) {
      buffer.start = -1;
      buffer.end = stepEnd;
    }
  result.numValueBuffers = result.buffers.size();
}

//===----------------------------------------------------------------------===//
// StageBufferAnalysis
//===----------------------------------------------------------------------===//

StageBufferAnalysis::StageBufferAnalysis(Operation *op)
    : stage(cast<StageOp>(op)) {
  ratrain::detail::StageBufferBuilder(stage, *this).run();
}

std::optional<unsigned> StageBufferAnalysis::lookupBuffer(Value value) const {
  auto it = bufferOf.find(value);
  if (it == bufferOf.end())
    return std::nullopt;
  return it->second;
}

std::optional<unsigned>
StageBufferAnalysis::lookupTransferBuffer(Operation *op) const {
  auto it = transferBuffer.find(op);
  if (it == transferBuffer.end())
    return std::nullopt;
  return it->second;
}

std::string StageBufferAnalysis::describeOp(int64_t position) const {
  Operation *op = getOp(position);
  if (auto scheduleOp = dyn_cast<ScheduleOpInterface>(op))
    return scheduleOp.describe();
  return op->getName().getStringRef().str();
}

void StageBufferAnalysis::reset() {
  buffers.truncate(numValueBuffers);
  for (StageBuffer &buffer : buffers)
    buffer.bytes = buffer.offset = 0;
}

SmallVector<int64_t> StageBufferAnalysis::computeLiveBytes() const {
  // Difference array over positions -1 .. getStepEnd().
  int64_t count = getStepEnd() + 2;
  SmallVector<int64_t> delta(count + 1, 0);
  for (const StageBuffer &buffer : buffers) {
    if (buffer.bytes == 0)
      continue;
    delta[buffer.start + 1] += buffer.bytes;
    delta[buffer.end + 2] -= buffer.bytes;
  }
  SmallVector<int64_t> live(count, 0);
  int64_t running = 0;
  for (int64_t i = 0; i < count; ++i) {
    running += delta[i];
    live[i] = running;
  }
  return live;
}

void StageBufferAnalysis::size(const BufferSizes &sizes) {
  reset();
  for (StageBuffer &buffer : buffers) {
    switch (buffer.kind) {
    case BufferKind::View:
      buffer.bytes = sizes.residentViewBytes(buffer.layer);
      break;
    case BufferKind::GatheredView:
      buffer.bytes = sizes.viewBytes(buffer.layer);
      break;
    case BufferKind::SecondaryView:
      buffer.bytes = sizes.residentViewBytes(buffer.layer) * buffer.shards;
      break;
    case BufferKind::GradientPartition:
      buffer.bytes = sizes.gradShardBytes(buffer.layer) * buffer.shards;
      break;
    case BufferKind::Master:
      buffer.bytes = sizes.residentMasterBytes(buffer.layer);
      break;
    case BufferKind::OptState:
      buffer.bytes = sizes.residentOptStateBytes(buffer.layer);
      break;
    case BufferKind::Gradient:
      buffer.bytes = sizes.gradBytes(buffer.layer);
      break;
    case BufferKind::GradientShard:
      buffer.bytes = sizes.gradShardBytes(buffer.layer);
      break;
    case BufferKind::Activation:
    case BufferKind::Recomputed:
      buffer.bytes = sizes.activationBytes(
          buffer.layer, cast<ActivationType>(buffer.type).getKind());
      break;
    case BufferKind::Deferred:
      buffer.bytes = sizes.deferredBytes(buffer.layer);
      break;
    case BufferKind::RecvMessage:
    case BufferKind::SendMessage:
      buffer.bytes = sizes.boundaryBytes();
      break;
    case BufferKind::Reloaded: {
      Type type = buffer.type;
      if (isa<ViewType>(type))
        buffer.bytes = sizes.viewBytes(buffer.layer);
      else if (isa<MasterType>(type))
        buffer.bytes = sizes.streamedMasterBytes(buffer.layer);
      else if (isa<OptStateType>(type))
        buffer.bytes = sizes.streamedOptStateBytes(buffer.layer);
      else if (isa<GradType>(type))
        buffer.bytes = sizes.gradBytes(buffer.layer);
      else if (auto act = dyn_cast<ActivationType>(type))
        buffer.bytes = sizes.activationBytes(buffer.layer, act.getKind());
      break;
    }
    case BufferKind::GradNorm:
      buffer.bytes = 4; // one f32
      break;
    case BufferKind::Workspace:
    case BufferKind::SyncStaging:
    case BufferKind::AttentionScratch:
    case BufferKind::Other:
      break;
    }
  }
  // Scratch is shared by the rank's virtual stages: the largest of them.
  auto largest = [&](auto bytesOf) {
    int64_t bytes = 0;
    for (StageChunkAttr chunk : stage.getChunkList())
      bytes = std::max(bytes, bytesOf(chunk.getVirtualStage()));
    return bytes;
  };
  auto addScratch = [&](BufferKind kind, StringRef name, int64_t bytes) {
    StageBuffer buffer;
    buffer.kind = kind;
    buffer.scratchName = name;
    buffer.start = -1;
    buffer.end = getStepEnd();
    buffer.bytes = bytes;
    buffers.push_back(buffer);
  };
  addScratch(BufferKind::Workspace, "workspace",
             largest([&](int64_t c) { return sizes.workspaceBytes(c); }));
  addScratch(BufferKind::SyncStaging, "sync_staging",
             largest([&](int64_t c) { return sizes.syncStagingBytes(c); }));
  addScratch(
      BufferKind::AttentionScratch, "attention_scratch",
      largest([&](int64_t c) { return sizes.attentionScratchBytes(c); }));
}

FailureOr<bool> StageBufferAnalysis::readAssigned() {
  reset();
  MLIRContext *context = stage->getContext();
  RATrainDialect::BuffersAttrHelper buffersAttr(context);
  RATrainDialect::ArgBuffersAttrHelper argBuffersAttr(context);
  RATrainDialect::ScratchBuffersAttrHelper scratchBuffersAttr(context);
  DenseI64ArrayAttr args = argBuffersAttr.getAttr(stage);
  if (!args)
    return false;
  Block &body = stage.getBody().front();
  if (args.size() != int64_t(3 * body.getNumArguments()))
    return stage.emitOpError("'") << argBuffersAttr.getName().getValue()
                                  << "' must hold 3 integers per state",
           failure();

  // Buffer index -> (id, offset, bytes) as first recorded.
  DenseMap<unsigned, std::array<int64_t, 3>> recorded;
  auto record = [&](unsigned buffer, ArrayRef<int64_t> triple,
                    Operation *where) -> LogicalResult {
    std::array<int64_t, 3> value = {triple[0], triple[1], triple[2]};
    auto [it, inserted] = recorded.try_emplace(buffer, value);
    if (!inserted && it->second != value)
      return where->emitOpError("records buffer [")
             << value[0] << ", " << value[1] << ", " << value[2]
             << "] for a value of " << buffers[buffer].describe()
             << ", which is recorded elsewhere as [" << it->second[0] << ", "
             << it->second[1] << ", " << it->second[2] << "]";
    return success();
  };
  for (BlockArgument arg : body.getArguments()) {
    auto it = bufferOf.find(arg);
    if (it != bufferOf.end() &&
        failed(record(it->second,
                      args.asArrayRef().slice(3 * arg.getArgNumber(), 3),
                      stage)))
      return failure();
  }
  for (Operation *op : ops) {
    DenseI64ArrayAttr attr = buffersAttr.getAttr(op);
    if (!attr)
      continue;
    ArrayRef<int64_t> values = attr.asArrayRef();
    auto transfer = transferBuffer.find(op);
    if (transfer != transferBuffer.end()) {
      if (values.size() != 3)
        return op->emitOpError("'") << buffersAttr.getName().getValue()
                                    << "' of a transfer must hold 3 integers",
               failure();
      if (failed(record(transfer->second, values, op)))
        return failure();
      continue;
    }
    if (values.size() != 3 * op->getNumResults())
      return op->emitOpError("'") << buffersAttr.getName().getValue()
                                  << "' must hold 3 integers per result",
             failure();
    for (OpResult result : op->getResults()) {
      auto it = bufferOf.find(result);
      if (it != bufferOf.end() &&
          failed(record(it->second,
                        values.slice(3 * result.getResultNumber(), 3), op)))
        return failure();
    }
  }
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    auto it = recorded.find(index);
    if (it == recorded.end())
      continue;
    buffer.offset = it->second[1];
    buffer.bytes = it->second[2];
  }
  if (DictionaryAttr scratch = scratchBuffersAttr.getAttr(stage)) {
    for (NamedAttribute entry : scratch) {
      auto triple = dyn_cast<DenseI64ArrayAttr>(entry.getValue());
      if (!triple || triple.size() != 3)
        return stage.emitOpError("scratch buffer '")
                   << entry.getName().getValue()
                   << "' must be array<i64: id, offset, bytes>",
               failure();
      StageBuffer buffer;
      buffer.kind = BufferKind::Workspace;
      buffer.scratchName = entry.getName().getValue();
      buffer.start = -1;
      buffer.end = getStepEnd();
      buffer.offset = triple[1];
      buffer.bytes = triple[2];
      buffers.push_back(buffer);
    }
  }
  return true;
}
