//===- LowerToMT3K.cpp - Scheduled ratrain pipeline to mt3k programs ------===//
//
// --ratrain-lower-to-mt3k: every stage of a scheduled, buffer-assigned
// `ratrain.pipeline` becomes one `mt3k.program` that a rank of that stage
// runs for one training step: buffers at the assigned DDR offsets, the
// LLaMA layer kernels, AdamW through GSM staging, collectives on the
// data-parallel group and point-to-point transfers on the pipeline group,
// with tokens waited where the schedule waits (or earlier, where an
// operation would otherwise touch memory still in flight). The mapping, the
// buffer layouts and what an emitter does per op are in docs/lowering.md.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Conversion/Passes.h"

#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KOps.h"
#include "RATrain/RATrainOps.h"
#include "ratrain/Planner/MemoryModel.h"
#include "ratrain/Transforms/PassUtils.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>

namespace ratrain {
#define GEN_PASS_DEF_RATRAINLOWERTOMT3K
#include "ratrain/Conversion/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;
namespace mt = ratrain::mt3k;

namespace {

//===----------------------------------------------------------------------===//
// Parameter tensors and slot layouts
//===----------------------------------------------------------------------===//

/// One parameter tensor of a layer: its HuggingFace name, shape, initial
/// value and position (in elements) inside the layer's flat state buffers.
struct ParamTensor {
  std::string name;
  SmallVector<int64_t, 2> shape;
  mt::InitKind init = mt::InitKind::normal;
  int64_t offset = 0; ///< elements from the start of the layer's buffers
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// The model sizes the lowering needs.
struct Dims {
  int64_t batch = 1, seq = 1, tokens = 1; ///< b, s, T = b * s
  int64_t hidden = 0, heads = 0, kvHeads = 0, headDim = 0, ffn = 0;
  int64_t vocab = 0, qDim = 0, kvDim = 0;
  int64_t microBatches = 1;
  bool qkvBias = false;
  /// ALiBi position bias in attention instead of rotary embeddings
  /// (Baichuan2-13B).
  bool alibi = false;
  /// Baichuan: q, k, v are one packed `self_attn.W_pack.weight`
  /// ([qDim + 2 kvDim, h], rows q then k then v), as in HF checkpoints.
  bool packedQkv = false;
  /// Baichuan2's NormHead: the LM head computes with its weight's vocabulary
  /// rows L2-normalized (`ratrain.model ... norm_head`).
  bool normHead = false;
};

/// The tensors of a model layer in the order they sit in its flat view,
/// master, gradient and Adam buffers (HF names, so a checkpoint maps 1:1).
SmallVector<ParamTensor> layerTensors(LayerOp layer, const Dims &dims) {
  SmallVector<ParamTensor> tensors;
  int64_t offset = 0;
  auto add = [&](std::string name, SmallVector<int64_t, 2> shape,
                 mt::InitKind init) {
    ParamTensor tensor{std::move(name), std::move(shape), init, offset};
    offset += tensor.numel();
    tensors.push_back(std::move(tensor));
  };
  int64_t h = dims.hidden;
  switch (layer.getKind()) {
  case LayerKind::Embedding:
    add("model.embed_tokens.weight", {dims.vocab, h}, mt::InitKind::normal);
    break;
  case LayerKind::Head:
    add("model.norm.weight", {h}, mt::InitKind::ones);
    add("lm_head.weight", {dims.vocab, h}, mt::InitKind::normal);
    break;
  case LayerKind::Decoder: {
    std::string p = llvm::formatv("model.layers.{0}.", layer.getIndex() - 1);
    add(p + "input_layernorm.weight", {h}, mt::InitKind::ones);
    if (dims.packedQkv) {
      // The same rows as q_proj, k_proj, v_proj one after the other; the
      // kernels read them as three views (StageLowering::weights).
      add(p + "self_attn.W_pack.weight", {dims.qDim + 2 * dims.kvDim, h},
          mt::InitKind::normal);
    } else {
      add(p + "self_attn.q_proj.weight", {dims.qDim, h}, mt::InitKind::normal);
      add(p + "self_attn.k_proj.weight", {dims.kvDim, h}, mt::InitKind::normal);
      add(p + "self_attn.v_proj.weight", {dims.kvDim, h}, mt::InitKind::normal);
    }
    if (dims.qkvBias) {
      add(p + "self_attn.q_proj.bias", {dims.qDim}, mt::InitKind::zeros);
      add(p + "self_attn.k_proj.bias", {dims.kvDim}, mt::InitKind::zeros);
      add(p + "self_attn.v_proj.bias", {dims.kvDim}, mt::InitKind::zeros);
    }
    add(p + "self_attn.o_proj.weight", {h, dims.qDim}, mt::InitKind::normal);
    add(p + "post_attention_layernorm.weight", {h}, mt::InitKind::ones);
    add(p + "mlp.gate_proj.weight", {dims.ffn, h}, mt::InitKind::normal);
    add(p + "mlp.up_proj.weight", {dims.ffn, h}, mt::InitKind::normal);
    add(p + "mlp.down_proj.weight", {h, dims.ffn}, mt::InitKind::normal);
    break;
  }
  }
  return tensors;
}

/// The name prefix of a layer's flat buffers.
std::string layerPrefix(LayerOp layer) {
  switch (layer.getKind()) {
  case LayerKind::Embedding:
    return "model.embed_tokens";
  case LayerKind::Head:
    return "lm_head";
  case LayerKind::Decoder:
    break;
  }
  return llvm::formatv("model.layers.{0}", layer.getIndex() - 1);
}

/// `value` rounded up to a multiple of `alignment`.
int64_t alignTo(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// Bump allocation of slots inside a byte range, each slot aligned.
struct SlotAllocator {
  int64_t alignment = 64;
  int64_t size = 0;
  int64_t take(int64_t bytes) {
    int64_t offset = alignTo(size, alignment);
    size = offset + bytes;
    return offset;
  }
};

/// What a decoder layer's forward keeps for its backward: the planner's
/// layout (ratrain/Planner/MemoryModel.h), so the memory model counts what
/// the lowering stores.
using DecoderLayout = DecoderActivationLayout;

/// The planner's shape of a decoder layer of `d`.
LayerShape layerShape(const Dims &d) {
  LayerShape shape;
  shape.tokens = d.tokens;
  shape.hidden = d.hidden;
  shape.heads = d.heads;
  shape.qDim = d.qDim;
  shape.kvDim = d.kvDim;
  shape.ffn = d.ffn;
  shape.qkvBias = d.qkvBias;
  return shape;
}

/// The layout of a decoder layer's stored activations at `w` bytes per
/// element; `hact` is stored when the layout with it fits in `available`.
DecoderLayout decoderLayout(const Dims &d, int64_t w, int64_t available,
                            int64_t alignment) {
  return decoderActivationLayout(layerShape(d), w, available, alignment);
}

/// Byte offsets of the head's stored activations: the final-norm input and
/// output, the logits (overwritten in place by their gradient in the
/// forward), 1/rms, the loss and the labels.
struct HeadLayout {
  int64_t x, xn, logits, rstd, loss, labels, bytes;
};

/// The layout of the head's stored activations at `w` bytes per element.
HeadLayout headLayout(const Dims &d, int64_t w, int64_t alignment) {
  HeadLayout l;
  SlotAllocator a{alignment};
  int64_t T = d.tokens;
  l.x = a.take(T * d.hidden * w);
  l.xn = a.take(T * d.hidden * w);
  l.logits = a.take(T * d.vocab * w);
  l.rstd = a.take(T * 4);
  l.loss = a.take(4);
  l.labels = a.take(T * 4);
  l.bytes = a.size;
  return l;
}

/// Byte offsets of the NormHead slots in the region `scratch.normhead`: the
/// normalized LM-head weight (the forward's and backward's GEMM operand; the
/// Jacobian's output before it is copied into the gradient), 1/rms of its
/// rows, the RMSNorm weight 1/sqrt(h) that turns RMSNorm into an L2
/// normalization, and the RMSNorm weight gradient the Jacobian discards.
struct NormHeadLayout {
  int64_t weight, rnorm, gamma, dgamma, bytes;
};

/// The NormHead scratch layout at `w` bytes per element.
NormHeadLayout normHeadLayout(const Dims &d, int64_t w, int64_t alignment) {
  NormHeadLayout l;
  SlotAllocator a{alignment};
  l.weight = a.take(d.vocab * d.hidden * w);
  l.rnorm = a.take(d.vocab * 4);
  l.gamma = a.take(d.hidden * w);
  l.dgamma = a.take(d.hidden * w);
  l.bytes = a.size;
  return l;
}

/// The RMSNorm epsilon of the NormHead normalization: rms = sqrt(||w||^2 / h
/// + eps) with eps = 1e-24 / h is ||w|| / sqrt(h) up to F.normalize's
/// max(||w||, 1e-12) (both are exact for rows with ||w||^2 >> 1e-24, and a
/// zero row maps to zero either way).
double normHeadEps(int64_t hidden) { return 1e-24 / double(hidden); }

/// A byte range of one memory space (absolute, through views).
struct Range {
  mt::MemorySpace space = mt::MemorySpace::ddr;
  int64_t begin = 0, end = 0;
  bool overlaps(const Range &other) const {
    return space == other.space && begin < other.end && other.begin < end;
  }
};

/// An asynchronous operation whose token has not been waited on yet.
struct InFlight {
  Value token;
  SmallVector<Range, 2> reads, writes;
};

/// Marks the `mt3k.offload` and `mt3k.wait` ops of a program's prologue
/// that put the initialized offloaded states into the tier (they run once,
/// before the iteration; see the mt3k program verifier).
constexpr llvm::StringLiteral kPrologueAttr = "mt3k.prologue";

/// The pass options a stage lowering uses.
struct LoweringOptions {
  double lr, beta1, beta2, eps, weightDecay, initStd;
  int64_t alignment;
};

//===----------------------------------------------------------------------===//
// Stage lowering
//===----------------------------------------------------------------------===//

/// Lowers one `ratrain.stage` into one `mt3k.program`.
class StageLowering {
public:
  StageLowering(ModelOp model, PipelineOp pipeline, StageOp stage,
                const MachineModel &machine, const LoweringOptions &options,
                const Dims &dims, Type elementType, OpBuilder &moduleBuilder)
      : model(model), pipeline(pipeline), stage(stage), machine(machine),
        options(options), dims(dims), elem(elementType),
        ctx(model.getContext()), b(ctx), pro(ctx),
        moduleBuilder(moduleBuilder) {}

  /// Checks the stage and plans the lowering scratch area; emits an error
  /// and fails when the stage cannot be lowered.
  LogicalResult plan();
  /// The largest power of two (up to the alignment) dividing every assigned
  /// offset of the stage (after plan()).
  int64_t getOffsetAlignment() const { return offsetAlignment; }
  /// Creates the program (after plan()).
  LogicalResult lower();

private:
  // Sizes and types.
  int64_t elemBytes() const { return getDTypeBytes(dtype); }
  bool isF32Model() const { return elem.isF32(); }
  mt::BufferType ddrType(ArrayRef<int64_t> shape, Type type) const {
    return mt::BufferType::get(mt::MemorySpace::ddr, shape, type);
  }

  // Assigned buffers.
  std::optional<std::array<int64_t, 2>> assigned(Value value);
  std::optional<std::array<int64_t, 2>> assignedMessage(Operation *transfer);
  LayerOp layerOp(int64_t index) { return layers[index]; }

  // Buffers and views (created in the prologue, memoized).
  Value base(mt::MemorySpace space, StringRef name, int64_t offset,
             int64_t bytes);
  Value ddrBase(StringRef name, int64_t offset, int64_t bytes) {
    return base(mt::MemorySpace::ddr, name, offset, bytes);
  }
  Value slot(Value source, int64_t byteOffset, ArrayRef<int64_t> shape,
             Type type);
  Value scratch(StringRef name, int64_t offset, ArrayRef<int64_t> shape,
                Type type);
  Value stateBase(Value state, StringRef role, int64_t layer);
  Value tensorOf(Value flat, const ParamTensor &tensor, Type type,
                 ArrayRef<int64_t> shape = {});

  // Hazards and tokens.
  std::optional<Range> rangeOf(Value buffer) const;
  void resolve(ArrayRef<Value> reads, ArrayRef<Value> writes);
  void track(Value token, ArrayRef<Value> reads, ArrayRef<Value> writes);
  void waitTokens(ArrayRef<Value> tokens);

  // Kernel helpers (each resolves hazards first).
  void gemm(Value a, Value bm, Value c, bool ta, bool tb, bool acc);
  void copy(Value from, Value to);
  void elementwise(mt::ElementwiseKind kind, ArrayRef<Value> ins,
                   ArrayRef<Value> outs, std::optional<double> theta = {},
                   std::optional<double> scale = {});
  void rmsnormFwd(Value x, Value w, Value y, Value rstd);
  void rmsnormBwd(Value x, Value w, Value rstd, Value dy, Value dx, Value dw,
                  bool acc);

  // Layer pieces.
  struct LayerWeights {
    SmallVector<Value> tensors; ///< in layerTensors order, shaped
    Value get(StringRef suffix) const;
    const SmallVector<ParamTensor> *names = nullptr;
    /// Views inside a packed tensor by the name of the tensor they stand
    /// for (Baichuan's W_pack: q_proj, k_proj and v_proj).
    SmallVector<std::pair<std::string, Value>, 3> views;
  };
  LayerWeights weights(Value flat, int64_t layer, Type type);
  struct DecoderActs {
    Value x, xn1, q2, k2, v2, o2, q4, k4, v4, o4, x2, xn2, gate, up, hact;
    Value rstd1, rstd2, lse;
  };
  DecoderActs decoderActs(Value inputBase, Value restBase, int64_t restOffset,
                          bool hactStored);
  Value flowInput(int64_t layer, int64_t mb);
  Value flowOutput(int64_t layer, int64_t mb);
  Value gradInput(int64_t layer, int64_t mb);
  Value gradOutput(int64_t layer, int64_t mb);
  Value matrix(Value buffer, int64_t cols);

  void emitDecoderForward(const LayerWeights &w, const DecoderActs &a,
                          Value src, Value dst);
  void emitDecoderBackward(const LayerWeights &w, const LayerWeights &g,
                           const DecoderActs &a, Value dy, Value dx, bool acc);
  void emitHeadForward(const LayerWeights &w, Value act, int64_t mb, Value src);
  void emitHeadBackward(const LayerWeights &w, const LayerWeights &g, Value act,
                        Value dx, bool acc);
  /// The LM-head weight the head's GEMMs use: the view, or with a NormHead
  /// its row-normalized copy in scratch.normhead, computed by the first call
  /// of the step (the view does not change within a step).
  Value headWeight(const LayerWeights &w);
  /// NormHead: maps the gradient of the normalized weight, accumulated in
  /// the LM-head gradient by the backward GEMMs, through the normalization's
  /// Jacobian into the gradient of the weight (at the head's grad_ready).
  void emitNormHeadJacobian(GradReadyOp op);

  // ratrain ops.
  LogicalResult lowerForward(ForwardOp op);
  LogicalResult lowerRecompute(RecomputeOp op);
  LogicalResult lowerBackward(BackwardOp op);
  LogicalResult lowerSync(SyncOp op);
  LogicalResult lowerUpdate(UpdateOp op);
  /// AdamW over `n` elements of grad, master, m, v (the refreshed view into
  /// `viewDest` when set), `chunk` elements per GSM staging slot; the view
  /// DMAs' tokens go to `tokens`.
  LogicalResult updateRange(Value grad, Value master, Value m, Value v,
                            Value viewDest, int64_t n, int64_t chunk,
                            SmallVector<Value> &tokens);
  void lowerTransfer(Operation *op, bool send);
  void lowerReload(ReloadOp op);
  void lowerOffload(OffloadOp op);
  LogicalResult emitPrologue();

  // Offloaded states (plan offload = optimizer | master).
  /// A master or optimizer state the plan keeps in the offload tier between
  /// steps: its tier key, tier, and the DDR window the step reloads it into
  /// (the assigned buffer of its reload), which the prologue also uses to
  /// initialize it before the first offload.
  struct OffloadedState {
    std::string key;
    mt::StorageTier tier = mt::StorageTier::host;
    int64_t windowOffset = 0, windowBytes = 0;
    /// The window holds less than the state: it is streamed through the
    /// window's two halves in chunks of streamChunk[layer] elements.
    bool streamed = false;
  };
  /// One piece of a chunk of a streamed state in a half of its window: the
  /// bytes and their tier key, `<key>@<byte offset>` in the state's unchunked
  /// layout (the host tier keeps the pieces of a key in one copy).
  struct StatePiece {
    Value bytes;
    std::string key;
  };
  /// Whether `layer`'s state of `role` is offloaded and streamed in chunks.
  bool streamed(int64_t layer, StringRef role) {
    auto it = offloaded.find(offloadKey(layer, role));
    return it != offloaded.end() && it->second.streamed;
  }
  /// The pieces of elements [start, start + count) of `layer`'s streamed
  /// state of `role` in half `half` of its window: the master's, or Adam
  /// m's (at byte 0 of the half) and v's (at 4 x the chunk's elements).
  SmallVector<StatePiece, 2> chunkPieces(int64_t layer, StringRef role,
                                         int64_t start, int64_t count,
                                         int64_t half);
  /// The f32 view of the moment or master `sub` (0: master or m, 1: v) of
  /// a chunk of `count` elements of a streamed state in half `half`.
  Value chunkView(int64_t layer, StringRef role, int64_t sub, int64_t count,
                  int64_t half);
  /// Reloads (`reload`) or offloads the pieces of a chunk of every streamed
  /// state of `layer`, tracking their tokens.
  SmallVector<Value> streamChunkOf(int64_t layer, int64_t start, int64_t half,
                                   bool reload);
  /// The prologue of a streamed state: initialized chunk by chunk in its
  /// window and offloaded piece by piece.
  void prologueStream(int64_t layer, StringRef role,
                      ArrayRef<ParamTensor> tensors);
  /// `ratrain.dp_shard_tensors` of a ZeRO master shard init:
  /// "name:offset:numel:init" per tensor of the flattened layer.
  ArrayAttr shardTensorsAttr(ArrayRef<ParamTensor> tensors) {
    SmallVector<Attribute> pieces;
    for (const ParamTensor &tensor : tensors)
      pieces.push_back(StringAttr::get(
          ctx, llvm::formatv("{0}:{1}:{2}:{3}", tensor.name, tensor.offset,
                             tensor.numel(), mt::stringifyInitKind(tensor.init))
                   .str()));
    return ArrayAttr::get(ctx, pieces);
  }
  /// The tier key of `layer`'s state of `role` ("master" or "adam").
  std::string offloadKey(int64_t layer, StringRef role) {
    return llvm::formatv("{0}.{1}", layerPrefix(layerOp(layer)), role);
  }
  /// Finds the stage's offloaded states; fails when one cannot be lowered.
  LogicalResult planOffloads();
  /// Offloads the first `bytes` of `flat` (the initialized window of an
  /// offloaded state) in the prologue and waits for it.
  void prologueOffload(Value flat, int64_t bytes, const OffloadedState &state);
  /// The flat DDR window `layer`'s offloaded state of `role` is reloaded
  /// into (and initialized in, in the prologue).
  Value offloadWindow(int64_t layer, StringRef role);
  /// Bytes of `layer`'s offloaded state of `role`: the f32 master, or Adam m
  /// and v (this rank's shard with ZeRO).
  int64_t offloadedBytes(int64_t layer, StringRef role) {
    int64_t n = zero() ? shardElements(layer) : layerParams(layer);
    return role == "adam" ? 8 * n : 4 * n;
  }

  Value actBase(Value act, int64_t layer, int64_t mb);
  Value gradFlat(Value grad, int64_t layer);
  int64_t layerParams(int64_t layer) { return getLayerParams(layerOp(layer)); }
  int64_t shardElements(int64_t layer) {
    return layerParams(layer) / plan_.getDp();
  }
  bool zero() const { return plan_.getZero() > 0; }
  /// This rank's gradient shard of `layer`: the buffer assignment gave it
  /// (ZeRO-2 over dp > 1: the value of the reduce-scatter's wait), or a
  /// region of the lowering's area (ZeRO-1).
  Value gradShard(int64_t layer) {
    int64_t n = shardElements(layer);
    auto assignedShard = assignedGradShard.find(layer);
    if (assignedShard == assignedGradShard.end())
      return scratch(llvm::formatv("zero.grad_shard.layer{0}", layer).str(),
                     gradShardOff.lookup(layer), {n}, elem);
    std::string name =
        llvm::formatv("{0}.grad_shard", layerPrefix(layerOp(layer)));
    auto [offset, bytes] = assignedShard->second;
    return slot(ddrBase(name, offset, bytes), 0, {n}, elem);
  }
  /// ZeRO with an FP32 model: this rank's persistent master shard, in the
  /// lowering's area (the assigned master is the full view).
  Value masterShard(int64_t layer) {
    return scratch(llvm::formatv("zero.master_shard.layer{0}", layer).str(),
                   masterShardOff.lookup(layer), {shardElements(layer)},
                   Float32Type::get(ctx));
  }
  mt::CollectiveAlgorithm algorithm(SyncHierarchy hierarchy) const;

  ModelOp model;
  PipelineOp pipeline;
  StageOp stage;
  const MachineModel &machine;
  LoweringOptions options;
  Dims dims;
  Type elem;
  DType dtype = DType::F32;
  MLIRContext *ctx;
  PlanAttr plan_;
  SmallVector<LayerOp> layers;
  int64_t numStages = 1, stageIndex = 0;

  OpBuilder b;   ///< the iteration (appends at the end of the body)
  OpBuilder pro; ///< the prologue (inserts before the sentinel)
  OpBuilder &moduleBuilder;
  mt::ProgramOp program;
  Operation *sentinel = nullptr;
  Location loc = UnknownLoc::get(ctx);

  // Scratch area appended to the assigned arena (offsets are absolute).
  int64_t arenaBytes = 0, programArena = 0, offsetAlignment = 64;
  int64_t streamOff = 0, onesOff = -1, r1Off = 0, r2Off = 0, wOff = 0;
  int64_t fwdFullOff = -1;
  int64_t normHeadOff = -1; ///< scratch.normhead (NormHead, head stage only)
  NormHeadLayout normHeadSlots;
  Value normHeadSource; ///< the LM-head view the normalized copy is of
  SmallVector<int64_t, 2> outboxOff[2]; ///< per payload: K slots
  /// ZeRO, per layer: the gradient shard, the view shard and (FP32 models,
  /// whose assigned master is the full view) the persistent master shard.
  DenseMap<int64_t, int64_t> gradShardOff, viewShardOff, masterShardOff;
  /// ZeRO-2: the gradient shards buffer assignment placed (offset, bytes).
  DenseMap<int64_t, std::pair<int64_t, int64_t>> assignedGradShard;
  int64_t gsmSlotBytes = 0;
  DecoderLayout fullLayout;
  HeadLayout head;
  /// Named scratch regions: name -> (offset, bytes).
  llvm::StringMap<std::pair<int64_t, int64_t>> regions;
  /// Takes `bytes` of the lowering's area for the region `name`.
  int64_t region(SlotAllocator &area, StringRef name, int64_t bytes) {
    int64_t offset = area.take(bytes);
    regions[name] = {offset, bytes};
    return offset;
  }

  // Transfers: (payload, mb) -> outbox slot index / the recv op.
  std::map<std::pair<int, int64_t>, int64_t> outboxSlot;
  std::map<std::pair<int, int64_t>, Operation *> recvOps;

  // Memoized buffers and views, and the absolute range of every buffer
  // value this lowering created.
  llvm::StringMap<Value> bases;
  std::map<std::tuple<const void *, int64_t, const void *>, Value> views;
  DenseMap<Value, Range> ranges;

  SmallVector<InFlight> inflight;
  DenseMap<Value, SmallVector<Value>> pending; ///< ratrain async -> tokens
  DenseMap<int64_t, SmallVector<Value>> updateTokens; ///< layer -> DMAs
  SmallVector<Value, 2> gsmSlots;
  int64_t gsmNext = 0; ///< the GSM staging slot the next AdamW chunk uses
  /// Offloaded states by key (offloadKey).
  std::map<std::string, OffloadedState> offloaded;
  /// Elements per chunk of the streamed states of a layer (all of its
  /// streamed states use the same chunks).
  DenseMap<int64_t, int64_t> streamChunk;
  /// The offloads of the last chunks of a streamed state, by key.
  std::map<std::string, SmallVector<Value>> streamTokens;
  std::map<int64_t, SmallVector<ParamTensor>> tensorCache;
};

//===----------------------------------------------------------------------===//
// Assigned buffers
//===----------------------------------------------------------------------===//

std::optional<std::array<int64_t, 2>> StageLowering::assigned(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto attr = RATrainDialect::ArgBuffersAttrHelper(stage->getContext()).getAttr(stage);
    unsigned index = arg.getArgNumber();
    if (!attr || int64_t(attr.size()) < 3 * (index + 1))
      return std::nullopt;
    return std::array<int64_t, 2>{attr[3 * index + 1], attr[3 * index + 2]};
  }
  Operation *def = value.getDefiningOp();
  auto attr = def ? RATrainDialect::BuffersAttrHelper(def->getContext()).getAttr(def)
                  : DenseI64ArrayAttr();
  unsigned index = cast<OpResult>(value).getResultNumber();
  if (!attr || int64_t(attr.size()) < 3 * (index + 1))
    return std::nullopt;
  return std::array<int64_t, 2>{attr[3 * index + 1], attr[3 * index + 2]};
}

std::optional<std::array<int64_t, 2>>
StageLowering::assignedMessage(Operation *transfer) {
  auto attr = RATrainDialect::BuffersAttrHelper(transfer->getContext()).getAttr(transfer);
  if (!attr || attr.size() < 3)
    return std::nullopt;
  return std::array<int64_t, 2>{attr[1], attr[2]};
}

//===----------------------------------------------------------------------===//
// Buffers, views, ranges
//===----------------------------------------------------------------------===//

Value StageLowering::base(mt::MemorySpace space, StringRef name, int64_t offset,
                          int64_t bytes) {
  std::string key = llvm::formatv("{0}@{1}:{2}", name, offset, bytes);
  auto it = bases.find(key);
  if (it != bases.end())
    return it->second;
  auto type = mt::BufferType::get(space, {bytes}, IntegerType::get(ctx, 8));
  Value value = mt::BufferOp::create(pro, loc, type, name, offset);
  ranges[value] = Range{space, offset, offset + bytes};
  bases[key] = value;
  return value;
}

Value StageLowering::slot(Value source, int64_t byteOffset,
                          ArrayRef<int64_t> shape, Type type) {
  auto sourceType = cast<mt::BufferType>(source.getType());
  auto resultType = mt::BufferType::get(sourceType.getSpace(), shape, type);
  if (byteOffset == 0 && resultType == sourceType)
    return source;
  auto key = std::make_tuple((const void *)source.getAsOpaquePointer(),
                             byteOffset, resultType.getAsOpaquePointer());
  auto it = views.find(key);
  if (it != views.end())
    return it->second;
  Value value = mt::ViewOp::create(pro, loc, resultType, source, byteOffset);
  Range range = ranges.lookup(source);
  range.begin += byteOffset;
  range.end = range.begin + resultType.getSizeInBytes();
  ranges[value] = range;
  views[key] = value;
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
  std::string name =
      llvm::formatv("{0}.{1}", layerPrefix(layerOp(layer)), role);
  return ddrBase(name, (*buffer)[0], (*buffer)[1]);
}

Value StageLowering::tensorOf(Value flat, const ParamTensor &tensor, Type type,
                              ArrayRef<int64_t> shape) {
  int64_t bytes = type.getIntOrFloatBitWidth() / 8;
  return slot(flat, tensor.offset * bytes,
              shape.empty() ? ArrayRef<int64_t>(tensor.shape) : shape, type);
}

std::optional<Range> StageLowering::rangeOf(Value buffer) const {
  auto it = ranges.find(buffer);
  if (it == ranges.end())
    return std::nullopt;
  return it->second;
}

void StageLowering::resolve(ArrayRef<Value> reads, ArrayRef<Value> writes) {
  SmallVector<Range> readRanges, writeRanges;
  for (Value v : reads)
    if (auto r = rangeOf(v))
      readRanges.push_back(*r);
  for (Value v : writes)
    if (auto r = rangeOf(v))
      writeRanges.push_back(*r);
  SmallVector<Value> conflicts;
  for (const InFlight &op : inflight) {
    bool conflict = false;
    for (const Range &w : op.writes)
      for (const Range &r : readRanges)
        conflict |= w.overlaps(r);
    for (const Range &w : writeRanges) {
      for (const Range &r : op.reads)
        conflict |= w.overlaps(r);
      for (const Range &r : op.writes)
        conflict |= w.overlaps(r);
    }
    if (conflict)
      conflicts.push_back(op.token);
  }
  waitTokens(conflicts);
}

void StageLowering::track(Value token, ArrayRef<Value> reads,
                          ArrayRef<Value> writes) {
  InFlight op;
  op.token = token;
  for (Value v : reads)
    if (auto r = rangeOf(v))
      op.reads.push_back(*r);
  for (Value v : writes)
    if (auto r = rangeOf(v))
      op.writes.push_back(*r);
  inflight.push_back(std::move(op));
}

void StageLowering::waitTokens(ArrayRef<Value> tokens) {
  SmallVector<Value> live;
  for (Value token : tokens) {
    auto it = llvm::find_if(
        inflight, [&](const InFlight &op) { return op.token == token; });
    if (it == inflight.end() || llvm::is_contained(live, token))
      continue;
    live.push_back(token);
    inflight.erase(it);
  }
  if (!live.empty())
    mt::WaitOp::create(b, loc, live);
}

//===----------------------------------------------------------------------===//
// Kernel helpers
//===----------------------------------------------------------------------===//

void StageLowering::gemm(Value a, Value bm, Value c, bool ta, bool tb,
                         bool acc) {
  resolve({a, bm, c}, {c});
  mt::GemmOp::create(b, loc, a, bm, c, ta, tb, acc, FloatAttr());
}

void StageLowering::copy(Value from, Value to) {
  elementwise(mt::ElementwiseKind::cast, {from}, {to});
}

void StageLowering::elementwise(mt::ElementwiseKind kind, ArrayRef<Value> ins,
                                ArrayRef<Value> outs,
                                std::optional<double> theta,
                                std::optional<double> scale) {
  SmallVector<Value> reads(ins);
  llvm::append_range(reads, outs);
  resolve(reads, outs);
  mt::ElementwiseOp::create(b, loc, kind, ins, outs,
                            theta ? b.getF64FloatAttr(*theta) : FloatAttr(),
                            scale ? b.getF64FloatAttr(*scale) : FloatAttr());
}

void StageLowering::rmsnormFwd(Value x, Value w, Value y, Value rstd) {
  resolve({x, w}, {y, rstd});
  mt::RMSNormFwdOp::create(
      b, loc, x, w, y, rstd,
      APFloat(double(model.getRmsEps().convertToDouble())));
}

void StageLowering::rmsnormBwd(Value x, Value w, Value rstd, Value dy, Value dx,
                               Value dw, bool acc) {
  resolve({x, w, rstd, dy, dw}, {dx, dw});
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
    it->second = layerTensors(layerOp(layer), dims);
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

Value StageLowering::actBase(Value act, int64_t layer, int64_t mb) {
  auto buffer = assigned(act);
  std::string name =
      llvm::formatv("act.layer{0}.mb{1}{2}", layer, mb,
                    act.getDefiningOp<RecomputeOp>() ? ".recomputed" : "");
  return ddrBase(name, (*buffer)[0], (*buffer)[1]);
}

Value StageLowering::gradFlat(Value grad, int64_t layer) {
  auto buffer = assigned(grad);
  std::string name = llvm::formatv("{0}.grad", layerPrefix(layerOp(layer)));
  Value flat = ddrBase(name, (*buffer)[0], (*buffer)[1]);
  return slot(flat, 0, {layerParams(layer)}, elem);
}

/// The boundary tensor [T, h] a transfer carries.
static std::pair<int, int64_t> transferKey(Payload payload, int64_t mb) {
  return {payload == Payload::Gradient ? 1 : 0, mb};
}

Value StageLowering::flowInput(int64_t layer, int64_t mb) {
  SmallVector<int64_t, 2> shape{dims.tokens, dims.hidden};
  if (layer == stage.getFirstLayer() && stageIndex > 0) {
    Operation *recv = recvOps.at(transferKey(Payload::Activation, mb));
    auto buffer = assignedMessage(recv);
    Value flat = ddrBase(llvm::formatv("recv.activation.mb{0}", mb).str(),
                         (*buffer)[0], (*buffer)[1]);
    return slot(flat, 0, shape, elem);
  }
  return scratch("scratch.stream", streamOff, shape, elem);
}

Value StageLowering::flowOutput(int64_t layer, int64_t mb) {
  SmallVector<int64_t, 2> shape{dims.tokens, dims.hidden};
  if (layer == stage.getEndLayer() - 1 && stageIndex + 1 < numStages) {
    int64_t k = outboxSlot.at(transferKey(Payload::Activation, mb));
    return scratch(llvm::formatv("outbox.activation.{0}", k).str(),
                   outboxOff[0][k], shape, elem);
  }
  return scratch("scratch.stream", streamOff, shape, elem);
}

Value StageLowering::gradInput(int64_t layer, int64_t mb) {
  SmallVector<int64_t, 2> shape{dims.tokens, dims.hidden};
  if (layer == stage.getEndLayer() - 1 && stageIndex + 1 < numStages) {
    Operation *recv = recvOps.at(transferKey(Payload::Gradient, mb));
    auto buffer = assignedMessage(recv);
    Value flat = ddrBase(llvm::formatv("recv.gradient.mb{0}", mb).str(),
                         (*buffer)[0], (*buffer)[1]);
    return slot(flat, 0, shape, elem);
  }
  return scratch("scratch.stream", streamOff, shape, elem);
}

Value StageLowering::gradOutput(int64_t layer, int64_t mb) {
  SmallVector<int64_t, 2> shape{dims.tokens, dims.hidden};
  if (layer == stage.getFirstLayer() && stageIndex > 0) {
    int64_t k = outboxSlot.at(transferKey(Payload::Gradient, mb));
    return scratch(llvm::formatv("outbox.gradient.{0}", k).str(),
                   outboxOff[1][k], shape, elem);
  }
  return scratch("scratch.stream", streamOff, shape, elem);
}

//===----------------------------------------------------------------------===//
// Layer kernel sequences
//===----------------------------------------------------------------------===//

void StageLowering::emitDecoderForward(const LayerWeights &w,
                                       const DecoderActs &a, Value src,
                                       Value dst) {
  int64_t T = dims.tokens, B = dims.batch, S = dims.seq;
  double theta = model.getRopeTheta().convertToDouble();
  double scale = 1.0 / std::sqrt(double(dims.headDim));
  if (src)
    copy(src, a.x);
  rmsnormFwd(a.x, w.get("input_layernorm.weight"), a.xn1, a.rstd1);
  // Projections; rotary embedding of q and k into the stored q, k (ALiBi:
  // the projections are the stored q, k).
  Value qpre =
      dims.alibi ? a.q2 : scratch("scratch.r1", r1Off, {T, dims.qDim}, elem);
  Value kpre = dims.alibi
                   ? a.k2
                   : scratch("scratch.r1", r1Off + T * dims.qDim * elemBytes(),
                             {T, dims.kvDim}, elem);
  gemm(a.xn1, w.get("q_proj.weight"), qpre, false, true, false);
  gemm(a.xn1, w.get("k_proj.weight"), kpre, false, true, false);
  gemm(a.xn1, w.get("v_proj.weight"), a.v2, false, true, false);
  if (dims.qkvBias) {
    Value ones = scratch("scratch.ones", onesOff, {T, 1}, elem);
    auto bias = [&](StringRef name, int64_t n) {
      return slot(w.get(name), 0, {1, n}, elem);
    };
    gemm(ones, bias("q_proj.bias", dims.qDim), qpre, false, false, true);
    gemm(ones, bias("k_proj.bias", dims.kvDim), kpre, false, false, true);
    gemm(ones, bias("v_proj.bias", dims.kvDim), a.v2, false, false, true);
  }
  Value qpre4 = slot(qpre, 0, {B, S, dims.heads, dims.headDim}, elem);
  Value kpre4 = slot(kpre, 0, {B, S, dims.kvHeads, dims.headDim}, elem);
  // ALiBi: positions enter as the attention's bias instead.
  if (!dims.alibi) {
    elementwise(mt::ElementwiseKind::rope, {qpre4}, {a.q4}, theta);
    elementwise(mt::ElementwiseKind::rope, {kpre4}, {a.k4}, theta);
  }
  resolve({a.q4, a.k4, a.v4}, {a.o4, a.lse});
  mt::AttentionFwdOp::create(b, loc, a.q4, a.k4, a.v4, a.o4, a.lse,
                             /*causal=*/true, /*alibi=*/dims.alibi,
                             b.getF64FloatAttr(scale));
  // Output projection with the residual: x2 = x + o Wo^T.
  copy(a.x, a.x2);
  gemm(a.o2, w.get("o_proj.weight"), a.x2, false, true, true);
  rmsnormFwd(a.x2, w.get("post_attention_layernorm.weight"), a.xn2, a.rstd2);
  gemm(a.xn2, w.get("gate_proj.weight"), a.gate, false, true, false);
  gemm(a.xn2, w.get("up_proj.weight"), a.up, false, true, false);
  Value hact =
      a.hact ? a.hact : scratch("scratch.w", wOff, {T, dims.ffn}, elem);
  if (!a.hact && !dst)
    return; // a recompute without a stored SwiGLU output has nothing left
  elementwise(mt::ElementwiseKind::swiglu, {a.gate, a.up}, {hact});
  if (!dst)
    return;
  // Down projection with the residual: out = x2 + h Wd^T.
  copy(a.x2, dst);
  gemm(hact, w.get("down_proj.weight"), dst, false, true, true);
}

void StageLowering::emitDecoderBackward(const LayerWeights &w,
                                        const LayerWeights &g,
                                        const DecoderActs &a, Value dy,
                                        Value dx, bool acc) {
  int64_t T = dims.tokens, B = dims.batch, S = dims.seq, E = elemBytes();
  double theta = model.getRopeTheta().convertToDouble();
  double scale = 1.0 / std::sqrt(double(dims.headDim));
  // Scratch: R1 holds dh, then dq/dk/dv, then dxn1 (over dq); W (the
  // assigned kernel workspace when large enough) dgate/dup, then the MLP
  // norm's input gradient, then do and dq/dk before rope, then the
  // attention norm's input gradient; R2 the gradient of the residual stream
  // between the two halves. No kernel runs in place.
  Value dh = scratch("scratch.r1", r1Off, {T, dims.ffn}, elem);
  Value dq4 =
      scratch("scratch.r1", r1Off, {B, S, dims.heads, dims.headDim}, elem);
  Value dk4 = scratch("scratch.r1", r1Off + T * dims.qDim * E,
                      {B, S, dims.kvHeads, dims.headDim}, elem);
  Value dv4 = scratch("scratch.r1", r1Off + T * (dims.qDim + dims.kvDim) * E,
                      {B, S, dims.kvHeads, dims.headDim}, elem);
  Value dv2 = slot(dv4, 0, {T, dims.kvDim}, elem);
  Value dxn1 = scratch("scratch.r1", r1Off, {T, dims.hidden}, elem);
  Value dgate = scratch("scratch.w", wOff, {T, dims.ffn}, elem);
  Value dup =
      scratch("scratch.w", wOff + T * dims.ffn * E, {T, dims.ffn}, elem);
  Value dO4 =
      scratch("scratch.w", wOff, {B, S, dims.heads, dims.headDim}, elem);
  Value dO2 = slot(dO4, 0, {T, dims.qDim}, elem);
  Value dqpre4 = scratch("scratch.w", wOff + T * dims.qDim * E,
                         {B, S, dims.heads, dims.headDim}, elem);
  Value dkpre4 = scratch("scratch.w", wOff + 2 * T * dims.qDim * E,
                         {B, S, dims.kvHeads, dims.headDim}, elem);
  Value dqpre = slot(dqpre4, 0, {T, dims.qDim}, elem);
  Value dkpre = slot(dkpre4, 0, {T, dims.kvDim}, elem);
  Value dres = scratch("scratch.r2", r2Off, {T, dims.hidden}, elem);

  // MLP: out = x2 + down(swiglu(gate, up)).
  Value hact = a.hact;
  if (!hact) {
    hact = dgate; // free until swiglu_bwd writes dgate
    elementwise(mt::ElementwiseKind::swiglu, {a.gate, a.up}, {hact});
  }
  gemm(dy, w.get("down_proj.weight"), dh, false, false, false);
  gemm(dy, hact, g.get("down_proj.weight"), true, false, acc);
  elementwise(mt::ElementwiseKind::swiglu_bwd, {a.gate, a.up, dh},
              {dgate, dup});
  gemm(dgate, w.get("gate_proj.weight"), dres, false, false, false);
  gemm(dup, w.get("up_proj.weight"), dres, false, false, true);
  gemm(dgate, a.xn2, g.get("gate_proj.weight"), true, false, acc);
  gemm(dup, a.xn2, g.get("up_proj.weight"), true, false, acc);
  // The norm's input gradient goes to W (dgate and dup are dead), so no
  // kernel runs in place; then the residual: dres = dy + d(x2) through norm.
  Value normGrad = scratch("scratch.w", wOff, {T, dims.hidden}, elem);
  rmsnormBwd(a.x2, w.get("post_attention_layernorm.weight"), a.rstd2, dres,
             normGrad, g.get("post_attention_layernorm.weight"), acc);
  elementwise(mt::ElementwiseKind::residual_add, {normGrad, dy}, {dres});
  // Attention: x2 = x + o Wo^T.
  gemm(dres, w.get("o_proj.weight"), dO2, false, false, false);
  gemm(dres, a.o2, g.get("o_proj.weight"), true, false, acc);
  resolve({a.q4, a.k4, a.v4, a.o4, dO4, a.lse}, {dq4, dk4, dv4});
  mt::AttentionBwdOp::create(b, loc, a.q4, a.k4, a.v4, a.o4, dO4, a.lse, dq4,
                             dk4, dv4, /*causal=*/true, /*alibi=*/dims.alibi,
                             b.getF64FloatAttr(scale));
  if (dims.alibi) {
    // No rotary embedding to undo; dq, dk move out of R1, which dxn1
    // overwrites.
    copy(dq4, dqpre4);
    copy(dk4, dkpre4);
  } else {
    elementwise(mt::ElementwiseKind::rope_bwd, {dq4}, {dqpre4}, theta);
    elementwise(mt::ElementwiseKind::rope_bwd, {dk4}, {dkpre4}, theta);
  }
  gemm(dqpre, w.get("q_proj.weight"), dxn1, false, false, false);
  gemm(dkpre, w.get("k_proj.weight"), dxn1, false, false, true);
  gemm(dv2, w.get("v_proj.weight"), dxn1, false, false, true);
  gemm(dqpre, a.xn1, g.get("q_proj.weight"), true, false, acc);
  gemm(dkpre, a.xn1, g.get("k_proj.weight"), true, false, acc);
  gemm(dv2, a.xn1, g.get("v_proj.weight"), true, false, acc);
  if (dims.qkvBias) {
    Value ones = scratch("scratch.ones", onesOff, {T, 1}, elem);
    auto bias = [&](StringRef name, int64_t n) {
      return slot(g.get(name), 0, {1, n}, elem);
    };
    gemm(ones, dqpre, bias("q_proj.bias", dims.qDim), true, false, acc);
    gemm(ones, dkpre, bias("k_proj.bias", dims.kvDim), true, false, acc);
    gemm(ones, dv2, bias("v_proj.bias", dims.kvDim), true, false, acc);
  }
  // W[0, T h) held do, dead after the attention backward.
  rmsnormBwd(a.x, w.get("input_layernorm.weight"), a.rstd1, dxn1, normGrad,
             g.get("input_layernorm.weight"), acc);
  elementwise(mt::ElementwiseKind::residual_add, {normGrad, dres}, {dx});
}

void StageLowering::emitHeadForward(const LayerWeights &w, Value act,
                                    int64_t mb, Value src) {
  int64_t T = dims.tokens;
  Type f32 = Float32Type::get(ctx);
  Value x = slot(act, head.x, {T, dims.hidden}, elem);
  Value xn = slot(act, head.xn, {T, dims.hidden}, elem);
  Value logits = slot(act, head.logits, {T, dims.vocab}, elem);
  Value rstd = slot(act, head.rstd, {T}, f32);
  Value loss = slot(act, head.loss, {}, f32);
  Value labels = slot(act, head.labels, {T}, IntegerType::get(ctx, 32));
  copy(src, x);
  rmsnormFwd(x, w.get("model.norm.weight"), xn, rstd);
  gemm(xn, headWeight(w), logits, false, true, false);
  resolve({}, {labels});
  mt::LoadBatchOp::create(b, loc, mt::BatchField::labels, labels, mb);
  elementwise(mt::ElementwiseKind::cross_entropy, {logits, labels}, {loss});
  resolve({loss}, {});
  mt::ReportLossOp::create(b, loc, loss, mb);
  // The step's loss is the mean over all T * m tokens of the stage's
  // micro-batches (and over the data-parallel replicas: the gradient sync
  // averages), so each micro-batch's logits gradient is scaled by 1/(T m).
  elementwise(mt::ElementwiseKind::cross_entropy_bwd, {logits, labels},
              {logits}, std::nullopt, 1.0 / double(T * dims.microBatches));
}

void StageLowering::emitHeadBackward(const LayerWeights &w,
                                     const LayerWeights &g, Value act, Value dx,
                                     bool acc) {
  int64_t T = dims.tokens;
  Type f32 = Float32Type::get(ctx);
  Value x = slot(act, head.x, {T, dims.hidden}, elem);
  Value xn = slot(act, head.xn, {T, dims.hidden}, elem);
  Value dlogits = slot(act, head.logits, {T, dims.vocab}, elem);
  Value rstd = slot(act, head.rstd, {T}, f32);
  Value dxn = scratch("scratch.r2", r2Off, {T, dims.hidden}, elem);
  gemm(dlogits, headWeight(w), dxn, false, false, false);
  // With a NormHead this is the gradient of the normalized weight until
  // emitNormHeadJacobian maps it.
  gemm(dlogits, xn, g.get("lm_head.weight"), true, false, acc);
  rmsnormBwd(x, w.get("model.norm.weight"), rstd, dxn, dx,
             g.get("model.norm.weight"), acc);
}

Value StageLowering::headWeight(const LayerWeights &w) {
  Value weight = w.get("lm_head.weight");
  if (!dims.normHead)
    return weight;
  int64_t V = dims.vocab, h = dims.hidden;
  Value normalized = scratch("scratch.normhead",
                             normHeadOff + normHeadSlots.weight, {V, h}, elem);
  if (normHeadSource)
    return normalized;
  // First use in the step: w_hat = w / ||w|| per vocabulary row, as RMSNorm
  // with the weight 1/sqrt(h): w / sqrt(||w||^2 / h + eps) / sqrt(h).
  normHeadSource = weight;
  Value gamma =
      scratch("scratch.normhead", normHeadOff + normHeadSlots.gamma, {h}, elem);
  Value rnorm = scratch("scratch.normhead", normHeadOff + normHeadSlots.rnorm,
                        {V}, Float32Type::get(ctx));
  resolve({}, {gamma});
  mt::FillOp::create(b, loc, gamma, APFloat(1.0 / std::sqrt(double(h))));
  resolve({weight, gamma}, {normalized, rnorm});
  mt::RMSNormFwdOp::create(b, loc, weight, gamma, normalized, rnorm,
                           APFloat(normHeadEps(h)));
  return normalized;
}

void StageLowering::emitNormHeadJacobian(GradReadyOp op) {
  int64_t layer = op.getGrad().getType().getLayer();
  int64_t V = dims.vocab, h = dims.hidden;
  LayerWeights g = weights(gradFlat(op.getGrad(), layer), layer, elem);
  Value grad = g.get("lm_head.weight");
  // dL/dw = (g - w_hat (w_hat . g)) / ||w|| per row, g = dL/dw_hat: the
  // RMSNorm backward with the forward's weight 1/sqrt(h) and 1/rms. Its
  // output goes to the normalized weight's slot (dead after the last head
  // backward), then replaces the gradient; the RMSNorm weight gradient is
  // discarded.
  Value out = scratch("scratch.normhead", normHeadOff + normHeadSlots.weight,
                      {V, h}, elem);
  Value gamma =
      scratch("scratch.normhead", normHeadOff + normHeadSlots.gamma, {h}, elem);
  Value dgamma = scratch("scratch.normhead", normHeadOff + normHeadSlots.dgamma,
                         {h}, elem);
  Value rnorm = scratch("scratch.normhead", normHeadOff + normHeadSlots.rnorm,
                        {V}, Float32Type::get(ctx));
  rmsnormBwd(normHeadSource, gamma, rnorm, grad, out, dgamma,
             /*acc=*/false);
  copy(out, grad);
}

//===----------------------------------------------------------------------===//
// ratrain ops
//===----------------------------------------------------------------------===//

LogicalResult StageLowering::lowerForward(ForwardOp op) {
  int64_t layer = op.getView().getType().getLayer();
  int64_t mb = op.getMicroBatch();
  LayerWeights w = weights(stateBase(op.getView(), "view", layer), layer, elem);
  Value act = actBase(op.getActivation(), layer, mb);
  switch (layerOp(layer).getKind()) {
  case LayerKind::Embedding: {
    Value ids = slot(act, 0, {dims.tokens}, IntegerType::get(ctx, 32));
    resolve({}, {ids});
    mt::LoadBatchOp::create(b, loc, mt::BatchField::inputs, ids, mb);
    Value out = flowOutput(layer, mb);
    elementwise(mt::ElementwiseKind::embedding,
                {w.get("embed_tokens.weight"), ids}, {out});
    return success();
  }
  case LayerKind::Head:
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
  return success();
}

LogicalResult StageLowering::lowerRecompute(RecomputeOp op) {
  int64_t layer = op.getView().getType().getLayer();
  int64_t mb = op.getMicroBatch();
  LayerWeights w = weights(stateBase(op.getView(), "view", layer), layer, elem);
  Value input = actBase(op.getInput(), layer, mb);
  Value recovered = actBase(op.getActivation(), layer, mb);
  DecoderActs a = decoderActs(recovered, recovered, 0, /*hactStored=*/true);
  Value storedX = slot(input, 0, {dims.tokens, dims.hidden}, elem);
  emitDecoderForward(w, a, storedX, Value());
  return success();
}

LogicalResult StageLowering::lowerBackward(BackwardOp op) {
  int64_t layer = op.getView().getType().getLayer();
  int64_t mb = op.getMicroBatch();
  bool acc = op.getAcc() != nullptr;
  LayerWeights w = weights(stateBase(op.getView(), "view", layer), layer, elem);
  Value gradFlatBuffer = gradFlat(op.getGrad(), layer);
  LayerWeights g = weights(gradFlatBuffer, layer, elem);
  Value act = actBase(op.getActivation(), layer, mb);
  switch (layerOp(layer).getKind()) {
  case LayerKind::Embedding: {
    Value ids = slot(act, 0, {dims.tokens}, IntegerType::get(ctx, 32));
    Value table = g.get("embed_tokens.weight");
    // The scatter-add always accumulates: the first micro-batch zeroes.
    if (!acc) {
      resolve({}, {table});
      mt::FillOp::create(b, loc, table, APFloat(0.0));
    }
    elementwise(mt::ElementwiseKind::embedding_bwd, {ids, gradInput(layer, mb)},
                {table});
    return success();
  }
  case LayerKind::Head:
    emitHeadBackward(w, g, act, gradOutput(layer, mb), acc);
    return success();
  case LayerKind::Decoder:
    break;
  }
  DecoderActs a = decoderActs(act, act, 0, /*hactStored=*/true);
  emitDecoderBackward(w, g, a, gradInput(layer, mb), gradOutput(layer, mb),
                      acc);
  return success();
}

mt::CollectiveAlgorithm
StageLowering::algorithm(SyncHierarchy hierarchy) const {
  if (hierarchy == SyncHierarchy::Hierarchical)
    return mt::CollectiveAlgorithm::hierarchical;
  return machine.network.collective == CollectiveAlgorithm::Tree
             ? mt::CollectiveAlgorithm::tree
             : mt::CollectiveAlgorithm::ring;
}

LogicalResult StageLowering::lowerSync(SyncOp op) {
  auto dp = FlatSymbolRefAttr::get(ctx, "dp");
  auto alg =
      mt::CollectiveAlgorithmAttr::get(ctx, algorithm(op.getHierarchy()));
  Type stateType = op.getState().getType();
  Value token;
  if (auto grad = dyn_cast<GradType>(stateType)) {
    int64_t layer = grad.getLayer();
    Value full = gradFlat(op.getState(), layer);
    if (!zero()) {
      resolve({full}, {full});
      token = mt::AllReduceOp::create(
          b, loc, mt::ReduceKindAttr::get(ctx, mt::ReduceKind::avg), full, full,
          dp, alg);
      track(token, {full}, {full});
    } else {
      // ZeRO-1: the optimizer only needs this rank's shard of the averaged
      // gradient, so the all-reduce is carried out as a reduce-scatter.
      // ZeRO-2: the shard lands in the buffer of the sync's wait.
      Value shard = gradShard(layer);
      resolve({full}, {shard});
      token = mt::ReduceScatterOp::create(
          b, loc, mt::ReduceKindAttr::get(ctx, mt::ReduceKind::avg), full,
          shard, dp, alg);
      track(token, {full}, {shard});
    }
  } else if (auto view = dyn_cast<ViewType>(stateType)) {
    int64_t layer = view.getLayer();
    Value flat = stateBase(op.getState(), "view", layer);
    Value full = slot(flat, 0, {layerParams(layer)}, elem);
    Value shard =
        scratch(llvm::formatv("zero.view_shard.layer{0}", layer).str(),
                viewShardOff.lookup(layer), {shardElements(layer)}, elem);
    resolve({shard}, {full});
    token = mt::AllGatherOp::create(b, loc, shard, full, dp, alg);
    track(token, {shard}, {full});
  } else {
    return op.emitOpError("cannot lower a sync of ") << stateType;
  }
  pending[op.getPending()].push_back(token);
  return success();
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
  Value viewDest;
  if (zero())
    viewDest = scratch(llvm::formatv("zero.view_shard.layer{0}", layer).str(),
                       viewShardOff.lookup(layer), {n}, elem);
  else if (!isF32Model())
    viewDest = slot(viewFlat, 0, {n}, elem);

  int64_t E = elemBytes();
  int64_t chunk = std::max<int64_t>(1, gsmSlotBytes / E);
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
    Value gc = grad, mc = master, m0 = m, v0 = v, dc = viewDest;
    if (stream) {
      gc = slot(grad, s * E, {c}, elem);
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
    if (failed(updateRange(gc, mc, m0, v0, dc, c, std::min(chunk, c), tokens)))
      return failure();
    if (stream)
      streamChunkOf(layer, s, k % 2, /*reload=*/false);
  }
  return success();
}

LogicalResult StageLowering::updateRange(Value grad, Value master, Value m,
                                         Value v, Value viewDest, int64_t n,
                                         int64_t chunk,
                                         SmallVector<Value> &tokens) {
  Type f32 = Float32Type::get(ctx);
  int64_t E = elemBytes();
  for (int64_t start = 0; start < n; start += chunk) {
    int64_t count = std::min(chunk, n - start);
    Value gi = slot(grad, start * E, {count}, elem);
    Value mi = slot(master, start * 4, {count}, f32);
    Value m1 = slot(m, start * 4, {count}, f32);
    Value v1 = slot(v, start * 4, {count}, f32);
    // The two GSM slots alternate over all updates of the step, so a layer's
    // first chunk does not wait for the previous layer's last DMA.
    Value staged = slot(gsmSlots[gsmNext++ % 2], 0, {count}, elem);
    resolve({gi, mi, m1, v1}, {mi, m1, v1, staged});
    mt::AdamWOp::create(b, loc, gi, mi, m1, v1, staged, options.lr,
                        options.beta1, options.beta2, options.eps,
                        options.weightDecay);
    if (!viewDest)
      continue; // FP32: the master is the view; the GSM copy is the prefetch
    Value dest = slot(viewDest, start * E, {count}, elem);
    resolve({staged}, {dest});
    Value token =
        mt::DmaOp::create(b, loc, staged, dest, IntegerAttr(), IntegerAttr());
    track(token, {staged}, {dest});
    tokens.push_back(token);
  }
  return success();
}

void StageLowering::lowerTransfer(Operation *op, bool send) {
  Payload payload = cast<TransferOpInterface>(op).getPayload();
  int64_t mb = send ? cast<SendOp>(op).getMicroBatch()
                    : cast<RecvOp>(op).getMicroBatch();
  int64_t peer = send ? cast<SendOp>(op).getPeer() : cast<RecvOp>(op).getPeer();
  int64_t tag = 2 * mb + (payload == Payload::Gradient ? 1 : 0);
  auto pp = FlatSymbolRefAttr::get(ctx, "pp");
  IntegerType i64 = IntegerType::get(ctx, 64);
  if (send) {
    int64_t k = outboxSlot.at(transferKey(payload, mb));
    int dir = payload == Payload::Gradient ? 1 : 0;
    Value buffer = scratch(
        llvm::formatv("outbox.{0}.{1}", dir ? "gradient" : "activation", k)
            .str(),
        outboxOff[dir][k], {dims.tokens, dims.hidden}, elem);
    resolve({buffer}, {});
    Value token =
        mt::SendOp::create(b, loc, buffer, IntegerAttr::get(i64, peer), pp,
                           IntegerAttr::get(i64, tag));
    track(token, {buffer}, {});
    return;
  }
  auto assignedBuffer = assignedMessage(op);
  Value flat =
      ddrBase(llvm::formatv(
                  "recv.{0}.mb{1}",
                  payload == Payload::Gradient ? "gradient" : "activation", mb)
                  .str(),
              (*assignedBuffer)[0], (*assignedBuffer)[1]);
  Value buffer = slot(flat, 0, {dims.tokens, dims.hidden}, elem);
  resolve({}, {buffer});
  Value token = mt::RecvOp::create(b, loc, buffer, IntegerAttr::get(i64, peer),
                                   pp, IntegerAttr::get(i64, tag));
  track(token, {}, {buffer});
}

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
      return stage.emitOpError("stage ")
             << stageIndex
             << " was not buffer-assigned: run --ratrain-assign-buffers (or "
                "--ratrain-schedule-pipeline) before --ratrain-lower-to-mt3k";
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
        resolve({}, {piece.bytes});
        token = mt::ReloadOp::create(b, loc, piece.bytes, tier,
                                     b.getStringAttr(piece.key));
        track(token, {}, {piece.bytes});
      } else {
        resolve({piece.bytes}, {});
        token = mt::OffloadOp::create(b, loc, piece.bytes, tier,
                                      b.getStringAttr(piece.key));
        track(token, {piece.bytes}, {});
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
      resolve({}, {piece.bytes});
      Value token = mt::ReloadOp::create(b, loc, piece.bytes, tier,
                                         b.getStringAttr(piece.key));
      track(token, {}, {piece.bytes});
      tokens.push_back(token);
    }
    pending[op.getPending()] = tokens;
    return;
  }
  Value window = slot(offloadWindow(layer, role), 0,
                      {offloadedBytes(layer, role)}, IntegerType::get(ctx, 8));
  resolve({}, {window});
  Value token = mt::ReloadOp::create(b, loc, window,
                                     mt::StorageTierAttr::get(ctx, state.tier),
                                     b.getStringAttr(state.key));
  track(token, {}, {window});
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
  resolve({source}, {});
  Value token = mt::OffloadOp::create(b, loc, source,
                                      mt::StorageTierAttr::get(ctx, state.tier),
                                      b.getStringAttr(state.key));
  track(token, {source}, {});
  pending[op.getPending()] = {token};
}

//===----------------------------------------------------------------------===//
// Planning and the prologue
//===----------------------------------------------------------------------===//

LogicalResult StageLowering::plan() {
  plan_ = pipeline.getPlan();
  layers = model.getLayers();
  numStages = plan_.getPp();
  stageIndex = stage.getStage();
  dtype = getModelConfig(model).dtype;
  // Slots of the lowering's own layouts are 64-byte aligned; the assigned
  // offsets must be multiples of an explicit alignment, or (auto) set it.
  int64_t A = options.alignment > 0 ? options.alignment : 64;
  int64_t E = elemBytes();

  auto arena = RATrainDialect::ArenaBytesAttrHelper(stage->getContext()).getAttr(stage);
  StageBufferAnalysis buffers(stage);
  FailureOr<bool> assignedOk = buffers.readAssigned();
  if (failed(assignedOk))
    return failure();
  if (!*assignedOk || !arena || !RATrainDialect::ScratchBuffersAttrHelper(stage->getContext()).isAttrPresent(stage))
    return stage.emitOpError("stage ")
           << stageIndex
           << " was not buffer-assigned: run --ratrain-assign-buffers (or "
              "--ratrain-schedule-pipeline) before --ratrain-lower-to-mt3k";
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
  auto scratchAttr = RATrainDialect::ScratchBuffersAttrHelper(stage->getContext()).getAttr(stage);
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

  // Outgoing pipeline messages: two slots per direction, reused round-robin
  // (see docs/lowering.md, "Pipeline messages").
  int64_t sends[2] = {0, 0};
  for (Operation &op : stage.getBody().front()) {
    if (auto send = dyn_cast<SendOp>(op)) {
      int dir = send.getPayload() == Payload::Gradient ? 1 : 0;
      outboxSlot[transferKey(send.getPayload(), send.getMicroBatch())] =
          sends[dir]++ % 2;
    } else if (auto recv = dyn_cast<RecvOp>(op)) {
      recvOps[transferKey(recv.getPayload(), recv.getMicroBatch())] = &op;
    }
  }
  for (int dir = 0; dir < 2; ++dir)
    for (int64_t k = 0; k < outboxSlots(sends[dir]); ++k)
      outboxOff[dir].push_back(region(
          area,
          llvm::formatv("outbox.{0}.{1}", dir ? "gradient" : "activation", k)
              .str(),
          sizes.message));

  // ZeRO: per layer, this rank's gradient shard (the reduce-scatter output;
  // ZeRO-2 schedules assign it a buffer of its own) and view shard (AdamW's
  // output, the all-gather input).
  if (zero())
    for (int64_t layer = stage.getFirstLayer(); layer < stage.getEndLayer();
         ++layer) {
      ZeroShardSizes shards =
          ZeroShardSizes::of(layerParams(layer), plan_.getDp(), E);
      if (!assignedGradShard.count(layer))
        gradShardOff[layer] =
            region(area, llvm::formatv("zero.grad_shard.layer{0}", layer).str(),
                   shards.gradShard);
      viewShardOff[layer] =
          region(area, llvm::formatv("zero.view_shard.layer{0}", layer).str(),
                 shards.viewShard);
      if (shards.masterShard > 0)
        masterShardOff[layer] = region(
            area, llvm::formatv("zero.master_shard.layer{0}", layer).str(),
            shards.masterShard);
    }
  // NormHead: the normalized LM-head weight and its row statistics, on the
  // stage that holds the head.
  bool hasHead = false;
  for (int64_t layer = stage.getFirstLayer(); layer < stage.getEndLayer();
       ++layer)
    hasHead |= layerOp(layer).getKind() == LayerKind::Head;
  if (dims.normHead && hasHead) {
    normHeadSlots = normHeadLayout(dims, E, A);
    normHeadOff = region(area, "scratch.normhead", normHeadSlots.bytes);
  }
  programArena = alignTo(area.size, A);
  if (programArena > machine.cluster.ddrBytes)
    return stage.emitOpError("stage ")
           << stageIndex << " needs " << programArena
           << " bytes of DDR once lowered (" << arenaBytes << " assigned + "
           << programArena - arenaBytes
           << " of kernel temporaries and outgoing messages), but a cluster "
              "has "
           << machine.cluster.ddrBytes;

  gsmSlotBytes = (machine.cluster.gsmBytes / 2) / A * A;
  if (gsmSlotBytes < A)
    return stage.emitOpError("the machine's GSM (")
           << machine.cluster.gsmBytes
           << " bytes) is too small for two staging slots";
  return success();
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
    op->setAttr("ratrain.offload_key", pro.getStringAttr(state.key));
    op->setAttr("ratrain.offload_offset", IntegerAttr::get(i64, byteOffset));
    op->setAttr("ratrain.offload_piece", IntegerAttr::get(i64, piece));
    op->setAttr("ratrain.offload_bytes", IntegerAttr::get(i64, bytes));
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
        std::string prefix = layerPrefix(layerOp(layer));
        auto op = create(adam ? zeros : mt::InitKind::normal, half,
                         prefix + suffix.str(), 0);
        op->setAttr("ratrain.dp_shard", IntegerAttr::get(i64, n));
        op->setAttr("ratrain.dp_shard_offset", IntegerAttr::get(i64, start));
        if (!adam)
          op->setAttr("ratrain.dp_shard_tensors", shardTensorsAttr(tensors));
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
        auto op = create(adam ? zeros : tensor.init, dest,
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

LogicalResult StageLowering::emitPrologue() {
  Type f32 = Float32Type::get(ctx);
  IntegerType i64 = IntegerType::get(ctx, 64);
  for (int64_t i = 0; i < 2; ++i)
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
    op->setAttr("ratrain.offload_key", pro.getStringAttr(it->second.key));
    op->setAttr("ratrain.offload_offset", IntegerAttr::get(i64, byteOffset));
  };
  auto init = [&](mt::InitKind kind, Value dest, StringRef param,
                  std::optional<int64_t> elementOffset = std::nullopt) {
    return mt::InitParamOp::create(
        pro, loc, kind, dest, param,
        kind == mt::InitKind::normal ? pro.getF64FloatAttr(options.initStd)
                                     : FloatAttr(),
        elementOffset ? IntegerAttr::get(i64, *elementOffset) : IntegerAttr());
  };
  for (int64_t layer = stage.getFirstLayer(); layer < stage.getEndLayer();
       ++layer) {
    SmallVector<ParamTensor> tensors = layerTensors(layerOp(layer), dims);
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
        markOffloaded(
            init(tensor.init, tensorOf(master, tensor, f32), tensor.name),
            layer, "master", tensor.offset * 4);
      writeBack(master, "master");
    };
    // Streamed states are initialized chunk by chunk (after the view).
    bool streamMaster = streamed(layer, "master");
    bool streamAdam = streamed(layer, "adam");
    Value opt =
        streamAdam ? Value() : stateOf(stage.getOptStateArg(layer), "adam");
    int64_t n = zero() ? shardElements(layer) : layerParams(layer);
    // The view (the master itself for FP32 models), tensor by tensor.
    for (const ParamTensor &tensor : tensors)
      init(tensor.init, tensorOf(view, tensor, elem), tensor.name);
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
          layerPrefix(layerOp(layer)), pro.getF64FloatAttr(options.initStd),
          IntegerAttr());
      op->setAttr("ratrain.dp_shard", IntegerAttr::get(i64, n));
      op->setAttr("ratrain.dp_shard_tensors", shardTensorsAttr(tensors));
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
      op->setAttr("ratrain.dp_shard", IntegerAttr::get(i64, n));
      if (kind == mt::InitKind::zeros)
        return op;
      op->setAttr("ratrain.dp_shard_tensors", shardTensorsAttr(tensors));
      return op;
    };
    std::string prefix = layerPrefix(layerOp(layer));
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
    resolve({}, {ones});
    mt::FillOp::create(b, loc, ones, APFloat(1.0));
  }

