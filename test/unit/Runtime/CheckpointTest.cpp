//===- CheckpointTest.cpp - HF names, sharded save/load, validation -------===//

#include "TestUtil.h"

#include "ratrain/Model/HFConfig.h"
#include "ratrain/runtime/Checkpoint.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Safetensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cstring>
#include <fstream>
#include <memory>

using namespace ratrain;
using namespace ratrain::rt;
using namespace ratrain::rt::test;

namespace {
ModelConfig tinyLlama() {
  auto config = loadHFConfig(RATRAIN_TINY_LLAMA);
  EXPECT_TRUE(bool(config)) << llvm::toString(config.takeError());
  return *config;
}

/// The parameters of one stage in an arena, filled with values derived from
/// `salt`, with Adam moments.
struct StageState {
  std::unique_ptr<Arena> arena;
  std::vector<ParamSlot> slots;

  StageState(const ModelConfig &model, const StagePartition &partition,
             int stage, float salt) {
    std::vector<ParamSpec> specs = stageParameters(model, partition, stage);
    uint64_t bytes = 0;
    for (const ParamSpec &spec : specs)
      bytes += 3 * spec.numElements() * 4;
    arena = std::move(*Arena::create(MemorySpace::DDR, bytes));
    uint64_t offset = 0;
    for (const ParamSpec &spec : specs) {
      uint64_t size = spec.numElements() * 4;
      ParamSlot slot{spec.name, spec.shape, arena->buffer(offset, size),
                     arena->buffer(offset + size, size),
                     arena->buffer(offset + 2 * size, size)};
      offset += 3 * size;
      for (uint64_t i = 0; i < spec.numElements(); ++i) {
        slot.master.as<float>()[i] = salt + float(i % 97) * 0.25f;
        slot.expAvg.as<float>()[i] = salt - float(i % 13);
        slot.expAvgSq.as<float>()[i] = salt * float(i % 7);
      }
      slots.push_back(slot);
    }
  }
  /// Same layout, zero-filled.
  StageState(const StageState &other, int) {
    uint64_t bytes = other.arena->capacity();
    arena = std::move(*Arena::create(MemorySpace::DDR, bytes));
    for (const ParamSlot &slot : other.slots)
      slots.push_back(
          {slot.name, slot.shape,
           arena->buffer(slot.master.offset, slot.master.bytes),
           arena->buffer(slot.expAvg.offset, slot.expAvg.bytes),
           arena->buffer(slot.expAvgSq.offset, slot.expAvgSq.bytes)});
  }
  bool sameAs(const StageState &other) const {
    return std::memcmp(arena->base(), other.arena->base(), arena->capacity()) ==
           0;
  }
};

/// Saves a pp-stage checkpoint of step `step` under `root` the way the
/// runtime does (staging directory, shards, index, commit).
llvm::Error save(const std::string &root, const ModelConfig &model,
                 const StagePartition &partition,
                 const std::vector<StageState> &stages, TrainerState state) {
  std::string staging = stagingDirectory(root, state.step);
  llvm::sys::fs::create_directories(staging);
  for (int s = 0; s < partition.numStages(); ++s)
    if (llvm::Error error = writeStageShards(staging, model, partition, s,
                                             stages[s].slots, state))
      return error;
  if (llvm::Error error =
          writeCheckpointIndex(staging, model, partition, state))
    return error;
  return commitCheckpoint(root, staging, state.step);
}

std::string readRaw(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}
} // namespace

