//===- Checkpoint.h - Sharded HuggingFace-style checkpoints -----*- C++ -*-===//
//
// A checkpoint is a directory `<root>/step-<NNNNNNNN>/` holding
//   model-<s>-of-<pp>.safetensors     parameters of pipeline stage s (1-based),
//                                     HuggingFace LLaMA names
//   optimizer-<s>-of-<pp>.safetensors Adam state: "<param>.exp_avg",
//                                     "<param>.exp_avg_sq"
//   model.safetensors.index.json      {"metadata": {"total_size"},
//                                      "weight_map": {name: file}} (as HF)
//   optimizer.safetensors.index.json  the same for the optimizer state
//   trainer_state.json                step, data position, seed, layout and
//                                     the model shape
// plus `<root>/latest`, a one-line file naming the newest complete step.
//
// Atomicity: every file is written via AtomicFile into a staging directory
// `<root>/.step-<N>.partial`; only when all shards and indexes are written is
// the staging directory renamed to `step-<N>` and `latest` replaced
// (atomically). A crash at any point leaves every existing checkpoint and
// `latest` as they were. See Runtime::saveCheckpoint for the multi-rank
// protocol.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_CHECKPOINT_H
#define RATRAIN_RUNTIME_CHECKPOINT_H

#include "ratrain/Model/ModelConfig.h"
#include "ratrain/runtime/Arena.h"
#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/ElemType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ratrain::rt {

/// One parameter tensor of the model with its HuggingFace name.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  /// Decoder layer, or -1 for the embedding and -2 for the final norm and LM
  /// head.
  int64_t layer = -1;
  uint64_t numElements() const;
};

/// Every parameter of the model with its HuggingFace name and shape ([out,
/// in]), layer by layer (embedding, decoder layers, final norm and LM head;
/// lm_head.weight absent with tied embeddings) and within a layer in the
/// order of the lowering's flat buffers: the one layout of
/// ratrain/Model/ParameterLayout.h.
std::vector<ParamSpec> modelParameters(const ModelConfig &model);

/// Which decoder layers each pipeline stage holds: virtual stage c holds
/// layers [firstLayer[c], firstLayer[c + 1]) and runs on rank chunkRank[c]
/// (on rank c when chunkRank is empty: one virtual stage per rank). The first
/// virtual stage also holds the embedding, the last the final norm and the LM
/// head.
struct StagePartition {
  std::vector<int64_t> firstLayer; ///< virtual stages + 1 entries.
  std::vector<int64_t> chunkRank;  ///< empty, or one entry per virtual stage
  /// The pipeline stages (ranks).
  int numStages() const;
  /// Splits numLayers as evenly as possible, earlier stages taking the extra
  /// layers.
  static StagePartition even(int64_t numLayers, int pp);
  /// Checks that the boundaries are increasing and cover all layers.
  llvm::Error validate(int64_t numLayers) const;
  int stageOfLayer(int64_t layer) const;
};

/// The parameters stage `stage` owns, in HuggingFace order.
std::vector<ParamSpec> stageParameters(const ModelConfig &model,
                                       const StagePartition &partition,
                                       int stage);

/// Where one parameter lives in the arena: fp32 master weights and, when the
/// rank keeps them, the Adam moments (empty buffers when not).
///
/// ZeRO: a sharded slot (shardElements > 0, or `zeroShard` set) keeps only
/// elements [shardOffset, shardOffset + shardElements) of the flattened fp32
/// master and moments (buffers of shardElements x 4 bytes; a part past the
/// tensor's end is padding), and `view` holds the replicated full tensor in
/// `viewType`, which goes to the HuggingFace model file. The range is
/// arbitrary: the data ranks' ranges of a tensor need not be equal, only
/// disjoint and together cover it (layer-flattened ZeRO gives a rank a piece
/// of some tensors and none of others: `zeroShard` with shardElements == 0).
/// Sharding is all or nothing per job.
struct ParamSlot {
  std::string name;
  std::vector<int64_t> shape;
  Buffer master;
  Buffer expAvg;
  Buffer expAvgSq;
  uint64_t shardOffset = 0;
  uint64_t shardElements = 0;
  /// Sharded even when this rank's range is empty.
  bool zeroShard = false;
  Buffer view;
  ElemType viewType = ElemType::BF16;
  bool sharded() const { return zeroShard || shardElements != 0; }
};

/// "optimizer-00001-of-00002-zero-00002-of-00004.safetensors": data rank 1's
/// shards of the stage whose model file is `modelFile`.
std::string zeroShardName(llvm::StringRef modelFile, int dpIndex, int dp);

