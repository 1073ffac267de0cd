//===- ScheduleUtils.h - Shared analyses of stage programs ------*- C++ -*-===//
//
// What the schedule passes (expand-1f1b, schedule-lifecycle, assign-buffers,
// verify-schedule), their tests and the tools that read a scheduled module
// share: the model and plan a pipeline is for, the DDR bytes of each kind of
// buffer (the planner's memory model, per buffer), and the buffers of a stage
// program with their live ranges in program positions.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TRANSFORMS_SCHEDULEUTILS_H
#define RATRAIN_TRANSFORMS_SCHEDULEUTILS_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Planner/CostModel.h"
#include "ratrain/Planner/MemoryModel.h"

#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace ratrain {

//===----------------------------------------------------------------------===//
// Attribute names
//===----------------------------------------------------------------------===//

/// On a value-producing op: `array<i64: id, offset, bytes, ...>`, one triple
/// per result (the DDR buffer the result lives in; bytes 0 for results that
/// are not in DDR). On `ratrain.send` / `ratrain.recv`: one triple, the
/// message buffer.
inline constexpr llvm::StringLiteral kBuffersAttr = "ratrain.buffers";
/// On a stage: `array<i64: id, offset, bytes, ...>`, one triple per block
/// argument.
inline constexpr llvm::StringLiteral kArgBuffersAttr = "ratrain.arg_buffers";
/// On a stage: a dictionary of buffers not tied to a value, each
/// `array<i64: id, offset, bytes>`: `workspace`, `sync_staging`,
/// `attention_scratch`.
inline constexpr llvm::StringLiteral kScratchBuffersAttr =
    "ratrain.scratch_buffers";
/// On a stage: the largest sum of live bytes over its program positions.
inline constexpr llvm::StringLiteral kPeakBytesAttr = "ratrain.peak_bytes";
/// On a stage: the first program position (-1: step start) at the peak.
inline constexpr llvm::StringLiteral kPeakPositionAttr =
    "ratrain.peak_position";
/// On a stage: the arena size, max(offset + bytes) over its buffers.
inline constexpr llvm::StringLiteral kArenaBytesAttr = "ratrain.arena_bytes";
/// On a pipeline: the DDR capacity per cluster the buffers were checked
/// against.
inline constexpr llvm::StringLiteral kCapacityBytesAttr =
    "ratrain.capacity_bytes";

//===----------------------------------------------------------------------===//
// Model and plan
//===----------------------------------------------------------------------===//

/// The model a pipeline refers to, or an error on the pipeline.
mlir::FailureOr<ModelOp> lookupPipelineModel(PipelineOp pipeline);

/// The activation kind the forward of `layer` stores in a stage with
/// recovery policy `recompute`: decoder layers store `full` (none),
/// `selective` (selective) or `input` (full); the embedding and head always
/// store `full` (as in the memory model, which never recomputes them).
ActivationKind storedActivationKind(LayerKind layer, Recompute recompute);

/// Bytes per cluster of every kind of buffer of a model under a plan. The
/// rules are the planner's memory model (ratrain/Planner/MemoryModel.h,
/// computeStageMemory) taken buffer by buffer, so the assigned peak of a
/// stage stays at or below the planner's prediction.
class BufferSizes {
public:
  BufferSizes(ModelOp model, PlanAttr plan, const MemoryOptions &options = {});

  const ModelConfig &getConfig() const { return config; }
  PlanAttr getPlan() const { return plan; }

  /// Parameters of `layer`; with tied embeddings and p > 1 the head keeps
  /// its own copy of the embedding matrix.
  int64_t params(int64_t layer) const;
  /// 16-bit (model dtype) parameter view: w * params.
  int64_t viewBytes(int64_t layer) const;
  /// FP32 master copy (ZeRO >= 1: this rank's shard); 0 for FP32 models,
  /// whose view is the master.
  int64_t masterBytes(int64_t layer) const;
  /// Adam m and v, 8 bytes/param (ZeRO >= 1: the shard).
  int64_t optStateBytes(int64_t layer) const;
  /// The gradient a backward accumulates into: the layer's full gradient,
  /// w bytes/param, under every ZeRO stage (the schedule accumulates all
  /// micro-batches before it syncs).
  int64_t gradBytes(int64_t layer) const;
  /// ZeRO-2: this rank's shard of the reduce-scattered gradient, w *
  /// ceil(params / dp); 0 under ZeRO 0/1 (the all-reduce runs in place).
  int64_t gradShardBytes(int64_t layer) const;

