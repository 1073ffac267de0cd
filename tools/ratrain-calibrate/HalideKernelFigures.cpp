//===- HalideKernelFigures.cpp - ratrain-calibrate's kernel measurements --===//

#include "HalideKernelFigures.h"

#include "ratrain/kernels/Kernels.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>

using namespace ratrain;
using namespace ratrain::calibrate;
namespace kn = ratrain::kernels;

namespace {

/// CPU time of the whole process (all threads): the Halide kernels run on
/// their own thread pool, and a descheduled thread does not count.
double processCpuSeconds(const std::function<void()> &f) {
  timespec start, end;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  f();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
  return double(end.tv_sec - start.tv_sec) +
         1e-9 * double(end.tv_nsec - start.tv_nsec);
}

/// Best rate (work per CPU-second of the process, i.e. per busy core) of
/// `reps` timed runs of a few calls each, after one warm-up call; 0 when a
/// call fails. `work` is the work of one call.
double kernelRate(int reps, double work, const std::function<int()> &call) {
  if (call() != 0)
    return 0;
  int inner = int(std::clamp(5e9 / work, 1.0, 50.0));
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    int status = 0;
    double t = processCpuSeconds([&] {
      for (int i = 0; i < inner && status == 0; ++i)
        status = call();
    });
    if (status != 0)
      return 0;
    if (t > 0)
      best = std::max(best, work * inner / t);
  }
  return best;
}

std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (float &f : v) {
    x = x * 1664525u + 1013904223u;
    f = float(int32_t(x >> 8) - (1 << 23)) / float(1 << 23);
  }
  return v;
}

} // namespace

/// The NT GEMM (Y = X W^T) in fp32 and with bf16 operands.
void ratrain::calibrate::measureGemm(GemmFigure &g, int reps) {
  std::vector<float> a = randomFloats(g.m * g.k, 1),
                     b = randomFloats(g.n * g.k, 2), c(g.m * g.n);
  std::vector<uint16_t> ah(a.size()), bh(b.size());
  kn::toHalf(kn::Half::BF16, a.size(), a.data(), ah.data());
  kn::toHalf(kn::Half::BF16, b.size(), b.data(), bh.data());
  double flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
  g.fp32 = kernelRate(reps, flops, [&] {
    return kn::gemm(kn::GemmForm::NT, g.m, g.n, g.k, a.data(), b.data(),
                    c.data());
  });
  g.bf16 = kernelRate(reps, flops, [&] {
    return kn::gemm16(kn::GemmForm::NT, kn::Half::BF16, g.m, g.n, g.k,
                      ah.data(), bh.data(), c.data());
  });
}

namespace {

/// Best seconds of one call over `reps` timed runs (CPU seconds of the
/// process, i.e. of the busy cores), each of enough calls to last about
/// 20 ms, after one warm-up call; 0 when a call fails.
double kernelSeconds(int reps, const std::function<int()> &call) {
  int status = 0;
  double once = processCpuSeconds([&] { status = call(); });
  if (status != 0)
    return 0;
  int inner = int(std::clamp(0.02 / std::max(once, 1e-7), 1.0, 20000.0));
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    double t = processCpuSeconds([&] {
      for (int i = 0; i < inner && status == 0; ++i)
        status = call();
    });
    if (status != 0)
      return 0;
    if (t > 0 && (best == 0 || t / inner < best))
      best = t / inner;
  }
  return best;
}

/// One GEMM shape of the time fit (docs/machine-model.md, "gemm_fit").
struct GemmFitShape {
  kn::GemmForm form;
  int64_t m, n, k;
  float beta;
};

