//===- Checkpoint.cpp - Sharded HuggingFace-style checkpoints -------------===//

#include "ratrain/runtime/Checkpoint.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Safetensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <map>
#include <memory>

using namespace ratrain;
using namespace ratrain::rt;

namespace {
constexpr const char *kModelIndex = "model.safetensors.index.json";
constexpr const char *kOptimizerIndex = "optimizer.safetensors.index.json";
constexpr const char *kTrainerState = "trainer_state.json";
constexpr const char *kLatest = "latest";

std::string join(llvm::StringRef directory, llvm::StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

llvm::Expected<llvm::json::Value> readJSON(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(llvm::formatv("{0}: cannot read: {1}", path,
                                   buffer.getError().message()));
  auto value = llvm::json::parse((*buffer)->getBuffer());
  if (!value)
    return makeError(llvm::formatv("{0}: corrupt JSON: {1}", path,
                                   llvm::toString(value.takeError())));
  return value;
}

std::string toJSONText(llvm::json::Value value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", value) << "\n";
  os.flush();
  return text;
}

llvm::json::Object modelShapeJSON(const ModelConfig &model) {
  return llvm::json::Object{{"num_hidden_layers", model.numLayers},
                            {"hidden_size", model.hidden},
                            {"num_attention_heads", model.numHeads},
                            {"num_key_value_heads", model.numKVHeads},
                            {"intermediate_size", model.ffnHidden},
                            {"vocab_size", model.vocab},
                            {"tie_word_embeddings", model.tieEmbeddings}};
}
} // namespace

uint64_t ParamSpec::numElements() const {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= uint64_t(d);
  return n;
}

std::vector<ParamSpec> ratrain::rt::llamaParameters(const ModelConfig &model) {
  std::vector<ParamSpec> params;
  int64_t h = model.hidden, kv = model.kvDim(), f = model.ffnHidden;
  params.push_back({"model.embed_tokens.weight", {model.vocab, h}, -1});
  for (int64_t layer = 0; layer < model.numLayers; ++layer) {
    std::string prefix = "model.layers." + std::to_string(layer) + ".";
    auto add = [&](const std::string &name, std::vector<int64_t> shape) {
      params.push_back({prefix + name, std::move(shape), layer});
    };
    if (model.family == ModelFamily::Baichuan) {
      add("self_attn.W_pack.weight", {3 * h, h});
    } else {
      add("self_attn.q_proj.weight", {h, h});
      add("self_attn.k_proj.weight", {kv, h});
      add("self_attn.v_proj.weight", {kv, h});
      if (model.qkvBias) {
        add("self_attn.q_proj.bias", {h});
        add("self_attn.k_proj.bias", {kv});
        add("self_attn.v_proj.bias", {kv});
      }
    }
    add("self_attn.o_proj.weight", {h, h});
    add("mlp.gate_proj.weight", {f, h});
    add("mlp.up_proj.weight", {f, h});
    add("mlp.down_proj.weight", {h, f});
    add("input_layernorm.weight", {h});
    add("post_attention_layernorm.weight", {h});
  }
  params.push_back({"model.norm.weight", {h}, -2});
  if (!model.tieEmbeddings)
    params.push_back({"lm_head.weight", {model.vocab, h}, -2});
  return params;
}

StagePartition StagePartition::even(int64_t numLayers, int pp) {
  StagePartition partition;
  partition.firstLayer.push_back(0);
  for (int s = 0; s < pp; ++s) {
    int64_t count = numLayers / pp + (s < numLayers % pp ? 1 : 0);
    partition.firstLayer.push_back(partition.firstLayer.back() + count);
  }
  return partition;
}

llvm::Error StagePartition::validate(int64_t numLayers) const {
  if (firstLayer.size() < 2 || firstLayer.front() != 0 ||
      firstLayer.back() != numLayers)
    return makeError(llvm::formatv("stage partition must start at layer 0 "
                                   "and end at layer {0}",
                                   numLayers));
  for (size_t i = 1; i < firstLayer.size(); ++i)
    if (firstLayer[i] < firstLayer[i - 1])
      return makeError(llvm::formatv("stage partition boundaries decrease at "
                                     "stage {0}",
                                     i - 1));
  return llvm::Error::success();
}

int StagePartition::stageOfLayer(int64_t layer) const {
  if (layer == -1)
    return 0;
  if (layer == -2)
    return numStages() - 1;
  for (int s = 0; s < numStages(); ++s)
    if (layer >= firstLayer[s] && layer < firstLayer[s + 1])
      return s;
  return numStages() - 1;
}

std::vector<ParamSpec>
ratrain::rt::stageParameters(const ModelConfig &model,
                             const StagePartition &partition, int stage) {
  std::vector<ParamSpec> result;
  for (ParamSpec &param : llamaParameters(model))
    if (partition.stageOfLayer(param.layer) == stage)
      result.push_back(std::move(param));
  return result;
}

std::string ratrain::rt::modelShardName(int stage, int pp) {
  return llvm::formatv("model-{0:d5}-of-{1:d5}.safetensors", stage + 1, pp)
      .str();
}

std::string ratrain::rt::optimizerShardName(int stage, int pp) {
  return llvm::formatv("optimizer-{0:d5}-of-{1:d5}.safetensors", stage + 1, pp)
      .str();
}

std::string ratrain::rt::stepDirectoryName(uint64_t step) {
  return llvm::formatv("step-{0:d8}", step).str();
}

std::string ratrain::rt::stagingDirectory(llvm::StringRef root, uint64_t step) {
  return join(root, "." + stepDirectoryName(step) + ".partial");
}

llvm::Error ratrain::rt::writeStageShards(llvm::StringRef directory,
                                          const ModelConfig &model,
                                          const StagePartition &partition,
                                          int stage,
                                          llvm::ArrayRef<ParamSlot> slots,
                                          const TrainerState &state) {
  std::vector<ParamSpec> expected = stageParameters(model, partition, stage);
  std::map<std::string, const ParamSlot *> byName;
  for (const ParamSlot &slot : slots)
    byName[slot.name] = &slot;
  SafetensorsWriter params, moments;
  bool haveMoments = false;
  for (const ParamSpec &spec : expected) {
    auto it = byName.find(spec.name);
    if (it == byName.end())
      return makeError(llvm::formatv("checkpoint save: stage {0} owns '{1}', "
                                     "but the program passed no buffer for it",
                                     stage, spec.name));
    const ParamSlot &slot = *it->second;
    if (slot.shape != spec.shape)
      return makeError(llvm::formatv("checkpoint save: '{0}' has shape {1}, "
                                     "the model says {2}",
                                     spec.name, formatShape(slot.shape),
                                     formatShape(spec.shape)));
    uint64_t bytes = spec.numElements() * 4;
    if (slot.master.bytes != bytes)
      return makeError(llvm::formatv("checkpoint save: '{0}' master buffer "
                                     "holds {1} bytes, fp32 {2} needs {3}",
                                     spec.name, slot.master.bytes,
                                     formatShape(spec.shape), bytes));
    params.add(spec.name, "F32", spec.shape, slot.master.data, bytes);
    if (slot.expAvg.bytes || slot.expAvgSq.bytes) {
      if (slot.expAvg.bytes != bytes || slot.expAvgSq.bytes != bytes)
        return makeError(llvm::formatv("checkpoint save: '{0}' Adam moment "
                                       "buffers hold {1} and {2} bytes, "
                                       "expected {3}",
                                       spec.name, slot.expAvg.bytes,
                                       slot.expAvgSq.bytes, bytes));
      moments.add(spec.name + ".exp_avg", "F32", spec.shape, slot.expAvg.data,
                  bytes);
      moments.add(spec.name + ".exp_avg_sq", "F32", spec.shape,
                  slot.expAvgSq.data, bytes);
      haveMoments = true;
    }
  }
  if (slots.size() != expected.size())
    return makeError(llvm::formatv("checkpoint save: stage {0} owns {1} "
                                   "tensors, the program passed {2}",
                                   stage, expected.size(), slots.size()));
  params.setMetadata("format", "pt");
  params.setMetadata("ratrain.stage", std::to_string(stage));
  if (llvm::Error error =
          params.write(join(directory, modelShardName(stage, state.pp))))
    return error;
  moments.setMetadata("format", "pt");
  moments.setMetadata("ratrain.step", std::to_string(state.step));
  moments.setMetadata("ratrain.has_moments", haveMoments ? "1" : "0");
  return moments.write(join(directory, optimizerShardName(stage, state.pp)));
}

llvm::Error ratrain::rt::writeCheckpointIndex(llvm::StringRef directory,
                                              const ModelConfig &model,
                                              const StagePartition &partition,
                                              const TrainerState &state) {
  llvm::json::Object weights, moments;
  uint64_t totalBytes = 0;
  for (const ParamSpec &spec : llamaParameters(model)) {
    int stage = partition.stageOfLayer(spec.layer);
    weights[spec.name] = modelShardName(stage, state.pp);
    moments[spec.name + ".exp_avg"] = optimizerShardName(stage, state.pp);
    moments[spec.name + ".exp_avg_sq"] = optimizerShardName(stage, state.pp);
    totalBytes += spec.numElements() * 4;
  }
  llvm::json::Value modelIndex = llvm::json::Object{
      {"metadata", llvm::json::Object{{"total_size", totalBytes}}},
      {"weight_map", std::move(weights)}};
  llvm::json::Value optimizerIndex = llvm::json::Object{
      {"metadata", llvm::json::Object{{"total_size", 2 * totalBytes}}},
      {"weight_map", std::move(moments)}};
  llvm::json::Array boundaries;
  for (int64_t layer : partition.firstLayer)
    boundaries.push_back(layer);
  llvm::json::Value trainer =
      llvm::json::Object{{"format", "ratrain-checkpoint-1"},
                         {"step", state.step},
                         {"data_samples", state.data.samples},
                         {"seed", std::to_string(state.seed)},
                         {"pp", state.pp},
                         {"dp", state.dp},
                         {"stage_first_layer", std::move(boundaries)},
                         {"model", modelShapeJSON(model)}};
  if (llvm::Error error = writeFileAtomically(
          join(directory, kModelIndex), toJSONText(std::move(modelIndex))))
    return error;
  if (llvm::Error error =
          writeFileAtomically(join(directory, kOptimizerIndex),
                              toJSONText(std::move(optimizerIndex))))
    return error;
  return writeFileAtomically(join(directory, kTrainerState),
                             toJSONText(std::move(trainer)));
}

llvm::Error ratrain::rt::commitCheckpoint(llvm::StringRef root,
                                          llvm::StringRef staging,
                                          uint64_t step) {
  if (llvm::Error error = syncDirectory(staging))
    return error;
  std::string target = join(root, stepDirectoryName(step));
  std::string old;
  if (llvm::sys::fs::exists(target)) {
    old = join(root, "." + stepDirectoryName(step) + ".old");
    llvm::sys::fs::remove_directories(old);
    if (std::error_code ec = llvm::sys::fs::rename(target, old))
      return makeError(llvm::formatv("{0}: cannot move the previous "
                                     "checkpoint aside: {1}",
                                     target, ec.message()));
  }
  if (std::error_code ec = llvm::sys::fs::rename(staging, target))
    return makeError(llvm::formatv("{0}: cannot rename the staging directory "
                                   "into place: {1}",
                                   target, ec.message()));
  if (llvm::Error error = syncDirectory(root))
    return error;
  if (llvm::Error error = writeFileAtomically(join(root, kLatest),
                                              stepDirectoryName(step) + "\n"))
    return error;
  if (!old.empty())
    llvm::sys::fs::remove_directories(old);
  return llvm::Error::success();
}

llvm::Expected<std::string>
ratrain::rt::resolveCheckpoint(llvm::StringRef path) {
  if (!llvm::sys::fs::is_directory(path))
    return makeError(
        llvm::formatv("{0}: checkpoint directory does not exist", path));
  if (llvm::sys::fs::exists(join(path, kTrainerState)))
    return path.str();
  std::string latest = join(path, kLatest);
  auto buffer = llvm::MemoryBuffer::getFile(latest);
  if (!buffer)
    return makeError(llvm::formatv("{0}: neither a checkpoint ({1} is "
                                   "missing) nor a checkpoint root ({2}: {3})",
                                   path, kTrainerState, kLatest,
                                   buffer.getError().message()));
  llvm::StringRef name = (*buffer)->getBuffer().trim();
  if (name.empty() || name.contains('/'))
    return makeError(llvm::formatv("{0}: corrupt 'latest' file", latest));
  std::string directory = join(path, name);
  if (!llvm::sys::fs::exists(join(directory, kTrainerState)))
    return makeError(llvm::formatv("{0}: 'latest' names {1}, which has no {2}",
                                   latest, directory, kTrainerState));
  return directory;
}

llvm::Expected<TrainerState>
ratrain::rt::readTrainerState(llvm::StringRef directory,
                              const ModelConfig &model) {
  std::string path = join(directory, kTrainerState);
  auto value = readJSON(path);
  if (!value)
    return value.takeError();
  llvm::json::Object *root = value->getAsObject();
  auto fail = [&](const llvm::Twine &message) {
    return makeError(path + ": " + message);
  };
  if (!root || root->getString("format") != "ratrain-checkpoint-1")
    return fail("not a RATrain trainer state (format "
                "'ratrain-checkpoint-1' expected)");
  TrainerState state;
  auto step = root->getInteger("step");
  auto samples = root->getInteger("data_samples");
  auto seed = root->getString("seed");
  auto pp = root->getInteger("pp");
  auto dp = root->getInteger("dp");
  if (!step || !samples || !seed || !pp || !dp || *step < 0 || *samples < 0)
    return fail("missing or invalid step, data_samples, seed, pp or dp");
  state.step = uint64_t(*step);
  state.data.samples = uint64_t(*samples);
  if (seed->getAsInteger(10, state.seed))
    return fail("seed is not an unsigned integer");
  state.pp = int(*pp);
  state.dp = int(*dp);
  llvm::json::Object *shape = root->getObject("model");
  if (!shape)
    return fail("missing model shape");
  llvm::json::Object expected = modelShapeJSON(model);
  for (auto &[key, want] : expected) {
    const llvm::json::Value *have = shape->get(key);
    if (!have || *have != want) {
      std::string haveText =
          have ? llvm::formatv("{0}", *have).str() : std::string("nothing");
      return fail(llvm::formatv("the checkpoint was saved from a model with "
                                "{0} = {1}, this model has {2}",
                                key.str(), haveText,
                                llvm::formatv("{0}", want).str()));
    }
  }
  return state;
}

llvm::Error ratrain::rt::loadSlots(llvm::StringRef directory,
                                   llvm::ArrayRef<ParamSlot> slots) {
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
  auto loadIndex = [&](const char *indexName,
                       std::map<std::string, std::string> &map) -> llvm::Error {
    std::string path = join(directory, indexName);
    auto value = readJSON(path);
    if (!value)
      return value.takeError();
    llvm::json::Object *root = value->getAsObject();
    llvm::json::Object *weights =
        root ? root->getObject("weight_map") : nullptr;
    if (!weights)
      return makeError(path + ": missing weight_map");
    for (auto &[key, file] : *weights) {
      auto name = file.getAsString();
      if (!name || name->contains('/'))
        return makeError(path + ": invalid file for '" + key.str() + "'");
      map[key.str()] = name->str();
    }
    return llvm::Error::success();
  };
  std::map<std::string, std::string> weightMap, momentMap;
  if (llvm::Error error = loadIndex(kModelIndex, weightMap))
    return error;
  bool needMoments = false;
  for (const ParamSlot &slot : slots)
    needMoments |= slot.expAvg.bytes || slot.expAvgSq.bytes;
  if (needMoments)
    if (llvm::Error error = loadIndex(kOptimizerIndex, momentMap))
      return error;

  auto readTensor = [&](std::map<std::string, std::string> &map,
                        const char *indexName, const std::string &name,
                        llvm::ArrayRef<int64_t> shape,
                        const Buffer &buffer) -> llvm::Error {
    auto it = map.find(name);
    if (it == map.end())
      return makeError(llvm::formatv("{0}: tensor '{1}' is not in the "
                                     "checkpoint",
                                     join(directory, indexName), name));
    std::unique_ptr<SafetensorsFile> &file = files[it->second];
    if (!file) {
      auto opened = SafetensorsFile::open(join(directory, it->second));
      if (!opened)
        return opened.takeError();
      file = std::make_unique<SafetensorsFile>(std::move(*opened));
    }
    return file->read(name, "F32", shape, buffer.data, buffer.bytes);
  };
  for (const ParamSlot &slot : slots) {
    if (llvm::Error error = readTensor(weightMap, kModelIndex, slot.name,
                                       slot.shape, slot.master))
      return error;
    if (slot.expAvg.bytes || slot.expAvgSq.bytes) {
      if (llvm::Error error =
              readTensor(momentMap, kOptimizerIndex, slot.name + ".exp_avg",
                         slot.shape, slot.expAvg))
        return error;
      if (llvm::Error error =
              readTensor(momentMap, kOptimizerIndex, slot.name + ".exp_avg_sq",
                         slot.shape, slot.expAvgSq))
        return error;
    }
  }
  return llvm::Error::success();
}

llvm::Expected<CheckpointSummary>
ratrain::rt::verifyCheckpoint(llvm::StringRef path) {
  auto directory = resolveCheckpoint(path);
  if (!directory)
    return directory.takeError();
  CheckpointSummary summary;
  summary.directory = *directory;
  std::string statePath = join(*directory, kTrainerState);
  auto state = readJSON(statePath);
  if (!state)
    return state.takeError();
  llvm::json::Object *root = state->getAsObject();
  if (!root || root->getString("format") != "ratrain-checkpoint-1")
    return makeError(statePath + ": not a RATrain trainer state");
  summary.step = uint64_t(root->getInteger("step").value_or(0));
  summary.dataSamples = uint64_t(root->getInteger("data_samples").value_or(0));
  summary.pp = int(root->getInteger("pp").value_or(0));
  summary.dp = int(root->getInteger("dp").value_or(0));

  std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
  for (const char *indexName : {kModelIndex, kOptimizerIndex}) {
    std::string indexPath = join(*directory, indexName);
    auto index = readJSON(indexPath);
    if (!index)
      return index.takeError();
    llvm::json::Object *object = index->getAsObject();
    llvm::json::Object *weights =
        object ? object->getObject("weight_map") : nullptr;
    if (!weights)
      return makeError(indexPath + ": missing weight_map");
    for (auto &[key, value] : *weights) {
      std::optional<llvm::StringRef> file = value.getAsString();
      if (!file || file->contains('/'))
        return makeError(indexPath + ": invalid file for '" + key.str() + "'");
      std::unique_ptr<SafetensorsFile> &shard = files[file->str()];
      if (!shard) {
        auto opened = SafetensorsFile::open(join(*directory, *file));
        if (!opened)
          return opened.takeError();
        shard = std::make_unique<SafetensorsFile>(std::move(*opened));
      }
      const TensorInfo *info = shard->find(key.str());
      if (!info)
        return makeError(llvm::formatv("{0}: tensor '{1}' named by {2} is "
                                       "missing",
                                       shard->path(), key.str(), indexName));
      std::vector<char> scratch(info->end - info->begin);
      if (llvm::Error error = shard->read(info->name, info->dtype, info->shape,
                                          scratch.data(), scratch.size()))
        return error;
      ++summary.tensors;
      summary.bytes += scratch.size();
    }
  }
  summary.files = files.size();
  return summary;
}
