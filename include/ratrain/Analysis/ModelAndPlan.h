//===- ModelAndPlan.h - The planner's view of a model and plan --*- C++ -*-===//
//
// Converts the IR's model description (`ratrain.model`, `ratrain.layer`) and
// `#ratrain.plan` to the plain C++ descriptions of ratrain/Model and
// ratrain/Planner that the planner's cost and memory models, the lowering
// and the runtime use.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_ANALYSIS_MODELANDPLAN_H
#define RATRAIN_ANALYSIS_MODELANDPLAN_H

#include "RATrain/RATrainOps.h"
#include "ratrain/Model/ModelConfig.h"
#include "ratrain/Planner/MemoryModel.h"

namespace ratrain {

/// The plain description of `model` the planner, cost model and runtime use.
ModelConfig getModelConfig(ModelOp model);

/// Number of parameters of `layer`.
int64_t getLayerParams(LayerOp layer);

/// Converts between the planner's recompute policy and the dialect's.
Recompute toIRRecompute(RecomputePolicy policy);
RecomputePolicy fromIRRecompute(Recompute recompute);

/// Converts between the planner's offload policy and the dialect's.
Offload toIROffload(OffloadPolicy policy);
OffloadPolicy fromIROffload(Offload offload);
/// The IR's schedule kind and the schedule library's, case for case.
PipelineScheduleKind toIRSchedule(schedule::ScheduleKind kind);
schedule::ScheduleKind fromIRSchedule(PipelineScheduleKind kind);

/// Converts between the planner's wire format and the IR's optional wire
/// type (none: native elements).
std::optional<WireType> toIRWire(WireFormat wire);
WireFormat fromIRWire(std::optional<WireType> wire);
/// The plan's sharding policy (partition levels and wire types).
ShardingPolicy getShardingPolicy(PlanAttr plan);

/// The memory model's role of a layer of kind `kind`.
LayerRole fromIRLayerKind(LayerKind kind);

/// The planner's view of a `#ratrain.plan`: stage layer ranges over decoder
/// layers (the plan attribute counts model layers, embedding and head
/// included).
ParallelConfig toParallelConfig(PlanAttr plan);

/// Whether a layer's update writes a separate parameter view, which a DMA
/// then copies into place (the view prefetch) unless the machine's DMA runs
/// on its cores: a 16-bit model's view is a 16-bit copy of its master; an
/// FP32 model's view is the master itself, updated in place (under ZeRO its
/// view shard is the master shard, which the all-gather sends). The lowering
/// and the simulator's adapter both follow it.
bool updateWritesViewCopy(bool f32Model);

/// The DType of a model's element type (f32, f16, or bf16 otherwise: the
/// model verifier admits these three).
DType toDType(mlir::Type elementType);

/// averagesInUpdate (MemoryModel.h) of a `#ratrain.plan`.
bool averagesInUpdate(PlanAttr plan, DType dtype, bool ring);

/// The usable DDR of the ranks of pipeline stage `stage` (a rank, not a
/// virtual stage) under `plan`: on a machine with classes of clusters the
/// least of its ranks' classes (rank r runs on cluster r), else the
/// cluster's.
int64_t stageDdrBytes(const MachineModel &machine, PlanAttr plan,
                      int64_t stage);

} // namespace ratrain

#endif // RATRAIN_ANALYSIS_MODELANDPLAN_H