/// The shapes the GEMM time model is fitted to: a micro-batch of the tiny
/// LLaMA in the three forms (256 tokens, h 256, ffn 688), small and middling
/// squares, a 85M-class layer (h 768, ffn 2048) and LLaMA-7B's projection.
constexpr GemmFitShape kGemmFitShapes[] = {
    {kn::GemmForm::NT, 64, 64, 64, 0},
    {kn::GemmForm::NT, 128, 128, 128, 0},
    {kn::GemmForm::NT, 32, 256, 256, 0},
    {kn::GemmForm::NT, 256, 256, 256, 0},
    {kn::GemmForm::NT, 256, 128, 256, 0},
    {kn::GemmForm::NT, 256, 688, 256, 0},
    {kn::GemmForm::NN, 256, 256, 688, 1},
    {kn::GemmForm::TN, 688, 256, 256, 1},
    {kn::GemmForm::NT, 512, 512, 512, 0},
    {kn::GemmForm::NT, 256, 2048, 768, 0},
    {kn::GemmForm::TN, 768, 2048, 256, 1},
    {kn::GemmForm::NN, 256, 768, 2048, 0},
    {kn::GemmForm::NT, 1024, 1024, 1024, 0},
    {kn::GemmForm::NT, 1024, 4096, 4096, 0}};

} // namespace

/// Times every fit shape with fp32 and with bf16 operands on one cluster;
/// the samples' seconds are per call. A training step's working set
/// (weights, gradients, optimizer states, saved activations) is at least the
/// size of the last-level cache, so a GEMM rarely finds its operands where
/// the call before left them: consecutive calls cycle through copies of the
/// operands that together fill `workingSetBytes` (the last-level cache).
/// Measured on operands left in L2 by the call before, the tiny LLaMA's
/// micro-batch GEMMs run 10-35% faster than in training; with this working
/// set they run as in a pp 2 step (docs/benchmarks.md).
void ratrain::calibrate::measureGemmFitSamples(
    int reps, int64_t workingSetBytes, std::vector<KernelTimeSample> &f32,
    std::vector<KernelTimeSample> &bf16) {
  for (const GemmFitShape &g : kGemmFitShapes) {
    int64_t aRows = g.form == kn::GemmForm::TN ? g.k : g.m;
    int64_t aCols = g.form == kn::GemmForm::TN ? g.m : g.k;
    int64_t bRows = g.form == kn::GemmForm::NT ? g.n : g.k;
    int64_t bCols = g.form == kn::GemmForm::NT ? g.k : g.n;
    int64_t aSize = aRows * aCols, bSize = bRows * bCols, cSize = g.m * g.n;
    int64_t copies =
        std::max<int64_t>(1, workingSetBytes / (4 * (aSize + bSize + cSize)));
    std::vector<float> a = randomFloats(aSize * copies, 7),
                       b = randomFloats(bSize * copies, 8),
                       c(cSize * copies, 0.0f);
    std::vector<uint16_t> ah(a.size()), bh(b.size()), ch(c.size(), 0);
    kn::toHalf(kn::Half::BF16, a.size(), a.data(), ah.data());
    kn::toHalf(kn::Half::BF16, b.size(), b.data(), bh.data());
    double flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
    double elements = double(aSize + bSize + cSize);
    int shapeReps = flops > 1e10 ? std::min(reps, 2) : reps;
    int64_t next = 0;
    double t32 = kernelSeconds(shapeReps, [&] {
      int64_t i = next++ % copies;
      return kn::gemm(g.form, g.m, g.n, g.k, a.data() + i * aSize,
                      b.data() + i * bSize, c.data() + i * cSize, g.beta);
    });
    // Into a bf16 C, as a 16-bit program calls it (the kernel reads C,
    // accumulates and rounds once; a K deeper than one panel is staged
    // through fp32 inside).
    double t16 = kernelSeconds(shapeReps, [&] {
      int64_t i = next++ % copies;
      return kn::gemm16To16(g.form, kn::Half::BF16, g.m, g.n, g.k,
                            ah.data() + i * aSize, bh.data() + i * bSize,
                            ch.data() + i * cSize, g.beta);
    });
    if (t32 > 0)
      f32.push_back({flops, elements, t32});
    if (t16 > 0)
      bf16.push_back({flops, elements, t16});
  }
}

