//===- ModelConfig.cpp - Dense decoder-only LLM description ---------------===//

#include "ratrain/Model/ModelConfig.h"
#include "ratrain/Model/Limits.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace ratrain;

unsigned ratrain::getDTypeBytes(DType type) {
  switch (type) {
  case DType::F32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  }
  llvm_unreachable("unknown dtype");
}

llvm::StringRef ratrain::stringifyDType(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  llvm_unreachable("unknown dtype");
}

std::optional<DType> ratrain::parseDType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Cases({"f32", "float32", "float"}, DType::F32)
      .Cases({"f16", "float16", "half"}, DType::F16)
      .Cases({"bf16", "bfloat16"}, DType::BF16)
      .Default(std::nullopt);
}

llvm::StringRef ratrain::stringifyModelFamily(ModelFamily family) {
  switch (family) {
  case ModelFamily::Llama:
    return "llama";
  case ModelFamily::Qwen2:
    return "qwen2";
  case ModelFamily::Baichuan:
    return "baichuan";
  case ModelFamily::Mistral:
    return "mistral";
  }
  llvm_unreachable("unknown family");
}

std::optional<ModelFamily> ratrain::parseModelFamily(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ModelFamily>>(name)
      .Case("llama", ModelFamily::Llama)
      .Case("qwen2", ModelFamily::Qwen2)
      .Case("baichuan", ModelFamily::Baichuan)
      .Case("mistral", ModelFamily::Mistral)
      .Default(std::nullopt);
}

llvm::StringRef ratrain::stringifyPositionEncoding(PositionEncoding encoding) {
  return encoding == PositionEncoding::Rope ? "rope" : "alibi";
}

std::optional<PositionEncoding>
ratrain::parsePositionEncoding(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<PositionEncoding>>(name)
      .Case("rope", PositionEncoding::Rope)
      .Case("alibi", PositionEncoding::Alibi)
      .Default(std::nullopt);
}

llvm::StringRef ratrain::stringifyRopeScalingKind(RopeScalingKind kind) {
  return kind == RopeScalingKind::Linear ? "linear" : "llama3";
}

double RopeScaling::invFreq(int64_t i, int64_t headDim, double theta) const {
  double base = std::pow(theta, -2.0 * double(i) / double(headDim));
  if (kind == RopeScalingKind::Linear)
    return base / factor;
  // transformers' _compute_llama3_parameters.
  double wavelength = 2.0 * M_PI / base;
  double lowFreqWavelength = double(originalMaxPositions) / lowFreqFactor;
  double highFreqWavelength = double(originalMaxPositions) / highFreqFactor;
  if (wavelength < highFreqWavelength)
    return base;
  if (wavelength > lowFreqWavelength)
    return base / factor;
  double smooth = (double(originalMaxPositions) / wavelength - lowFreqFactor) /
                  (highFreqFactor - lowFreqFactor);
  return (1.0 - smooth) * base / factor + smooth * base;
}

llvm::Error RopeScaling::validate() const {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "rope_scaling: " + message);
  };
  if (!std::isfinite(factor) || factor <= 0.0)
    return fail(
        llvm::formatv("'factor' must be a positive number, got {0}", factor));
  if (kind == RopeScalingKind::Llama3) {
    if (!std::isfinite(lowFreqFactor) || lowFreqFactor <= 0.0 ||
        !std::isfinite(highFreqFactor) || highFreqFactor <= lowFreqFactor)
      return fail(llvm::formatv("'low_freq_factor' ({0}) and "
                                "'high_freq_factor' ({1}) must be positive "
                                "with low < high",
                                lowFreqFactor, highFreqFactor));
    if (originalMaxPositions <= 0 ||
        originalMaxPositions > limits::kMaxSequenceLength)
      return fail(llvm::formatv("'original_max_position_embeddings' must be "
                                "in [1, {0}], got {1}",
                                limits::kMaxSequenceLength,
                                originalMaxPositions));
  }
  return llvm::Error::success();
}

llvm::Expected<RopeScaling>
RopeScaling::fromFields(RopeScalingKind kind, double factor,
                        double lowFreqFactor, double highFreqFactor,
                        int64_t originalMaxPositions) {
  bool linear = kind == RopeScalingKind::Linear;
  bool any = lowFreqFactor != 0 || highFreqFactor != 0 || originalMaxPositions;
  bool all = lowFreqFactor != 0 && highFreqFactor != 0 && originalMaxPositions;
  if (linear && any)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "linear rope scaling takes only a 'factor'");
  if (!linear && !all)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "llama3 rope scaling needs 'low_freq_factor', 'high_freq_factor' and "
        "'original_max_positions'");
  RopeScaling scaling;
  scaling.kind = kind;
  scaling.factor = factor;
  scaling.lowFreqFactor = lowFreqFactor;
  scaling.highFreqFactor = highFreqFactor;
  scaling.originalMaxPositions = originalMaxPositions;
  if (llvm::Error error = scaling.validate())
    return std::move(error);
  return scaling;
}

