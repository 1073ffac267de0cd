//===- BufferSizes.h - DDR bytes of each kind of stage buffer ---*- C++ -*-===//
//
// The planner's memory model (ratrain/Planner/MemoryModel.h) taken buffer by
// buffer: what assign-buffers sizes a stage's buffers with, and what the
// simulator and the schedule tests compare against.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_ANALYSIS_BUFFERSIZES_H
#define RATRAIN_ANALYSIS_BUFFERSIZES_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Model/ModelConfig.h"
#include "ratrain/Planner/MemoryModel.h"

#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace ratrain {

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
  /// 16-bit (model dtype) parameter view: w * params (under ZeRO-3 the
  /// size of a gathered view).
  int64_t viewBytes(int64_t layer) const;
  /// The view a stage keeps over the step: the full view, or under ZeRO-3
  /// this rank's shard, w * ceil(params / dp).
  int64_t residentViewBytes(int64_t layer) const;
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
  /// What the input part of a split backward of `layer` keeps for its
  /// weight part, one micro-batch (the memory model's deferredBytes).
  int64_t deferredBytes(int64_t layer) const;
  /// One pipeline message (activation or its gradient): s * b * h * w.
  int64_t boundaryBytes() const;
  /// DDR scratch of the largest layer kernel of a virtual stage (the
  /// memory model's kernel workspace). The `stage` of these scratch sizes is
  /// a virtual stage; a rank needs the largest over the ones it runs.
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

} // namespace ratrain

#endif // RATRAIN_ANALYSIS_BUFFERSIZES_H
