//===- KernelsBench.cpp - Halide kernels vs baselines, same run -----------===//
//
// GEMM: the Halide GEMM (fp32, bf16, fp16 operands) against OpenBLAS sgemm
// on LLaMA-2-7B layer shapes (2048 tokens: QKV/O 4096x4096, MLP 11008x4096)
// and on the tiny LLaMA of examples/models (hidden 256, MLP 688).
// Attention: the Halide causal attention forward and backward against a
// straightforward blocked (flash-style, 64x64 tiles) C++ implementation,
// compiled -O3 for the default x86-64 target and run on as many threads as
// there are cores, at S = 2048, 32 heads, D = 128.
//
// Attention in bf16 too (the runtime's 16-bit kernels), with no baseline.
//
// The 85M training step's attention (2 x 256 tokens, 12 heads of 64) and one
// layer's averaged AdamW shard (3.54M parameters, bf16 gradients), on one
// core as a rank of bench/training/compare-torch.py runs them: the step's
// largest kernels after the GEMMs, measured alone (the update against memcpy
// of the same bytes).
//
// Packing: the word transpose that packs the GEMMs' k-inner operands
// (lib/PackWords.cpp) on the 85M model's operands, cycled through 64 MiB of
// copies so that each call reads its source from memory, as a training
// step reads the weights; the baseline is memcpy of the same bytes.
//
// After the benchmarks, the program prints each ratio (baseline time /
// Halide time) from the timings of this run, and the GFLOP/s achieved; then
// this machine's fp32 and bf16 peaks, measured in the same run with
// ratrain-calibrate's register-only kernels, and each attention kernel's
// fraction of the peak of its type.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"   // ratrain-calibrate's peak kernels
#include "PackWords.h" // internal to ratrain_kernels
#include "ratrain/kernels/Kernels.h"

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace ratrain::kernels;

namespace {

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Seconds per iteration and FLOPs per iteration, by benchmark name.
struct Result {
  double seconds = 0;
  double flops = 0;
};
std::map<std::string, Result> &results() {
  static std::map<std::string, Result> r;
  return r;
}

class RecordingReporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred)
        continue;
      Result &r = results()[run.benchmark_name()];
      r.seconds = run.GetAdjustedRealTime() /
                  benchmark::GetTimeUnitMultiplier(run.time_unit);
      auto it = run.counters.find("flop");
      if (it != run.counters.end())
        r.flops = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

void setFlops(benchmark::State &state, double flopsPerIteration) {
  state.counters["flop"] = flopsPerIteration;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flopsPerIteration * double(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate);
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

struct GemmCase {
  const char *name;
  int64_t M, N, K;
  GemmForm form;
};
const GemmCase kGemmCases[] = {
    {"llama7b_qkv_nt", 2048, 4096, 4096, GemmForm::NT},
    {"llama7b_mlp_up_nt", 2048, 11008, 4096, GemmForm::NT},
    {"llama7b_dx_nn", 2048, 4096, 4096, GemmForm::NN},
    {"llama7b_dw_tn", 4096, 4096, 2048, GemmForm::TN},
    {"tiny_qkv_nt", 2048, 512, 256, GemmForm::NT},
    {"tiny_mlp_up_nt", 2048, 688, 256, GemmForm::NT},
    {"tiny_mlp_down_nt", 2048, 256, 688, GemmForm::NT},
    // bench/training/llama-85m.json, one micro-batch of 2 x 256 tokens.
    {"85m_mlp_up_nt", 512, 2048, 768, GemmForm::NT},
    {"85m_mlp_down_nt", 512, 768, 2048, GemmForm::NT},
    {"85m_dx_nn", 512, 768, 2048, GemmForm::NN},
    {"85m_dw_tn", 2048, 768, 512, GemmForm::TN},
};

struct GemmData {
  std::vector<float> A, B, C;
  std::vector<uint16_t> A16, B16;
  GemmData(const GemmCase &c, Half type) {
    A = randomVector(c.M * c.K, 1);
    B = randomVector(c.K * c.N, 2);
    C.assign(c.M * c.N, 0.0f);
    A16.resize(A.size());
    B16.resize(B.size());
    toHalf(type, A.size(), A.data(), A16.data());
    toHalf(type, B.size(), B.data(), B16.data());
  }
};

void runOpenblas(const GemmCase &c, GemmData &d) {
  // Row-major op(A) [M,K] * op(B) [K,N].
  CBLAS_TRANSPOSE ta = c.form == GemmForm::TN ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = c.form == GemmForm::NT ? CblasTrans : CblasNoTrans;
  int lda = c.form == GemmForm::TN ? c.M : c.K;
  int ldb = c.form == GemmForm::NT ? c.K : c.N;
  cblas_sgemm(CblasRowMajor, ta, tb, c.M, c.N, c.K, 1.0f, d.A.data(), lda,
              d.B.data(), ldb, 0.0f, d.C.data(), c.N);
}

void BM_GemmOpenblasF32(benchmark::State &state, GemmCase c) {
  GemmData d(c, Half::BF16);
  for (auto _ : state)
    runOpenblas(c, d);
  setFlops(state, 2.0 * c.M * c.N * c.K);
}

void BM_GemmHalideF32(benchmark::State &state, GemmCase c) {
  GemmData d(c, Half::BF16);
  for (auto _ : state)
    if (gemm(c.form, c.M, c.N, c.K, d.A.data(), d.B.data(), d.C.data()))
      state.SkipWithError("gemm failed");
  setFlops(state, 2.0 * c.M * c.N * c.K);
}

void BM_GemmHalide16(benchmark::State &state, GemmCase c, Half type,
                     Bf16Products products) {
  setBf16Products(products);
  GemmData d(c, type);
  for (auto _ : state)
    if (gemm16(c.form, type, c.M, c.N, c.K, d.A16.data(), d.B16.data(),
               d.C.data()))
      state.SkipWithError("gemm16 failed");
  setFlops(state, 2.0 * c.M * c.N * c.K);
}

//===----------------------------------------------------------------------===//
// Attention baseline: blocked C++ (64 x 64 tiles, online softmax)
//===----------------------------------------------------------------------===//

struct AttnCase {
  int64_t B, S, Hq, Hkv, D;
};
constexpr int64_t kTile = 64;

/// Runs fn(hk) for every KV head on all cores.
template <typename Fn> void forKvHeads(int64_t hkv, Fn fn) {
  unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      for (int64_t hk = t; hk < hkv; hk += n)
        fn(hk);
    });
  for (auto &th : threads)
    th.join();
}