int64_t ModelConfig::paramsPerLayer() const {
  int64_t attention = hidden * qDim()        // q
                      + 2 * hidden * kvDim() // k, v
                      + qDim() * hidden;     // o
  if (qkvBias)
    attention += qDim() + 2 * kvDim();
  int64_t mlp = 3 * hidden * ffnHidden; // gate, up, down
  int64_t norms = 2 * hidden;
  return attention + mlp + norms;
}

int64_t ModelConfig::embeddingParams() const { return vocab * hidden; }

int64_t ModelConfig::headParams() const {
  return hidden + (tieEmbeddings ? 0 : vocab * hidden);
}

int64_t ModelConfig::totalParams() const {
  return numLayers * paramsPerLayer() + embeddingParams() + headParams();
}

double ModelConfig::layerMatmulFlopsPerToken() const {
  double macs =
      2.0 * hidden * qDim() + 2.0 * hidden * kvDim() + 3.0 * hidden * ffnHidden;
  return 2.0 * macs;
}

double ModelConfig::attentionScoresPerToken() const {
  // Half of the s x s scores under the causal mask; with a sliding window
  // shorter than the sequence, a token past the first W sees W keys.
  double keys = double(seqLen) / 2.0;
  if (slidingWindow > 0 && slidingWindow < seqLen) {
    double w = double(slidingWindow), s = double(seqLen);
    keys = (w * (w + 1) / 2 + (s - w) * w) / s;
  }
  return keys * double(numHeads);
}

double ModelConfig::attentionFlopsPerToken() const {
  // QK^T and PV: 2 matmuls of d per score entry, 2 FLOPs per MAC.
  return 2.0 * 2.0 * attentionScoresPerToken() * double(headDim());
}

double ModelConfig::headFlopsPerToken() const {
  return 2.0 * double(hidden) * double(vocab);
}

llvm::Error ModelConfig::validate() const {
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "model '" + name + "': " + message);
  };
  struct {
    const char *field;
    int64_t value;
  } positives[] = {
      {"num_hidden_layers", numLayers},  {"hidden_size", hidden},
      {"num_attention_heads", numHeads}, {"num_key_value_heads", numKVHeads},
      {"intermediate_size", ffnHidden},  {"vocab_size", vocab},
      {"sequence length", seqLen}};
  for (auto &p : positives)
    if (p.value <= 0)
      return fail(
          llvm::formatv("{0} must be positive, got {1}", p.field, p.value));
  // Upper bounds (ratrain/Model/Limits.h): beyond them the IR, the plans and
  // the size arithmetic would grow without bound.
  struct {
    const char *field;
    int64_t value, limit;
  } bounded[] = {
      {"num_hidden_layers", numLayers, limits::kMaxDecoderLayers},
      {"hidden_size", hidden, limits::kMaxHidden},
      {"num_attention_heads", numHeads, limits::kMaxHidden},
      {"intermediate_size", ffnHidden, limits::kMaxFFNHidden},
      {"vocab_size", vocab, limits::kMaxVocab},
      {"sequence length", seqLen, limits::kMaxSequenceLength},
      {"max_position_embeddings", maxPositions, limits::kMaxSequenceLength}};
  for (auto &b : bounded)
    if (b.value > b.limit)
      return fail(llvm::formatv("{0} {1} exceeds the limit of {2}", b.field,
                                b.value, b.limit));
  if (headDimension < 0)
    return fail(
        llvm::formatv("head_dim must be positive, got {0}", headDimension));
  if (headDimension > limits::kMaxHidden)
    return fail(llvm::formatv("head_dim {0} exceeds the limit of {1}",
                              headDimension, limits::kMaxHidden));
  if (!headDimension && hidden % numHeads != 0)
    return fail(llvm::formatv(
        "hidden_size {0} is not a multiple of num_attention_heads {1}", hidden,
        numHeads));
  if (numHeads % numKVHeads != 0)
    return fail(llvm::formatv("num_attention_heads {0} is not a multiple of "
                              "num_key_value_heads {1}",
                              numHeads, numKVHeads));
  if (ropeScaling)
    if (llvm::Error error = ropeScaling->validate())
      return fail(llvm::toString(std::move(error)));
  if (slidingWindow < 0)
    return fail(llvm::formatv("sliding_window must be positive, got {0}",
                              slidingWindow));
  if (maxPositions > 0 && seqLen > maxPositions)
    return fail(llvm::formatv("sequence length {0} exceeds "
                              "max_position_embeddings {1}",
                              seqLen, maxPositions));
  return llvm::Error::success();
}
