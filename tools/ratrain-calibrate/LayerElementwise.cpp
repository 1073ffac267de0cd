//===- LayerElementwise.cpp - A layer's element-wise kernels' rate --------===//

#include "LayerElementwise.h"
#include "ConcurrentPeaks.h"

#include "ratrain/Planner/CostModel.h"
#include "ratrain/kernels/Kernels.h"

#include <algorithm>
#include <type_traits>
#include <vector>

using namespace ratrain;
using namespace ratrain::calibrate;
namespace kn = ratrain::kernels;

namespace {

/// One cluster's arrays for a layer's element-wise kernels on `T` tokens,
/// of element type `E` (float, or uint16_t bit patterns of bf16).
template <typename E> struct LayerArrays {
  int64_t T, h, heads, kvHeads, d, ffn;
  std::vector<E> x, y, w, dy, dx, dw, q, qRotated, k, kRotated, gate, up,
      product, dProduct, dGate, dUp, residual;
  std::vector<float> rstd, cosTable, sinTable;
  std::vector<int32_t> pos;
  int64_t maxPos = 0;
  bool rotary = true; ///< the model rotates q and k (RoPE, not ALiBi)

  LayerArrays(const ModelConfig &m, int64_t tokens, unsigned seed)
      : T(tokens), h(m.hidden), heads(m.numHeads), kvHeads(m.numKVHeads),
        d(m.headDim()), ffn(m.ffnHidden) {
    auto fill = [&](std::vector<E> &v, int64_t n) {
      v.resize(size_t(n));
      uint32_t s = seed * 2654435761u + uint32_t(n);
      for (E &e : v) {
        s = s * 1664525u + 1013904223u;
        float f = float(int32_t(s >> 8) - (1 << 23)) / float(1 << 24);
        if constexpr (std::is_same_v<E, float>)
          e = f;
        else
          kn::toHalf(kn::Half::BF16, 1, &f, &e);
      }
    };
    for (std::vector<E> *v : {&x, &y, &dy, &dx, &residual})
      fill(*v, T * h);
    fill(w, h);
    fill(dw, h);
    fill(q, T * heads * d);
    fill(qRotated, T * heads * d);
    fill(k, T * kvHeads * d);
    fill(kRotated, T * kvHeads * d);
    for (std::vector<E> *v : {&gate, &up, &product, &dProduct, &dGate, &dUp})
      fill(*v, T * ffn);
    rstd.assign(size_t(T), 1.0f);
    pos.resize(size_t(T));
    for (int64_t t = 0; t < T; ++t)
      pos[size_t(t)] = int32_t(t % m.seqLen);
    cosTable.resize(size_t(m.seqLen * d));
    sinTable.resize(size_t(m.seqLen * d));
    kn::ropeTables(m.seqLen, d, m.ropeTheta, cosTable.data(), sinTable.data());
    maxPos = m.seqLen;
    rotary = m.positions == PositionEncoding::Rope;
  }

  /// The bytes of the arrays.
  int64_t bytes() const {
    int64_t elements = 0;
    for (const std::vector<E> *v :
         {&x, &y, &w, &dy, &dx, &dw, &q, &qRotated, &k, &kRotated, &gate, &up,
          &product, &dProduct, &dGate, &dUp, &residual})
      elements += int64_t(v->size());
    return elements * int64_t(sizeof(E)) +
           int64_t(4 * (rstd.size() + cosTable.size() + sinTable.size() +
                        pos.size()));
  }

  /// The forward's kernels (two RMSNorms, RoPE on q and k, SwiGLU), then
  /// the backward's (their gradients and the two residual-gradient adds);
  /// non-zero when a kernel fails.
  int pass() {
    int failed = 0;
    for (int i = 0; i < 2; ++i)
      failed |= norm(x.data(), y.data());
    if (rotary) {
      failed |= rope(heads, q.data(), qRotated.data(), /*backward=*/false);
      failed |= rope(kvHeads, k.data(), kRotated.data(), /*backward=*/false);
    }
    failed |= swiglu();
    failed |= swigluBackward();
    if (rotary) {
      failed |= rope(heads, qRotated.data(), q.data(), /*backward=*/true);
      failed |= rope(kvHeads, kRotated.data(), k.data(), /*backward=*/true);
    }
    for (int i = 0; i < 2; ++i) {
      failed |= normBackward();
      failed |= add();
    }
    return failed;
  }

private:
  int norm(const E *in, E *out) {
    if constexpr (std::is_same_v<E, float>)
      return kn::rmsnormForward(T, h, in, w.data(), 1e-5f, out, rstd.data());
    else
      return kn::rmsnormForward(kn::Half::BF16, T, h, in, w.data(), 1e-5f, out,
                                rstd.data());
  }
  int normBackward() {
    if constexpr (std::is_same_v<E, float>)
      return kn::rmsnormBackward(T, h, x.data(), w.data(), rstd.data(),
                                 dy.data(), dx.data(), dw.data());
    else
      return kn::rmsnormBackward(kn::Half::BF16, T, h, x.data(), w.data(),
                                 rstd.data(), dy.data(), dx.data(), dw.data());
  }
  int rope(int64_t n, const E *in, E *out, bool backward) {
    if constexpr (std::is_same_v<E, float>)
      return backward
                 ? kn::ropeBackward(T, n, d, pos.data(), maxPos,
                                    cosTable.data(), sinTable.data(), in, out)
                 : kn::ropeForward(T, n, d, pos.data(), maxPos, cosTable.data(),
                                   sinTable.data(), in, out);
    else
      return backward
                 ? kn::ropeBackward(kn::Half::BF16, T, n, d, pos.data(), maxPos,
                                    cosTable.data(), sinTable.data(), in, out)
                 : kn::ropeForward(kn::Half::BF16, T, n, d, pos.data(), maxPos,
                                   cosTable.data(), sinTable.data(), in, out);
  }
  int swiglu() {
    if constexpr (std::is_same_v<E, float>)
      return kn::swigluForward(T, ffn, gate.data(), up.data(), product.data());
    else
      return kn::swigluForward(kn::Half::BF16, T, ffn, gate.data(), up.data(),
                               product.data());
  }
  int swigluBackward() {
    if constexpr (std::is_same_v<E, float>)
      return kn::swigluBackward(T, ffn, gate.data(), up.data(), dProduct.data(),
                                dGate.data(), dUp.data());
    else
      return kn::swigluBackward(kn::Half::BF16, T, ffn, gate.data(), up.data(),
                                dProduct.data(), dGate.data(), dUp.data());
  }
  int add() {
    if constexpr (std::is_same_v<E, float>)
      return kn::add(T * h, dx.data(), residual.data(), dy.data());
    else
      return kn::add(kn::Half::BF16, T * h, dx.data(), residual.data(),
                     dy.data());
  }
};

template <typename E>
double measure(const ModelConfig &model, int64_t microBatchSize,
               unsigned clusters, int reps, double bytes,
               int64_t workingSetBytes) {
  const int64_t tokens = model.seqLen * microBatchSize;
  // Each cluster's passes cycle through copies of its arrays that fill
  // `workingSetBytes` (at most 2 GiB over all clusters), so that, as in a
  // step, the saved activations a backward reads come from DDR.
  std::vector<std::vector<LayerArrays<E>>> arrays(clusters);
  arrays[0].emplace_back(model, tokens, 11);
  const int64_t footprint = arrays[0][0].bytes();
  const int64_t perCluster = std::min<int64_t>(
      workingSetBytes,
      std::max<int64_t>(footprint, (int64_t(2) << 30) / int64_t(clusters)));
  const int64_t copies = std::max<int64_t>(1, perCluster / footprint);
  for (unsigned t = 0; t < clusters; ++t)
    for (int64_t c = int64_t(arrays[t].size()); c < copies; ++c)
      arrays[t].emplace_back(model, tokens, 11 + t + 97 * unsigned(c));
  // Enough passes for about 20 ms a run.
  const int inner = int(std::clamp(0.6e9 / bytes, 1.0, 200.0));
  return bestConcurrentRate(
      clusters, reps, inner, bytes,
      [&](unsigned t, int i) { return arrays[t][size_t(i % copies)].pass(); });
}

} // namespace

double ratrain::calibrate::measureLayerElementwise(const ModelConfig &model,
                                                   int64_t microBatchSize,
                                                   bool sixteenBit,
                                                   unsigned clusters, int reps,
                                                   int64_t workingSetBytes) {
  ModelConfig typed = model;
  typed.dtype = sixteenBit ? DType::BF16 : DType::F32;
  const double bytes =
      layerElementwiseBytes(typed, microBatchSize, /*backward=*/false) +
      layerElementwiseBytes(typed, microBatchSize, /*backward=*/true);
  clusters = std::max(1u, clusters);
  return sixteenBit ? measure<uint16_t>(typed, microBatchSize, clusters, reps,
                                        bytes, workingSetBytes)
                    : measure<float>(typed, microBatchSize, clusters, reps,
                                     bytes, workingSetBytes);
}

ModelConfig ratrain::calibrate::tinyLlamaLayer() {
  ModelConfig m;
  m.name = "tiny LLaMA";
  m.numLayers = 4;
  m.hidden = 256;
  m.numHeads = 8;
  m.numKVHeads = 4;
  m.ffnHidden = 688;
  m.vocab = 256;
  m.seqLen = 256;
  return m;
}
