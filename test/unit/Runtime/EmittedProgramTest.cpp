//===- EmittedProgramTest.cpp - Helpers of emitted programs ---------------===//
//
// The helpers of ratrain/runtime/EmittedProgram.h that emitted programs call,
// on plain host memory (no Runtime: kernel times are not recorded then).
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/EmittedProgram.h"
#include "ratrain/runtime/EmittedProgramStaging.h"
#include "ratrain/runtime/Half.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

using namespace ratrain::rt;
using namespace ratrain::rt::emit;

namespace {

/// A tensor over `storage` (not owned).
template <typename T> Tensor tensorOf(std::vector<T> &storage, ElemType type) {
  Buffer buf;
  buf.data = reinterpret_cast<std::byte *>(storage.data());
  buf.bytes = storage.size() * sizeof(T);
  return {buf, type};
}

std::vector<uint16_t> toBF16(const std::vector<float> &values) {
  std::vector<uint16_t> out;
  for (float v : values)
    out.push_back(floatToBF16(v));
  return out;
}

TEST(EmittedProgramStaging, SlotsAreLifoAndOnlyGrow) {
  Staging pool;
  float *a = pool.acquire(8);
  float *b = pool.acquire(4);
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.inUse(), 2u);
  pool.release();
  pool.release();
  EXPECT_EQ(pool.inUse(), 0u);
  // The same sizes again reuse the same memory; a smaller request too.
  EXPECT_EQ(pool.acquire(8), a);
  EXPECT_EQ(pool.acquire(2), b);
  EXPECT_EQ(pool.capacity(1), 4u);
  pool.release();
  // A larger request grows slot 1 only.
  pool.acquire(16);
  EXPECT_EQ(pool.capacity(0), 8u);
  EXPECT_EQ(pool.capacity(1), 16u);
  EXPECT_EQ(pool.capacity(2), 0u);
}

TEST(EmittedProgramStaging, ScratchReleasesItsSlot) {
  size_t before = staging().inUse();
  {
    Scratch s(10);
    EXPECT_EQ(staging().inUse(), before + 1);
    s.data()[9] = 1.0f;
  }
  EXPECT_EQ(staging().inUse(), before);
}

TEST(EmittedProgramStaging, InReadsF32InPlaceOrCopies) {
  std::vector<float> values = {1.0f, -2.0f, 3.5f};
  Tensor t = tensorOf(values, ElemType::F32);
  {
    In direct(t);
    EXPECT_EQ(direct.p, values.data());
    EXPECT_FALSE(direct.staged);
  }
  In copy(t, /*copy=*/true);
  EXPECT_NE(copy.p, values.data());
  EXPECT_EQ(std::vector<float>(copy.p, copy.p + 3), values);
}

TEST(EmittedProgramStaging, InConvertsBF16) {
  std::vector<uint16_t> bits = toBF16({1.0f, 0.5f, -4.0f});
  In in(tensorOf(bits, ElemType::BF16));
  EXPECT_EQ(std::vector<float>(in.p, in.p + 3),
            (std::vector<float>{1.0f, 0.5f, -4.0f}));
}

TEST(EmittedProgramStaging, OutWritesBF16BackWhenDone) {
  std::vector<uint16_t> bits = toBF16({1.0f, 2.0f});
  {
    Out out(tensorOf(bits, ElemType::BF16), /*load=*/true);
    EXPECT_EQ(out.p[1], 2.0f); // loaded
    out.p[0] = 3.0f;
    out.p[1] += 1.0f;
    EXPECT_EQ(bf16ToFloat(bits[0]), 1.0f); // not yet written back
  }
  EXPECT_EQ(bf16ToFloat(bits[0]), 3.0f);
  EXPECT_EQ(bf16ToFloat(bits[1]), 3.0f);
}

