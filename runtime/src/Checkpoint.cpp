//===- Checkpoint.cpp - Sharded HuggingFace-style checkpoints -------------===//

#include "ratrain/runtime/Checkpoint.h"
#include "ratrain/Model/JSON.h"
#include "ratrain/Model/Limits.h"
#include "ratrain/Model/ParameterLayout.h"
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

#include <algorithm>
#include <cstring>
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
  return joinPath(directory, name);
}
llvm::Expected<llvm::json::Value> readJSON(llvm::StringRef path) {
  return readJSONFile(path);
}

std::string toJSONText(llvm::json::Value value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", value) << "\n";
  os.flush();
  return text;
}

llvm::json::Object modelShapeJSON(const ModelConfig &model) {
  llvm::json::Object shape{{"num_hidden_layers", model.numLayers},
                           {"hidden_size", model.hidden},
                           {"num_attention_heads", model.numHeads},
                           {"num_key_value_heads", model.numKVHeads},
                           {"intermediate_size", model.ffnHidden},
                           {"vocab_size", model.vocab},
                           {"tie_word_embeddings", model.tieEmbeddings}};
  // Only where the heads are not hidden_size / num_attention_heads wide
  // (earlier checkpoints have no such key).
  if (model.headDimension)
    shape["head_dim"] = model.headDimension;
  return shape;
}
} // namespace

uint64_t ParamSpec::numElements() const {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= uint64_t(d);
  return n;
}