void baselineForward(const AttnCase &a, const float *q, const float *k,
                     const float *v, float scale, float *out, float *lse) {
  const int64_t G = a.Hq / a.Hkv, D = a.D, S = a.S;
  forKvHeads(a.Hkv * a.B, [&](int64_t bhk) {
    int64_t b = bhk / a.Hkv, hk = bhk % a.Hkv;
    std::vector<float> s(kTile * kTile), m(kTile), l(kTile), acc(kTile * D);
    for (int64_t h = hk * G; h < (hk + 1) * G; ++h) {
      auto Q = [&](int64_t i) { return q + ((b * S + i) * a.Hq + h) * D; };
      auto K = [&](int64_t j) { return k + ((b * S + j) * a.Hkv + hk) * D; };
      auto V = [&](int64_t j) { return v + ((b * S + j) * a.Hkv + hk) * D; };
      for (int64_t i0 = 0; i0 < S; i0 += kTile) {
        int64_t ni = std::min(kTile, S - i0);
        std::fill(m.begin(), m.end(), -INFINITY);
        std::fill(l.begin(), l.end(), 0.0f);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j0 = 0; j0 <= i0 + ni - 1; j0 += kTile) {
          int64_t nj = std::min(kTile, S - j0);
          for (int64_t i = 0; i < ni; ++i)
            for (int64_t j = 0; j < nj; ++j) {
              float d = 0;
              for (int64_t x = 0; x < D; ++x)
                d += Q(i0 + i)[x] * K(j0 + j)[x];
              s[i * kTile + j] = j0 + j <= i0 + i ? d * scale : -INFINITY;
            }
          for (int64_t i = 0; i < ni; ++i) {
            float mx = m[i];
            for (int64_t j = 0; j < nj; ++j)
              mx = std::max(mx, s[i * kTile + j]);
            float corr = std::exp(m[i] - mx);
            l[i] *= corr;
            for (int64_t x = 0; x < D; ++x)
              acc[i * D + x] *= corr;
            for (int64_t j = 0; j < nj; ++j) {
              float p = std::exp(s[i * kTile + j] - mx);
              l[i] += p;
              for (int64_t x = 0; x < D; ++x)
                acc[i * D + x] += p * V(j0 + j)[x];
            }
            m[i] = mx;
          }
        }
        for (int64_t i = 0; i < ni; ++i) {
          float *o = out + ((b * S + i0 + i) * a.Hq + h) * D;
          for (int64_t x = 0; x < D; ++x)
            o[x] = acc[i * D + x] / l[i];
          lse[(b * a.Hq + h) * S + i0 + i] = m[i] + std::log(l[i]);
        }
      }
    }
  });
}

