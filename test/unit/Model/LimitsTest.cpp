//===- LimitsTest.cpp - ModelConfig size limits and kernel head dims ------===//

#include "ratrain/Model/Limits.h"
#include "ratrain/Model/HFConfig.h"

#include "gtest/gtest.h"

using namespace ratrain;

namespace {
ModelConfig tiny() {
  ModelConfig config;
  config.name = "tiny";
  config.numLayers = 2;
  config.hidden = 128;
  config.numHeads = 4;
  config.numKVHeads = 4;
  config.ffnHidden = 256;
  config.vocab = 100;
  config.seqLen = 64;
  config.maxPositions = 64;
  return config;
}

std::string errorText(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : std::string();
}
} // namespace

TEST(Limits, ValidateBoundsEverySize) {
  EXPECT_EQ(errorText(tiny().validate()), "");
  struct {
    int64_t ModelConfig::*field;
    int64_t limit;
    const char *name;
  } cases[] = {
      {&ModelConfig::numLayers, limits::kMaxDecoderLayers, "num_hidden_layers"},
      {&ModelConfig::hidden, limits::kMaxHidden, "hidden_size"},
      {&ModelConfig::ffnHidden, limits::kMaxFFNHidden, "intermediate_size"},
      {&ModelConfig::vocab, limits::kMaxVocab, "vocab_size"},
  };
  for (const auto &c : cases) {
    ModelConfig config = tiny();
    config.*c.field = c.limit;
    if (c.field == &ModelConfig::hidden)
      config.numHeads = config.numKVHeads = 1;
    EXPECT_EQ(errorText(config.validate()), "") << c.name;
    config.*c.field = c.limit + 1;
    EXPECT_EQ(errorText(config.validate()),
              "model 'tiny': " + std::string(c.name) + " " +
                  std::to_string(c.limit + 1) + " exceeds the limit of " +
                  std::to_string(c.limit));
  }
}

TEST(Limits, SizeArithmeticAtTheLimitsDoesNotOverflow) {
  ModelConfig config = tiny();
  config.numLayers = limits::kMaxDecoderLayers;
  config.hidden = limits::kMaxHidden;
  config.numHeads = config.numKVHeads = limits::kMaxHidden / 128;
  config.ffnHidden = limits::kMaxFFNHidden;
  config.vocab = limits::kMaxVocab;
  ASSERT_EQ(errorText(config.validate()), "");
  // 7 h^2 + ... per layer, 10^5 layers: below 2^63.
  EXPECT_GT(config.totalParams(), 0);
  EXPECT_GT(config.totalParams(), config.numLayers * config.paramsPerLayer());
}

TEST(Limits, ImportRefusesHeadDimensionsWithoutKernels) {
  for (int64_t headDim : limits::kAttentionHeadDims)
    EXPECT_TRUE(limits::isSupportedHeadDim(headDim));
  EXPECT_FALSE(limits::isSupportedHeadDim(16));
  EXPECT_FALSE(limits::isSupportedHeadDim(96));
  const char *config =
      R"({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
          "num_attention_heads": 16, "intermediate_size": 512,
          "vocab_size": 100, "max_position_embeddings": 64})";
  EXPECT_EQ(errorText(parseHFConfig(config, "c.json").takeError()),
            "c.json: head dimension 16 (hidden_size 256 / num_attention_heads "
            "16) is not supported by the attention kernels (supported: 32, "
            "64, 128)");
}