std::vector<ParamSpec> ratrain::rt::modelParameters(const ModelConfig &model) {
  std::vector<ParamSpec> params;
  int64_t last = numParameterLayers(model) - 1;
  for (int64_t layer = 0; layer <= last; ++layer) {
    // ParamSpec's layer: -1 the embedding, -2 the head, else the decoder
    // layer from 0.
    int64_t tag = layer == 0 ? -1 : layer == last ? -2 : layer - 1;
    for (ParamTensor &tensor : layerParameterTensors(model, layer))
      params.push_back(
          {std::move(tensor.name),
           std::vector<int64_t>(tensor.shape.begin(), tensor.shape.end()),
           tag});
  }
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

int StagePartition::numStages() const {
  if (chunkRank.empty())
    return int(firstLayer.size()) - 1;
  int64_t ranks = 0;
  for (int64_t rank : chunkRank)
    ranks = std::max(ranks, rank + 1);
  return int(ranks);
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
  if (!chunkRank.empty()) {
    if (chunkRank.size() + 1 != firstLayer.size())
      return makeError(llvm::formatv("stage partition has {0} virtual stages "
                                     "but ranks for {1}",
                                     firstLayer.size() - 1, chunkRank.size()));
    std::vector<bool> used(chunkRank.size(), false);
    for (int64_t rank : chunkRank) {
      if (rank < 0 || rank >= int64_t(chunkRank.size()))
        return makeError(llvm::formatv(
            "stage partition puts a virtual stage on rank {0} of {1}", rank,
            chunkRank.size()));
      used[rank] = true;
    }
    for (int rank = 0; rank < numStages(); ++rank)
      if (!used[rank])
        return makeError(
            llvm::formatv("stage partition gives rank {0} no layers", rank));
  }
  return llvm::Error::success();
}

int StagePartition::stageOfLayer(int64_t layer) const {
  int64_t chunks = int64_t(firstLayer.size()) - 1;
  auto rankOf = [&](int64_t chunk) {
    return chunkRank.empty() ? int(chunk) : int(chunkRank[chunk]);
  };
  if (layer == -1)
    return rankOf(0);
  if (layer == -2)
    return rankOf(chunks - 1);
  for (int64_t c = 0; c < chunks; ++c)
    if (layer >= firstLayer[c] && layer < firstLayer[c + 1])
      return rankOf(c);
  return rankOf(chunks - 1);
}

std::vector<ParamSpec>
ratrain::rt::stageParameters(const ModelConfig &model,
                             const StagePartition &partition, int stage) {
  std::vector<ParamSpec> result;
  for (ParamSpec &param : modelParameters(model))
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

std::string ratrain::rt::zeroShardName(llvm::StringRef modelFile, int dpIndex,
                                       int dp) {
  llvm::StringRef stem = modelFile;
  stem.consume_front("model-");
  stem.consume_back(".safetensors");
  return llvm::formatv("optimizer-{0}-zero-{1:d5}-of-{2:d5}.safetensors", stem,
                       dpIndex + 1, dp)
      .str();
}

namespace {
const char *safetensorsDType(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return "F32";
  case ElemType::BF16:
    return "BF16";
  case ElemType::F16:
    return "F16";
  default:
    return "";
  }
}

/// Metadata keys of a zero shard file: where this rank's range of a tensor
/// starts, and how many elements of the tensor it holds.
std::string shardOffsetKey(llvm::StringRef name) {
  return ("ratrain.shard_offset." + name).str();
}
std::string shardElementsKey(llvm::StringRef name) {
  return ("ratrain.shard_elements." + name).str();
}

/// Elements of a shard that lie inside the tensor.
uint64_t validShardElements(const ParamSlot &slot, uint64_t numel) {
  if (slot.shardOffset >= numel)
    return 0;
  return std::min(slot.shardElements, numel - slot.shardOffset);
}
} // namespace

llvm::Error ratrain::rt::writeStageShards(
    llvm::StringRef directory, const ModelConfig &model,
    const StagePartition &partition, int stage, llvm::ArrayRef<ParamSlot> slots,
    const TrainerState &state, int dpIndex) {
  std::vector<ParamSpec> expected = stageParameters(model, partition, stage);
  std::map<std::string, const ParamSlot *> byName;
  size_t shardedSlots = 0;
  for (const ParamSlot &slot : slots) {
    byName[slot.name] = &slot;
    shardedSlots += slot.sharded() ? 1 : 0;
  }
  if (slots.size() != expected.size())
    return makeError(llvm::formatv("checkpoint save: stage {0} owns {1} "
                                   "tensors, the program passed {2}",
                                   stage, expected.size(), slots.size()));
  bool zero = shardedSlots != 0;
  if (zero && shardedSlots != slots.size())
    return makeError(llvm::formatv("checkpoint save: {0} of stage {1}'s {2} "
                                   "tensors are ZeRO-sharded; shard all or "
                                   "none",
                                   shardedSlots, stage, slots.size()));
  std::string modelFile = modelShardName(stage, state.pp);
  SafetensorsWriter params, moments, shards;
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
    uint64_t numel = spec.numElements();
    if (zero) {
      uint64_t shardBytes = slot.shardElements * 4;
      if (slot.master.bytes != shardBytes || slot.expAvg.bytes != shardBytes ||
          slot.expAvgSq.bytes != shardBytes)
        return makeError(llvm::formatv(
            "checkpoint save: '{0}' shard buffers hold {1}, {2} and {3} "
            "bytes, a shard of {4} fp32 elements needs {5}",
            spec.name, slot.master.bytes, slot.expAvg.bytes,
            slot.expAvgSq.bytes, slot.shardElements, shardBytes));
      const char *dtype = safetensorsDType(slot.viewType);
      if (!*dtype || slot.view.bytes != numel * getElemBytes(slot.viewType))
        return makeError(llvm::formatv(
            "checkpoint save: '{0}' view buffer "
            "holds {1} bytes, {2} {3} needs {4}",
            spec.name, slot.view.bytes, stringifyElemType(slot.viewType),
            formatShape(spec.shape), numel * getElemBytes(slot.viewType)));
      params.add(spec.name, dtype, spec.shape, slot.view.data, slot.view.bytes);
      uint64_t valid = validShardElements(slot, numel);
      std::vector<int64_t> shape{int64_t(valid)};
      shards.add(spec.name + ".master", "F32", shape, slot.master.data,
                 valid * 4);
      shards.add(spec.name + ".exp_avg", "F32", shape, slot.expAvg.data,
                 valid * 4);
      shards.add(spec.name + ".exp_avg_sq", "F32", shape, slot.expAvgSq.data,
                 valid * 4);
      shards.setMetadata(shardOffsetKey(spec.name),
                         std::to_string(slot.shardOffset));
      shards.setMetadata(shardElementsKey(spec.name), std::to_string(valid));
      continue;
    }
    uint64_t bytes = numel * 4;
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
  if (zero) {
    shards.setMetadata("ratrain.step", std::to_string(state.step));
    shards.setMetadata("ratrain.dp", std::to_string(state.dp));
    shards.setMetadata("ratrain.dp_index", std::to_string(dpIndex));
    if (llvm::Error error = shards.write(
            join(directory, zeroShardName(modelFile, dpIndex, state.dp))))
      return error;
  }
  if (dpIndex != 0)
    return llvm::Error::success();
  params.setMetadata("format", "pt");
  params.setMetadata("ratrain.stage", std::to_string(stage));
  if (llvm::Error error = params.write(join(directory, modelFile)))
    return error;
  if (zero)
    return llvm::Error::success();
  moments.setMetadata("format", "pt");
  moments.setMetadata("ratrain.step", std::to_string(state.step));
  moments.setMetadata("ratrain.has_moments", haveMoments ? "1" : "0");
  return moments.write(join(directory, optimizerShardName(stage, state.pp)));
}

llvm::Error ratrain::rt::writeCheckpointIndex(llvm::StringRef directory,
                                              const ModelConfig &model,
                                              const StagePartition &partition,
                                              const TrainerState &state,
                                              bool zero) {
  llvm::json::Object weights, moments;
  llvm::json::Array zeroShards;
  for (int stage = 0; zero && stage < partition.numStages(); ++stage)
    for (int d = 0; d < state.dp; ++d)
      zeroShards.push_back(
          zeroShardName(modelShardName(stage, state.pp), d, state.dp));
  uint64_t totalBytes = 0;
  for (const ParamSpec &spec : modelParameters(model)) {
    int stage = partition.stageOfLayer(spec.layer);
    weights[spec.name] = modelShardName(stage, state.pp);
    if (!zero) {
      moments[spec.name + ".exp_avg"] = optimizerShardName(stage, state.pp);
      moments[spec.name + ".exp_avg_sq"] = optimizerShardName(stage, state.pp);
    }
    totalBytes += spec.numElements() * 4;
  }
  // With ZeRO the model file holds the 16-bit views, whose size rank 0 does
  // not know for other stages: total_size is left out.
  llvm::json::Object modelMetadata, optimizerMetadata;
  if (!zero) {
    modelMetadata["total_size"] = totalBytes;
    optimizerMetadata["total_size"] = 2 * totalBytes;
  } else {
    optimizerMetadata["zero_dp"] = state.dp;
  }
  llvm::json::Object optimizerObject{{"metadata", std::move(optimizerMetadata)},
                                     {"weight_map", std::move(moments)}};
  if (zero)
    optimizerObject["zero_shards"] = std::move(zeroShards);
  llvm::json::Value modelIndex =
      llvm::json::Object{{"metadata", std::move(modelMetadata)},
                         {"weight_map", std::move(weights)}};
  llvm::json::Value optimizerIndex = std::move(optimizerObject);
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
                         {"zero", zero},
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
ratrain::rt::parseTrainerState(const llvm::json::Value &value,
                               llvm::StringRef path) {
  const llvm::json::Object *root = value.getAsObject();
  auto fail = [&](const llvm::Twine &message) {
    return makeError(path + ": " + message);
  };
  if (!root || root->getString("format") != "ratrain-checkpoint-1")
    return fail("not a RATrain trainer state (format "
                "'ratrain-checkpoint-1' expected)");
  auto step = root->getInteger("step");
  auto samples = root->getInteger("data_samples");
  auto seed = root->getString("seed");
  auto pp = root->getInteger("pp");
  auto dp = root->getInteger("dp");
  if (!step || !samples || !seed || !pp || !dp)
    return fail("missing or invalid step, data_samples, seed, pp or dp");
  for (auto [name, count] :
       {std::pair{"step", *step}, std::pair{"data_samples", *samples}})
    if (count < 0)
      return fail(
          llvm::formatv("{0} must not be negative, got {1}", name, count));
  // pp x dp ranks, each a positive count that MPI can hold.
  for (auto [name, count] : {std::pair{"pp", *pp}, std::pair{"dp", *dp}})
    if (count < 1 || count > limits::kMaxClusters)
      return fail(llvm::formatv("{0} {1} is not between 1 and the limit of "
                                "{2} clusters",
                                name, count, limits::kMaxClusters));
  if (*pp * *dp > limits::kMaxClusters)
    return fail(llvm::formatv("pp {0} x dp {1} exceeds the limit of {2} "
                              "clusters",
                              *pp, *dp, limits::kMaxClusters));
  TrainerState state;
  state.step = uint64_t(*step);
  state.data.samples = uint64_t(*samples);
  if (seed->getAsInteger(10, state.seed))
    return fail("seed is not an unsigned integer");
  state.pp = int(*pp);
  state.dp = int(*dp);
  return state;
}

llvm::Expected<TrainerState>
ratrain::rt::readTrainerState(llvm::StringRef directory,
                              const ModelConfig &model) {
  std::string path = join(directory, kTrainerState);
  auto value = readJSON(path);
  if (!value)
    return value.takeError();
  llvm::Expected<TrainerState> state = parseTrainerState(*value, path);
  if (!state)
    return state.takeError();
  llvm::json::Object *root = value->getAsObject();
  auto fail = [&](const llvm::Twine &message) {
    return makeError(path + ": " + message);
  };
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
  return *state;
}

namespace {
/// Reads a checkpoint's tensors whatever layout saved them: every pipeline
/// partition (tensors are found through the indexes), ZeRO or not, any
/// data-parallel size (a ZeRO checkpoint's ranges of a tensor are assembled
/// from every data rank's shard file). So a checkpoint resumes into another
/// layout (docs/runtime.md, "Checkpoints").
class CheckpointReader {
public:
  static llvm::Expected<CheckpointReader> open(llvm::StringRef directory,
                                               bool needMoments) {
    CheckpointReader reader;
    reader.directory = directory.str();
    if (llvm::Error error = reader.loadIndex(kModelIndex, reader.weightMap))
      return std::move(error);
    std::string optimizerIndex = join(directory, kOptimizerIndex);
    if (needMoments || llvm::sys::fs::exists(optimizerIndex))
      if (llvm::Error error =
              reader.loadIndex(kOptimizerIndex, reader.momentMap))
        return std::move(error);
    return std::move(reader);
  }

  /// Elements [first, first + count) of tensor `name`'s `role` (master,
  /// exp_avg, exp_avg_sq) of `numel` elements, as fp32.
  llvm::Error readRange(const std::string &name, llvm::StringRef role,
                        llvm::ArrayRef<int64_t> shape, uint64_t first,
                        uint64_t count, float *out) {
    if (count == 0)
      return llvm::Error::success();
    uint64_t numel = 1;
    for (int64_t d : shape)
      numel *= uint64_t(d);
    if (!zero) {
      // Full tensors: the master in the model file, the moments in the
      // optimizer file.
      bool master = role == "master";
      std::string tensor = master ? name : name + "." + role.str();
      std::map<std::string, std::string> &map = master ? weightMap : momentMap;
      auto it = map.find(tensor);
      if (it == map.end())
        return makeError(llvm::formatv(
            "{0}: tensor '{1}' is not in the checkpoint",
            join(directory, master ? kModelIndex : kOptimizerIndex), tensor));
      auto file = openFile(it->second);
      if (!file)
        return file.takeError();
      if (first == 0 && count == numel)
        return (*file)->read(tensor, "F32", shape, out, numel * 4);
      std::vector<float> full(numel);
      if (llvm::Error error =
              (*file)->read(tensor, "F32", shape, full.data(), numel * 4))
        return error;
      std::memcpy(out, full.data() + first, count * 4);
      return llvm::Error::success();
    }
    // ZeRO: the pieces of every data rank's range that overlap.
    if (llvm::Error error = loadShardRanges())
      return error;
    std::string tensor = name + "." + role.str();
    uint64_t covered = 0;
    for (const ShardPiece &piece : pieces[tensor]) {
      uint64_t lo = std::max(first, piece.offset);
      uint64_t hi = std::min(first + count, piece.offset + piece.count);
      if (lo >= hi)
        continue;
      std::vector<float> values(piece.count);
      std::vector<int64_t> pieceShape{int64_t(piece.count)};
      if (llvm::Error error = piece.file->read(tensor, "F32", pieceShape,
                                               values.data(), piece.count * 4))
        return error;
      std::memcpy(out + (lo - first), values.data() + (lo - piece.offset),
                  (hi - lo) * 4);
      covered += hi - lo;
    }
    if (covered != count)
      return makeError(llvm::formatv(
          "{0}: the ZeRO shards hold {1} of elements [{2}, {3}) of '{4}'",
          directory, covered, first, first + count, tensor));
    return llvm::Error::success();
  }

  /// The whole view of `name` in `type`: the model file's view (a ZeRO
  /// checkpoint's, in its 16-bit type) or its FP32 master, converted.
  llvm::Error readView(const std::string &name, llvm::ArrayRef<int64_t> shape,
                       ElemType type, const Buffer &out) {
    auto it = weightMap.find(name);
    if (it == weightMap.end())
      return makeError(llvm::formatv("{0}: tensor '{1}' is not in the "
                                     "checkpoint",
                                     join(directory, kModelIndex), name));
    auto file = openFile(it->second);
    if (!file)
      return file.takeError();
    const TensorInfo *info = (*file)->find(name);
    if (!info)
      return makeError(llvm::formatv("{0}: tensor '{1}' named by {2} is "
                                     "missing",
                                     (*file)->path(), name, kModelIndex));
    uint64_t numel = info->numElements();
    if (out.bytes != numel * getElemBytes(type))
      return makeError(llvm::formatv("checkpoint load: '{0}' view buffer "
                                     "holds {1} bytes, {2} {3} needs {4}",
                                     name, out.bytes, stringifyElemType(type),
                                     formatShape(shape),
                                     numel * getElemBytes(type)));
    if (info->dtype == safetensorsDType(type))
      return (*file)->read(name, info->dtype, shape, out.data, out.bytes);
    std::vector<char> raw(info->end - info->begin);
    if (llvm::Error error =
            (*file)->read(name, info->dtype, shape, raw.data(), raw.size()))
      return error;
    auto value = [&](uint64_t i) -> float {
      if (info->dtype == "F32") {
        float f;
        std::memcpy(&f, raw.data() + i * 4, 4);
        return f;
      }
      uint16_t bits;
      std::memcpy(&bits, raw.data() + i * 2, 2);
      return info->dtype == "BF16" ? bf16ToFloat(bits) : f16ToFloat(bits);
    };
    for (uint64_t i = 0; i < numel; ++i) {
      float f = value(i);
      if (type == ElemType::F32)
        out.as<float>()[i] = f;
      else
        out.as<uint16_t>()[i] =
            type == ElemType::BF16 ? floatToBF16(f) : floatToF16(f);
    }
    return llvm::Error::success();
  }

  bool isZero() const { return zero; }

private:
  struct ShardPiece {
    SafetensorsFile *file;
    uint64_t offset, count;
  };

  llvm::Error loadIndex(const char *indexName,
                        std::map<std::string, std::string> &map) {
    std::string path = join(directory, indexName);
    auto value = readJSON(path);
    if (!value)
      return value.takeError();
    llvm::json::Object *root = value->getAsObject();
    llvm::json::Object *weights =
        root ? root->getObject("weight_map") : nullptr;
    if (!weights)
      return makeError(path + ": missing weight_map");
    if (llvm::json::Array *files = root->getArray("zero_shards")) {
      zero = true;
      for (const llvm::json::Value &entry : *files) {
        std::optional<llvm::StringRef> name = entry.getAsString();
        if (!name || name->contains('/'))
          return makeError(path + ": invalid zero shard file name");
        shardFiles.push_back(name->str());
      }
    }
    for (auto &[key, file] : *weights) {
      auto name = file.getAsString();
      if (!name || name->contains('/'))
        return makeError(path + ": invalid file for '" + key.str() + "'");
      map[key.str()] = name->str();
    }
    return llvm::Error::success();
  }

  llvm::Expected<SafetensorsFile *> openFile(const std::string &fileName) {
    std::unique_ptr<SafetensorsFile> &file = files[fileName];
    if (!file) {
      auto opened = SafetensorsFile::open(join(directory, fileName));
      if (!opened)
        return opened.takeError();
      file = std::make_unique<SafetensorsFile>(std::move(*opened));
    }
    return file.get();
  }

  /// Every data rank's recorded range of every tensor (once).
  llvm::Error loadShardRanges() {
    if (rangesLoaded)
      return llvm::Error::success();
    rangesLoaded = true;
    for (const std::string &fileName : shardFiles) {
      auto file = openFile(fileName);
      if (!file)
        return file.takeError();
      const std::map<std::string, std::string> &meta = (*file)->metadata();
      for (const TensorInfo &info : (*file)->tensors()) {
        llvm::StringRef tensor = info.name;
        for (llvm::StringRef role : {".master", ".exp_avg_sq", ".exp_avg"}) {
          if (!tensor.ends_with(role))
            continue;
          llvm::StringRef param = tensor.drop_back(role.size());
          auto offset = meta.find(shardOffsetKey(param));
          uint64_t first = 0;
          if (offset == meta.end() ||
              llvm::StringRef(offset->second).getAsInteger(10, first))
            return makeError(llvm::formatv("{0}: tensor '{1}' has no shard "
                                           "offset (metadata {2})",
                                           (*file)->path(), info.name,
                                           shardOffsetKey(param)));
          pieces[info.name].push_back({*file, first, info.numElements()});
          break;
        }
      }
    }
    return llvm::Error::success();
  }

  std::string directory;
  std::map<std::string, std::string> weightMap, momentMap;
  bool zero = false;
  std::vector<std::string> shardFiles;
  bool rangesLoaded = false;
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, std::vector<ShardPiece>> pieces;
};
} // namespace

llvm::Error
ratrain::rt::readCheckpointMasters(llvm::StringRef directory,
                                   llvm::ArrayRef<ParamSpec> params,
                                   std::vector<std::vector<float>> &out) {
  auto reader = CheckpointReader::open(directory, /*needMoments=*/false);
  if (!reader)
    return reader.takeError();
  out.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    uint64_t numel = params[i].numElements();
    out[i].assign(numel, 0.0f);
    if (llvm::Error error = reader->readRange(
            params[i].name, "master", params[i].shape, 0, numel, out[i].data()))
      return error;
  }
  return llvm::Error::success();
}

llvm::Error ratrain::rt::loadSlots(llvm::StringRef directory,
                                   llvm::ArrayRef<ParamSlot> slots, int dpIndex,
                                   int dp) {
  (void)dpIndex;
  (void)dp;
  bool needMoments = false;
  for (const ParamSlot &slot : slots)
    needMoments |= slot.sharded() || slot.expAvg.bytes || slot.expAvgSq.bytes;
  auto reader = CheckpointReader::open(directory, needMoments);
  if (!reader)
    return reader.takeError();
  for (const ParamSlot &slot : slots) {
    uint64_t numel = 1;
    for (int64_t d : slot.shape)
      numel *= uint64_t(d);
    if (!slot.sharded()) {
      if (slot.master.bytes != numel * 4)
        return makeError(llvm::formatv("checkpoint load: '{0}' master buffer "
                                       "holds {1} bytes, fp32 {2} needs {3}",
                                       slot.name, slot.master.bytes,
                                       formatShape(slot.shape), numel * 4));
      if (llvm::Error error =
              reader->readRange(slot.name, "master", slot.shape, 0, numel,
                                slot.master.as<float>()))
        return error;
      if (slot.expAvg.bytes || slot.expAvgSq.bytes) {
        if (slot.expAvg.bytes != numel * 4 || slot.expAvgSq.bytes != numel * 4)
          return makeError(llvm::formatv("checkpoint load: '{0}' Adam moment "
                                         "buffers hold {1} and {2} bytes, "
                                         "expected {3}",
                                         slot.name, slot.expAvg.bytes,
                                         slot.expAvgSq.bytes, numel * 4));
        if (llvm::Error error =
                reader->readRange(slot.name, "exp_avg", slot.shape, 0, numel,
                                  slot.expAvg.as<float>()))
          return error;
        if (llvm::Error error =
                reader->readRange(slot.name, "exp_avg_sq", slot.shape, 0, numel,
                                  slot.expAvgSq.as<float>()))
          return error;
      }
      continue;
    }
    // ZeRO: this rank's range of the FP32 states, the whole view.
    if (slot.view.bytes)
      if (llvm::Error error =
              reader->readView(slot.name, slot.shape, slot.viewType, slot.view))
        return error;
    uint64_t valid = validShardElements(slot, numel);
    if (slot.master.bytes < valid * 4 || slot.expAvg.bytes < valid * 4 ||
        slot.expAvgSq.bytes < valid * 4)
      return makeError(llvm::formatv("checkpoint load: '{0}' shard buffers "
                                     "are smaller than {1} fp32 elements",
                                     slot.name, valid));
    const Buffer *targets[3] = {&slot.master, &slot.expAvg, &slot.expAvgSq};
    const char *roles[3] = {"master", "exp_avg", "exp_avg_sq"};
    for (int i = 0; i < 3; ++i) {
      if (llvm::Error error = reader->readRange(slot.name, roles[i], slot.shape,
                                                slot.shardOffset, valid,
                                                targets[i]->as<float>()))
        return error;
      // Padding past the tensor's end reads as zeros.
      if (targets[i]->bytes > valid * 4)
        std::memset(targets[i]->data + valid * 4, 0,
                    targets[i]->bytes - valid * 4);
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
  auto stateJSON = readJSON(statePath);
  if (!stateJSON)
    return stateJSON.takeError();
  // The same checks as resume (readTrainerState), less the model shape.
  llvm::Expected<TrainerState> state = parseTrainerState(*stateJSON, statePath);
  if (!state)
    return state.takeError();
  summary.step = state->step;
  summary.dataSamples = state->data.samples;
  summary.pp = state->pp;
  summary.dp = state->dp;

  std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
  /// ZeRO: per tensor, the (offset, elements) ranges the shard files record,
  /// and the file of each; the tensors' sizes from the model files.
  struct ShardRange {
    uint64_t offset, elements;
    std::string file;
  };
  std::map<std::string, std::vector<ShardRange>> shardRanges;
  std::map<std::string, uint64_t> modelElements;
  bool zero = false;
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
    if (llvm::json::Array *zeroShards = object->getArray("zero_shards")) {
      zero = true;
      for (const llvm::json::Value &entry : *zeroShards) {
        std::optional<llvm::StringRef> file = entry.getAsString();
        if (!file || file->contains('/'))
          return makeError(indexPath + ": invalid zero shard file name");
        auto opened = SafetensorsFile::open(join(*directory, *file));
        if (!opened)
          return opened.takeError();
        for (const TensorInfo &info : opened->tensors()) {
          llvm::StringRef tensor = info.name;
          if (tensor.consume_back(".master")) {
            const std::map<std::string, std::string> &meta = opened->metadata();
            auto offset = meta.find(shardOffsetKey(tensor));
            auto elements = meta.find(shardElementsKey(tensor));
            uint64_t first = 0, count = 0;
            if (offset == meta.end() || elements == meta.end() ||
                llvm::StringRef(offset->second).getAsInteger(10, first) ||
                llvm::StringRef(elements->second).getAsInteger(10, count) ||
                count != info.numElements())
              return makeError(llvm::formatv(
                  "{0}: tensor '{1}' has no valid shard range (metadata {2} "
                  "and {3}, matching its {4} elements)",
                  opened->path(), info.name, shardOffsetKey(tensor),
                  shardElementsKey(tensor), info.numElements()));
            shardRanges[tensor.str()].push_back({first, count, opened->path()});
          }
          std::vector<char> scratch(info.end - info.begin);
          if (llvm::Error error =
                  opened->read(info.name, info.dtype, info.shape,
                               scratch.data(), scratch.size()))
            return error;
          ++summary.tensors;
          summary.bytes += scratch.size();
        }
        ++summary.files;
      }
    }
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
      if (llvm::StringRef(indexName) == kModelIndex)
        modelElements[key.str()] = info->numElements();
      std::vector<char> scratch(info->end - info->begin);
      if (llvm::Error error = shard->read(info->name, info->dtype, info->shape,
                                          scratch.data(), scratch.size()))
        return error;
      ++summary.tensors;
      summary.bytes += scratch.size();
    }
  }
  summary.files += files.size();
  if (!zero)
    return summary;
  // Every tensor's ranges, over all data ranks, tile it exactly.
  for (auto &[name, numel] : modelElements) {
    std::vector<ShardRange> &ranges = shardRanges[name];
    std::sort(ranges.begin(), ranges.end(),
              [](const ShardRange &a, const ShardRange &b) {
                return a.offset < b.offset;
              });
    uint64_t covered = 0;
    for (const ShardRange &range : ranges) {
      if (range.elements == 0)
        continue;
      if (range.offset != covered)
        return makeError(llvm::formatv(
            "{0}: the ZeRO shards of tensor '{1}' ({2} elements) {3} at "
            "element {4}: {5} records elements [{6}, {7})",
            *directory, name, numel,
            range.offset > covered ? "leave a hole" : "overlap", covered,
            range.file, range.offset, range.offset + range.elements));
      covered += range.elements;
    }
    if (covered != numel)
      return makeError(llvm::formatv(
          "{0}: the ZeRO shards of tensor '{1}' cover {2} of its {3} "
          "elements",
          *directory, name, covered, numel));
  }
  for (auto &[name, ranges] : shardRanges)
    if (!modelElements.count(name))
      return makeError(llvm::formatv("{0}: {1} holds a ZeRO shard of '{2}', "
                                     "which the model index does not name",
                                     *directory, ranges.front().file, name));
  return summary;
}
