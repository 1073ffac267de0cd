//===- InitTest.cpp - Deterministic parameter initialization --------------===//

#include "ratrain/runtime/Init.h"
#include "ratrain/runtime/Half.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace ratrain::rt;

TEST(Init, NormalIsDeterministicAndShardable) {
  auto arena = Arena::create(MemorySpace::DDR, 1 << 20);
  ASSERT_TRUE(bool(arena));
  const uint64_t n = 65536;
  Buffer whole = (*arena)->buffer(0, n * 4);
  initParam(whole, ElemType::F32, InitKind::Normal, "layers.0.attn.wq", 0.02);
  // Two ZeRO shards with their global element offsets give the same values.
  Buffer shard = (*arena)->buffer(n * 4, n / 2 * 4);
  initParam(shard, ElemType::F32, InitKind::Normal, "layers.0.attn.wq", 0.02,
            n / 2);
  for (uint64_t i = 0; i < n / 2; ++i)
    ASSERT_EQ(shard.as<float>()[i], whole.as<float>()[n / 2 + i]) << i;
  EXPECT_EQ(whole.as<float>()[7], initialValue("layers.0.attn.wq", 7, 0.02));
  // Another parameter gets other values.
  EXPECT_NE(initialValue("layers.0.attn.wk", 7, 0.02), whole.as<float>()[7]);
  // Mean ~ 0, standard deviation ~ 0.02.
  double sum = 0, squares = 0;
  for (uint64_t i = 0; i < n; ++i) {
    sum += whole.as<float>()[i];
    squares += double(whole.as<float>()[i]) * whole.as<float>()[i];
  }
  double mean = sum / n, std = std::sqrt(squares / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.0005);
  EXPECT_NEAR(std, 0.02, 0.0005);
}

TEST(Init, ConstantsAndHalfPrecision) {
  auto arena = Arena::create(MemorySpace::DDR, 4096);
  ASSERT_TRUE(bool(arena));
  Buffer ones = (*arena)->buffer(0, 64);
  initParam(ones, ElemType::BF16, InitKind::Ones, "norm");
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(ones.as<uint16_t>()[i], 0x3f80);
  Buffer normal = (*arena)->buffer(64, 64);
  initParam(normal, ElemType::F16, InitKind::Normal, "w", 1.0, 10);
  EXPECT_EQ(normal.as<uint16_t>()[0], floatToF16(initialValue("w", 10, 1.0)));
  Buffer zeros = (*arena)->buffer(128, 64);
  zeros.as<float>()[3] = 5;
  initParam(zeros, ElemType::F32, InitKind::Zeros, "m");
  EXPECT_EQ(zeros.as<float>()[3], 0.0f);
  EXPECT_EXIT(initParam(zeros, ElemType::I32, InitKind::Zeros, "m"),
              testing::ExitedWithCode(1), "element type i32 is not a float");
}
