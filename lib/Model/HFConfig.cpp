//===- HFConfig.cpp - HuggingFace config.json import ----------------------===//
//
// Maps the fields of LlamaConfig, Qwen2Config and BaichuanConfig onto a
// ModelConfig. Unknown fields are ignored (configs carry many that training
// does not need); a required field that is missing or of the wrong type, or
// a feature we cannot train (sliding-window attention, another activation),
// is an error naming the field and the file.
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

using namespace ratrain;
using llvm::json::Object;
using llvm::json::Value;

namespace {

/// Reads typed fields of one JSON object, collecting the first error.
class FieldReader {
public:
  FieldReader(const Object &object, llvm::StringRef fileName)
      : object(object), fileName(fileName) {}

  /// A required positive integer.
  int64_t requireInt(llvm::StringRef field) {
    const Value *value = object.get(field);
    if (!value) {
      fail(llvm::formatv("missing required field '{0}'", field));
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

  double optionalNumber(llvm::StringRef field, double fallback) {
    const Value *value = object.get(field);
    if (!value || value->kind() == Value::Null)
      return fallback;
    if (std::optional<double> number = value->getAsNumber())
      return *number;
    fail(llvm::formatv("field '{0}' must be a number", field));
    return fallback;
  }

  bool optionalBool(llvm::StringRef field, bool fallback) {
    const Value *value = object.get(field);
    if (!value || value->kind() == Value::Null)
      return fallback;
    if (std::optional<bool> flag = value->getAsBoolean())
      return *flag;
    fail(llvm::formatv("field '{0}' must be true or false", field));
    return fallback;
  }

  std::optional<std::string> optionalString(llvm::StringRef field) {
    const Value *value = object.get(field);
    if (!value || value->kind() == Value::Null)
      return std::nullopt;
    if (std::optional<llvm::StringRef> text = value->getAsString())
      return text->str();
    fail(llvm::formatv("field '{0}' must be a string", field));
    return std::nullopt;
  }

  bool has(llvm::StringRef field) const { return object.get(field); }

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
    fail(llvm::formatv("field '{0}' must be an integer", field));
    return 0;
  }

  const Object &object;
  llvm::StringRef fileName;
  std::string error;
};

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
                              "llama, qwen2, baichuan)",
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
  if (reader.optionalBool("use_sliding_window", false))
    reader.fail("field 'use_sliding_window' is true; sliding-window "
                "attention is not supported");

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
  if (llvm::Error error = config.validate())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s",
                                   fileName.str().c_str(),
                                   llvm::toString(std::move(error)).c_str());
  // A model is imported to be trained: refuse a head dimension the attention
  // kernels are not built for here rather than at run time.
  if (!limits::isSupportedHeadDim(config.headDim()))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: head dimension {1} (hidden_size {2} / "
                      "num_attention_heads {3}) is not supported by the "
                      "attention kernels (supported: {4})",
                      fileName, config.headDim(), config.hidden,
                      config.numHeads, limits::kAttentionHeadDimsText)
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