/// Everything besides tensors needed to resume bit-identically.
struct TrainerState {
  uint64_t step = 0; ///< Optimizer steps completed.
  DataPosition data; ///< Samples consumed by the loader.
  uint64_t seed = 0; ///< Data-order seed.
  int pp = 1;
  int dp = 1;
};

/// "model-00002-of-00004.safetensors" etc. (1-based stage, like HF).
std::string modelShardName(int stage, int pp);
std::string optimizerShardName(int stage, int pp);
/// "step-00000042".
std::string stepDirectoryName(uint64_t step);

/// Writes stage `stage`'s files into `directory` (each file atomically) as
/// data rank `dpIndex`: rank 0 writes the model file and, without ZeRO, the
/// optimizer file; with ZeRO every data rank writes its zero shard file
/// (`<name>.master`, `.exp_avg`, `.exp_avg_sq` of its range, shape [count],
/// and metadata "ratrain.shard_offset.<name>" / "ratrain.shard_elements.
/// <name>" recording the range in elements of the flattened tensor). Slots
/// must be exactly the stage's parameters, with shapes matching `model`.
llvm::Error writeStageShards(llvm::StringRef directory,
                             const ModelConfig &model,
                             const StagePartition &partition, int stage,
                             llvm::ArrayRef<ParamSlot> slots,
                             const TrainerState &state, int dpIndex = 0);

/// Writes both indexes and trainer_state.json into `directory`.
/// With `zero`, the optimizer index lists the zero shard files instead of a
/// weight map.
llvm::Error writeCheckpointIndex(llvm::StringRef directory,
                                 const ModelConfig &model,
                                 const StagePartition &partition,
                                 const TrainerState &state, bool zero = false);

/// Renames the staging directory to `<root>/step-<N>` and points
/// `<root>/latest` at it. An existing step-<N> is replaced only after the new
/// one is in place.
llvm::Error commitCheckpoint(llvm::StringRef root, llvm::StringRef staging,
                             uint64_t step);

/// The staging directory of a save of `step` under `root`.
std::string stagingDirectory(llvm::StringRef root, uint64_t step);

/// Resolves `path`: a step directory is returned as is; a root with a
/// `latest` file resolves to the step it names. Errors name what is missing.
llvm::Expected<std::string> resolveCheckpoint(llvm::StringRef path);

/// Validates a parsed trainer_state.json (`path` names it in messages):
/// format, step and data_samples not negative, a seed, pp and dp positive
/// with pp x dp at most limits::kMaxClusters. verifyCheckpoint and
/// readTrainerState (resume) both check through it.
llvm::Expected<TrainerState> parseTrainerState(const llvm::json::Value &value,
                                               llvm::StringRef path);

/// Reads trainer_state.json, validates it (parseTrainerState) and checks it
/// against the model shape.
llvm::Expected<TrainerState> readTrainerState(llvm::StringRef directory,
                                              const ModelConfig &model);

/// Loads the given parameters (and their Adam moments where the slots have
/// buffers) from a checkpoint directory, looking each tensor up through the
/// indexes, so the checkpoint may come from another pipeline partition.
/// Every check (missing tensor, dtype, shape, checksum, truncation) names the
/// file and tensor.
/// Sharded slots read their ranges from the zero shard files of data rank
/// `dpIndex` of `dp` (the same dp size and ranges as at save time: a range
/// whose offset or element count differs from the recorded one is an error
/// naming the file and tensor).
llvm::Error loadSlots(llvm::StringRef directory,
                      llvm::ArrayRef<ParamSlot> slots, int dpIndex = 0,
                      int dp = 1);

/// The whole FP32 master of every tensor of `params` from the checkpoint
/// step directory `directory`, whatever layout saved it (the reader of
/// loadSlots: ZeRO pieces of every data rank assembled), into `out` (one
/// vector per tensor).
llvm::Error readCheckpointMasters(llvm::StringRef directory,
                                  llvm::ArrayRef<ParamSpec> params,
                                  std::vector<std::vector<float>> &out);

/// What verifyCheckpoint found.
struct CheckpointSummary {
  std::string directory;
  uint64_t step = 0;
  uint64_t dataSamples = 0;
  int pp = 0, dp = 0;
  uint64_t files = 0, tensors = 0, bytes = 0;
};

/// Checks a checkpoint without a model: trainer_state.json parses, every
/// tensor of both indexes exists in its shard, every shard is structurally
/// valid and every recorded checksum matches; with ZeRO, the data ranks'
/// recorded ranges of every tensor tile it exactly (no hole, no overlap).
/// Errors name file and tensor.
llvm::Expected<CheckpointSummary> verifyCheckpoint(llvm::StringRef path);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_CHECKPOINT_H
