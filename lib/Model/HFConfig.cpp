//===- HFConfig.cpp - HuggingFace config.json import ----------------------===//
//
// Maps the fields of LlamaConfig, MistralConfig, Qwen2Config and
// BaichuanConfig onto a ModelConfig. Fields that do not change the math are
// ignored (configs carry many that training does not need: token ids,
// cache settings); a required field that is missing or of the wrong type, a
// field that changes the math in a way we do not train (a rope_scaling
// type, biases, dropout, logit soft-capping, a sliding window shorter than
// the sequence, another activation) is an error naming the field and the
// file, never ignored.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Model/JSON.h"
#include "ratrain/Model/Limits.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace ratrain;
using llvm::json::Object;
using llvm::json::Value;

namespace {

/// Reads typed fields of one JSON object, collecting the first error.
class FieldReader {
public:
  /// `prefix` qualifies field names in messages ("rope_scaling.").
  FieldReader(const Object &object, llvm::StringRef fileName,
              llvm::StringRef prefix = "")
      : object(object), fileName(fileName), prefix(prefix) {}

  /// A required positive integer.
  int64_t requireInt(llvm::StringRef field) {
    const Value *value = object.get(field);
    if (!value) {
      fail(llvm::formatv("missing required field '{1}{0}'", field, prefix));
      return 0;
    }
    return toInt(field, *value);
  }

  /// An optional integer; `fallback` when absent or null.
  int64_t optionalInt(llvm::StringRef field, int64_t fallback) {
    const Value *value = object.get(field);
    if (!value || value->kind() == Value::Null)
      return fallback;
    return toInt(field, *value);
  }

  /// A required number.
  double requireNumber(llvm::StringRef field) {
    if (!object.get(field)) {
      fail(llvm::formatv("missing required field '{1}{0}'", field, prefix));
      return 0.0;
    }
    return optionalNumber(field, 0.0);
  }

  double optionalNumber(llvm::StringRef field, double fallback) {
    const Value *value = object.get(field);
    if (!value || value->kind() == Value::Null)
      return fallback;
    if (std::optional<double> number = value->getAsNumber())
      return *number;
    fail(llvm::formatv("field '{1}{0}' must be a number", field, prefix));
    return fallback;
  }

  bool optionalBool(llvm::StringRef field, bool fallback) {
    const Value *value = object.get(field);
    if (!value || value->kind() == Value::Null)
      return fallback;
    if (std::optional<bool> flag = value->getAsBoolean())
      return *flag;
    fail(llvm::formatv("field '{1}{0}' must be true or false", field, prefix));
    return fallback;
  }

  std::optional<std::string> optionalString(llvm::StringRef field) {
    const Value *value = object.get(field);
    if (!value || value->kind() == Value::Null)
      return std::nullopt;
    if (std::optional<llvm::StringRef> text = value->getAsString())
      return text->str();
    fail(llvm::formatv("field '{1}{0}' must be a string", field, prefix));
    return std::nullopt;
  }

  bool has(llvm::StringRef field) const { return object.get(field); }
  /// The field's value; null when absent or JSON null.
  const Value *get(llvm::StringRef field) const {
    const Value *value = object.get(field);
    return value && value->kind() != Value::Null ? value : nullptr;
  }

  void fail(const llvm::Twine &message) {
    if (!error.empty())
      return;
    error = (fileName + ": " + message).str();
  }

  llvm::Error takeError() {
    if (error.empty())
      return llvm::Error::success();
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  }

private:
  int64_t toInt(llvm::StringRef field, const Value &value) {
    if (std::optional<int64_t> number = value.getAsInteger())
      return *number;
    // 4096.0 is an integer too; "4096" is not.
    if (std::optional<double> number = value.getAsNumber())
      if (std::floor(*number) == *number && std::fabs(*number) < 9e15)
        return int64_t(*number);
    fail(llvm::formatv("field '{1}{0}' must be an integer", field, prefix));
    return 0;
  }

