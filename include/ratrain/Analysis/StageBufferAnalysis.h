//===- StageBufferAnalysis.h - Buffers of a stage program -------*- C++ -*-===//
//
// The DDR buffers of a `ratrain.stage` program and their live ranges in
// program positions: the analysis --ratrain-assign-buffers packs into an
// arena, --ratrain-verify-schedule checks, and the lowering and the
// simulator read back (with the offsets assign-buffers recorded).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_ANALYSIS_STAGEBUFFERANALYSIS_H
#define RATRAIN_ANALYSIS_STAGEBUFFERANALYSIS_H

#include "RATrain/RATrainOps.h"

#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace ratrain {

class BufferSizes;
namespace detail {
class StageBufferBuilder;
} // namespace detail

/// What a stage buffer holds.
enum class BufferKind {
  View,
  GatheredView, ///< ZeRO-3: a layer's full view gathered for one compute
  /// Partitioned ZeRO-3: a layer's secondary view partition (the view over
  /// the members of a level group), from its first gather to its last use.
  SecondaryView,
  Master,
  OptState,
  Gradient, ///< full-size accumulation buffer of a layer's gradient
  /// Partitioned ZeRO: the gradient reduce-scattered inside a level group,
  /// until the reduce-scatter across the level's groups completes.
  GradientPartition,
  GradientShard, ///< ZeRO-2: this rank's reduce-scattered shard
  Activation,    ///< stored by a forward
  Recomputed,    ///< produced by a recompute
  Deferred,      ///< kept by a backward's input part for its weight part
  RecvMessage,   ///< lands a received activation or gradient
  SendMessage,   ///< holds an activation or gradient until it is sent
  Reloaded,      ///< a state brought back by ratrain.reload
  GradNorm,      ///< the f32 sum of squares of ratrain.grad_norm
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
  int64_t bytes = 0;  ///< filled by StageBufferAnalysis::size
  int64_t offset = 0; ///< filled by the allocator
  mlir::Type type;    ///< a representative type (null for scratch)
  llvm::SmallVector<mlir::Value, 4> values;
  /// The send or recv this message buffer belongs to.
  TransferOpInterface transfer;
  /// Scratch buffer name (workspace, sync_staging, attention_scratch).
  llvm::StringRef scratchName;
  /// SecondaryView and GradientPartition: how many of the rank's shards the
  /// partition holds (the members of the other side of its level).
  int64_t shards = 1;

  bool isPersistent(int64_t stepEnd) const {
    return start < 0 && end >= stepEnd;
  }
  bool liveAt(int64_t position) const {
    return start <= position && position <= end;
  }
  /// "activations of layer 3 mb 2 (!ratrain.act<3, full>)".
  std::string describe() const;
};

/// The buffers of a stage program and their live ranges, computed from the
/// IR alone (sizes 0) when constructed: in-place ops join their result to
/// an operand's buffer (backward to its accumulator, grad_ready, sync and
/// wait to their input, update to the master and optimizer state,
/// view_prefetch to the layer's view, a backward's weight part to its
/// accumulator); forward, recompute, reload and a backward's input part
/// (its deferred value) start a buffer; a buffer lives from its first
/// definition to its last use; block arguments live from the step start and
/// yielded values to the step end. A recv's message buffer lives until the op
/// that consumes it (the forward of the stage's first layer or the backward, or
/// input part, of its last layer of that micro-batch); a send's from the op
/// that produced it. Asynchronous readers keep their source live until they are
/// waited: an offloaded state's buffer until the offload's wait (a yielded
/// value whose offload completed is in the tier, not in DDR, at the step end),
/// and a master until the wait of the view prefetch that casts it. The wait of
/// a `reduce_scatter` ends the full gradient's buffer and starts the shard's,
/// which persists over the step (dp > 1; over a group of one the shard is
/// the gradient itself, in place). Under ZeRO-3 an `all_gather` of a view
/// starts a buffer of its own (the gathered full view), live from the
/// gather's issue to its last reader.
///
/// Sizes come from size() (the memory model's, for a schedule to be
/// assigned) or readAssigned() (the offsets and bytes --ratrain-assign-buffers
/// recorded). Constructible from a `ratrain.stage`, so a pass can ask for it
/// with getAnalysis / getChildAnalysis.
class StageBufferAnalysis {
public:
  explicit StageBufferAnalysis(mlir::Operation *stage);

  StageOp getStage() const { return stage; }

  /// The stage's ops in program order; the yield is last.
  llvm::ArrayRef<mlir::Operation *> getOps() const { return ops; }
  /// The op at program position `position` (0 .. getStepEnd()).
  mlir::Operation *getOp(int64_t position) const { return ops[position]; }
  /// The program position of an op of the stage.
  int64_t getPosition(mlir::Operation *op) const { return position.at(op); }
  /// The yield's position.
  int64_t getStepEnd() const { return int64_t(ops.size()) - 1; }
  /// The op at `position` described for diagnostics
  /// (ScheduleOpInterface::describe, or the name of an op without it).
  std::string describeOp(int64_t position) const;

  llvm::ArrayRef<StageBuffer> getBuffers() const { return buffers; }
  llvm::MutableArrayRef<StageBuffer> getBuffers() { return buffers; }
  const StageBuffer &getBuffer(unsigned index) const { return buffers[index]; }

  /// The buffer index of an SSA value that lives in DDR.
  std::optional<unsigned> lookupBuffer(mlir::Value value) const;
  /// The buffer index of a send's or recv's message.
  std::optional<unsigned> lookupTransferBuffer(mlir::Operation *op) const;

  /// Sum of the bytes live at each position -1 .. getStepEnd() (index 0 is
  /// position -1).
  llvm::SmallVector<int64_t> computeLiveBytes() const;

  /// Fills in the bytes of every buffer from `sizes` and adds the stage's
  /// scratch buffers (live over the whole step). Replaces what an earlier
  /// size() or readAssigned() filled in.
  void size(const BufferSizes &sizes);

  /// Reads the offsets recorded by --ratrain-assign-buffers (value buffers,
  /// message buffers and scratch buffers, the latter appended). Returns
  /// false when the stage has no such attributes, or (with an error
  /// emitted) fails when they are malformed or inconsistent. Replaces what
  /// an earlier size() or readAssigned() filled in.
  mlir::FailureOr<bool> readAssigned();

private:
  friend class detail::StageBufferBuilder;

  /// Forgets sizes, offsets and scratch buffers.
  void reset();

  StageOp stage;
  llvm::SmallVector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  llvm::SmallVector<StageBuffer> buffers;
  /// Number of buffers of values and messages (scratch buffers follow).
  unsigned numValueBuffers = 0;
  llvm::DenseMap<mlir::Value, unsigned> bufferOf;
  llvm::DenseMap<mlir::Operation *, unsigned> transferBuffer;
};

} // namespace ratrain

#endif // RATRAIN_ANALYSIS_STAGEBUFFERANALYSIS_H