/// Causal GQA attention; FLOPs counted as the cost model does: 4 S^2/2 D per
/// head forward (QK^T and PV over the causal half), 2.5 times that backward.
void ratrain::calibrate::measureAttention(AttentionFigure &f, int reps) {
  int64_t t = f.b * f.s, qw = f.hq * f.d, kw = f.hkv * f.d;
  std::vector<float> q = randomFloats(t * qw, 3), k = randomFloats(t * kw, 4),
                     v = randomFloats(t * kw, 5),
                     dout = randomFloats(t * qw, 6);
  std::vector<float> out(t * qw), lse(f.b * f.hq * f.s), dq(t * qw), dk(t * kw),
      dv(t * kw);
  float scale = 1.0f / std::sqrt(float(f.d));
  double flops = 4.0 * double(f.s) * double(f.s) / 2 * double(f.d) *
                 double(f.hq) * double(f.b);
  f.forward = kernelRate(reps, flops, [&] {
    return kn::attentionForward(f.b, f.s, f.hq, f.hkv, f.d, q.data(), k.data(),
                                v.data(), scale, out.data(), lse.data());
  });
  f.backward = kernelRate(reps, 2.5 * flops, [&] {
    return kn::attentionBackward(f.b, f.s, f.hq, f.hkv, f.d, q.data(), k.data(),
                                 v.data(), out.data(), dout.data(), lse.data(),
                                 scale, dq.data(), dk.data(), dv.data());
  });
  // The bf16 kernels (products on vdpbf16ps, or widened: kernels::bf16Products)
  // on the same values.
  auto bf16 = [](const std::vector<float> &x) {
    std::vector<uint16_t> bits(x.size());
    kn::toHalf(kn::Half::BF16, int64_t(x.size()), x.data(), bits.data());
    return bits;
  };
  std::vector<uint16_t> q16 = bf16(q), k16 = bf16(k), v16 = bf16(v),
                        d16 = bf16(dout), o16(t * qw), dq16(t * qw),
                        dk16(t * kw), dv16(t * kw);
  f.forwardBf16 = kernelRate(reps, flops, [&] {
    return kn::attentionForward(kn::Half::BF16, f.b, f.s, f.hq, f.hkv, f.d,
                                q16.data(), k16.data(), v16.data(), scale,
                                o16.data(), lse.data());
  });
  f.backwardBf16 = kernelRate(reps, 2.5 * flops, [&] {
    return kn::attentionBackward(kn::Half::BF16, f.b, f.s, f.hq, f.hkv, f.d,
                                 q16.data(), k16.data(), v16.data(), o16.data(),
                                 d16.data(), lse.data(), scale, dq16.data(),
                                 dk16.data(), dv16.data());
  });
}

/// AdamW over n parameters with the bf16 view: reads p, g, m, v, writes p,
/// m, v and the view (30 bytes per parameter). Bytes/s per core.
double ratrain::calibrate::measureAdamW(int64_t n, int reps) {
  std::vector<float> p = randomFloats(n, 7), g = randomFloats(n, 8), m(n, 0.0f),
                     v(n, 0.0f);
  std::vector<uint16_t> view(n);
  kn::AdamWParams params;
  return kernelRate(reps, 30.0 * double(n), [&] {
    return kn::adamw(n, p.data(), g.data(), m.data(), v.data(), params,
                     view.data(), kn::Half::BF16);
  });
}

/// RMSNorm forward of [T, H]: reads x, writes y (8 bytes per element).
double ratrain::calibrate::measureRmsNorm(int64_t t, int64_t h, int reps) {
  std::vector<float> x = randomFloats(t * h, 9), w = randomFloats(h, 10),
                     y(t * h), rstd(t);
  return kernelRate(reps, 8.0 * double(t) * double(h), [&] {
    return kn::rmsnormForward(t, h, x.data(), w.data(), 1e-5f, y.data(),
                              rstd.data());
  });
}