void baselineBackward(const AttnCase &a, const float *q, const float *k,
                      const float *v, const float *out, const float *dout,
                      const float *lse, float scale, float *dq, float *dk,
                      float *dv) {
  const int64_t G = a.Hq / a.Hkv, D = a.D, S = a.S;
  forKvHeads(a.Hkv * a.B, [&](int64_t bhk) {
    int64_t b = bhk / a.Hkv, hk = bhk % a.Hkv;
    std::vector<float> p(kTile * kTile), ds(kTile * kTile), delta(kTile);
    for (int64_t j = 0; j < S; ++j)
      for (int64_t x = 0; x < D; ++x) {
        dk[((b * S + j) * a.Hkv + hk) * D + x] = 0;
        dv[((b * S + j) * a.Hkv + hk) * D + x] = 0;
      }
    for (int64_t h = hk * G; h < (hk + 1) * G; ++h) {
      auto at = [&](const float *base, int64_t i) {
        return base + ((b * S + i) * a.Hq + h) * D;
      };
      auto kvAt = [&](const float *base, int64_t j) {
        return base + ((b * S + j) * a.Hkv + hk) * D;
      };
      for (int64_t i = 0; i < S; ++i)
        for (int64_t x = 0; x < D; ++x)
          dq[((b * S + i) * a.Hq + h) * D + x] = 0;
      for (int64_t i0 = 0; i0 < S; i0 += kTile) {
        int64_t ni = std::min(kTile, S - i0);
        for (int64_t i = 0; i < ni; ++i) {
          float d = 0;
          for (int64_t x = 0; x < D; ++x)
            d += at(dout, i0 + i)[x] * at(out, i0 + i)[x];
          delta[i] = d;
        }
        for (int64_t j0 = 0; j0 <= i0 + ni - 1; j0 += kTile) {
          int64_t nj = std::min(kTile, S - j0);
          for (int64_t i = 0; i < ni; ++i) {
            float l = lse[(b * a.Hq + h) * S + i0 + i];
            for (int64_t j = 0; j < nj; ++j) {
              float sd = 0, dp = 0;
              for (int64_t x = 0; x < D; ++x) {
                sd += at(q, i0 + i)[x] * kvAt(k, j0 + j)[x];
                dp += at(dout, i0 + i)[x] * kvAt(v, j0 + j)[x];
              }
              float pv = j0 + j <= i0 + i ? std::exp(sd * scale - l) : 0.0f;
              p[i * kTile + j] = pv;
              ds[i * kTile + j] = pv * (dp - delta[i]);
            }
          }
          for (int64_t i = 0; i < ni; ++i)
            for (int64_t j = 0; j < nj; ++j) {
              float pv = p[i * kTile + j], dsv = ds[i * kTile + j] * scale;
              float *dqi = dq + ((b * S + i0 + i) * a.Hq + h) * D;
              float *dkj = dk + ((b * S + j0 + j) * a.Hkv + hk) * D;
              float *dvj = dv + ((b * S + j0 + j) * a.Hkv + hk) * D;
              for (int64_t x = 0; x < D; ++x) {
                dqi[x] += dsv * kvAt(k, j0 + j)[x];
                dkj[x] += dsv * at(q, i0 + i)[x];
                dvj[x] += pv * at(dout, i0 + i)[x];
              }
            }
        }
      }
    }
  });
}

struct AttnData {
  AttnCase a;
  std::vector<float> q, k, v, out, lse, dout, dq, dk, dv;
  float scale;
  explicit AttnData(AttnCase c) : a(c) {
    q = randomVector(a.B * a.S * a.Hq * a.D, 3);
    k = randomVector(a.B * a.S * a.Hkv * a.D, 4);
    v = randomVector(a.B * a.S * a.Hkv * a.D, 5);
    dout = randomVector(q.size(), 6);
    out.resize(q.size());
    lse.resize(a.B * a.Hq * a.S);
    dq.resize(q.size());
    dk.resize(k.size());
    dv.resize(v.size());
    scale = 1.0f / std::sqrt(float(a.D));
  }
  /// Causal FLOPs of QK^T and PV: 2 GEMMs over S(S+1)/2 pairs.
  double forwardFlops() const {
    return 4.0 * a.B * a.Hq * a.D * (double(a.S) * (a.S + 1) / 2);
  }
  /// The usual convention: backward = 2.5 x forward (5 GEMMs vs 2).
  double backwardFlops() const { return 2.5 * forwardFlops(); }
};

const AttnCase kAttn{1, 2048, 32, 32, 128};