  /// The plan's offload policy.
  OffloadPolicy getOffload() const { return offload; }
  /// Whether the plan keeps the master (resp. optimizer state) of every
  /// layer in the offload tier between steps. FP32 models never offload
  /// the master: their view is the master.
  bool offloadsMaster() const;
  bool offloadsOptState() const;
  /// DDR bytes of a state's block argument: 0 when the plan keeps it in the
  /// offload tier, else masterBytes / optStateBytes.
  int64_t residentMasterBytes(int64_t layer) const;
  int64_t residentOptStateBytes(int64_t layer) const;
  /// DDR bytes of a reloaded master (optimizer state) of `layer` in the
  /// streaming window: the whole state, or, when the machine streams in
  /// chunks (offload.chunk_bytes) and the layer's offloaded states exceed
  /// one chunk, this state's share of the one chunk that streams through
  /// DDR (offloaded bytes are apportioned 4 : 8 between master and Adam
  /// m, v), as the memory model's offload window counts it.
  int64_t streamedMasterBytes(int64_t layer) const;
  int64_t streamedOptStateBytes(int64_t layer) const;
  /// Stored activations of `layer` for one micro-batch: the Korthikanti
  /// sizes for decoder layers (`full`: no recompute, `selective`, `input`:
  /// 2sbh), token ids for the embedding, norm output, logits and softmax
  /// for the head.
  int64_t activationBytes(int64_t layer, ActivationKind kind) const;
  /// One pipeline message (activation or its gradient): s * b * h * w.
  int64_t boundaryBytes() const;
  /// DDR scratch of the largest layer kernel of a stage (the memory
  /// model's kernel workspace).
  int64_t workspaceBytes(int64_t stage) const;
  /// Gradient-sync staging of a stage: 0. All-reduce runs in place on the
  /// accumulated gradient and a ZeRO-2 reduce-scatter reads it in place and
  /// writes this rank's shard (a buffer of its own), so no staging buffer
  /// exists; the memory model's ZeRO-2 staging (one layer's full gradient)
  /// is covered by the full-size accumulation buffers instead. Kept as a
  /// scratch entry so that the attribute's shape stays stable.
  int64_t syncStagingBytes(int64_t stage) const;
  /// Attention scores a backward recomputes under selective recompute (the
  /// memory model's recompute buffer; 0 with fused attention).
  int64_t attentionScratchBytes(int64_t stage) const;

private:
  PlanAttr plan;
  ModelConfig config;
  MemoryOptions options;
  OffloadPolicy offload = OffloadPolicy::None;
  /// The memory model's accounting of each stage.
  std::vector<StageMemory> stageMemory;
  llvm::SmallVector<int64_t> layerParams;
  llvm::SmallVector<LayerKind> layerKinds;
};

//===----------------------------------------------------------------------===//
// Buffers and liveness
//===----------------------------------------------------------------------===//

/// What a stage buffer holds.
enum class BufferKind {
  View,
  Master,
  OptState,
  Gradient,      ///< full-size accumulation buffer of a layer's gradient
  GradientShard, ///< ZeRO-2: this rank's reduce-scattered shard
  Activation,    ///< stored by a forward
  Recomputed,    ///< produced by a recompute
  RecvMessage,   ///< lands a received activation or gradient
  SendMessage,   ///< holds an activation or gradient until it is sent
  Reloaded,      ///< a state brought back by ratrain.reload
  Workspace,
  SyncStaging,
  AttentionScratch,
  Other, ///< a value of an op the schedule passes do not know
};
llvm::StringRef stringifyBufferKind(BufferKind kind);

/// One DDR buffer of a stage: a set of SSA values that live in the same
/// memory (a gradient and its accumulations, ready and synced phases; a
/// master and its update; a view and its re-materializations), or the
/// message buffer of a transfer, or a scratch area.
struct StageBuffer {
  BufferKind kind = BufferKind::Other;
  int64_t layer = -1;      ///< -1 when not a layer state
  int64_t microBatch = -1; ///< activations and messages
  /// Live over program positions [start, end], inclusive. -1 is the step
  /// start (block arguments); the yield's position is the step end.
  int64_t start = 0, end = 0;
  int64_t bytes = 0;  ///< filled by sizeStageBuffers
  int64_t offset = 0; ///< filled by the allocator
  mlir::Type type;    ///< a representative type (null for scratch)
  llvm::SmallVector<mlir::Value, 4> values;
  /// The send or recv this message buffer belongs to.
  mlir::Operation *transfer = nullptr;
  /// Scratch buffer name (workspace, sync_staging, attention_scratch).
  llvm::StringRef scratchName;