TEST(EmittedProgram, OverlapsComparesByteRanges) {
  std::vector<float> storage(16);
  Tensor all = tensorOf(storage, ElemType::F32);
  Tensor low = view(all, 0, 32, ElemType::F32);
  Tensor high = view(all, 32, 32, ElemType::F32);
  EXPECT_TRUE(overlaps(all, low));
  EXPECT_FALSE(overlaps(low, high));
  EXPECT_TRUE(overlaps(view(all, 28, 8, ElemType::F32), high));
}

TEST(EmittedProgram, ViewSlicesWithItsOwnType) {
  std::vector<float> storage(16);
  Tensor all = tensorOf(storage, ElemType::F32);
  Tensor v = view(all, 8, 16, ElemType::BF16);
  EXPECT_EQ(v.buf.data, all.buf.data + 8);
  EXPECT_EQ(v.numel(), 8u);
}

TEST(EmittedProgram, IntersectShard) {
  // Shard [100, 200) and a tensor at [150, 250): its elements [150, 200).
  ShardRange r = intersectShard(100, 200, 150, 100);
  EXPECT_EQ(r.lo, 150u);
  EXPECT_EQ(r.hi, 200u);
  EXPECT_FALSE(r.empty());
  EXPECT_TRUE(intersectShard(100, 200, 200, 10).empty());
  EXPECT_TRUE(intersectShard(100, 200, 0, 100).empty());
  r = intersectShard(100, 200, 0, 1000);
  EXPECT_EQ(r.lo, 100u);
  EXPECT_EQ(r.hi, 200u);
}

TEST(EmittedProgram, GemmNNMatchesReference) {
  // A [2 x 3], B [3 x 2].
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1};
  std::vector<float> c(4, 100.0f);
  gemm(tensorOf(a, ElemType::F32), tensorOf(b, ElemType::F32),
       tensorOf(c, ElemType::F32), ratrain::kernels::GemmForm::NN, 2, 2, 3,
       /*accumulate=*/false, 1.0);
  EXPECT_EQ(c, (std::vector<float>{4, 5, 10, 11}));
  // Accumulated with alpha 0.5: c += 0.5 * a b.
  gemm(tensorOf(a, ElemType::F32), tensorOf(b, ElemType::F32),
       tensorOf(c, ElemType::F32), ratrain::kernels::GemmForm::NN, 2, 2, 3,
       /*accumulate=*/true, 0.5);
  EXPECT_EQ(c, (std::vector<float>{6, 7.5, 15, 16.5}));
}

TEST(EmittedProgram, GemmIntoBF16) {
  std::vector<uint16_t> a = toBF16({1, 2, 3, 4}), b = toBF16({1, 1, 1, 1});
  std::vector<uint16_t> c(4);
  // NT: C = A B^T, A and B [2 x 2].
  gemm(tensorOf(a, ElemType::BF16), tensorOf(b, ElemType::BF16),
       tensorOf(c, ElemType::BF16), ratrain::kernels::GemmForm::NT, 2, 2, 2,
       /*accumulate=*/false, 1.0);
  EXPECT_EQ(bf16ToFloat(c[0]), 3.0f);
  EXPECT_EQ(bf16ToFloat(c[1]), 3.0f);
  EXPECT_EQ(bf16ToFloat(c[2]), 7.0f);
  EXPECT_EQ(bf16ToFloat(c[3]), 7.0f);
}

TEST(EmittedProgram, FillEveryType) {
  std::vector<float> f(3);
  fill(tensorOf(f, ElemType::F32), 1.5);
  EXPECT_EQ(f, (std::vector<float>(3, 1.5f)));
  std::vector<int32_t> i(2);
  fill(tensorOf(i, ElemType::I32), -7.0);
  EXPECT_EQ(i, (std::vector<int32_t>(2, -7)));
  std::vector<uint16_t> h(2);
  fill(tensorOf(h, ElemType::BF16), 0.25);
  EXPECT_EQ(bf16ToFloat(h[1]), 0.25f);
}