TEST(Checkpoint, HuggingFaceNamesAndShapes) {
  ModelConfig model = tinyLlama();
  std::vector<ParamSpec> params = modelParameters(model);
  // Embedding, 9 tensors per layer, final norm, LM head.
  ASSERT_EQ(params.size(), 1u + 9 * 4 + 2);
  EXPECT_EQ(params[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(params[0].shape, (std::vector<int64_t>{256, 256}));
  // Within a layer, the order of the lowering's flat buffers.
  EXPECT_EQ(params[1].name, "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(params[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(params[3].name, "model.layers.0.self_attn.k_proj.weight");
  // 4 KV heads of 32: k/v project 256 -> 128.
  EXPECT_EQ(params[3].shape, (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(params[6].name, "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(params[7].name, "model.layers.0.mlp.gate_proj.weight");
  EXPECT_EQ(params[7].shape, (std::vector<int64_t>{688, 256}));
  EXPECT_EQ(params[9].name, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(params[9].shape, (std::vector<int64_t>{256, 688}));
  EXPECT_EQ(params[params.size() - 2].name, "model.norm.weight");
  EXPECT_EQ(params.back().name, "lm_head.weight");
  uint64_t total = 0;
  for (const ParamSpec &p : params)
    total += p.numElements();
  EXPECT_EQ(int64_t(total), model.totalParams());

  model.tieEmbeddings = true;
  EXPECT_EQ(modelParameters(model).back().name, "model.norm.weight");
  model.tieEmbeddings = false;
  model.family = ModelFamily::Qwen2;
  model.qkvBias = true;
  std::vector<ParamSpec> qwen = modelParameters(model);
  EXPECT_EQ(qwen[5].name, "model.layers.0.self_attn.q_proj.bias");
  uint64_t qwenTotal = 0;
  for (const ParamSpec &p : qwen)
    qwenTotal += p.numElements();
  EXPECT_EQ(int64_t(qwenTotal), model.totalParams());
}

TEST(Checkpoint, StagePartition) {
  StagePartition even = StagePartition::even(4, 2);
  EXPECT_EQ(even.firstLayer, (std::vector<int64_t>{0, 2, 4}));
  StagePartition uneven = StagePartition::even(5, 3);
  EXPECT_EQ(uneven.firstLayer, (std::vector<int64_t>{0, 2, 4, 5}));
  EXPECT_EQ(uneven.stageOfLayer(-1), 0);
  EXPECT_EQ(uneven.stageOfLayer(3), 1);
  EXPECT_EQ(uneven.stageOfLayer(-2), 2);
  EXPECT_EQ(errorText(uneven.validate(5)), "");
  EXPECT_NE(errorText(uneven.validate(6)), "");
  ModelConfig model = tinyLlama();
  std::vector<ParamSpec> first = stageParameters(model, even, 0);
  std::vector<ParamSpec> last = stageParameters(model, even, 1);
  EXPECT_EQ(first.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(first.back().name, "model.layers.1.mlp.down_proj.weight");
  EXPECT_EQ(last.front().name, "model.layers.2.input_layernorm.weight");
  EXPECT_EQ(last.back().name, "lm_head.weight");
  EXPECT_EQ(first.size() + last.size(), modelParameters(model).size());
}

TEST(Checkpoint, StagePartitionWithVirtualStages) {
  // ZBV on 2 ranks over 4 decoder layers: virtual stages 0..3 of one layer
  // each on ranks 0, 1, 1, 0; rank 0 holds the embedding and the head.
  StagePartition v;
  v.firstLayer = {0, 1, 2, 3, 4};
  v.chunkRank = {0, 1, 1, 0};
  EXPECT_EQ(errorText(v.validate(4)), "");
  EXPECT_EQ(v.numStages(), 2);
  EXPECT_EQ(v.stageOfLayer(-1), 0);
  EXPECT_EQ(v.stageOfLayer(0), 0);
  EXPECT_EQ(v.stageOfLayer(1), 1);
  EXPECT_EQ(v.stageOfLayer(2), 1);
  EXPECT_EQ(v.stageOfLayer(3), 0);
  EXPECT_EQ(v.stageOfLayer(-2), 0);
  ModelConfig model = tinyLlama();
  std::vector<ParamSpec> rank0 = stageParameters(model, v, 0);
  std::vector<ParamSpec> rank1 = stageParameters(model, v, 1);
  EXPECT_EQ(rank0.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(rank0.back().name, "lm_head.weight");
  EXPECT_EQ(rank1.front().name, "model.layers.1.input_layernorm.weight");
  EXPECT_EQ(rank0.size() + rank1.size(), modelParameters(model).size());
  // Ranks must be given for every virtual stage and every rank used.
  StagePartition short_ = v;
  short_.chunkRank = {0, 1, 1};
  EXPECT_NE(errorText(short_.validate(4)), "");
  StagePartition gap = v;
  gap.chunkRank = {0, 2, 2, 0};
  EXPECT_NE(errorText(gap.validate(4)), "");
}

TEST(Checkpoint, SaveAndLoadRoundTripBitExactly) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  StagePartition partition = StagePartition::even(model.numLayers, 2);
  std::vector<StageState> stages;
  stages.emplace_back(model, partition, 0, 1.5f);
  stages.emplace_back(model, partition, 1, -2.0f);
  TrainerState state{/*step=*/42, {/*samples=*/1234}, /*seed=*/99, 2, 2};
  std::string root = dir.path("ckpt");
  ASSERT_EQ(errorText(save(root, model, partition, stages, state)), "");
  EXPECT_EQ(readRaw(root + "/latest"), "step-00000042\n");
  EXPECT_EQ(listDirectory(root),
            (std::vector<std::string>{"latest", "step-00000042"}));
  EXPECT_EQ(listDirectory(root + "/step-00000042"),
            (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors",
                                      "model.safetensors.index.json",
                                      "optimizer-00001-of-00002.safetensors",
                                      "optimizer-00002-of-00002.safetensors",
                                      "optimizer.safetensors.index.json",
                                      "trainer_state.json"}));
  std::string index =
      readRaw(root + "/step-00000042/model.safetensors.index.json");
  EXPECT_NE(
      index.find("\"lm_head.weight\": \"model-00002-of-00002.safetensors\""),
      std::string::npos)
      << index;

  auto resolved = resolveCheckpoint(root);
  ASSERT_TRUE(bool(resolved)) << llvm::toString(resolved.takeError());
  auto loadedState = readTrainerState(*resolved, model);
  ASSERT_TRUE(bool(loadedState)) << llvm::toString(loadedState.takeError());
  EXPECT_EQ(loadedState->step, 42u);
  EXPECT_EQ(loadedState->data.samples, 1234u);
  EXPECT_EQ(loadedState->seed, 99u);
  for (int s = 0; s < 2; ++s) {
    StageState fresh(stages[s], 0);
    EXPECT_FALSE(fresh.sameAs(stages[s]));
    ASSERT_EQ(errorText(loadSlots(*resolved, fresh.slots)), "");
    EXPECT_TRUE(fresh.sameAs(stages[s])) << "stage " << s;
  }
  // A different partition (pp = 4) reads the same checkpoint by name.
  StagePartition four = StagePartition::even(model.numLayers, 4);
  StageState stage2(model, four, 2, 0.0f);
  StageState zero(stage2, 0);
  ASSERT_EQ(errorText(loadSlots(*resolved, zero.slots)), "");
  const float *q = zero.slots[1].master.as<float>();
  EXPECT_EQ(zero.slots[1].name, "model.layers.2.self_attn.q_proj.weight");
  EXPECT_EQ(q[1], -2.0f + 0.25f); // Stage 1 of the pp = 2 save, salt -2.
}

TEST(Checkpoint, WrongModelShapeIsReported) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  StagePartition partition = StagePartition::even(model.numLayers, 1);
  std::vector<StageState> stages;
  stages.emplace_back(model, partition, 0, 1.0f);
  std::string root = dir.path("ckpt");
  ASSERT_EQ(errorText(save(root, model, partition, stages, {3, {0}, 1, 1, 1})),
            "");
  std::string step = root + "/step-00000003";
  ModelConfig wider = model;
  wider.hidden = 512;
  EXPECT_EQ(errorText(readTrainerState(step, wider).takeError()),
            step + "/trainer_state.json: the checkpoint was saved from a model "
                   "with hidden_size = 256, this model has 512");
  // Tensor-level check, e.g. a hand-edited trainer state.
  StageState other(wider, partition, 0, 0.0f);
  std::string message = errorText(loadSlots(step, other.slots));
  EXPECT_EQ(message, step + "/model-00001-of-00001.safetensors: tensor "
                            "'model.embed_tokens.weight' has shape [256, 256], "
                            "the model expects [256, 512]");
}

/// Resume (readTrainerState) and ratrain-ckpt verify (verifyCheckpoint) check
/// trainer_state.json with the same function: for each bad value both fail
/// with the same message (verify used to say ok to pp 0, dp -3, step -1 and
/// pp 2^31).
TEST(Checkpoint, VerifyAndResumeRejectTheSameTrainerStates) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  StagePartition partition = StagePartition::even(model.numLayers, 1);
  std::vector<StageState> stages;
  stages.emplace_back(model, partition, 0, 1.0f);
  std::string root = dir.path("ckpt");
  ASSERT_EQ(errorText(save(root, model, partition, stages, {3, {0}, 1, 1, 1})),
            "");
  std::string step = root + "/step-00000003";
  std::string statePath = step + "/trainer_state.json";
  auto original = llvm::MemoryBuffer::getFile(statePath);
  ASSERT_TRUE(bool(original));
  std::string text = (*original)->getBuffer().str();
  struct Case {
    const char *from, *to, *message;
  } cases[] = {
      {"\"pp\": 1", "\"pp\": 0",
       "pp 0 is not between 1 and the limit of 16777216 clusters"},
      {"\"dp\": 1", "\"dp\": -3",
       "dp -3 is not between 1 and the limit of 16777216 clusters"},
      {"\"step\": 3", "\"step\": -1", "step must not be negative, got -1"},
      {"\"pp\": 1", "\"pp\": 2147483648",
       "pp 2147483648 is not between 1 and the limit of 16777216 clusters"},
  };
  for (const Case &c : cases) {
    size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from << " in " << text;
    std::string edited = text;
    edited.replace(at, std::strlen(c.from), c.to);
    ASSERT_EQ(errorText(writeFileAtomically(statePath, edited)), "");
    std::string expected = statePath + ": " + c.message;
    EXPECT_EQ(errorText(readTrainerState(step, model).takeError()), expected);
    EXPECT_EQ(errorText(verifyCheckpoint(step).takeError()), expected);
  }
  ASSERT_EQ(errorText(writeFileAtomically(statePath, text)), "");
  EXPECT_TRUE(bool(readTrainerState(step, model)));
  EXPECT_TRUE(bool(verifyCheckpoint(step)));
}

TEST(Checkpoint, CorruptAndMissingFilesAreReported) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  StagePartition partition = StagePartition::even(model.numLayers, 2);
  std::vector<StageState> stages;
  stages.emplace_back(model, partition, 0, 1.0f);
  stages.emplace_back(model, partition, 1, 2.0f);
  std::string root = dir.path("ckpt");
  ASSERT_EQ(errorText(save(root, model, partition, stages, {5, {0}, 1, 2, 1})),
            "");
  std::string step = root + "/step-00000005";
  std::string shard = step + "/model-00002-of-00002.safetensors";
  std::string bytes = readRaw(shard);
  // Truncated shard.
  std::ofstream(shard, std::ios::binary | std::ios::trunc)
      << bytes.substr(0, bytes.size() - 100);
  StageState fresh(stages[1], 0);
  std::string message = errorText(loadSlots(step, fresh.slots));
  EXPECT_NE(message.find(shard + ": corrupt safetensors file: tensor "
                                 "'lm_head.weight' ends at data offset"),
            std::string::npos)
      << message;
  // Flipped data byte.
  std::string flipped = bytes;
  flipped[flipped.size() - 1000] ^= 1;
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << flipped;
  message = errorText(loadSlots(step, fresh.slots));
  EXPECT_NE(message.find("is corrupt: its data checksum"), std::string::npos)
      << message;
  // Missing shard.
  llvm::sys::fs::remove(shard);
  message = errorText(loadSlots(step, fresh.slots));
  EXPECT_NE(message.find(shard + ": cannot read"), std::string::npos)
      << message;
  // Missing directory, corrupt trainer state.
  EXPECT_NE(errorText(resolveCheckpoint(dir.path("nope")).takeError())
                .find("checkpoint directory does not exist"),
            std::string::npos);
  std::ofstream(step + "/trainer_state.json", std::ios::trunc) << "{\"step\":";
  EXPECT_NE(errorText(readTrainerState(step, model).takeError())
                .find("trainer_state.json: corrupt JSON"),
            std::string::npos);
}

TEST(Checkpoint, FailedSaveLeavesThePreviousCheckpointIntact) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  StagePartition partition = StagePartition::even(model.numLayers, 2);
  std::vector<StageState> stages;
  stages.emplace_back(model, partition, 0, 1.0f);
  stages.emplace_back(model, partition, 1, 2.0f);
  std::string root = dir.path("ckpt");
  ASSERT_EQ(errorText(save(root, model, partition, stages, {1, {0}, 1, 2, 1})),
            "");
  std::string shard = root + "/step-00000001/model-00001-of-00002.safetensors";
  std::string before = readRaw(shard);

  // Step 2 fails half-way through a shard (a full disk) ...
  AtomicFile::setWriteFailureAfterForTesting(1 << 20);
  std::string message =
      errorText(save(root, model, partition, stages, {2, {0}, 1, 2, 1}));
  AtomicFile::setWriteFailureAfterForTesting(UINT64_MAX);
  EXPECT_NE(message.find("write failed after 1048576 bytes"), std::string::npos)
      << message;
  // ... so `latest` and step 1 are untouched and step 2 does not exist.
  EXPECT_EQ(readRaw(root + "/latest"), "step-00000001\n");
  EXPECT_EQ(readRaw(shard), before);
  EXPECT_FALSE(llvm::sys::fs::exists(root + "/step-00000002"));
  // The staging directory holds no partial file either.
  for (const std::string &name : listDirectory(stagingDirectory(root, 2)))
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;

  // Re-saving the same step replaces it whole.
  stages[0] = StageState(model, partition, 0, 7.0f);
  ASSERT_EQ(errorText(save(root, model, partition, stages, {1, {0}, 1, 2, 1})),
            "");
  EXPECT_NE(readRaw(shard), before);
  EXPECT_EQ(listDirectory(root),
            (std::vector<std::string>{".step-00000002.partial", "latest",
                                      "step-00000001"}));
}

TEST(Checkpoint, VerifyChecksEveryTensorWithoutAModel) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  StagePartition partition = StagePartition::even(model.numLayers, 2);
  std::vector<StageState> stages;
  stages.emplace_back(model, partition, 0, 1.0f);
  stages.emplace_back(model, partition, 1, 2.0f);
  std::string root = dir.path("ckpt");
  ASSERT_EQ(errorText(save(root, model, partition, stages, {4, {77}, 1, 2, 3})),
            "");
  auto summary = verifyCheckpoint(root);
  ASSERT_TRUE(bool(summary)) << llvm::toString(summary.takeError());
  EXPECT_EQ(summary->step, 4u);
  EXPECT_EQ(summary->dataSamples, 77u);
  EXPECT_EQ(summary->dp, 3);
  EXPECT_EQ(summary->files, 4u);
  // Parameters plus two moments each.
  EXPECT_EQ(summary->tensors, 3 * modelParameters(model).size());
  std::string shard =
      root + "/step-00000004/optimizer-00002-of-00002.safetensors";
  std::string bytes = readRaw(shard);
  bytes[bytes.size() - 7] ^= 0x40;
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  std::string message = errorText(verifyCheckpoint(root).takeError());
  EXPECT_NE(message.find(shard + ": tensor 'lm_head.weight.exp_avg_sq' is "
                                 "corrupt"),
            std::string::npos)
      << message;
}

namespace {
/// One data rank's ZeRO state of a whole (pp = 1) model: fp32 master and
/// moment shards of ceil(numel / dp) elements, and the full bf16 views.
struct ZeroState {
  std::unique_ptr<Arena> arena;
  std::vector<ParamSlot> slots;

  ZeroState(const ModelConfig &model, int dpIndex, int dp, float salt) {
    std::vector<ParamSpec> specs = modelParameters(model);
    uint64_t bytes = 0;
    for (const ParamSpec &spec : specs) {
      uint64_t shard = (spec.numElements() + dp - 1) / dp;
      bytes += 3 * shard * 4 + spec.numElements() * 2 + 64;
    }
    arena = std::move(*Arena::create(MemorySpace::DDR, bytes));
    uint64_t offset = 0;
    auto take = [&](uint64_t size) {
      Buffer b = arena->buffer(offset, size);
      offset += (size + 15) / 16 * 16;
      return b;
    };
    for (const ParamSpec &spec : specs) {
      uint64_t numel = spec.numElements();
      uint64_t shard = (numel + dp - 1) / dp;
      ParamSlot slot;
      slot.name = spec.name;
      slot.shape = spec.shape;
      slot.shardOffset = uint64_t(dpIndex) * shard;
      slot.shardElements = shard;
      slot.master = take(shard * 4);
      slot.expAvg = take(shard * 4);
      slot.expAvgSq = take(shard * 4);
      slot.view = take(numel * 2);
      slot.viewType = ElemType::BF16;
      for (uint64_t i = 0; i < shard; ++i) {
        bool inside = slot.shardOffset + i < numel;
        slot.master.as<float>()[i] =
            inside ? salt + float((slot.shardOffset + i) % 89) : 0.0f;
        slot.expAvg.as<float>()[i] = inside ? -salt : 0.0f;
        slot.expAvgSq.as<float>()[i] = inside ? salt * 0.5f : 0.0f;
      }
      for (uint64_t i = 0; i < numel; ++i)
        slot.view.as<uint16_t>()[i] = uint16_t(i * 7 + 1);
      slots.push_back(slot);
    }
  }
};
} // namespace

TEST(Checkpoint, ZeroShardsRoundTripPerDataRank) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  StagePartition partition = StagePartition::even(model.numLayers, 1);
  const int dp = 3; // Shards with padding: numel is rarely a multiple of 3.
  std::vector<ZeroState> ranks;
  for (int d = 0; d < dp; ++d)
    ranks.emplace_back(model, d, dp, 1.5f + d);
  std::string root = dir.path("ckpt");
  TrainerState state{8, {96}, 5, 1, dp};
  std::string staging = stagingDirectory(root, state.step);
  llvm::sys::fs::create_directories(staging);
  for (int d = 0; d < dp; ++d)
    ASSERT_EQ(errorText(writeStageShards(staging, model, partition, 0,
                                         ranks[d].slots, state, d)),
              "");
  ASSERT_EQ(errorText(writeCheckpointIndex(staging, model, partition, state,
                                           /*zero=*/true)),
            "");
  ASSERT_EQ(errorText(commitCheckpoint(root, staging, state.step)), "");
  std::string step = root + "/step-00000008";
  EXPECT_EQ(
      listDirectory(step),
      (std::vector<std::string>{
          "model-00001-of-00001.safetensors", "model.safetensors.index.json",
          "optimizer-00001-of-00001-zero-00001-of-00003.safetensors",
          "optimizer-00001-of-00001-zero-00002-of-00003.safetensors",
          "optimizer-00001-of-00001-zero-00003-of-00003.safetensors",
          "optimizer.safetensors.index.json", "trainer_state.json"}));
  // The model file holds the bf16 views under HF names.
  auto modelFile =
      SafetensorsFile::open(step + "/model-00001-of-00001.safetensors");
  ASSERT_TRUE(bool(modelFile));
  EXPECT_EQ(modelFile->find("lm_head.weight")->dtype, "BF16");

  for (int d = 0; d < dp; ++d) {
    ZeroState fresh(model, d, dp, 0.0f);
    for (ParamSlot &slot : fresh.slots) {
      std::memset(slot.master.data, 0xff, slot.master.bytes);
      std::memset(slot.view.data, 0, slot.view.bytes);
    }
    ASSERT_EQ(errorText(loadSlots(step, fresh.slots, d, dp)), "");
    EXPECT_EQ(std::memcmp(fresh.arena->base(), ranks[d].arena->base(),
                          ranks[d].arena->capacity()),
              0)
        << "data rank " << d;
  }
  auto summary = verifyCheckpoint(root);
  ASSERT_TRUE(bool(summary)) << llvm::toString(summary.takeError());
  EXPECT_EQ(summary->files, 4u);
  // Views in the model file, three shards per tensor and data rank.
  EXPECT_EQ(summary->tensors, (1 + 3 * dp) * modelParameters(model).size());

  // Another data-parallel size re-shards: data rank 1 of 2 takes its range
  // from the pieces of ranks 0..2 of 3 (docs/runtime.md, "Checkpoints").
  auto savedMaster = [&](const ParamSpec &spec, uint64_t i, float *m,
                         float *v) {
    uint64_t shard3 = (spec.numElements() + dp - 1) / dp;
    float salt = 1.5f + float(i / shard3);
    *m = -salt;
    *v = salt * 0.5f;
    return salt + float(i % 89);
  };
  std::vector<ParamSpec> specs = modelParameters(model);
  ZeroState other(model, 1, 2, 0.0f);
  ASSERT_EQ(errorText(loadSlots(step, other.slots, 1, 2)), "");
  for (size_t t = 0; t < specs.size(); ++t) {
    const ParamSlot &slot = other.slots[t];
    uint64_t numel = specs[t].numElements();
    for (uint64_t k = 0; k < slot.shardElements; ++k) {
      uint64_t i = slot.shardOffset + k;
      float m = 0, v = 0;
      float expected = i < numel ? savedMaster(specs[t], i, &m, &v) : 0.0f;
      ASSERT_EQ(slot.master.as<float>()[k], expected) << slot.name << " " << i;
      ASSERT_EQ(slot.expAvg.as<float>()[k], i < numel ? m : 0.0f);
      ASSERT_EQ(slot.expAvgSq.as<float>()[k], i < numel ? v : 0.0f);
    }
    // The views come from the model file.
    ASSERT_EQ(std::memcmp(slot.view.data, ranks[0].slots[t].view.data,
                          slot.view.bytes),
              0);
  }
  // Unsharded slots take the whole tensors from the pieces.
  StageState plain(model, partition, 0, 1.0f);
  ASSERT_EQ(errorText(loadSlots(step, plain.slots)), "");
  for (size_t t = 0; t < specs.size(); ++t)
    for (uint64_t i = 0; i < specs[t].numElements(); i += 37) {
      float m = 0, v = 0;
      ASSERT_EQ(plain.slots[t].master.as<float>()[i],
                savedMaster(specs[t], i, &m, &v))
          << specs[t].name << " " << i;
      if (plain.slots[t].expAvg.bytes)
        ASSERT_EQ(plain.slots[t].expAvg.as<float>()[i], m);
    }
  // Mixed sharding is rejected at save time.
  ranks[0].slots[3].shardElements = 0;
  EXPECT_NE(errorText(writeStageShards(staging, model, partition, 0,
                                       ranks[0].slots, state, 0))
                .find("tensors are ZeRO-sharded; shard all or none"),
            std::string::npos);
}

namespace {
/// One data rank's ZeRO state as an emitted program registers it: all of a
/// stage's tensors flattened into one buffer of `total` elements, rank r
/// keeping elements [r * n, (r + 1) * n) (n = total / dp), and one slot per
/// tensor holding the piece of it inside that range (possibly empty).
/// `skew` moves rank 1's boundary in its first cut tensor (to make ranges
/// that do not tile).
struct FlatZeroState {
  std::unique_ptr<Arena> arena;
  std::vector<ParamSlot> slots;

  FlatZeroState(const ModelConfig &model, int dpIndex, int dp, float salt,
                uint64_t skew = 0) {
    std::vector<ParamSpec> specs = modelParameters(model);
    uint64_t total = 0;
    for (const ParamSpec &spec : specs)
      total += spec.numElements();
    uint64_t n = (total + dp - 1) / dp;
    uint64_t viewBytes = 0;
    for (const ParamSpec &spec : specs)
      viewBytes += (spec.numElements() * 2 + 15) / 16 * 16;
    arena = std::move(*Arena::create(MemorySpace::DDR, 3 * n * 4 + viewBytes));
    Buffer master = arena->buffer(0, n * 4), m = arena->buffer(n * 4, n * 4),
           v = arena->buffer(2 * n * 4, n * 4);
    uint64_t begin = uint64_t(dpIndex) * n, end = begin + n;
    for (uint64_t i = 0; i < n; ++i) {
      master.as<float>()[i] = salt + float((begin + i) % 89);
      m.as<float>()[i] = -salt - float((begin + i) % 7);
      v.as<float>()[i] = salt * float((begin + i) % 5);
    }
    uint64_t tensorOffset = 0, viewOffset = 3 * n * 4;
    bool skewed = false;
    for (const ParamSpec &spec : specs) {
      uint64_t numel = spec.numElements();
      uint64_t lo = std::max(begin, tensorOffset);
      uint64_t hi = std::min(end, tensorOffset + numel);
      if (lo >= hi)
        lo = hi = begin;
      if (skew && dpIndex == 1 && !skewed && lo > tensorOffset && hi > lo) {
        lo += skew; // leaves a hole in this tensor
        skewed = true;
      }
      ParamSlot slot;
      slot.name = spec.name;
      slot.shape = spec.shape;
      slot.zeroShard = true;
      slot.shardOffset = hi > lo ? lo - tensorOffset : 0;
      slot.shardElements = hi - lo;
      slot.master = master.slice((lo - begin) * 4, (hi - lo) * 4);
      slot.expAvg = m.slice((lo - begin) * 4, (hi - lo) * 4);
      slot.expAvgSq = v.slice((lo - begin) * 4, (hi - lo) * 4);
      slot.view = arena->buffer(viewOffset, numel * 2);
      slot.viewType = ElemType::BF16;
      for (uint64_t i = 0; i < numel; ++i)
        slot.view.as<uint16_t>()[i] = uint16_t(i * 3 + tensorOffset);
      viewOffset += (numel * 2 + 15) / 16 * 16;
      tensorOffset += numel;
      slots.push_back(slot);
    }
  }
};

/// Saves the ranks' flat ZeRO states as step `step` under `root`.
llvm::Error saveFlat(const std::string &root, const ModelConfig &model,
                     const std::vector<FlatZeroState> &ranks, uint64_t step) {
  StagePartition partition = StagePartition::even(model.numLayers, 1);
  TrainerState state{step, {64}, 3, 1, int(ranks.size())};
  std::string staging = stagingDirectory(root, state.step);
  llvm::sys::fs::create_directories(staging);
  for (size_t d = 0; d < ranks.size(); ++d)
    if (llvm::Error error = writeStageShards(staging, model, partition, 0,
                                             ranks[d].slots, state, int(d)))
      return error;
  if (llvm::Error error = writeCheckpointIndex(staging, model, partition, state,
                                               /*zero=*/true))
    return error;
  return commitCheckpoint(root, staging, state.step);
}
} // namespace

TEST(Checkpoint, ZeroPiecesOfFlattenedLayersRoundTrip) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  const int dp = 2;
  std::vector<FlatZeroState> ranks;
  for (int d = 0; d < dp; ++d)
    ranks.emplace_back(model, d, dp, 2.0f + d);
  // Rank 0 holds none of lm_head, rank 1 none of the embedding; one tensor
  // is cut between them.
  size_t emptyPieces = 0, cut = 0;
  for (size_t i = 0; i < ranks[0].slots.size(); ++i) {
    emptyPieces += (ranks[0].slots[i].shardElements == 0) +
                   (ranks[1].slots[i].shardElements == 0);
    cut += ranks[0].slots[i].shardElements && ranks[1].slots[i].shardElements;
  }
  EXPECT_GT(emptyPieces, 0u);
  EXPECT_EQ(cut, 1u);
  std::string root = dir.path("ckpt");
  ASSERT_EQ(errorText(saveFlat(root, model, ranks, 6)), "");

  auto summary = verifyCheckpoint(root);
  ASSERT_TRUE(bool(summary)) << llvm::toString(summary.takeError());
  EXPECT_EQ(summary->tensors, (1 + 3 * dp) * modelParameters(model).size());
  // Each piece records its range in the shard file's metadata.
  auto shard = SafetensorsFile::open(
      root + "/step-00000006/optimizer-00001-of-00001-zero-00002-of-00002."
             "safetensors");
  ASSERT_TRUE(bool(shard)) << llvm::toString(shard.takeError());
  EXPECT_EQ(shard->metadata().at("ratrain.shard_elements.lm_head.weight"),
            std::to_string(model.vocab * model.hidden));
  EXPECT_EQ(shard->metadata().at("ratrain.shard_offset.lm_head.weight"), "0");
  EXPECT_EQ(
      shard->metadata().at("ratrain.shard_elements.model.embed_tokens.weight"),
      "0");

  for (int d = 0; d < dp; ++d) {
    FlatZeroState fresh(model, d, dp, 0.0f);
    std::memset(fresh.arena->base(), 0, fresh.arena->capacity());
    ASSERT_EQ(errorText(loadSlots(root + "/step-00000006", fresh.slots, d, dp)),
              "");
    EXPECT_EQ(std::memcmp(fresh.arena->base(), ranks[d].arena->base(),
                          ranks[d].arena->capacity()),
              0)
        << "data rank " << d;
  }

  // A rank whose range differs from the saved one (another sharding) takes
  // the saved values of its range.
  FlatZeroState skewed(model, 1, dp, 0.0f, /*skew=*/8);
  ASSERT_EQ(errorText(loadSlots(root + "/step-00000006", skewed.slots, 1, dp)),
            "");
  uint64_t total = 0;
  for (const ParamSpec &spec : modelParameters(model))
    total += spec.numElements();
  uint64_t n = (total + dp - 1) / dp, tensorOffset = 0;
  std::vector<ParamSpec> specs = modelParameters(model);
  for (size_t t = 0; t < specs.size(); ++t) {
    const ParamSlot &slot = skewed.slots[t];
    for (uint64_t k = 0; k < slot.shardElements; ++k) {
      uint64_t flat = tensorOffset + slot.shardOffset + k;
      float salt = 2.0f + float(flat / n);
      ASSERT_EQ(slot.master.as<float>()[k], salt + float(flat % 89))
          << slot.name << " " << k;
      ASSERT_EQ(slot.expAvg.as<float>()[k], -salt - float(flat % 7));
    }
    tensorOffset += specs[t].numElements();
  }
}