  bool isPersistent(int64_t stepEnd) const {
    return start < 0 && end >= stepEnd;
  }
  bool liveAt(int64_t position) const {
    return start <= position && position <= end;
  }
  /// "activations of layer 3 mb 2 (!ratrain.act<3, full>)".
  std::string describe() const;
};

/// The buffers of a stage program.
struct StageBuffers {
  /// The stage's ops in program order; the yield is last.
  llvm::SmallVector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  llvm::SmallVector<StageBuffer> buffers;
  /// Buffer index of each SSA value that lives in DDR.
  llvm::DenseMap<mlir::Value, unsigned> bufferOf;
  /// Buffer index of each send / recv.
  llvm::DenseMap<mlir::Operation *, unsigned> transferBuffer;

  int64_t stepEnd() const { return int64_t(ops.size()) - 1; }
  /// Sum of the bytes live at each position -1 .. stepEnd() (index 0 is
  /// position -1).
  llvm::SmallVector<int64_t> liveBytes() const;
};

/// Computes the buffers of `stage` and their live ranges from the IR alone
/// (sizes stay 0): in-place ops join their result to an operand's buffer
/// (backward to its accumulator, grad_ready, sync and wait to their input,
/// update to the master and optimizer state, view_prefetch to the layer's
/// view); forward, recompute and reload start a buffer; a buffer lives from
/// its first definition to its last use; block arguments live from the step
/// start and yielded values to the step end. A recv's message buffer lives
/// until the op that consumes it (the forward of the stage's first layer or
/// the backward of its last layer of that micro-batch); a send's from the
/// op that produced it. Asynchronous readers keep their source live until
/// they are waited: an offloaded state's buffer until the offload's wait
/// (a yielded value whose offload completed is in the tier, not in DDR, at
/// the step end), and a master until the wait of the view prefetch that
/// casts it. The wait of a `reduce_scatter` ends the full gradient's buffer
/// and starts the shard's, which persists over the step (dp > 1; over a
/// group of one the shard is the gradient itself, in place).
StageBuffers analyzeStageBuffers(StageOp stage);

/// Fills in the bytes of every buffer and adds the stage's scratch buffers
/// (live over the whole step).
void sizeStageBuffers(StageBuffers &buffers, StageOp stage,
                      const BufferSizes &sizes);

/// Reads the offsets recorded by --ratrain-assign-buffers into
/// `buffers` (value buffers, message buffers and scratch buffers, the
/// latter appended). Returns false when the stage has no such attributes,
/// or (with an error emitted) when they are malformed or inconsistent.
mlir::FailureOr<bool> readAssignedBuffers(StageBuffers &buffers, StageOp stage);

/// The payload of a send or recv.
std::optional<Payload> getTransferPayload(mlir::Operation *op);

/// A short description of an op for diagnostics: "ratrain.backward of layer
/// 3 mb(2)".
std::string describeScheduleOp(mlir::Operation *op);

/// Predicted compute-stream seconds of a layer's forward, recompute or
/// backward for one micro-batch of `microBatchSize` sequences (a selective
/// backward also recomputes its attention core); 0 for every other op.
/// `kinds[l]` is the kind of model layer `l`. The lifecycle scheduler and
/// the simulator time ops with this one function.
double computeLayerOpSeconds(mlir::Operation *op, const CostModel &costs,
                             llvm::ArrayRef<LayerKind> kinds,
                             int64_t microBatchSize);

/// Whether a stage's data-parallel group (clusters stage*dp .. stage*dp +
/// dp - 1) spans more than one node of `clustersPerNode` clusters.
bool dataParallelGroupSpansNodes(int64_t stage, int64_t dataParallel,
                                 int64_t clustersPerNode);

} // namespace ratrain

#endif // RATRAIN_TRANSFORMS_SCHEDULEUTILS_H