  const Object &object;
  llvm::StringRef fileName;
  llvm::StringRef prefix;
  std::string error;
};

/// `value` as %g prints it ("0.1", "1").
std::string shortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// `rope_scaling`: null, `rope_type` (or the older `type`) "default", or a
/// linear or llama3 scaling; any other type is refused by name.
void readRopeScaling(FieldReader &reader, ModelConfig &config) {
  const Value *value = reader.get("rope_scaling");
  if (!value)
    return;
  const Object *object = value->getAsObject();
  if (!object) {
    reader.fail("field 'rope_scaling' must be an object or null");
    return;
  }
  FieldReader scalingReader(*object, "", "rope_scaling.");
  std::optional<std::string> type = scalingReader.optionalString("rope_type");
  if (!type)
    type = scalingReader.optionalString("type");
  if (llvm::Error error = scalingReader.takeError()) {
    reader.fail(
        llvm::StringRef(llvm::toString(std::move(error))).drop_front(2));
    return;
  }
  if (!type) {
    reader.fail("field 'rope_scaling' has no 'rope_type'");
    return;
  }
  if (*type == "default")
    return;
  RopeScaling scaling;
  if (*type == "linear") {
    scaling.kind = RopeScalingKind::Linear;
  } else if (*type == "llama3") {
    scaling.kind = RopeScalingKind::Llama3;
    scaling.lowFreqFactor = scalingReader.requireNumber("low_freq_factor");
    scaling.highFreqFactor = scalingReader.requireNumber("high_freq_factor");
    scaling.originalMaxPositions =
        scalingReader.requireInt("original_max_position_embeddings");
  } else {
    reader.fail(llvm::formatv("field 'rope_scaling' has rope_type '{0}'; "
                              "supported: default, linear, llama3",
                              *type));
    return;
  }
  scaling.factor = scalingReader.requireNumber("factor");
  // attention_factor (YaRN, longrope) scales cos/sin: not in these types.
  if (const Value *attentionFactor = object->get("attention_factor"))
    if (attentionFactor->getAsNumber() != 1.0)
      scalingReader.fail("field 'rope_scaling.attention_factor' is not 1; "
                         "it is not supported");
  if (llvm::Error error = scalingReader.takeError()) {
    // The nested reader's message starts with ": " (no file name).
    reader.fail(
        llvm::StringRef(llvm::toString(std::move(error))).drop_front(2));
    return;
  }
  if (llvm::Error error = scaling.validate()) {
    reader.fail(llvm::toString(std::move(error)));
    return;
  }
  config.ropeScaling = scaling;
}

/// Mistral's `sliding_window` (null: none) on every layer; Qwen2's, when
/// `use_sliding_window` is true, on the layers from `max_window_layers` on
/// (transformers' default 28, as it derives its layer types); a
/// `layer_types` list says it per layer. Returns whether only some layers
/// have the window (then `sliding_window` only means plain causal attention
/// while the sequence fits it; the caller checks that).
bool readSlidingWindow(FieldReader &reader, ModelConfig &config) {
  int64_t windowedLayers = 0;
  if (config.family == ModelFamily::Mistral && reader.get("sliding_window"))
    windowedLayers = config.numLayers;
  else if (config.family == ModelFamily::Qwen2 &&
           reader.optionalBool("use_sliding_window", false))
    windowedLayers = std::max<int64_t>(
        0, config.numLayers - reader.optionalInt("max_window_layers", 28));
  if (const Value *layerTypes = reader.get("layer_types")) {
    const llvm::json::Array *types = layerTypes->getAsArray();
    if (!types) {
      reader.fail("field 'layer_types' must be a list");
      return false;
    }
    windowedLayers = 0;
    for (const Value &type : *types) {
      std::optional<llvm::StringRef> name = type.getAsString();
      if (name == "sliding_attention") {
        ++windowedLayers;
      } else if (name != "full_attention") {
        reader.fail(llvm::formatv(
            "field 'layer_types' has '{0}'; supported: full_attention, "
            "sliding_attention",
            name.value_or("(not a string)")));
        return false;
      }
    }
  }
  if (windowedLayers == 0)
    return false;
  config.slidingWindow = reader.requireInt("sliding_window");
  if (config.slidingWindow <= 0)
    reader.fail(llvm::formatv("field 'sliding_window' must be positive, got "
                              "{0}",
                              config.slidingWindow));
  return windowedLayers < config.numLayers;
}

/// Fields of LLaMA-like configs that change the math of training when they
/// are not at their neutral value; we train none of them, so each is an
/// error naming the field.
void refuseMathChangingFields(FieldReader &reader, const ModelConfig &config) {
  auto refuseTrue = [&](llvm::StringRef field, llvm::StringRef what) {
    if (reader.optionalBool(field, false))
      reader.fail(
          llvm::formatv("field '{0}' is true; {1} not supported", field, what));
  };
  refuseTrue("attention_bias",
             config.family == ModelFamily::Qwen2
                 ? "an o_proj bias is"
                 : "attention projection biases are (only Qwen2's q/k/v "
                   "biases are)");
  refuseTrue("mlp_bias", "MLP biases are");
  refuseTrue("use_qk_norm", "q/k normalization is");
  refuseTrue("rope_interleaved",
             "interleaved rotary pairs are (only rotate-half pairs are)");
  refuseTrue("qk_layernorm", "q/k normalization is");
  auto refuseUnless = [&](llvm::StringRef field, double neutral,
                          llvm::StringRef what) {
    if (!reader.get(field))
      return;
    double value = reader.optionalNumber(field, neutral);
    if (value != neutral)
      reader.fail(llvm::formatv("field '{0}' is {1}; {2} (only {3})", field,
                                shortNumber(value), what,
                                shortNumber(neutral)));
  };
  refuseUnless("attention_dropout", 0.0, "dropout is not supported");
  refuseUnless("hidden_dropout", 0.0, "dropout is not supported");
  refuseUnless("resid_pdrop", 0.0, "dropout is not supported");
  refuseUnless("embd_pdrop", 0.0, "dropout is not supported");
  refuseUnless("partial_rotary_factor", 1.0,
               "partial rotary embeddings are not supported");
  refuseUnless("z_loss_weight", 0.0, "a z-loss is not supported");
  for (llvm::StringRef field :
       {"attn_logit_softcapping", "final_logit_softcapping"})
    if (reader.get(field))
      reader.fail(llvm::formatv(
          "field '{0}' is set; logit soft-capping is not supported", field));
}

} // namespace

