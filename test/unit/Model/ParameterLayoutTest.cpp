//===- ParameterLayoutTest.cpp - The one parameter layout -----------------===//
//
// Every shipped model's layers: contiguous offsets, sizes that add up to the
// parameter counts the planner and memory model use, HuggingFace names.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Model/ParameterLayout.h"
#include "ratrain/Model/HFConfig.h"

#include <gtest/gtest.h>

using namespace ratrain;

namespace {

ModelConfig load(const char *name) {
  auto config = loadHFConfig(std::string(RATRAIN_EXAMPLES_DIR) + "/models/" +
                             name + ".json");
  EXPECT_TRUE(bool(config)) << llvm::toString(config.takeError());
  return config ? *config : ModelConfig();
}

int64_t layerSize(const ModelConfig &config, int64_t layer) {
  int64_t next = 0;
  for (const ParamTensor &tensor : layerParameterTensors(config, layer)) {
    EXPECT_EQ(tensor.offset, next) << tensor.name;
    next += tensor.numel();
  }
  return next;
}

class ParameterLayoutTest : public testing::TestWithParam<const char *> {};

TEST_P(ParameterLayoutTest, SizesMatchTheParameterCounts) {
  ModelConfig config = load(GetParam());
  ASSERT_GT(config.numLayers, 0);
  int64_t last = numParameterLayers(config) - 1;
  EXPECT_EQ(layerSize(config, 0), config.embeddingParams());
  for (int64_t layer = 1; layer < last; ++layer)
    EXPECT_EQ(layerSize(config, layer), config.paramsPerLayer());
  EXPECT_EQ(layerSize(config, last), config.headParams());
  config.tieEmbeddings = !config.tieEmbeddings;
  EXPECT_EQ(layerSize(config, last), config.headParams());
}

INSTANTIATE_TEST_SUITE_P(Models, ParameterLayoutTest,
                         testing::Values("tiny-llama", "tiny-baichuan",
                                         "llama-2-7b", "llama-2-70b",
                                         "qwen2.5-32b", "baichuan2-13b"));

TEST(ParameterLayout, NamesAndOrder) {
  ModelConfig config = load("tiny-llama");
  EXPECT_EQ(layerParameterPrefix(config, 0), "model.embed_tokens");
  EXPECT_EQ(layerParameterPrefix(config, 3), "model.layers.2");
  EXPECT_EQ(layerParameterPrefix(config, config.numLayers + 1), "lm_head");
  llvm::SmallVector<ParamTensor> decoder = layerParameterTensors(config, 1);
  std::vector<std::string> names;
  for (const ParamTensor &tensor : decoder)
    names.push_back(tensor.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "model.layers.0.input_layernorm.weight",
                       "model.layers.0.self_attn.q_proj.weight",
                       "model.layers.0.self_attn.k_proj.weight",
                       "model.layers.0.self_attn.v_proj.weight",
                       "model.layers.0.self_attn.o_proj.weight",
                       "model.layers.0.post_attention_layernorm.weight",
                       "model.layers.0.mlp.gate_proj.weight",
                       "model.layers.0.mlp.up_proj.weight",
                       "model.layers.0.mlp.down_proj.weight"}));
  EXPECT_EQ(decoder[0].init, ParamInit::Ones);
  EXPECT_EQ(decoder[1].init, ParamInit::Normal);
  // HF's [out_features, in_features].
  EXPECT_EQ(decoder[2].shape[0], config.kvDim());
  EXPECT_EQ(decoder[2].shape[1], config.hidden);

  ModelConfig baichuan = load("tiny-baichuan");
  llvm::SmallVector<ParamTensor> packed = layerParameterTensors(baichuan, 1);
  ASSERT_GE(packed.size(), 2u);
  EXPECT_EQ(packed[1].name, "model.layers.0.self_attn.W_pack.weight");
  EXPECT_EQ(packed[1].shape[0], baichuan.hidden + 2 * baichuan.kvDim());

  ModelConfig qwen = load("qwen2.5-32b");
  llvm::SmallVector<ParamTensor> biased = layerParameterTensors(qwen, 1);
  ASSERT_GE(biased.size(), 5u);
  EXPECT_EQ(biased[4].name, "model.layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(biased[4].init, ParamInit::Zeros);
}

} // namespace