  for (Operation &op : stage.getBody().front()) {
    loc = op.getLoc();
    LogicalResult result = success();
    if (auto forward = dyn_cast<ForwardOp>(op))
      result = lowerForward(forward);
    else if (auto recompute = dyn_cast<RecomputeOp>(op))
      result = lowerRecompute(recompute);
    else if (auto backward = dyn_cast<BackwardOp>(op))
      result = lowerBackward(backward);
    else if (isa<SendOp>(op))
      lowerTransfer(&op, /*send=*/true);
    else if (isa<RecvOp>(op))
      lowerTransfer(&op, /*send=*/false);
    else if (auto reload = dyn_cast<ReloadOp>(op))
      lowerReload(reload);
    else if (auto offload = dyn_cast<OffloadOp>(op))
      lowerOffload(offload);
    else if (auto ready = dyn_cast<GradReadyOp>(op)) {
      // The gradient is complete: nothing to run, except the NormHead's
      // Jacobian for the head.
      if (dims.normHead &&
          layerOp(ready.getGrad().getType().getLayer()).getKind() ==
              LayerKind::Head)
        emitNormHeadJacobian(ready);
    } else if (auto sync = dyn_cast<SyncOp>(op))
      result = lowerSync(sync);
    else if (auto wait = dyn_cast<WaitOp>(op))
      waitTokens(pending.lookup(wait.getPending()));
    else if (auto update = dyn_cast<UpdateOp>(op)) {
      if (update.getOptimizer() != Optimizer::AdamW)
        return update.emitOpError("only AdamW updates are lowered");
      result = lowerUpdate(update);
    } else if (auto prefetch = dyn_cast<ViewPrefetchOp>(op))
      pending[prefetch.getPending()] =
          updateTokens.lookup(prefetch.getMaster().getType().getLayer());
    else if (isa<YieldOp>(op)) {
      SmallVector<Value> all;
      for (const InFlight &f : inflight)
        all.push_back(f.token);
      waitTokens(all);
    } else {
      llvm_unreachable("every ratrain stage op is handled above");
    }
    if (failed(result))
      return failure();
  }
  sentinel->erase();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct LowerToMT3KPass
    : public ratrain::impl::RATrainLowerToMT3KBase<LowerToMT3KPass> {
  using RATrainLowerToMT3KBase::RATrainLowerToMT3KBase;

  void runOnOperation() override;
};

/// Rejects what the lowering does not support, with a reason.
LogicalResult checkSupported(PipelineOp pipeline, ModelOp model) {
  PlanAttr plan = pipeline.getPlan();
  ModelConfig config = getModelConfig(model);
  if (model.getTieEmbeddings())
    return pipeline.emitOpError("cannot be lowered: model @")
           << model.getSymName()
           << " ties its embeddings; the shared embedding/LM-head gradient "
              "is not lowered yet";
  if (plan.getZero() >= 1)
    for (LayerOp layer : model.getLayers())
      if (getLayerParams(layer) % plan.getDp() != 0)
        return pipeline.emitOpError("cannot be lowered: layer ")
               << layer.getIndex() << " has " << getLayerParams(layer)
               << " parameters, not a multiple of dp = " << plan.getDp()
               << " (ZeRO shards must be equal)";
  return success();
}

void LowerToMT3KPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<PipelineOp> pipelines(module.getOps<PipelineOp>());
  if (pipelines.empty()) {
    module.emitError("found no ratrain.pipeline to lower: run "
                     "--ratrain-schedule-pipeline first");
    return signalPassFailure();
  }
  if (pipelines.size() > 1) {
    pipelines[1].emitOpError("is a second pipeline; an mt3k module describes "
                             "one training job");
    return signalPassFailure();
  }
  PipelineOp pipeline = pipelines.front();
  FailureOr<ModelOp> model = pipeline.lookupModel();
  if (failed(model))
    return signalPassFailure();
  if (!pipeline.getPolicy()) {
    pipeline.emitOpError("was not lifecycle-scheduled: run "
                         "--ratrain-schedule-pipeline first");
    return signalPassFailure();
  }
  if (failed(checkSupported(pipeline, *model)))
    return signalPassFailure();
  FailureOr<MachineModel> machine = loadPassMachine(module, machineFile);
  if (failed(machine))
    return signalPassFailure();