void BM_AttnForwardBaseline(benchmark::State &state) {
  AttnData d(kAttn);
  for (auto _ : state)
    baselineForward(d.a, d.q.data(), d.k.data(), d.v.data(), d.scale,
                    d.out.data(), d.lse.data());
  setFlops(state, d.forwardFlops());
}
void BM_AttnForwardHalide(benchmark::State &state) {
  AttnData d(kAttn);
  for (auto _ : state)
    if (attentionForward(d.a.B, d.a.S, d.a.Hq, d.a.Hkv, d.a.D, d.q.data(),
                         d.k.data(), d.v.data(), d.scale, d.out.data(),
                         d.lse.data()))
      state.SkipWithError("attention forward failed");
  setFlops(state, d.forwardFlops());
}
void BM_AttnBackwardBaseline(benchmark::State &state) {
  AttnData d(kAttn);
  attentionForward(d.a.B, d.a.S, d.a.Hq, d.a.Hkv, d.a.D, d.q.data(), d.k.data(),
                   d.v.data(), d.scale, d.out.data(), d.lse.data());
  for (auto _ : state)
    baselineBackward(d.a, d.q.data(), d.k.data(), d.v.data(), d.out.data(),
                     d.dout.data(), d.lse.data(), d.scale, d.dq.data(),
                     d.dk.data(), d.dv.data());
  setFlops(state, d.backwardFlops());
}
void BM_AttnBackwardHalide(benchmark::State &state) {
  AttnData d(kAttn);
  attentionForward(d.a.B, d.a.S, d.a.Hq, d.a.Hkv, d.a.D, d.q.data(), d.k.data(),
                   d.v.data(), d.scale, d.out.data(), d.lse.data());
  for (auto _ : state)
    if (attentionBackward(d.a.B, d.a.S, d.a.Hq, d.a.Hkv, d.a.D, d.q.data(),
                          d.k.data(), d.v.data(), d.out.data(), d.dout.data(),
                          d.lse.data(), d.scale, d.dq.data(), d.dk.data(),
                          d.dv.data()))
      state.SkipWithError("attention backward failed");
  setFlops(state, d.backwardFlops());
}

/// The same in bf16 (the runtime's 16-bit attention: bf16 loads and
/// stores, fp32 arithmetic).
struct AttnData16 {
  AttnData base;
  std::vector<uint16_t> q, k, v, out, dout, dq, dk, dv;
  explicit AttnData16(AttnCase c) : base(c) {
    auto half = [](const std::vector<float> &from) {
      std::vector<uint16_t> bits(from.size());
      toHalf(Half::BF16, int64_t(from.size()), from.data(), bits.data());
      return bits;
    };
    q = half(base.q);
    k = half(base.k);
    v = half(base.v);
    dout = half(base.dout);
    out.resize(q.size());
    dq.resize(q.size());
    dk.resize(k.size());
    dv.resize(v.size());
  }
  int forward() {
    const AttnCase &a = base.a;
    return attentionForward(Half::BF16, a.B, a.S, a.Hq, a.Hkv, a.D, q.data(),
                            k.data(), v.data(), base.scale, out.data(),
                            base.lse.data());
  }
  int backward() {
    const AttnCase &a = base.a;
    return attentionBackward(Half::BF16, a.B, a.S, a.Hq, a.Hkv, a.D, q.data(),
                             k.data(), v.data(), out.data(), dout.data(),
                             base.lse.data(), base.scale, dq.data(), dk.data(),
                             dv.data());
  }
};
/// The bf16 attention forward, or the backward after one forward, of
/// `shape` on `products`.
void runAttn16(benchmark::State &state, Bf16Products products,
               const AttnCase &shape, bool backward) {
  setBf16Products(products);
  AttnData16 d(shape);
  if (backward && d.forward())
    state.SkipWithError("bf16 attention forward failed");
  for (auto _ : state)
    if (backward ? d.backward() : d.forward())
      state.SkipWithError(backward ? "bf16 attention backward failed"
                                   : "bf16 attention forward failed");
  setFlops(state, backward ? d.base.backwardFlops() : d.base.forwardFlops());
}
void BM_AttnForwardHalideBf16(benchmark::State &state, Bf16Products products) {
  runAttn16(state, products, kAttn, /*backward=*/false);
}
void BM_AttnBackwardHalideBf16(benchmark::State &state, Bf16Products products) {
  runAttn16(state, products, kAttn, /*backward=*/true);
}

//===----------------------------------------------------------------------===//
// The 85M training step's attention and update, one core
//===----------------------------------------------------------------------===//

