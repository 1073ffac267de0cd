//===- ModelConfig.h - Dense decoder-only LLM description -------*- C++ -*-===//
//
// The sizes of a LLaMA-style decoder (LLaMA-2, Qwen2/2.5, Baichuan2) that the
// planner, the memory model, the simulator and the runtime all account with.
// Plain C++: no MLIR here. The `ratrain.model` op carries the same fields.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MODEL_MODELCONFIG_H
#define RATRAIN_MODEL_MODELCONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ratrain {

/// Element types a tensor may have.
enum class DType { F32, F16, BF16 };

/// Size in bytes of one element.
unsigned getDTypeBytes(DType type);
/// Lower-case name as spelled in configs and IR ("f32", "f16", "bf16").
llvm::StringRef stringifyDType(DType type);
/// Parses "f32"/"float32", "f16"/"float16", "bf16"/"bfloat16".
std::optional<DType> parseDType(llvm::StringRef name);

/// Families whose HuggingFace configs we import. They differ only in details
/// the accounting needs: Qwen2 has biases on q/k/v, Baichuan2 packs W_pack,
/// Mistral is LLaMA with a sliding attention window.
enum class ModelFamily { Llama, Qwen2, Baichuan, Mistral };
llvm::StringRef stringifyModelFamily(ModelFamily family);
std::optional<ModelFamily> parseModelFamily(llvm::StringRef name);

/// How token positions enter attention. LLaMA, Qwen2 and Baichuan2-7B use
/// rotary embeddings; Baichuan2-13B uses ALiBi biases.
enum class PositionEncoding { Rope, Alibi };
llvm::StringRef stringifyPositionEncoding(PositionEncoding encoding);
std::optional<PositionEncoding> parsePositionEncoding(llvm::StringRef name);

/// How the rotary frequencies are rescaled for a context longer than the
/// one the model was first trained at (HF `rope_scaling`).
enum class RopeScalingKind { Linear, Llama3 };
llvm::StringRef stringifyRopeScalingKind(RopeScalingKind kind);

/// HF `rope_scaling`: `linear` divides every inverse frequency by `factor`;
/// `llama3` divides the frequencies whose wavelength exceeds
/// originalMaxPositions / lowFreqFactor by `factor`, keeps those below
/// originalMaxPositions / highFreqFactor and interpolates in between.
struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::Linear;
  double factor = 1.0;
  double lowFreqFactor = 1.0;       ///< llama3 only.
  double highFreqFactor = 4.0;      ///< llama3 only.
  int64_t originalMaxPositions = 0; ///< llama3 only.

  /// The scaled inverse frequency of rotary pair `i` of a head of dimension
  /// `headDim` with base `theta` (double precision).
  double invFreq(int64_t i, int64_t headDim, double theta) const;
  /// Checks the factors (finite, positive, low < high for llama3).
  llvm::Error validate() const;
  /// The scaling of an IR attribute's fields (0 for an absent llama3
  /// field): linear takes only `factor`, llama3 needs all four; then
  /// validate(). Both dialects' #rope_scaling attributes verify through it.
  static llvm::Expected<RopeScaling>
  fromFields(RopeScalingKind kind, double factor, double lowFreqFactor,
             double highFreqFactor, int64_t originalMaxPositions);
  bool operator==(const RopeScaling &other) const {
    return kind == other.kind && factor == other.factor &&
           lowFreqFactor == other.lowFreqFactor &&
           highFreqFactor == other.highFreqFactor &&
           originalMaxPositions == other.originalMaxPositions;
  }
};

/// A dense decoder-only transformer with RMSNorm, rotary embeddings, grouped
/// query attention and a SwiGLU MLP.
struct ModelConfig {
  std::string name;
  ModelFamily family = ModelFamily::Llama;
  int64_t numLayers = 0;     ///< Decoder layers.
  int64_t hidden = 0;        ///< Model width h.
  int64_t numHeads = 0;      ///< Attention heads a.
  int64_t numKVHeads = 0;    ///< Key/value heads (== numHeads without GQA).
  int64_t ffnHidden = 0;     ///< SwiGLU intermediate size.
  int64_t vocab = 0;         ///< Vocabulary size.
  int64_t seqLen = 0;        ///< Training sequence length s.
  int64_t maxPositions = 0;  ///< max_position_embeddings of the config.
  DType dtype = DType::BF16; ///< Low-precision compute / parameter-view type.
  bool qkvBias = false;      ///< Biases on q, k, v projections (Qwen2).
  PositionEncoding positions = PositionEncoding::Rope;
  bool tieEmbeddings = false;
  /// Baichuan2's NormHead: the LM head multiplies by its weight with every
  /// vocabulary row L2-normalized (the parameter is still lm_head.weight).
  bool normHead = false;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000.0;
  /// Rotary frequency scaling; none when unset.
  std::optional<RopeScaling> ropeScaling;
  /// Sliding attention window (Mistral, Qwen2 with use_sliding_window): a
  /// token attends to the `slidingWindow` tokens up to itself; 0 for none.
  /// While seqLen <= slidingWindow that is plain causal attention; longer
  /// sequences run the attention kernels' windowed mask.
  int64_t slidingWindow = 0;

  /// The attention head dimension when it is not hidden / numHeads (HF's
  /// `head_dim`, e.g. Mistral-NeMo: 32 heads of 128 in a 5120-wide model);
  /// 0: hidden / numHeads.
  int64_t headDimension = 0;

  int64_t headDim() const {
    return headDimension ? headDimension : hidden / numHeads;
  }
  /// Width of the queries (and of o_proj's input): numHeads x headDim.
  int64_t qDim() const { return numHeads * headDim(); }
  int64_t kvDim() const { return headDim() * numKVHeads; }

  /// Parameters of one decoder layer: q,k,v,o projections (+ q/k/v biases),
  /// gate/up/down of the MLP, two RMSNorm weights.
  int64_t paramsPerLayer() const;
  /// Token embedding (vocab x h).
  int64_t embeddingParams() const;
  /// Final RMSNorm plus the LM head (0 for the head when tied).
  int64_t headParams() const;
  int64_t totalParams() const;

  /// Matmul FLOPs of one decoder layer's forward for one token, 2 per MAC,
  /// excluding attention scores (see attentionFlopsPerToken).
  double layerMatmulFlopsPerToken() const;
  /// Causal attention QK^T and PV FLOPs per token, forward (half of the full
  /// s x s product because of the causal mask).
  double attentionFlopsPerToken() const;
  /// Causal attention score entries per token, forward (query heads x the
  /// keys a token sees): what the softmax exponentiates; the attention
  /// kernels' time fits count their per-score work by it.
  double attentionScoresPerToken() const;
  /// LM-head FLOPs per token, forward.
  double headFlopsPerToken() const;

  /// Checks that sizes are positive and consistent (heads divide hidden, kv
  /// heads divide heads). The message names the offending field.
  llvm::Error validate() const;
};

} // namespace ratrain

#endif // RATRAIN_MODEL_MODELCONFIG_H
