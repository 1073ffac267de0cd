//===- HFDirectory.cpp - HuggingFace model directories --------------------===//

#include "ratrain/runtime/HFDirectory.h"
#include "ratrain/Model/HFConfig.h"
#include "ratrain/Model/JSON.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Half.h"
#include "ratrain/runtime/Safetensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <map>
#include <memory>
#include <set>

using namespace ratrain;
using namespace ratrain::rt;

namespace {
constexpr const char *kConfig = "config.json";
constexpr const char *kSingleFile = "model.safetensors";
constexpr const char *kIndex = "model.safetensors.index.json";

std::string join(llvm::StringRef directory, llvm::StringRef name) {
  return joinPath(directory, name);
}

/// The tensors of a HuggingFace directory: name -> file (in `directory`).
llvm::Expected<std::map<std::string, std::string>>
readWeightMap(llvm::StringRef directory) {
  std::map<std::string, std::string> map;
  std::string index = join(directory, kIndex);
  if (llvm::sys::fs::exists(index)) {
    auto value = readJSONFile(index);
    if (!value)
      return value.takeError();
    llvm::json::Object *root = value->getAsObject();
    llvm::json::Object *weights =
        root ? root->getObject("weight_map") : nullptr;
    if (!weights)
      return makeError(index + ": missing weight_map");
    for (auto &[name, file] : *weights) {
      std::optional<llvm::StringRef> fileName = file.getAsString();
      if (!fileName || fileName->empty() || fileName->contains('/') ||
          *fileName == "..")
        return makeError(
            llvm::formatv("{0}: invalid file for '{1}'", index, name.str()));
      map[name.str()] = fileName->str();
    }
    return map;
  }
  std::string single = join(directory, kSingleFile);
  if (!llvm::sys::fs::exists(single))
    return makeError(llvm::formatv("{0}: no {1} or {2} (a HuggingFace model "
                                   "directory)",
                                   directory, kSingleFile, kIndex));
  auto file = SafetensorsFile::open(single);
  if (!file)
    return file.takeError();
  for (const TensorInfo &info : file->tensors())
    map[info.name] = kSingleFile;
  return map;
}

/// config.json of `directory` describes `model`'s shape.
llvm::Error checkConfig(llvm::StringRef directory, const ModelConfig &model) {
  std::string path = join(directory, kConfig);
  if (!llvm::sys::fs::exists(path))
    return makeError(llvm::formatv("{0}: no {1} (a HuggingFace model "
                                   "directory)",
                                   directory, kConfig));
  HFImportOptions options;
  options.seqLen = model.seqLen;
  llvm::Expected<ModelConfig> config = loadHFConfig(path, options);
  if (!config)
    return config.takeError();
  struct {
    const char *field;
    int64_t theirs, ours;
  } fields[] = {
      {"num_hidden_layers", config->numLayers, model.numLayers},
      {"hidden_size", config->hidden, model.hidden},
      {"num_attention_heads", config->numHeads, model.numHeads},
      {"num_key_value_heads", config->numKVHeads, model.numKVHeads},
      {"head_dim", config->headDim(), model.headDim()},
      {"intermediate_size", config->ffnHidden, model.ffnHidden},
      {"vocab_size", config->vocab, model.vocab},
      {"tie_word_embeddings", config->tieEmbeddings, model.tieEmbeddings}};
  for (auto &f : fields)
    if (f.theirs != f.ours)
      return makeError(llvm::formatv("{0}: {1} is {2}, the program's model "
                                     "has {3}",
                                     path, f.field, f.theirs, f.ours));
  if (config->family != model.family)
    return makeError(llvm::formatv("{0}: model_type is '{1}', the program's "
                                   "model is '{2}'",
                                   path, stringifyModelFamily(config->family),
                                   stringifyModelFamily(model.family)));
  return llvm::Error::success();
}

/// Whether a directory tensor the model does not have may be ignored: the
/// rotary inverse frequencies older checkpoints store, and the LM head of a
/// tied model (the embedding is the matrix).
bool ignorable(llvm::StringRef name, const ModelConfig &model) {
  return name.ends_with(".rotary_emb.inv_freq") ||
         (model.tieEmbeddings && name == "lm_head.weight");
}

/// Elements [first, first + count) of `info` as fp32.
llvm::Error readAsFloat(const SafetensorsFile &file, const TensorInfo &info,
                        uint64_t first, uint64_t count, float *out) {
  llvm::StringRef raw = file.data(info);
  if (info.dtype == "F32") {
    std::memcpy(out, raw.data() + first * 4, count * 4);
    return llvm::Error::success();
  }
  if (info.dtype != "BF16" && info.dtype != "F16")
    return makeError(llvm::formatv("{0}: tensor '{1}' has dtype {2}; "
                                   "supported: F32, BF16, F16",
                                   file.path(), info.name, info.dtype));
  bool bf16 = info.dtype == "BF16";
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, raw.data() + (first + i) * 2, 2);
    out[i] = bf16 ? bf16ToFloat(bits) : f16ToFloat(bits);
  }
  return llvm::Error::success();
}