  PlanAttr plan = pipeline.getPlan();
  ModelConfig config = getModelConfig(*model);
  Dims dims;
  dims.batch = plan.getMicroBatchSize();
  dims.seq = config.seqLen;
  dims.tokens = dims.batch * dims.seq;
  dims.hidden = config.hidden;
  dims.heads = config.numHeads;
  dims.kvHeads = config.numKVHeads;
  dims.headDim = config.headDim();
  dims.ffn = config.ffnHidden;
  dims.vocab = config.vocab;
  dims.qDim = dims.heads * dims.headDim;
  dims.kvDim = config.kvDim();
  dims.qkvBias = config.qkvBias;
  dims.alibi = config.positions == PositionEncoding::Alibi;
  dims.packedQkv = config.family == ModelFamily::Baichuan;
  dims.normHead = config.normHead;
  dims.microBatches = plan.getMicroBatches();
  Type elem = model->getDtype();

  // Every layer's tensors add up to its parameter count (Baichuan's W_pack
  // holds exactly q_proj, k_proj and v_proj).
  for (LayerOp layer : model->getLayers()) {
    int64_t total = 0;
    for (const ParamTensor &tensor : layerTensors(layer, dims))
      total += tensor.numel();
    assert(total == getLayerParams(layer) && "tensors miss parameters");
    (void)total;
  }