/// bench/training/llama-85m.json's attention per micro-batch of the dp 2 plan
/// (2 sequences of 256 tokens, 12 heads of 64), as a rank of
/// compare-torch.py runs it: bf16 on this CPU's product path
/// (kernels::bf16Products), one core.
const AttnCase kAttn85m{2, 256, 12, 12, 64};

/// Runs a benchmark body on one Halide worker, as a training rank with a
/// core of its own does, and gives the pool back its default afterwards.
/// Only before the pool's first parallel loop (see registerAll).
struct OneCore {
  OneCore() { setNumThreads(1); }
  ~OneCore() { setNumThreads(0); }
};

void BM_AttnForward85m(benchmark::State &state, Bf16Products products) {
  OneCore one;
  runAttn16(state, products, kAttn85m, /*backward=*/false);
}
void BM_AttnBackward85m(benchmark::State &state, Bf16Products products) {
  OneCore one;
  runAttn16(state, products, kAttn85m, /*backward=*/true);
}

/// One layer's ZeRO-1 shard of the 85M model in the dp 2 bf16 plan: 3.54M
/// parameters (half of a layer's 7.08M), updated by the averaged AdamW that
/// reads the received sum and the own part of the bf16 gradient and writes
/// the fp32 master, m, v and the bf16 view. Four shards are cycled so that
/// every call streams its operands from memory, as the step's updates do.
/// `count` elements on transparent huge pages, as the runtime's arenas hold
/// a training step's tensors (Arena.cpp).
template <typename T> class HugePageArray {
public:
  explicit HugePageArray(size_t count) : count(count) {
    bytes = (count * sizeof(T) + kHuge - 1) / kHuge * kHuge;
    void *map = mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
      std::fprintf(stderr, "bench: cannot map %zu bytes\n", bytes);
      std::exit(1);
    }
    mapping = map;
    auto base = (reinterpret_cast<uintptr_t>(map) + kHuge - 1) & ~(kHuge - 1);
    data = reinterpret_cast<T *>(base);
    madvise(data, bytes, MADV_HUGEPAGE);
  }
  ~HugePageArray() { munmap(mapping, bytes + kHuge); }
  HugePageArray(const HugePageArray &) = delete;
  HugePageArray &operator=(const HugePageArray &) = delete;
  void fill(T value) { std::fill(data, data + count, value); }
  void copy(const std::vector<T> &from) {
    std::copy(from.begin(), from.begin() + count, data);
  }
  T *data;

private:
  static constexpr uintptr_t kHuge = 2u << 20;
  size_t count, bytes;
  void *mapping;
};

struct AdamWShards {
  static constexpr int64_t kElements = 3539712;
  static constexpr int kShards = 4;
  struct Shard {
    HugePageArray<float> p{kElements}, m{kElements}, v{kElements};
    HugePageArray<uint16_t> others{kElements}, own{kElements}, view{kElements};
  };
  std::vector<std::unique_ptr<Shard>> shards;
  AdamWParams params;
  int next = 0;
  AdamWShards() {
    std::vector<float> p = randomVector(kElements, 8);
    std::vector<float> g = randomVector(kElements, 7);
    std::vector<uint16_t> g16(kElements);
    toHalf(Half::BF16, kElements, g.data(), g16.data());
    for (int i = 0; i < kShards; ++i) {
      auto s = std::make_unique<Shard>();
      s->p.copy(p);
      s->m.fill(1e-3f);
      s->v.fill(1e-6f);
      s->others.copy(g16);
      s->own.copy(g16);
      s->view.fill(0);
      shards.push_back(std::move(s));
    }
    params.lr = 3e-4f;
    params.weightDecay = 0.1f;
    params.step = 5;
  }
  int update() {
    Shard &s = *shards[next];
    next = (next + 1) % kShards;
    return adamwAveraged(kElements, s.p.data, s.others.data, s.own.data,
                         Half::BF16, 2, s.m.data, s.v.data, params, s.view.data,
                         Half::BF16);
  }
};

/// Bytes an element of the averaged bf16 update moves: p, m, v read and
/// written (24), the two gradient parts read (4), the view written (2).
constexpr int64_t kAdamWBytesPerElement = 30;

void BM_AdamW85mShard(benchmark::State &state) {
  OneCore one;
  AdamWShards d;
  for (auto _ : state)
    if (d.update())
      state.SkipWithError("averaged AdamW failed");
  state.SetBytesProcessed(int64_t(state.iterations()) * AdamWShards::kElements *
                          kAdamWBytesPerElement);
}