/// The whole of `info` in `type` (F32, BF16, F16) into `out`.
llvm::Error readAs(const SafetensorsFile &file, const TensorInfo &info,
                   ElemType type, const Buffer &out) {
  uint64_t numel = info.numElements();
  if (out.bytes != numel * getElemBytes(type))
    return makeError(llvm::formatv("{0}: tensor '{1}': the program's view "
                                   "holds {2} bytes, {3} elements of {4} "
                                   "need {5}",
                                   file.path(), info.name, out.bytes, numel,
                                   stringifyElemType(type),
                                   numel * getElemBytes(type)));
  if (type == ElemType::F32)
    return readAsFloat(file, info, 0, numel, out.as<float>());
  std::vector<float> values(numel);
  if (llvm::Error error = readAsFloat(file, info, 0, numel, values.data()))
    return error;
  uint16_t *bits = out.as<uint16_t>();
  for (uint64_t i = 0; i < numel; ++i)
    bits[i] =
        type == ElemType::BF16 ? floatToBF16(values[i]) : floatToF16(values[i]);
  return llvm::Error::success();
}
} // namespace

llvm::Error ratrain::rt::loadPretrained(llvm::StringRef directory,
                                        const ModelConfig &model,
                                        llvm::ArrayRef<ParamSlot> slots) {
  if (llvm::Error error = checkConfig(directory, model))
    return error;
  auto weightMap = readWeightMap(directory);
  if (!weightMap)
    return weightMap.takeError();
  // Names: the directory holds the model's parameters and nothing else.
  std::set<std::string> parameters;
  for (const ParamSpec &spec : modelParameters(model)) {
    parameters.insert(spec.name);
    if (!weightMap->count(spec.name))
      return makeError(llvm::formatv("{0}: tensor '{1}' of the model is "
                                     "missing",
                                     directory, spec.name));
  }
  for (const auto &[name, file] : *weightMap)
    if (!parameters.count(name) && !ignorable(name, model))
      return makeError(llvm::formatv("{0}: tensor '{1}' (in {2}) is not a "
                                     "parameter of the model",
                                     directory, name, file));

  std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
  for (const ParamSlot &slot : slots) {
    const std::string &fileName = weightMap->at(slot.name);
    std::unique_ptr<SafetensorsFile> &file = files[fileName];
    if (!file) {
      auto opened = SafetensorsFile::open(join(directory, fileName));
      if (!opened)
        return opened.takeError();
      file = std::make_unique<SafetensorsFile>(std::move(*opened));
    }
    const TensorInfo *info = file->find(slot.name);
    if (!info)
      return makeError(llvm::formatv("{0}: tensor '{1}' named by {2} is "
                                     "missing",
                                     file->path(), slot.name, kIndex));
    if (info->shape != slot.shape)
      return makeError(llvm::formatv("{0}: tensor '{1}' has shape {2}, the "
                                     "model's is {3}",
                                     file->path(), slot.name,
                                     formatShape(info->shape),
                                     formatShape(slot.shape)));
    // A recorded checksum (a RATrain export) is verified on the raw bytes.
    if (file->metadata().count(checksumKey(slot.name))) {
      std::vector<char> raw(info->end - info->begin);
      if (llvm::Error error = file->read(slot.name, info->dtype, info->shape,
                                         raw.data(), raw.size()))
        return error;
    }
    uint64_t numel = info->numElements();
    if (!slot.sharded()) {
      if (slot.master.bytes != numel * 4)
        return makeError(llvm::formatv("--init-from: '{0}' master buffer "
                                       "holds {1} bytes, {2} fp32 elements "
                                       "need {3}",
                                       slot.name, slot.master.bytes, numel,
                                       numel * 4));
      if (llvm::Error error =
              readAsFloat(*file, *info, 0, numel, slot.master.as<float>()))
        return error;
      continue;
    }
    // ZeRO: this rank's range of the master, the whole view.
    uint64_t first = std::min<uint64_t>(slot.shardOffset, numel);
    uint64_t count = std::min<uint64_t>(slot.shardElements, numel - first);
    if (slot.master.bytes < count * 4)
      return makeError(llvm::formatv("--init-from: '{0}' master shard holds "
                                     "{1} bytes, fewer than {2} fp32 "
                                     "elements",
                                     slot.name, slot.master.bytes, count));
    if (llvm::Error error =
            readAsFloat(*file, *info, first, count, slot.master.as<float>()))
      return error;
    if (slot.view.bytes)
      if (llvm::Error error = readAs(*file, *info, slot.viewType, slot.view))
        return error;
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Export
//===----------------------------------------------------------------------===//

namespace {
/// "model-00001-of-00003.safetensors".
std::string exportShardName(size_t index, size_t count) {
  return llvm::formatv("model-{0:d5}-of-{1:d5}.safetensors", index + 1, count)
      .str();
}
} // namespace

llvm::Expected<ExportSummary>
ratrain::rt::exportCheckpoint(llvm::StringRef checkpoint,
                              llvm::StringRef configPath, llvm::StringRef out,
                              uint64_t maxShardBytes) {
  // Everything is checked before anything is written.
  auto summaryOfCheckpoint = verifyCheckpoint(checkpoint);
  if (!summaryOfCheckpoint)
    return summaryOfCheckpoint.takeError();
  std::string directory = summaryOfCheckpoint->directory;
  llvm::Expected<ModelConfig> model = loadHFConfig(configPath);
  if (!model)
    return model.takeError();
  // The trainer state's model shape against the config's (names the first
  // field that differs).
  if (llvm::Expected<TrainerState> state = readTrainerState(directory, *model);
      !state)
    return makeError(llvm::formatv("{0} does not describe this checkpoint: {1}",
                                   configPath,
                                   llvm::toString(state.takeError())));
  if (llvm::sys::fs::exists(out))
    return makeError(llvm::formatv("{0}: already exists; export writes a new "
                                   "directory",
                                   out));
  // Shards of at most maxShardBytes (a larger tensor alone in its shard).
  std::vector<ParamSpec> params = modelParameters(*model);
  std::vector<std::vector<size_t>> shards(1);
  uint64_t shardBytes = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    uint64_t bytes = params[i].numElements() * 4;
    if (!shards.back().empty() && shardBytes + bytes > maxShardBytes) {
      shards.emplace_back();
      shardBytes = 0;
    }
    shards.back().push_back(i);
    shardBytes += bytes;
  }

  std::string staging = (out + ".partial").str();
  llvm::sys::fs::remove_directories(staging);
  if (std::error_code ec = llvm::sys::fs::create_directories(staging))
    return makeError(
        llvm::formatv("{0}: cannot create: {1}", staging, ec.message()));
  auto fail = [&](llvm::Error error) -> llvm::Expected<ExportSummary> {
    llvm::sys::fs::remove_directories(staging);
    return std::move(error);
  };
  ExportSummary summary;
  summary.directory = out.str();
  summary.step = summaryOfCheckpoint->step;
  llvm::json::Object weightMap;
  uint64_t totalBytes = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string fileName = shards.size() == 1
                               ? std::string(kSingleFile)
                               : exportShardName(s, shards.size());
    std::vector<ParamSpec> specs;
    for (size_t index : shards[s])
      specs.push_back(params[index]);
    std::vector<std::vector<float>> data;
    if (llvm::Error error = readCheckpointMasters(directory, specs, data))
      return fail(std::move(error));
    SafetensorsWriter writer;
    writer.setMetadata("format", "pt");
    for (size_t k = 0; k < specs.size(); ++k) {
      const ParamSpec &spec = specs[k];
      writer.add(spec.name, "F32", spec.shape, data[k].data(),
                 data[k].size() * 4);
      weightMap[spec.name] = fileName;
      totalBytes += data[k].size() * 4;
      ++summary.tensors;
    }
    if (llvm::Error error = writer.write(join(staging, fileName)))
      return fail(std::move(error));
    ++summary.files;
  }
  summary.bytes = totalBytes;
  if (shards.size() > 1) {
    llvm::json::Value index = llvm::json::Object{
        {"metadata", llvm::json::Object{{"total_size", totalBytes}}},
        {"weight_map", std::move(weightMap)}};
    std::string text = llvm::formatv("{0:2}\n", index).str();
    if (llvm::Error error = writeFileAtomically(join(staging, kIndex), text))
      return fail(std::move(error));
  }
  if (std::error_code ec =
          llvm::sys::fs::copy_file(configPath, join(staging, kConfig)))
    return fail(makeError(llvm::formatv("{0}: cannot copy to {1}: {2}",
                                        configPath, staging, ec.message())));
  if (std::error_code ec = llvm::sys::fs::rename(staging, out))
    return fail(makeError(llvm::formatv("{0}: cannot rename to {1}: {2}",
                                        staging, out, ec.message())));
  return summary;
}