TEST(EmittedProgram, CastAndScale) {
  std::vector<float> x = {1.0f, -0.5f};
  std::vector<uint16_t> y(2);
  cast(tensorOf(x, ElemType::F32), tensorOf(y, ElemType::BF16));
  EXPECT_EQ(bf16ToFloat(y[0]), 1.0f);
  EXPECT_EQ(bf16ToFloat(y[1]), -0.5f);
  std::vector<float> z(2);
  scale(tensorOf(y, ElemType::BF16), tensorOf(z, ElemType::F32), 4.0);
  EXPECT_EQ(z, (std::vector<float>{4.0f, -2.0f}));
  // A same-type cast copies.
  std::vector<float> w(2);
  cast(tensorOf(z, ElemType::F32), tensorOf(w, ElemType::F32));
  EXPECT_EQ(w, z);
}

TEST(EmittedProgram, CrossEntropyMeansOverValidLabels) {
  // Two rows over V = 2: uniform logits (loss ln 2), and a row whose label
  // is out of range (not counted).
  std::vector<float> logits = {0.0f, 0.0f, 5.0f, -5.0f};
  std::vector<int32_t> labels = {1, -1};
  std::vector<float> loss(1);
  crossEntropy(tensorOf(logits, ElemType::F32), tensorOf(labels, ElemType::I32),
               tensorOf(loss, ElemType::F32), 2, 2);
  EXPECT_NEAR(loss[0], std::log(2.0f), 1e-6);
}

TEST(EmittedProgram, ResidualAddInBF16) {
  std::vector<uint16_t> a = toBF16({1, 2}), b = toBF16({0.5, -2});
  std::vector<uint16_t> c(2);
  residualAdd(tensorOf(a, ElemType::BF16), tensorOf(b, ElemType::BF16),
              tensorOf(c, ElemType::BF16));
  EXPECT_EQ(bf16ToFloat(c[0]), 1.5f);
  EXPECT_EQ(bf16ToFloat(c[1]), 0.0f);
}

TEST(EmittedProgram, EmbeddingGradientInBF16TouchesOnlyItsRows) {
  // V = 37 rows of H = 19; ids repeat, and one is out of range (clamped to
  // the last row, as the kernel does).
  const int64_t T = 23, V = 37, H = 19;
  std::vector<float> tableValues(V * H), doutValues(T * H);
  for (size_t i = 0; i < tableValues.size(); ++i)
    tableValues[i] = std::sin(0.37f * float(i));
  for (size_t i = 0; i < doutValues.size(); ++i)
    doutValues[i] = 0.01f * std::cos(1.3f * float(i));
  std::vector<int32_t> ids(T);
  for (int64_t t = 0; t < T; ++t)
    ids[t] = int32_t((t * 5) % 11);
  ids[7] = 1000;
  std::vector<uint16_t> table = toBF16(tableValues), dout = toBF16(doutValues);
  std::vector<uint16_t> before = table;
  embeddingBwd(tensorOf(ids, ElemType::I32), tensorOf(dout, ElemType::BF16),
               tensorOf(table, ElemType::BF16), T, V, H);

  // The staged computation: the whole table in fp32, the fp32 kernel,
  // rounded back.
  std::vector<float> wide(V * H), grads(T * H);
  for (size_t i = 0; i < wide.size(); ++i)
    wide[i] = bf16ToFloat(before[i]);
  for (size_t i = 0; i < grads.size(); ++i)
    grads[i] = bf16ToFloat(dout[i]);
  ASSERT_EQ(ratrain::kernels::embeddingBackward(T, V, H, ids.data(),
                                                grads.data(), wide.data()),
            0);
  std::vector<uint16_t> want = toBF16(wide);
  EXPECT_EQ(table, want);
  // Rows no token names are left as they were; the named ones changed.
  for (int64_t v = 0; v < V; ++v) {
    bool named = v == V - 1 || (v < 11);
    bool same = std::equal(table.begin() + v * H, table.begin() + v * H + H,
                           before.begin() + v * H);
    EXPECT_EQ(same, !named) << "row " << v;
  }
}

} // namespace