  LoweringOptions options{learningRate,      beta1,       beta2,
                          epsilon,           weightDecay, initStd,
                          int64_t(alignment)};
  if (alignment < 0 || (alignment & (alignment - 1)) != 0) {
    module.emitError("--ratrain-lower-to-mt3k: alignment ")
        << int64_t(alignment) << " is not a power of two";
    return signalPassFailure();
  }

  OpBuilder moduleBuilder(module.getContext());
  moduleBuilder.setInsertionPoint(*model);
  Location loc = pipeline.getLoc();
  bool hierarchical = false;
  pipeline.walk([&](SyncOp sync) {
    hierarchical |= sync.getHierarchy() == SyncHierarchy::Hierarchical;
  });

  SmallVector<std::unique_ptr<StageLowering>> stages;
  for (StageOp stage : pipeline.getStages()) {
    stages.push_back(std::make_unique<StageLowering>(
        *model, pipeline, stage, *machine, options, dims, elem, moduleBuilder));
    if (failed(stages.back()->plan()))
      return signalPassFailure();
  }

  int64_t machineAlignment = alignment;
  if (machineAlignment == 0) {
    machineAlignment = 64;
    for (auto &stage : stages)
      machineAlignment =
          std::min(machineAlignment, stage->getOffsetAlignment());
  }
  const ClusterSpec &cluster = machine->cluster;
  mt::MachineOp::create(moduleBuilder, loc, machine->name, cluster.ddrBytes,
                        cluster.gsmBytes, cluster.amBytesPerCore, cluster.cores,
                        cluster.dmaChannels, machineAlignment);
  mt::GroupOp::create(moduleBuilder, loc, "dp", mt::GroupKind::data_parallel,
                      plan.getDp());
  mt::GroupOp::create(moduleBuilder, loc, "pp", mt::GroupKind::pipeline,
                      plan.getPp());
  if (hierarchical)
    mt::GroupOp::create(moduleBuilder, loc, "node", mt::GroupKind::node_local,
                        machine->clustersPerNode);
  for (auto &stage : stages)
    if (failed(stage->lower()))
      return signalPassFailure();
  // What the driver and the runtime need besides the programs: the model
  // (the runtime's ModelConfig: sizes, dtype, norm and RoPE constants) and
  // the plan (pp, dp, micro-batching, the stage layer split), as module
  // attributes, since the ratrain ops go away.
  MLIRContext *ctx = module.getContext();
  Builder attrs(ctx);
  SmallVector<NamedAttribute> modelAttrs = {
      attrs.getNamedAttr("name", model->getSymNameAttr()),
      attrs.getNamedAttr("family", model->getFamilyAttr()),
      attrs.getNamedAttr("dtype", TypeAttr::get(elem)),
      attrs.getNamedAttr("decoder_layers",
                         attrs.getI64IntegerAttr(config.numLayers)),
      attrs.getNamedAttr("hidden", attrs.getI64IntegerAttr(config.hidden)),
      attrs.getNamedAttr("heads", attrs.getI64IntegerAttr(config.numHeads)),
      attrs.getNamedAttr("kv_heads",
                         attrs.getI64IntegerAttr(config.numKVHeads)),
      attrs.getNamedAttr("ffn", attrs.getI64IntegerAttr(config.ffnHidden)),
      attrs.getNamedAttr("vocab", attrs.getI64IntegerAttr(config.vocab)),
      attrs.getNamedAttr("seq_len", attrs.getI64IntegerAttr(config.seqLen)),
      attrs.getNamedAttr("max_positions",
                         attrs.getI64IntegerAttr(config.maxPositions)),
      attrs.getNamedAttr("rms_eps", model->getRmsEpsAttr()),
      attrs.getNamedAttr("rope_theta", model->getRopeThetaAttr()),
      attrs.getNamedAttr("qkv_bias", attrs.getBoolAttr(config.qkvBias))};
  // Only when set (the runtime's ModelConfig does not need it; it marks the
  // program as Baichuan2's NormHead one).
  if (config.normHead)
    modelAttrs.push_back(
        attrs.getNamedAttr("norm_head", attrs.getBoolAttr(true)));
  module->setAttr("ratrain.model", attrs.getDictionaryAttr(modelAttrs));
  module->setAttr("ratrain.plan", plan);
  if (std::optional<SchedulePolicy> policy = pipeline.getPolicy())
    module->setAttr("ratrain.policy",
                    attrs.getStringAttr(stringifySchedulePolicy(*policy)));
  pipeline.erase();
  model->erase();
}

} // namespace
