//===- Limits.h - Bounds on sizes read from user input ----------*- C++ -*-===//
//
// The largest sizes RATrain accepts from configs, IR, plans, machine files,
// command lines and checkpoints, each in one place. Every bound is far above
// any real model or run (LLaMA-2-70B has 80 decoder layers, hidden 8192, a
// 32000 vocabulary) but keeps what a small input can make the tools build
// (IR, schedules, simulated timelines) bounded in memory and time, and keeps
// the int64 size arithmetic (parameters, bytes) exact. A value past a bound is
// an error that names the input and the limit. docs/limits.md lists them.
//
// Also here: the head dimensions the attention kernels are built for (the
// kernels check their inputs against this same list).
//
// Plain C++, no LLVM: the Halide kernels include it too.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MODEL_LIMITS_H
#define RATRAIN_MODEL_LIMITS_H

#include <cstdint>

namespace ratrain::limits {

//===----------------------------------------------------------------------===//
// Model shape (config.json, ratrain.model, ratrain.stage)
//===----------------------------------------------------------------------===//

/// Decoder layers of a model (num_hidden_layers).
inline constexpr int64_t kMaxDecoderLayers = 100000;
/// Layers of a model in the IR: the decoder layers, the embedding and the
/// head (what ratrain.stage ranges and plan stage_layers count).
inline constexpr int64_t kMaxModelLayers = kMaxDecoderLayers + 2;
/// Model width (hidden_size).
inline constexpr int64_t kMaxHidden = int64_t(1) << 20;
/// SwiGLU width (intermediate_size).
inline constexpr int64_t kMaxFFNHidden = int64_t(1) << 22;
/// Vocabulary (vocab_size).
inline constexpr int64_t kMaxVocab = int64_t(1) << 24;
/// Training sequence length and max_position_embeddings.
inline constexpr int64_t kMaxSequenceLength = int64_t(1) << 24;

/// Head dimensions (hidden_size / num_attention_heads) the attention kernels
/// are built for (runtime/kernels: one AOT pipeline set per entry).
inline constexpr int64_t kAttentionHeadDims[] = {32, 64, 128};
/// The same list as text, for messages.
inline constexpr const char *kAttentionHeadDimsText = "32, 64, 128";

/// Whether the attention kernels support head dimension `headDim`.
constexpr bool isSupportedHeadDim(int64_t headDim) {
  for (int64_t supported : kAttentionHeadDims)
    if (headDim == supported)
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Training run (planner requests, #ratrain.plan, checkpoints)
//===----------------------------------------------------------------------===//

/// Sequences per iteration (global batch); also bounds the micro-batch size.
inline constexpr int64_t kMaxGlobalBatch = int64_t(1) << 20;
/// Micro-batches per iteration and pipeline (gradient accumulation steps):
/// the schedule has a forward and a backward per micro-batch and layer.
inline constexpr int64_t kMaxMicroBatches = int64_t(1) << 14;
/// (layer, micro-batch) pairs of one pipeline stage: stage layers x
/// micro-batches. The schedule passes take time superlinear in it (about 7 s
/// at the limit on a 2-core host, 0.1 s at 6,000 pairs).
inline constexpr int64_t kMaxStageScheduleSize = int64_t(1) << 16;
/// (layer, micro-batch) pairs of the whole pipeline: model layers x
/// micro-batches (the scheduled IR holds about 1.5 KB per pair).
inline constexpr int64_t kMaxScheduleSize = int64_t(1) << 20;
/// Steps between two averagings of a layer under partial synchronization
/// (the plan's sync_period): the simulator runs sync_period + 1 iterations
/// to see every phase once.
inline constexpr int64_t kMaxSyncPeriod = 1024;
/// Compute clusters (MPI ranks) of a plan, a machine or a checkpoint: pp x dp
/// and nodes x clusters_per_node (MPI counts ranks in an int).
inline constexpr int64_t kMaxClusters = int64_t(1) << 24;
/// Measured GEMM calls per operand type in a machine file
/// (`gemm_measured`): the cost model looks a call up among them.
inline constexpr int64_t kMaxMeasuredGemms = 4096;
/// A measured GEMM's m, n or k (a token count, a width or a vocabulary).
inline constexpr int64_t kMaxGemmDimension = int64_t(1) << 24;

//===----------------------------------------------------------------------===//
// Files and tools
//===----------------------------------------------------------------------===//

/// Nesting depth of JSON documents (config.json, trainer_state.json,
/// checkpoint indexes, safetensors headers, step logs), checked before
/// parsing: LLVM's JSON parser recurses once per level.
inline constexpr int64_t kMaxJSONDepth = 256;

/// Simulated task runs (tasks of the program x iterations) of one
/// ratrain-sim run; the simulator keeps state per task run.
inline constexpr int64_t kMaxSimulatedTaskRuns = int64_t(1) << 26;

} // namespace ratrain::limits

#endif // RATRAIN_MODEL_LIMITS_H