TEST(Checkpoint, VerifyRejectsZeroShardsThatDoNotTile) {
  TempDir dir;
  ModelConfig model = tinyLlama();
  std::vector<FlatZeroState> ranks;
  ranks.emplace_back(model, 0, 2, 1.0f);
  ranks.emplace_back(model, 1, 2, 1.0f, /*skew=*/8);
  std::string root = dir.path("ckpt");
  ASSERT_EQ(errorText(saveFlat(root, model, ranks, 2)), "");
  std::string message = errorText(verifyCheckpoint(root).takeError());
  EXPECT_NE(message.find("leave a hole at element"), std::string::npos)
      << message;
  EXPECT_NE(message.find("optimizer-00001-of-00001-zero-00002-of-00002."
                         "safetensors records elements ["),
            std::string::npos)
      << message;

  // Data rank 1's ranges saved twice: they overlap (lm_head.weight, all of
  // it on rank 1, is the first tensor by name).
  std::vector<FlatZeroState> twice;
  twice.emplace_back(model, 1, 2, 1.0f);
  twice.emplace_back(model, 1, 2, 1.0f);
  std::string root2 = dir.path("ckpt2");
  ASSERT_EQ(errorText(saveFlat(root2, model, twice, 2)), "");
  message = errorText(verifyCheckpoint(root2).takeError());
  EXPECT_NE(message.find("the ZeRO shards of tensor 'lm_head.weight' (65536 "
                         "elements) overlap at element 65536"),
            std::string::npos)
      << message;

  // Data rank 0's twice: nobody holds lm_head.weight.
  std::vector<FlatZeroState> rankZero;
  rankZero.emplace_back(model, 0, 2, 1.0f);
  rankZero.emplace_back(model, 0, 2, 1.0f);
  std::string root3 = dir.path("ckpt3");
  ASSERT_EQ(errorText(saveFlat(root3, model, rankZero, 2)), "");
  message = errorText(verifyCheckpoint(root3).takeError());
  EXPECT_NE(message.find("the ZeRO shards of tensor 'lm_head.weight' cover 0 "
                         "of its 65536 elements"),
            std::string::npos)
      << message;
}