/// The same bytes streamed by memcpy on one core (30 B an element: a copy
/// reads and writes 15), over buffers cycled alike: a reference rate for
/// this core's streams, not a ceiling (glibc's large copies store
/// non-temporally; the update streams nine arrays at once).
void BM_AdamW85mMemcpy(benchmark::State &state) {
  const size_t bytes = size_t(AdamWShards::kElements) * 15;
  std::vector<std::unique_ptr<HugePageArray<std::byte>>> from, to;
  for (int i = 0; i < AdamWShards::kShards; ++i) {
    from.push_back(std::make_unique<HugePageArray<std::byte>>(bytes));
    to.push_back(std::make_unique<HugePageArray<std::byte>>(bytes));
    from.back()->fill(std::byte(1));
    to.back()->fill(std::byte(0));
  }
  int next = 0;
  for (auto _ : state) {
    std::memcpy(to[next]->data, from[next]->data, bytes);
    benchmark::ClobberMemory();
    next = (next + 1) % AdamWShards::kShards;
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * AdamWShards::kElements *
                          kAdamWBytesPerElement);
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

/// A k-inner operand of `rows` rows of `words` 32-bit words (bf16 k-pairs or
/// fp32 values) packed into `width`-wide panels.
struct PackCase {
  const char *name;
  int64_t rows, words;
  int width;
};
const PackCase kPackCases[] = {
    // bench/training/llama-85m.json in bf16, 512-token micro-batch.
    {"85m_b_nt_768x384", 768, 384, 32},   // W_q..W_o
    {"85m_b_nt_2048x384", 2048, 384, 32}, // W_gate, W_up
    {"85m_b_nt_768x1024", 768, 1024, 32}, // W_down: rows 4 KiB apart
    {"85m_a_512x384", 512, 384, 12},      // activations, h 768
    {"85m_a_512x1024", 512, 1024, 12},    // activations, ffn 2048
};

/// Copies of a PackCase's source, 64 MiB in all (at least 2), cycled so
/// each call finds its source evicted from the caches.
struct PackData {
  std::vector<std::vector<uint32_t>> sources;
  std::vector<uint32_t> packed;
  size_t next = 0;
  explicit PackData(const PackCase &c) {
    const size_t words = size_t(c.rows * c.words);
    const size_t copies = std::max<size_t>(2, (64u << 20) / (4 * words));
    sources.assign(copies, std::vector<uint32_t>(words, 0x3f803f80u));
    packed.resize(size_t((c.rows + c.width - 1) / c.width * c.width) *
                  size_t(c.words));
  }
  const std::vector<uint32_t> &source() {
    next = (next + 1) % sources.size();
    return sources[next];
  }
};

void setBytes(benchmark::State &state, const PackCase &c) {
  state.SetBytesProcessed(int64_t(state.iterations()) * c.rows * c.words * 4);
}

void BM_PackWords(benchmark::State &state, PackCase c) {
  PackData d(c);
  for (auto _ : state)
    if (packWordsTransposed(d.source().data(), c.rows, c.words, c.width,
                            c.words, d.packed.data()))
      state.SkipWithError("packWordsTransposed failed");
  setBytes(state, c);
}

void BM_PackMemcpy(benchmark::State &state, PackCase c) {
  PackData d(c);
  for (auto _ : state) {
    const std::vector<uint32_t> &src = d.source();
    std::memcpy(d.packed.data(), src.data(), src.size() * 4);
    benchmark::ClobberMemory();
  }
  setBytes(state, c);
}

/// FLOP/s of one core's register-only FMA (fp32) or vdpbf16ps (bf16) loop
/// (ratrain-calibrate's measurement kernels), best of 5 runs of ~0.1 s.
double corePeak(bool bf16) {
  float sink = 0;
  double best = 0;
  const int64_t iterations = 20'000'000;
  for (int r = 0; r < 5; ++r) {
    auto start = std::chrono::steady_clock::now();
    double flops = bf16 ? ratrain::calibrate::bf16DotKernel(iterations, &sink)
                        : ratrain::calibrate::fp32FmaKernel(iterations, &sink);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (flops > 0 && seconds > 0)
      best = std::max(best, flops / seconds);
  }
  return sink == 12345.0f ? 0 : best;
}

/// (Halide benchmark, baseline benchmark) pairs whose ratio is printed.
std::vector<std::pair<std::string, std::string>> &pairs() {
  static std::vector<std::pair<std::string, std::string>> p;
  return p;
}

/// (packing benchmark, memcpy benchmark) pairs whose ratio is printed.
std::vector<std::pair<std::string, std::string>> &packPairs() {
  static std::vector<std::pair<std::string, std::string>> p;
  return p;
}

/// `chosen`: this CPU's bf16 product path, which the 85M benchmarks run.
void registerAll(Bf16Products chosen) {
  // The one-core benchmarks come first: Halide starts its pool's workers at
  // the first parallel loop, and a pool that already has a worker per core
  // keeps running tasks on them after setNumThreads(1) (measured: the 85M
  // attention 1.6x faster than on one core).
  auto inMilliseconds = [](benchmark::internal::Benchmark *b) {
    b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3);
  };
  for (auto [name, fn] :
       {std::pair{"attention/forward/85m_bf16_one_core", BM_AttnForward85m},
        std::pair{"attention/backward/85m_bf16_one_core", BM_AttnBackward85m}})
    inMilliseconds(benchmark::RegisterBenchmark(name, fn, chosen));
  inMilliseconds(benchmark::RegisterBenchmark(
      "adamw/85m_shard_bf16_averaged/one_core", BM_AdamW85mShard));
  inMilliseconds(benchmark::RegisterBenchmark(
      "adamw/85m_shard_bf16_averaged/memcpy", BM_AdamW85mMemcpy));
  packPairs().push_back({"adamw/85m_shard_bf16_averaged/one_core",
                         "adamw/85m_shard_bf16_averaged/memcpy"});
  for (const GemmCase &c : kGemmCases) {
    bool big = c.M * c.N * c.K > (int64_t(1) << 33);
    auto setup = [&](benchmark::internal::Benchmark *b) {
      b->Unit(benchmark::kMillisecond)->UseRealTime();
      if (big)
        b->Iterations(3);
      else
        b->MinTime(0.3);
    };
    std::string base = std::string("gemm/") + c.name;
    setup(benchmark::RegisterBenchmark((base + "/openblas_f32").c_str(),
                                       BM_GemmOpenblasF32, c));
    setup(benchmark::RegisterBenchmark((base + "/halide_f32").c_str(),
                                       BM_GemmHalideF32, c));
    setup(benchmark::RegisterBenchmark((base + "/halide_bf16_dot").c_str(),
                                       BM_GemmHalide16, c, Half::BF16,
                                       Bf16Products::Dot));
    setup(benchmark::RegisterBenchmark((base + "/halide_bf16_widen").c_str(),
                                       BM_GemmHalide16, c, Half::BF16,
                                       Bf16Products::Widen));
    setup(benchmark::RegisterBenchmark((base + "/halide_f16").c_str(),
                                       BM_GemmHalide16, c, Half::F16,
                                       Bf16Products::Widen));
    for (const char *v :
         {"halide_f32", "halide_bf16_dot", "halide_bf16_widen", "halide_f16"})
      pairs().push_back({base + "/" + v, base + "/openblas_f32"});
  }
  benchmark::RegisterBenchmark("attention/forward/baseline_blocked_cpp",
                               BM_AttnForwardBaseline)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1);
  benchmark::RegisterBenchmark("attention/forward/halide", BM_AttnForwardHalide)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(3);
  benchmark::RegisterBenchmark("attention/backward/baseline_blocked_cpp",
                               BM_AttnBackwardBaseline)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1);
  benchmark::RegisterBenchmark("attention/backward/halide",
                               BM_AttnBackwardHalide)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(3);
  for (Bf16Products products : {Bf16Products::Dot, Bf16Products::Widen}) {
    std::string suffix = std::string("_") + bf16ProductsName(products);
    benchmark::RegisterBenchmark(
        ("attention/forward/halide_bf16" + suffix).c_str(),
        BM_AttnForwardHalideBf16, products)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(3);
    benchmark::RegisterBenchmark(
        ("attention/backward/halide_bf16" + suffix).c_str(),
        BM_AttnBackwardHalideBf16, products)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(3);
  }
  for (const PackCase &c : kPackCases) {
    std::string base = std::string("pack/words/") + c.name;
    benchmark::RegisterBenchmark((base + "/memcpy").c_str(), BM_PackMemcpy, c)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->MinTime(0.2);
    benchmark::RegisterBenchmark((base + "/transpose").c_str(), BM_PackWords, c)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->MinTime(0.2);
    packPairs().push_back({base + "/transpose", base + "/memcpy"});
  }
  pairs().push_back(
      {"attention/forward/halide", "attention/forward/baseline_blocked_cpp"});
  pairs().push_back(
      {"attention/backward/halide", "attention/backward/baseline_blocked_cpp"});
}