llvm::Expected<ModelConfig>
ratrain::parseHFConfig(llvm::StringRef json, llvm::StringRef fileName,
                       const HFImportOptions &options) {
  llvm::Expected<Value> parsed = parseJSON(json);
  if (!parsed)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "%s: not valid JSON: %s",
        fileName.str().c_str(), llvm::toString(parsed.takeError()).c_str());
  const Object *object = parsed->getAsObject();
  if (!object)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: expected a JSON object at top level",
                                   fileName.str().c_str());

  FieldReader reader(*object, fileName);
  ModelConfig config;

  std::optional<std::string> modelType = reader.optionalString("model_type");
  if (!modelType)
    reader.fail("missing required field 'model_type'");
  else if (std::optional<ModelFamily> family = parseModelFamily(*modelType))
    config.family = *family;
  else
    reader.fail(llvm::formatv("unsupported model_type '{0}' (supported: "
                              "llama, mistral, qwen2, baichuan)",
                              *modelType));
  if (llvm::Error error = reader.takeError())
    return std::move(error);

  config.name = llvm::sys::path::stem(fileName).str();
  config.hidden = reader.requireInt("hidden_size");
  config.numLayers = reader.requireInt("num_hidden_layers");
  config.numHeads = reader.requireInt("num_attention_heads");
  config.numKVHeads =
      reader.optionalInt("num_key_value_heads", config.numHeads);
  config.ffnHidden = reader.requireInt("intermediate_size");
  config.vocab = reader.requireInt("vocab_size");
  config.rmsNormEps = reader.optionalNumber("rms_norm_eps", 1e-6);
  config.ropeTheta = reader.optionalNumber("rope_theta", 10000.0);
  config.tieEmbeddings = reader.optionalBool("tie_word_embeddings", false);
  config.qkvBias = config.family == ModelFamily::Qwen2;
  // head_dim: the attention heads' width when it is not hidden_size /
  // num_attention_heads (Mistral-NeMo, Gemma): the q/k/v/o projections map
  // hidden_size to num_attention_heads x head_dim and back.
  if (const Value *headDim = reader.get("head_dim")) {
    std::optional<int64_t> dim = headDim->getAsInteger();
    if (!dim || *dim <= 0)
      reader.fail("field 'head_dim' must be a positive integer");
    else if (config.numHeads <= 0 || config.hidden % config.numHeads != 0 ||
             *dim != config.hidden / config.numHeads)
      config.headDimension = *dim;
  }

  // NormHead: Baichuan2's lm_head L2-normalizes the rows of its weight;
  // Baichuan-1's does not. Their configs differ only in the vocabulary
  // (Baichuan2: 125696, Baichuan-1: 64000), so a Baichuan config has a
  // NormHead when its vocab_size is Baichuan2's, unless the (non-HF) field
  // "norm_head" says otherwise.
  constexpr int64_t kBaichuan2Vocab = 125696;
  if (reader.has("norm_head")) {
    config.normHead = reader.optionalBool("norm_head", false);
    if (config.normHead && config.family != ModelFamily::Baichuan)
      reader.fail("field 'norm_head' is true; NormHead is only supported "
                  "for model_type 'baichuan'");
  } else {
    config.normHead = config.family == ModelFamily::Baichuan &&
                      config.vocab == kBaichuan2Vocab;
  }

  // Baichuan2-13B has no max_position_embeddings and uses ALiBi; Baichuan2-7B
  // (and every LLaMA/Qwen2) has it and uses rotary embeddings.
  if (reader.has("max_position_embeddings")) {
    config.maxPositions = reader.requireInt("max_position_embeddings");
  } else if (config.family == ModelFamily::Baichuan &&
             reader.has("model_max_length")) {
    config.maxPositions = reader.requireInt("model_max_length");
    config.positions = PositionEncoding::Alibi;
  } else {
    reader.fail("missing required field 'max_position_embeddings'");
  }

  if (std::optional<std::string> act = reader.optionalString("hidden_act"))
    if (*act != "silu")
      reader.fail(llvm::formatv(
          "field 'hidden_act' is '{0}'; only 'silu' (SwiGLU) is supported",
          *act));
  readRopeScaling(reader, config);
  bool someLayersWindowed = readSlidingWindow(reader, config);
  refuseMathChangingFields(reader, config);

  config.dtype = DType::BF16;
  if (std::optional<std::string> dtype = reader.optionalString("torch_dtype")) {
    if (std::optional<DType> parsedType = parseDType(*dtype))
      config.dtype = *parsedType;
    else
      reader.fail(llvm::formatv("field 'torch_dtype' has unsupported value "
                                "'{0}' (float32, float16, bfloat16)",
                                *dtype));
  }
  if (options.dtype)
    config.dtype = *options.dtype;
  if (llvm::Error error = reader.takeError())
    return std::move(error);

  config.seqLen = options.seqLen > 0
                      ? options.seqLen
                      : std::min<int64_t>(config.maxPositions, 4096);
  // A window on some layers only: the kernels window every layer's
  // attention or none, which is the same while the sequence fits it.
  if (someLayersWindowed && config.slidingWindow > 0 &&
      config.seqLen > config.slidingWindow) {
    if (options.seqLen > 0)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0}: a sliding window of {1} on some layers only "
                        "(layer_types or max_window_layers) is not supported "
                        "for sequences longer than it; the sequence length "
                        "is {2}",
                        fileName, config.slidingWindow, config.seqLen)
              .str());
    config.seqLen = config.slidingWindow;
  }
  if (llvm::Error error = config.validate())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s",
                                   fileName.str().c_str(),
                                   llvm::toString(std::move(error)).c_str());
  // A model is imported to be trained: refuse a head dimension the attention
  // kernels are not built for here rather than at run time.
  if (!limits::isSupportedHeadDim(config.headDim()))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: head dimension {1} ({2}) is not supported by the "
                      "attention kernels (supported: {3})",
                      fileName, config.headDim(),
                      config.headDimension
                          ? std::string("field 'head_dim'")
                          : llvm::formatv("hidden_size {0} / "
                                          "num_attention_heads {1}",
                                          config.hidden, config.numHeads)
                                .str(),
                      limits::kAttentionHeadDimsText)
            .str());
  return config;
}

llvm::Expected<ModelConfig>
ratrain::loadHFConfig(llvm::StringRef path, const HFImportOptions &options) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "%s: cannot read: %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  return parseHFConfig((*buffer)->getBuffer(), path, options);
}
