//===- StageLowering.h - One ratrain.stage to one mt3k.program --*- C++ -*-===//
//
// Private to the ratrain-to-mt3k conversion (as CIRCT's SeqToSV keeps
// FirRegLowering.h next to its pass): the layouts the lowering places in DDR
// and `StageLowering`, which lowers one scheduled, buffer-assigned
// `ratrain.stage` into one `mt3k.program`. Its parts live in one file per
// concern:
//   StageLowering.cpp     assigned buffers, views, tokens, kernel helpers
//   LayerKernels.cpp      the kernel sequences of decoder and head layers
//   LowerScheduleOps.cpp  forward/backward/sync/update/send/recv, lower()
//   OffloadStreaming.cpp  offloaded and chunk-streamed optimizer states
//   StagePlanning.cpp     the scratch-area plan and the program prologue
//   LowerToMT3K.cpp       the pass
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_LIB_CONVERSION_RATRAINTOMT3K_STAGELOWERING_H
#define RATRAIN_LIB_CONVERSION_RATRAINTOMT3K_STAGELOWERING_H

#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KOps.h"
#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/ModelAndPlan.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/ParameterLayout.h"
#include "ratrain/Planner/MemoryModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <optional>
#include <string>

namespace ratrain::lowering {

using namespace mlir;
namespace mt = ratrain::mt3k;

//===----------------------------------------------------------------------===//
// Parameter tensors and slot layouts
//===----------------------------------------------------------------------===//

/// The forward that stored an offloaded activation (through its offload's
/// wait and the reload, for a reload's operand); null if none.
ForwardOp storingForward(Value activation);

/// The model sizes the lowering needs.
struct Dims {
  int64_t batch = 1, seq = 1, tokens = 1; ///< b, s, T = b * s
  int64_t hidden = 0, heads = 0, kvHeads = 0, headDim = 0, ffn = 0;
  /// The attention's sliding window (0: plain causal).
  int64_t window = 0;
  int64_t vocab = 0, qDim = 0, kvDim = 0;
  int64_t microBatches = 1;
  /// The logits gradient's scale: 1 / (T m), or dp / (T sum(shares)) with
  /// uneven data-parallel shares (the replicas' average is then the mean
  /// over the global batch).
  double lossScale = 1;
  /// Micro-batches from which some replica skips the rest (the smallest
  /// dp share); micro_batches when every replica runs them all. The ops of
  /// a micro-batch at or above it run only where the rank's share covers
  /// it (the `mt3k.micro_batch` attribute, a guard in the emitted C++).
  int64_t guardedFrom = 1;
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

/// The mt3k initializer of a parameter initialization.
inline mt::InitKind toInitKind(ParamInit init) {
  switch (init) {
  case ParamInit::Normal:
    return mt::InitKind::normal;
  case ParamInit::Ones:
    return mt::InitKind::ones;
  case ParamInit::Zeros:
    break;
  }
  return mt::InitKind::zeros;
}

/// `value` rounded up to a multiple of `alignment`.
inline int64_t alignTo(int64_t value, int64_t alignment) {
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
inline LayerShape layerShape(const Dims &d) {
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
inline DecoderLayout decoderLayout(const Dims &d, int64_t w, int64_t available,
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
inline HeadLayout headLayout(const Dims &d, int64_t w, int64_t alignment) {
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
inline NormHeadLayout normHeadLayout(const Dims &d, int64_t w,
                                     int64_t alignment) {
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
inline double normHeadEps(int64_t hidden) { return 1e-24 / double(hidden); }

/// Marks the `mt3k.offload` and `mt3k.wait` ops of a program's prologue
/// that put the initialized offloaded states into the tier (they run once,
/// before the iteration; see the mt3k program verifier).
constexpr llvm::StringLiteral kPrologueAttr = "mt3k.prologue";

/// Which parameters take AdamW's weight decay (`weight-decay-params`).
enum class DecayedParams { Matrices, MatricesExceptEmbeddings, All };

/// The pass options a stage lowering uses.
struct LoweringOptions {
  double lr, beta1, beta2, eps, weightDecay, initStd;
  DecayedParams decayed = DecayedParams::Matrices;
  int64_t alignment;
  /// Decoder layer kernel sequences become calls of shared functions.
  bool outlineLayers = false;
  /// Schedule ops' work is marked for the per-op trace (trace-spans).
  bool traceSpans = true;
  /// ZeRO-1 gradient reduce-scatters leave their last reduction to the
  /// update (average-in-update).
  bool averageInUpdate = true;
};

/// The shared functions of outlined layer kernel sequences of a module (one
/// per distinct sequence; every stage's lowering adds to it).
struct OutlinedFunctions {
  SmallVector<func::FuncOp> functions;
};

//===----------------------------------------------------------------------===//
// Stage lowering
//===----------------------------------------------------------------------===//

/// Outbox slots per (rank, direction: 0 activation, 1 gradient).
using OutboxSlotCounts = llvm::DenseMap<std::pair<int64_t, int>, int64_t>;

/// Lowers one `ratrain.stage` into one `mt3k.program`.
class StageLowering {
public:
  StageLowering(ModelOp model, PipelineOp pipeline, StageOp stage,
                const MachineModel &machine, const LoweringOptions &options,
                const Dims &dims, Type elementType, OpBuilder &moduleBuilder,
                OutlinedFunctions &outlined)
      : model(model), pipeline(pipeline), stage(stage), machine(machine),
        options(options), dims(dims), modelConfig(getModelConfig(model)),
        elem(elementType), ctx(model.getContext()), b(ctx), pro(ctx),
        moduleBuilder(moduleBuilder), outlined(outlined) {}

  /// Checks the stage and plans the lowering scratch area, with the
  /// pipeline's outbox slots (planOutboxSlots); emits an error and fails
  /// when the stage cannot be lowered.
  LogicalResult plan(const OutboxSlotCounts &outboxSlots);
  /// The largest power of two (up to the alignment) dividing every assigned
  /// offset of the stage (after plan()).
  int64_t getOffsetAlignment() const { return offsetAlignment; }
  /// Creates the program (after plan()).
  /// The micro-batch `op` works on: its `micro_batch`, or the storing
  /// forward's for an activation's offload or reload; none for other ops.
  std::optional<int64_t> microBatchOf(Operation &op);
  /// With uneven dp shares: marks the mt3k ops lowered from `op` (those
  /// after `before`) with kMicroBatchGuard when its micro-batch is one that
  /// some replica skips; an error when one of them is a collective.
  LogicalResult guardMicroBatch(Operation &op, Operation *before);
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
  /// The `window` attribute of the attention kernels (null: plain causal).
  IntegerAttr slidingWindow() {
    return dims.window ? b.getI64IntegerAttr(dims.window) : IntegerAttr();
  }
  /// The parameter tensors of model layer `layer` in their flat-buffer
  /// order (ratrain/Model/ParameterLayout.h) and the name prefix of its
  /// buffers.
  SmallVector<ParamTensor> layerTensors(int64_t layer) const {
    return layerParameterTensors(modelConfig, layer);
  }
  std::string layerPrefix(int64_t layer) const {
    return layerParameterPrefix(modelConfig, layer);
  }

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
  /// This rank's block of `source` split over `group` (mt3k.group_slot, in
  /// the prologue; one per source, group and type).
  Value groupSlot(Value source, StringRef group, ArrayRef<int64_t> shape,
                  Type type);
  Value stateBase(Value state, StringRef role, int64_t layer);
  Value tensorOf(Value flat, const ParamTensor &tensor, Type type,
                 ArrayRef<int64_t> shape = {});

  // Outlining: while a layer's kernel sequence is built into a function
  // body, every buffer it asks for (base) becomes an argument of the
  // function and views are taken inside the body; the call passes the
  // caller's buffers (the hazard analysis reads a call's effects from its
  // callee).
  struct Outline {
    func::FuncOp function;
    StringRef name;
    /// Per argument: the caller's buffer.
    SmallVector<Value> outer;
    /// base() key -> argument; body value (argument or view) -> argument.
    llvm::StringMap<unsigned> argOfKey;
    DenseMap<Value, unsigned> rootArg;
    OpBuilder::InsertPoint resume;
  };
  /// Starts building a function body named after `name` (when the pass
  /// outlines layers); returns whether it did.
  bool beginOutline(StringRef name);
  /// Ends the body: reuses an equivalent function or keeps this one, and
  /// emits the call.
  void endOutline();

  // Tokens. The waits a hazard needs (an op touching memory an asynchronous
  // op still uses) are not placed here: after the program is built,
  // insertMissingWaits derives them from the ops' declared memory effects.
  // The lowering places the waits the schedule asks for (ratrain.wait, the
  // step end) on the tokens still in flight.
  /// Records the token of an asynchronous op as in flight.
  void track(Value token);
  /// Waits on those of `tokens` still in flight, in one mt3k.wait.
  void waitTokens(ArrayRef<Value> tokens);

  // Kernel helpers.
  void gemm(Value a, Value bm, Value c, bool ta, bool tb, bool acc);
  void copy(Value from, Value to);
  void elementwise(mt::ElementwiseKind kind, ArrayRef<Value> ins,
                   ArrayRef<Value> outs, std::optional<double> theta = {},
                   std::optional<double> scale = {});
  /// Rotary embedding of `in` into `out` (`backward`: the inverse rotation)
  /// with the model's rope_theta and rope_scaling.
  void rope(Value in, Value out, bool backward);
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
  /// The tensors of a decoder layer's deferred buffer (DecoderDeferredLayout).
  struct DecoderDeferred {
    Value dy, dgate, dup, dxn2, dres, dq2, dk2, dv2, dq4, dk4, dv4, dxn1;
  };
  DecoderDeferred decoderDeferred(Value base);
  /// The [T, h] boundary tensors of micro-batch `mb`: the buffer a recv of
  /// `payload` lands in, the outbox slot a send of it leaves from, and the
  /// stream scratch a boundary inside the stage passes through.
  /// The received boundary tensor of micro-batch `mb` for virtual stage
  /// `chunk` of this rank, and the outbox slot it sends from.
  Value received(Payload payload, int64_t mb, int64_t chunk);
  Value outbox(Payload payload, int64_t mb, int64_t chunk);
  Value stream();
  /// A layer's input / output activation and gradient at a boundary.
  Value flowInput(int64_t layer, int64_t mb);
  Value flowOutput(int64_t layer, int64_t mb);
  Value gradInput(int64_t layer, int64_t mb);
  Value gradOutput(int64_t layer, int64_t mb);
  Value matrix(Value buffer, int64_t cols);

  void emitDecoderForward(const LayerWeights &w, const DecoderActs &a,
                          Value src, Value dst);
  void emitDecoderBackward(const LayerWeights &w, const LayerWeights &g,
                           const DecoderActs &a, Value dy, Value dx, bool acc);
  /// The split decoder backward (docs/lowering.md, "Split backward"): the
  /// input part computes dx from dy and keeps what the weight part needs in
  /// the deferred buffer `d`; the weight part accumulates the parameter
  /// gradients into `g`. Together they run the kernels of
  /// emitDecoderBackward on the same operands (the fused RMSNorm backward
  /// runs in both, each keeping one of its two outputs), so the bits are
  /// the same.
  void emitDecoderBackwardInput(const LayerWeights &w, const DecoderActs &a,
                                const DecoderDeferred &d, Value dy, Value dx);
  void emitDecoderBackwardWeight(const LayerWeights &w, const LayerWeights &g,
                                 const DecoderActs &a, const DecoderDeferred &d,
                                 bool acc);
  void emitHeadForward(const LayerWeights &w, Value act, int64_t mb, Value src);
  void emitHeadBackward(const LayerWeights &w, const LayerWeights &g, Value act,
                        Value dx, bool acc);
  /// The split head backward: the input part keeps the final norm's output
  /// gradient `dxn` (the logits gradient stays in the activations).
  void emitHeadBackwardInput(const LayerWeights &w, Value act, Value dxn,
                             Value dx);
  void emitHeadBackwardWeight(const LayerWeights &w, const LayerWeights &g,
                              Value act, Value dxn, bool acc);
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
  LogicalResult lowerBackwardInput(BackwardInputOp op);
  LogicalResult lowerBackwardWeight(BackwardWeightOp op);
  /// The deferred buffer of a split backward's input part.
  Value deferredBase(Value deferred, int64_t layer, int64_t mb);
  LogicalResult lowerSync(SyncOp op);
  /// The view of the updated (or, under partial synchronization, averaged)
  /// master.
  LogicalResult lowerViewPrefetch(ViewPrefetchOp op);
  LogicalResult lowerUpdate(UpdateOp op);
  /// Gradient clipping: zeroes the norm's buffer, adds the squares of this
  /// rank's part of every synced gradient (the buffers the updates read)
  /// and starts the all-reduce of the sum over @world.
  LogicalResult lowerGradNorm(GradNormOp op);
  /// The f32 scalar buffer of a global gradient norm (its async value or
  /// the wait's).
  Value gradNormBuffer(Value norm);
  /// AdamW over `n` elements of grad, master, m, v (the refreshed view into
  /// `viewDest` when set), `chunk` elements per GSM staging slot; the view
  /// DMAs' tokens go to `tokens`. `clip` (or null): the squared global
  /// gradient norm the update clips with.
  /// `firstElement`: where the range starts in the layer's flat parameters
  /// (in this rank's shard with ZeRO), for the weight-decay policy.
  /// AdamW on elements [0, n) of a parameter (shard), `chunk` at a time;
  /// `own` (or null): the rank's contribution to a gradient whose
  /// reduce-scatter left its last reduction to the update.
  LogicalResult updateRange(Value grad, Value own, Value master, Value m,
                            Value v, Value viewDest, int64_t n, int64_t chunk,
                            SmallVector<Value> &tokens, Value clip,
                            int64_t layer, int64_t firstElement);
  /// Whether ZeRO-1 gradient reduce-scatters on `algorithm` leave their
  /// last reduction to the update (average-in-update; see lowerSync).
  bool averagesInUpdate(mt::CollectiveAlgorithm algorithm) const;
  /// The [begin, end) element ranges of `layer`'s flat parameters that take
  /// no weight decay under the policy, ascending.
  SmallVector<int64_t> noDecayRanges(int64_t layer) const;
  /// Records on `adam` (elements [first, first + count) of `layer`, of this
  /// rank's shard with ZeRO) which of its elements take no weight decay:
  /// the ranges of `exempt` it may touch (all of them with ZeRO, where the
  /// shard's place in the layer is the runtime's), or weight_decay 0 when
  /// all of its elements are exempt.
  void setNoDecay(mt::AdamWOp adam, ArrayRef<int64_t> exempt, int64_t layer,
                  int64_t first, int64_t count);
  LogicalResult lowerTransfer(Operation *op, bool send);
  /// The arena offset of the receive buffer a one-sided send puts into: the
  /// assigned buffer of the matching `ratrain.recv` in the peer's stage.
  FailureOr<int64_t> peerReceiveOffset(SendOp send);
  void lowerReload(ReloadOp op);
  void lowerOffload(OffloadOp op);
  /// Activation offload: the stored activation of a forward goes to the
  /// tier under activationKey and comes back into the reload's buffer.
  LogicalResult lowerActivationOffload(OffloadOp op);
  LogicalResult lowerActivationReload(ReloadOp op);
  /// "act.layer<L>.mb<M>": the tier key of a forward's stored activation.
  static std::string activationKey(ForwardOp forward);
  static mt::StorageTier tierOf(StorageTier tier);
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
                             tensor.numel(),
                             mt::stringifyInitKind(toInitKind(tensor.init)))
                   .str()));
    return ArrayAttr::get(ctx, pieces);
  }
  /// The tier key of `layer`'s state of `role` ("master" or "adam").
  std::string offloadKey(int64_t layer, StringRef role) {
    return llvm::formatv("{0}.{1}", layerPrefix(layer), role);
  }
  /// The error of a stage the buffer assignment has not run on.
  InFlightDiagnostic notBufferAssigned() {
    return stage.emitOpError("stage ")
           << stageIndex
           << " was not buffer-assigned: run --ratrain-assign-buffers (or "
              "--ratrain-schedule-pipeline) before --ratrain-lower-to-mt3k";
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
  /// The buffer a reload of an offloaded activation writes (`pending`, the
  /// reload's async value, which its wait shares).
  Value reloadedActBase(Value pending, int64_t layer, int64_t mb);
  Value gradFlat(Value grad, int64_t layer);
  int64_t layerParams(int64_t layer) { return getLayerParams(layerOp(layer)); }
  int64_t shardElements(int64_t layer) {
    return layerParams(layer) / plan_.getDp();
  }
  bool zero() const { return plan_.getZero() > 0; }
  /// ZeRO-3: the assigned view is this rank's shard; computes read gathered
  /// views.
  bool zero3() const { return plan_.getZero() >= 3; }
  /// The flat buffer of the view a compute reads: the layer's view, or under
  /// ZeRO-3 the buffer its all-gather filled.
  Value computeView(Value view, int64_t layer) {
    return stateBase(view, zero3() ? "gathered_view" : "view", layer);
  }
  /// This rank's view shard of `layer` (ZeRO >= 1): AdamW's refreshed
  /// shard, the all-gather input. ZeRO-1/2: a region of the lowering's
  /// area; ZeRO-3: the layer's assigned (sharded) view.
  Value viewShard(int64_t layer) {
    if (zero3())
      return slot(stateBase(stage.getViewArg(layer), "view", layer), 0,
                  {shardElements(layer)}, elem);
    if (viewShardInPlace())
      return groupSlot(slot(stateBase(stage.getViewArg(layer), "view", layer),
                            0, {layerParams(layer)}, elem),
                       "dp", {shardElements(layer)}, elem);
    return scratch(llvm::formatv("zero.view_shard.layer{0}", layer).str(),
                   viewShardOff.lookup(layer), {shardElements(layer)}, elem);
  }
  /// ZeRO-1/2 with the default sharding policy (no partitions, native
  /// wires): the view shard is this rank's block of the layer's full view
  /// (mt3k.group_slot), which AdamW refreshes in place (an FP32 model's
  /// master shard, which is its view shard, lives there) and the all-gather
  /// fills around, so there is no view-shard buffer and no copy of the own
  /// block (docs/lowering.md, "ZeRO-1 and ZeRO-2"). The planner counts the
  /// same (MemoryModel.cpp, the ZeRO shards).
  bool viewShardInPlace() const {
    return zero() && !zero3() && !plan_.hasSharding();
  }
  /// This rank's gradient shard of `layer`: the buffer assignment gave it
  /// (ZeRO-2 over dp > 1: the value of the reduce-scatter's wait), or a
  /// region of the lowering's area (ZeRO-1).
  Value gradShard(int64_t layer) {
    int64_t n = shardElements(layer);
    auto assignedShard = assignedGradShard.find(layer);
    if (assignedShard == assignedGradShard.end())
      return scratch(llvm::formatv("zero.grad_shard.layer{0}", layer).str(),
                     gradShardOff.lookup(layer), {n}, elem);
    std::string name = llvm::formatv("{0}.grad_shard", layerPrefix(layer));
    auto [offset, bytes] = assignedShard->second;
    return slot(ddrBase(name, offset, bytes), 0, {n}, elem);
  }
  /// ZeRO with an FP32 model: this rank's persistent master shard, which is
  /// its view shard (the assigned master is the full view): AdamW updates it
  /// in place and the all-gather sends it, no copy between them.
  Value masterShard(int64_t layer) { return viewShard(layer); }
  mt::CollectiveAlgorithm algorithm(SyncHierarchy hierarchy) const;

  ModelOp model;
  PipelineOp pipeline;
  StageOp stage;
  const MachineModel &machine;
  LoweringOptions options;
  Dims dims;
  ModelConfig modelConfig;
  Type elem;
  DType dtype = DType::F32;
  MLIRContext *ctx;
  PlanAttr plan_;
  SmallVector<LayerOp> layers;
  int64_t numStages = 1, stageIndex = 0;

  OpBuilder b;   ///< the iteration (appends at the end of the body)
  OpBuilder pro; ///< the prologue (inserts before the sentinel)
  OpBuilder &moduleBuilder;
  OutlinedFunctions &outlined;
  std::optional<Outline> outline;
  mt::ProgramOp program;
  Operation *sentinel = nullptr;
  Location loc = UnknownLoc::get(ctx);

  // Tied embeddings (TiedEmbeddings.cpp): the owner is the embedding's
  // rank; the head's rank reads a replica of the view and sends back the
  // LM-head gradient.
  /// Finds the two ranks and takes the replica's scratch regions.
  LogicalResult planTiedEmbeddings(SlotAllocator &area);
  /// The message tag of the view (false) or gradient (true) transfer.
  int64_t tiedTag(bool gradient) const;
  /// Adds the replica's lm_head.weight to the head's view (and gradient).
  void addTiedHead(LayerWeights &w, LayerWeights *g);
  /// At the embedding's forward: the first sends the step's view `table`.
  void lowerTiedEmbeddingForward(Value table);
  /// At the head's forward: the first receives the step's view.
  void lowerTiedHeadForward();
  /// At a grad_ready: the head's sends its LM-head gradient, the
  /// embedding's receives it and adds it.
  void lowerTiedGradReady(GradReadyOp ready);
  bool tied = false;
  int64_t embeddingRank = 0, headRank = 0;
  int64_t tiedViewOff = -1, tiedGradOff = -1;
  bool tiedViewSent = false, tiedViewReceived = false;
  Value tiedEmbeddingView; ///< the embedding's view table, on its rank

  // Scratch area appended to the assigned arena (offsets are absolute).
  int64_t arenaBytes = 0, programArena = 0, offsetAlignment = 64;
  int64_t streamOff = 0, onesOff = -1, r1Off = 0, r2Off = 0, wOff = 0;
  int64_t fwdFullOff = -1;
  int64_t normHeadOff = -1; ///< scratch.normhead (NormHead, head stage only)
  NormHeadLayout normHeadSlots;
  Value normHeadSource; ///< the LM-head view the normalized copy is of
  SmallVector<int64_t, 2> outboxOff[2]; ///< per payload: K slots
  /// ZeRO, per layer: the gradient shard and the view shard (an FP32 model's
  /// persistent master shard; its assigned master is the full view).
  DenseMap<int64_t, int64_t> gradShardOff, viewShardOff;
  /// ZeRO-2: the gradient shards buffer assignment placed (offset, bytes).
  DenseMap<int64_t, std::pair<int64_t, int64_t>> assignedGradShard;
  int64_t gsmSlotBytes = 0;
  DecoderLayout fullLayout;
  HeadLayout head;
  DecoderDeferredLayout deferredLayout;
  /// Named scratch regions: name -> (offset, bytes).
  llvm::StringMap<std::pair<int64_t, int64_t>> regions;
  /// Takes `bytes` of the lowering's area for the region `name`.
  int64_t region(SlotAllocator &area, StringRef name, int64_t bytes) {
    int64_t offset = area.take(bytes);
    regions[name] = {offset, bytes};
    return offset;
  }

  // Transfers: (payload, mb) -> outbox slot index / the recv op.
  std::map<std::tuple<int, int64_t, int64_t>, int64_t> outboxSlot;
  std::map<std::tuple<int, int64_t, int64_t>, Operation *> recvOps;

  // Memoized buffers and views.
  llvm::StringMap<Value> bases;
  std::map<std::tuple<const void *, int64_t, const void *>, Value> views;
  /// (source, group, result type) -> its mt3k.group_slot.
  std::map<std::tuple<const void *, std::string, const void *>, Value>
      groupSlots;

  /// Tokens of asynchronous ops not waited on yet, in program order.
  SmallVector<Value> inflight;
  DenseMap<Value, SmallVector<Value>> pending; ///< ratrain async -> tokens
  DenseMap<int64_t, SmallVector<Value>> updateTokens; ///< layer -> DMAs
  /// Layer -> the rank's block of its full gradient, where the gradient's
  /// reduce-scatter left its own contribution to the update.
  DenseMap<int64_t, Value> ownGradient;
  SmallVector<Value, 2> gsmSlots;
  int64_t gsmNext = 0; ///< the GSM staging slot the next AdamW chunk uses
  /// Offloaded states by key (offloadKey).
  std::map<std::string, OffloadedState> offloaded;
  /// Offloaded activations: the tier of each offload in flight (by its
  /// async value, which the reload reads through its wait) and the bytes
  /// moved under each key.
  DenseMap<Value, mt::StorageTier> activationTiers;
  llvm::StringMap<int64_t> activationBytes;
  /// Elements per chunk of the streamed states of a layer (all of its
  /// streamed states use the same chunks).
  DenseMap<int64_t, int64_t> streamChunk;
  /// The offloads of the last chunks of a streamed state, by key.
  std::map<std::string, SmallVector<Value>> streamTokens;
  std::map<int64_t, SmallVector<ParamTensor>> tensorCache;
};

/// The pipeline-boundary transfer key of a send or recv: (0 activation / 1
/// gradient, micro-batch, this side's virtual stage).
inline std::tuple<int, int64_t, int64_t>
transferKey(Payload payload, int64_t mb, int64_t chunk) {
  return {payload == Payload::Gradient ? 1 : 0, mb, chunk};
}

/// The outbox slots per (rank, direction: 0 activation, 1 gradient) with
/// which every rank's sends can reuse their slots without a deadlock under
/// rendezvous sends (OutboxSlots.cpp); at least 2.
OutboxSlotCounts planOutboxSlots(PipelineOp pipeline);

/// The symbol of the partition group a sync of `scope` at `level` runs on:
/// "dp_inside<level>" or "dp_across<level>".
inline std::string partitionGroupName(SyncScope scope, int64_t level) {
  return (scope == SyncScope::Inside ? "dp_inside" : "dp_across") +
         std::to_string(level);
}

} // namespace ratrain::lowering

#endif // RATRAIN_LIB_CONVERSION_RATRAINTOMT3K_STAGELOWERING_H