/// Benchmark names as Google Benchmark reports them (with suffixes).
const Result *find(const std::string &prefix) {
  for (auto &[name, r] : results())
    if (name.rfind(prefix + "/", 0) == 0 || name == prefix)
      return &r;
  return nullptr;
}

} // namespace

int main(int argc, char **argv) {
  // The CPU's own choice, before the benchmarks set each path in turn.
  const Bf16Products chosen = bf16Products();
  registerAll(chosen);
  benchmark::Initialize(&argc, argv);
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nRatios (baseline time / Halide time, same run):\n");
  for (auto &[fast, slow] : pairs()) {
    const Result *f = find(fast), *s = find(slow);
    if (!f || !s || f->seconds <= 0)
      continue;
    std::printf("  %-44s %6.2fx  (%7.1f vs %7.1f GFLOP/s, baseline %s)\n",
                fast.c_str(), s->seconds / f->seconds,
                f->flops / f->seconds * 1e-9, s->flops / s->seconds * 1e-9,
                slow.c_str());
  }
  std::printf("\nStreams from memory (the packs' source, the update's 30 B an "
              "element; memcpy of the same bytes, same run):\n");
  for (auto &[pack, copy] : packPairs()) {
    const Result *p = find(pack), *c = find(copy);
    if (!p || !c || p->seconds <= 0 || c->seconds <= 0)
      continue;
    std::printf("  %-44s %5.2f of memcpy's rate\n", pack.c_str(),
                c->seconds / p->seconds);
  }
  // Fractions of this machine's peaks, measured now on one core and scaled
  // by the cores the kernels ran on (Halide's default thread pool: all).
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  double peak32 = corePeak(false) * cores, peak16 = corePeak(true) * cores;
  std::printf("\nMeasured peaks (%u cores): fp32 FMA %.1f GFLOP/s, bf16 "
              "vdpbf16ps %.1f GFLOP/s%s\n",
              cores, peak32 * 1e-9, peak16 * 1e-9,
              peak16 > 0 ? "" : " (no AVX512-BF16: not measured)");
  // The bf16 peak of a path is the rate its products run at: vdpbf16ps's,
  // or the fp32 FMA's for the widening kernels.
  for (const char *name :
       {"attention/forward/halide", "attention/backward/halide",
        "attention/forward/halide_bf16_dot",
        "attention/backward/halide_bf16_dot",
        "attention/forward/halide_bf16_widen",
        "attention/backward/halide_bf16_widen"}) {
    const Result *r = find(name);
    if (!r || r->seconds <= 0)
      continue;
    bool dot = std::string(name).find("bf16_dot") != std::string::npos;
    double peak = dot ? peak16 : peak32;
    if (peak <= 0)
      continue;
    std::printf("  %-38s %7.1f GFLOP/s = %5.1f%% of the %s peak\n", name,
                r->flops / r->seconds * 1e-9,
                100 * r->flops / r->seconds / peak,
                dot ? "vdpbf16ps" : "fp32 FMA");
  }
  // This CPU's bf16 peak: that of the path its runs take.
  double bf16Peak = chosen == Bf16Products::Dot ? peak16 : peak32;
  // The 85M model's attention ran on one core: against one core's peak.
  for (const char *name : {"attention/forward/85m_bf16_one_core",
                           "attention/backward/85m_bf16_one_core"}) {
    const Result *r = find(name);
    if (!r || r->seconds <= 0 || bf16Peak <= 0)
      continue;
    std::printf("  %-38s %7.1f GFLOP/s = %5.1f%% of one core's bf16 peak\n",
                name, r->flops / r->seconds * 1e-9,
                100 * r->flops / r->seconds / (bf16Peak / cores));
  }
  std::printf("  this CPU's bf16 path (kernels::bf16Products): %s, bf16 peak "
              "%.1f GFLOP/s\n",
              bf16ProductsName(chosen), bf16Peak * 1e-9);
  std::printf("  (issue 17's target: attention/backward/halide_bf16_%s at >= "
              "50%% of the bf16 peak, S = %lld, D = %lld)\n",
              bf16ProductsName(chosen), (long long)kAttn.S, (long long)kAttn.D);
  TileConfig t = tileConfig();
  std::printf("\nTiles from the machine file: GSM %lld B, AM %lld B/core, "
              "%d cores; GEMM MRxNR %dx%d, KC %d, NB %d, MB %d (one-panel K "
              "into a bf16 C: widened %d, dot %d)\n",
              (long long)t.gsmBytes, (long long)t.amBytesPerCore, t.cores,
              t.gemmMr, t.gemmNr, t.gemmKc, t.gemmNb, t.gemmMb,
              t.gemmKcOnePanelWidened, t.gemmKcOnePanelDot);
  benchmark::Shutdown();
  return 0;
}
