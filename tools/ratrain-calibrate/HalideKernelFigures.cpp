//===- HalideKernelFigures.cpp - ratrain-calibrate's kernel measurements --===//

#include "HalideKernelFigures.h"
#include "ConcurrentPeaks.h"

#include "ratrain/kernels/Kernels.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

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

/// The shapes the GEMM time model is fitted to: a micro-batch of the tiny
/// LLaMA in the three forms (256 tokens, h 256, ffn 688), small and middling
/// squares, a 85M-class layer (h 768, ffn 2048) and LLaMA-7B's projection.
constexpr GemmShape kGemmFitShapes[] = {
    {GemmForm::NT, 64, 64, 64},       {GemmForm::NT, 128, 128, 128},
    {GemmForm::NT, 32, 256, 256},     {GemmForm::NT, 256, 256, 256},
    {GemmForm::NT, 256, 128, 256},    {GemmForm::NT, 256, 688, 256},
    {GemmForm::NN, 256, 256, 688},    {GemmForm::TN, 688, 256, 256},
    {GemmForm::NT, 512, 512, 512},    {GemmForm::NT, 256, 2048, 768},
    {GemmForm::TN, 768, 2048, 256},   {GemmForm::NN, 256, 768, 2048},
    {GemmForm::NT, 1024, 1024, 1024}, {GemmForm::NT, 1024, 4096, 4096}};

kn::GemmForm kernelForm(GemmForm form) {
  switch (form) {
  case GemmForm::NT:
    return kn::GemmForm::NT;
  case GemmForm::NN:
    return kn::GemmForm::NN;
  case GemmForm::TN:
    return kn::GemmForm::TN;
  }
  return kn::GemmForm::NT;
}

} // namespace

llvm::ArrayRef<GemmShape> ratrain::calibrate::gemmFitShapes() {
  return kGemmFitShapes;
}

/// A training step's working set (weights, gradients, optimizer states,
/// saved activations) is at least the size of the last-level cache, so a
/// GEMM rarely finds its weight, saved activation or result where the call
/// before left them: consecutive calls cycle B and C through copies that
/// together fill `workingSetBytes` (the last-level cache). A is the operand
/// the kernel before has just written in every form (the forward's input
/// X, the backward's output gradient dY), so it is one array, in the caches
/// as it is in a step. Measured on every operand left in L2 by the call
/// before, the tiny LLaMA's micro-batch GEMMs run 10-35% faster than in
/// training; with every operand cycled, 2-24% slower (its weight-gradient
/// TN calls the most; docs/benchmarks.md). The forward (NT) writes its
/// result (beta 0); the input and weight gradients (NN, TN) accumulate into
/// theirs (beta 1), as a step's micro-batches after the first do.
void ratrain::calibrate::measureGemmShapes(int reps, int64_t workingSetBytes,
                                           llvm::ArrayRef<GemmShape> shapes,
                                           std::vector<double> &f32,
                                           std::vector<double> &bf16) {
  f32.assign(shapes.size(), 0);
  bf16.assign(shapes.size(), 0);
  // Each shape's A and its copies of B side by side in one pool of random
  // values (fp32 and bf16), its copies of C in another, both made once for
  // all shapes: filling a working set of a few hundred MiB per shape took
  // longer than timing it. (The results never feed an operand.)
  struct Layout {
    int64_t aSize, bSize, cSize, copies;
  };
  std::vector<Layout> layouts;
  int64_t operandsSize = 0, resultsSize = 0;
  for (const GemmShape &g : shapes) {
    int64_t aSize = g.m * g.k, bSize = g.n * g.k, cSize = g.m * g.n;
    int64_t copies =
        std::max<int64_t>(1, workingSetBytes / (4 * (bSize + cSize)));
    layouts.push_back({aSize, bSize, cSize, copies});
    operandsSize = std::max(operandsSize, aSize + bSize * copies);
    resultsSize = std::max(resultsSize, cSize * copies);
  }
  std::vector<float> operands = randomFloats(size_t(operandsSize), 7),
                     results(size_t(resultsSize), 0.0f);
  std::vector<uint16_t> operands16(operands.size()),
      results16(results.size(), 0);
  kn::toHalf(kn::Half::BF16, int64_t(operands.size()), operands.data(),
             operands16.data());
  for (size_t s = 0; s < shapes.size(); ++s) {
    const GemmShape &g = shapes[s];
    const kn::GemmForm form = kernelForm(g.form);
    const float beta = g.form == GemmForm::NT ? 0.0f : 1.0f;
    const auto [aSize, bSize, cSize, copies] = layouts[s];
    const float *a = operands.data(), *b = a + aSize;
    float *c = results.data();
    const uint16_t *ah = operands16.data(), *bh = ah + aSize;
    uint16_t *ch = results16.data();
    double flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
    int shapeReps = flops > 1e10 ? std::min(reps, 2) : reps;
    int64_t next = 0;
    f32[s] = kernelSeconds(shapeReps, [&] {
      int64_t i = next++ % copies;
      return kn::gemm(form, g.m, g.n, g.k, a, b + i * bSize, c + i * cSize,
                      beta);
    });
    // Into a bf16 C, as a 16-bit program calls it (the kernel reads C,
    // accumulates and rounds once; a K deeper than one panel is staged
    // through fp32 inside).
    bf16[s] = kernelSeconds(shapeReps, [&] {
      int64_t i = next++ % copies;
      return kn::gemm16To16(form, kn::Half::BF16, g.m, g.n, g.k, ah,
                            bh + i * bSize, ch + i * cSize, beta);
    });
  }
}

GemmCalibration ratrain::calibrate::calibrateGemms(
    int reps, int64_t cacheBytes, int64_t cores, double fp32PeakPerCore,
    double bf16PeakPerCore, llvm::ArrayRef<GemmCall> modelCalls,
    int64_t modelStepBytes, llvm::StringRef models, llvm::raw_ostream &notes) {
  std::vector<GemmShape> shapes(gemmFitShapes().begin(), gemmFitShapes().end());
  const size_t fitShapes = shapes.size();
  int64_t leftToFit = 0;
  for (const GemmCall &call : modelCalls) {
    GemmShape shape{call.form, call.m, call.n, call.k};
    if (shape.flops() > kMaxMeasuredGemmFlops) {
      ++leftToFit;
      continue;
    }
    if (std::none_of(shapes.begin(), shapes.end(), [&](const GemmShape &g) {
          return g.form == shape.form && g.m == shape.m && g.n == shape.n &&
                 g.k == shape.k;
        }))
      shapes.push_back(shape);
  }
  // The fit's shapes on operands from the last-level cache; the models'
  // calls on operands cycled through their step's working set.
  std::vector<double> f32Seconds, bf16Seconds, f32Model, bf16Model;
  measureGemmShapes(reps, cacheBytes,
                    llvm::ArrayRef(shapes).take_front(fitShapes), f32Seconds,
                    bf16Seconds);
  measureGemmShapes(reps, modelGemmWorkingSet(modelStepBytes, cacheBytes),
                    llvm::ArrayRef(shapes).drop_front(fitShapes), f32Model,
                    bf16Model);
  llvm::append_range(f32Seconds, f32Model);
  llvm::append_range(bf16Seconds, bf16Model);

  // Per operand type, on the cluster's peak (the seconds are per
  // CPU-second of one cluster's threads: divided by the cores, per
  // cluster-second).
  GemmCalibration result;
  for (auto [name, seconds, peak, fit, measured] :
       {std::tuple<const char *, std::vector<double> &, double, KernelTimeFit &,
                   std::vector<MeasuredGemm> &>{
            "f32", f32Seconds, fp32PeakPerCore * double(cores), result.fit.f32,
            result.measured.f32},
        {"f16", bf16Seconds, bf16PeakPerCore * double(cores), result.fit.f16,
         result.measured.f16}}) {
    std::vector<KernelTimeSample> samples;
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (seconds[i] <= 0)
        continue;
      double perCall = seconds[i] / double(cores);
      measured.push_back(
          {shapes[i].form, shapes[i].m, shapes[i].n, shapes[i].k, perCall});
      if (i < fitShapes)
        samples.push_back({shapes[i].flops(), shapes[i].elements(), perCall});
    }
    std::optional<double> worst = fitAndReport(
        (llvm::Twine("gemm_fit.") + name).str(), samples, peak, fit);
    if (!worst)
      continue;
    notes << llvm::formatv(
        "#  [M]   gemm_fit.{0}: {1} shapes from 64^3 to 1024 x 4096 x 4096 "
        "in the three forms ({2}; operands cycled through {4} MiB), "
        "least squares of the relative error: worst shape {3:f1}%\n",
        name, samples.size(),
        std::string(name) == "f32" ? "fp32 operands" : "bf16 operands",
        *worst * 100, cacheBytes >> 20);
    // How far the fit is from each of the models' calls (what
    // gemm_measured corrects).
    double below = 0, above = 0;
    for (const MeasuredGemm &g : llvm::ArrayRef(measured).drop_front(
             std::min(measured.size(), fitShapes))) {
      GemmShape shape{g.form, g.m, g.n, g.k};
      double error =
          fit.seconds(shape.flops(), shape.elements(), peak) / g.seconds - 1;
      below = std::min(below, error);
      above = std::max(above, error);
    }
    if (measured.size() > fitShapes)
      llvm::errs() << llvm::formatv(
          "  gemm_measured.{0}: {1} calls ({2} of the models'); the fit "
          "is off by {3:f1}% to {4:+f1}% on the models' calls\n",
          name, measured.size(), measured.size() - fitShapes, below * 100,
          above * 100);
  }
  notes << llvm::formatv(
      "#  [M]   gemm_measured: the fit's {0} shapes{1}, each form, m, n and "
      "k timed as above (a model's calls on operands cycled through its "
      "step's working set, 16 bytes a parameter, at most 256 MiB){2}\n",
      fitShapes,
      models.empty() ? std::string()
                     : llvm::formatv(" and {0} GEMM calls of {1}",
                                     shapes.size() - fitShapes, models)
                           .str(),
      leftToFit ? llvm::formatv("; {0} calls above {1:e1} FLOPs left to the "
                                "fit",
                                leftToFit, kMaxMeasuredGemmFlops)
                      .str()
                : std::string());
  return result;
}

namespace {

/// One attention shape: its figures (seconds per call, CPU-seconds of the
/// process) and whether it is one of the two the efficiencies average.
struct AttentionShape {
  const char *what;
  int64_t b, s, hq, hkv, d;
  bool efficiencyShape;
  double forward = 0, backward = 0;         ///< fp32 kernels
  double forwardBf16 = 0, backwardBf16 = 0; ///< bf16 kernels
  /// Forward FLOPs as the cost model counts them: 4 S^2/2 D per head (QK^T
  /// and PV over the causal half); the backward 2.5 times that.
  double flops() const { return 4.0 * scores() * double(d); }
  /// Causal score entries (the time fits' elements).
  double scores() const {
    return double(s) * double(s) / 2 * double(hq) * double(b);
  }
  /// Query rows (the time fits' rows).
  double rows() const { return double(s) * double(hq) * double(b); }
};

/// Times one shape's forward and backward, fp32 and bf16, on operands that
/// cycle through copies filling `workingSetBytes` (as measureGemmShapes
/// does: in a step the attention reads q, k and v that other kernels wrote
/// since its last call on them).
void measureAttention(AttentionShape &f, int reps, int64_t workingSetBytes) {
  const int64_t t = f.b * f.s, qSize = t * f.hq * f.d, kvSize = t * f.hkv * f.d,
                lseSize = f.b * f.hq * f.s;
  // fp32 q, k, v, o, dO, dq, dk, dv and lse of one call.
  const int64_t callBytes = 4 * (4 * qSize + 4 * kvSize + lseSize);
  const int64_t copies =
      std::clamp<int64_t>(workingSetBytes / callBytes, 1, 64);
  std::vector<float> q = randomFloats(qSize * copies, 3),
                     k = randomFloats(kvSize * copies, 4),
                     v = randomFloats(kvSize * copies, 5),
                     dout = randomFloats(qSize * copies, 6);
  std::vector<float> out(qSize * copies), lse(lseSize * copies),
      dq(qSize * copies), dk(kvSize * copies), dv(kvSize * copies);
  const float scale = 1.0f / std::sqrt(float(f.d));
  const int shapeReps = 2.5 * f.flops() > 1e10 ? std::min(reps, 2) : reps;
  // Runs the forward on every copy (the backward reads that copy's o and
  // lse), then times the forward and the backward cycling through them.
  auto time = [&](const std::function<int(int64_t)> &forward,
                  const std::function<int(int64_t)> &backward,
                  double &forwardSeconds, double &backwardSeconds) {
    for (int64_t i = 0; i < copies; ++i)
      if (forward(i) != 0)
        return;
    int64_t next = 0;
    forwardSeconds =
        kernelSeconds(shapeReps, [&] { return forward(next++ % copies); });
    backwardSeconds =
        kernelSeconds(shapeReps, [&] { return backward(next++ % copies); });
  };
  time(
      [&](int64_t i) {
        return kn::attentionForward(f.b, f.s, f.hq, f.hkv, f.d, &q[i * qSize],
                                    &k[i * kvSize], &v[i * kvSize], scale,
                                    &out[i * qSize], &lse[i * lseSize]);
      },
      [&](int64_t i) {
        return kn::attentionBackward(f.b, f.s, f.hq, f.hkv, f.d, &q[i * qSize],
                                     &k[i * kvSize], &v[i * kvSize],
                                     &out[i * qSize], &dout[i * qSize],
                                     &lse[i * lseSize], scale, &dq[i * qSize],
                                     &dk[i * kvSize], &dv[i * kvSize]);
      },
      f.forward, f.backward);
  // The bf16 kernels (products on vdpbf16ps, or widened:
  // kernels::bf16Products) on the same values.
  auto bf16 = [](const std::vector<float> &x) {
    std::vector<uint16_t> bits(x.size());
    kn::toHalf(kn::Half::BF16, int64_t(x.size()), x.data(), bits.data());
    return bits;
  };
  std::vector<uint16_t> q16 = bf16(q), k16 = bf16(k), v16 = bf16(v),
                        d16 = bf16(dout), o16(out.size()), dq16(dq.size()),
                        dk16(dk.size()), dv16(dv.size());
  time(
      [&](int64_t i) {
        return kn::attentionForward(kn::Half::BF16, f.b, f.s, f.hq, f.hkv, f.d,
                                    &q16[i * qSize], &k16[i * kvSize],
                                    &v16[i * kvSize], scale, &o16[i * qSize],
                                    &lse[i * lseSize]);
      },
      [&](int64_t i) {
        return kn::attentionBackward(
            kn::Half::BF16, f.b, f.s, f.hq, f.hkv, f.d, &q16[i * qSize],
            &k16[i * kvSize], &v16[i * kvSize], &o16[i * qSize],
            &d16[i * qSize], &lse[i * lseSize], scale, &dq16[i * qSize],
            &dk16[i * kvSize], &dv16[i * kvSize]);
      },
      f.forwardBf16, f.backwardBf16);
}

} // namespace

llvm::Error ratrain::calibrate::calibrateAttention(
    int reps, int64_t workingSetBytes, int64_t cores, double fp32PeakPerCore,
    double bf16PeakPerCore, AttentionCalibration &result,
    llvm::raw_ostream &notes) {
  AttentionShape shapes[] = {
      // The efficiencies' two: the tiny LLaMA's h 256 as 64-wide heads and
      // LLaMA-7B's heads at 1024 tokens.
      {"h 256 as 64-wide heads", 1, 256, 4, 2, 64, true},
      {"LLaMA-7B's heads at 1024 tokens", 1, 1024, 32, 32, 128, true},
      // The fits' others: narrow and wide heads, short and long sequences,
      // a batch of sequences.
      {"the tiny LLaMA", 1, 256, 8, 4, 32, false},
      {"the tiny LLaMA, 4 sequences", 4, 256, 8, 4, 32, false},
      {"an 85M-class layer", 1, 256, 12, 12, 64, false},
      {"32-wide heads at 1024 tokens", 1, 1024, 8, 8, 32, false},
      {"128-wide heads at 512 tokens", 1, 512, 8, 8, 128, false},
      {"64-wide heads at 2048 tokens", 1, 2048, 4, 4, 64, false},
      {"2 sequences of 512, 12 heads of 64 on 4", 2, 512, 12, 4, 64, false},
      {"128-wide heads at 4096 tokens", 1, 4096, 2, 2, 128, false}};
  notes << llvm::formatv(
      "#      attention shapes (operands cycled through {0} MiB); the time "
      "fits by least squares of the relative error, elements = the causal "
      "score entries, rows = the query rows:\n",
      workingSetBytes >> 20);
  double sums[4] = {};
  int efficiencyShapes = 0;
  // Per fit: fp32 forward, fp32 backward, bf16 forward, bf16 backward.
  std::vector<KernelTimeSample> samples[4];
  for (AttentionShape &f : shapes) {
    measureAttention(f, reps, workingSetBytes);
    const double seconds[4] = {f.forward, f.backward, f.forwardBf16,
                               f.backwardBf16};
    const double flops[4] = {f.flops(), 2.5 * f.flops(), f.flops(),
                             2.5 * f.flops()};
    const double perCorePeak[4] = {fp32PeakPerCore, fp32PeakPerCore,
                                   bf16PeakPerCore, bf16PeakPerCore};
    double rates[4];
    for (int i = 0; i < 4; ++i) {
      if (!(seconds[i] > 0))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("the Halide attention kernels failed on B {0} S {1} "
                          "Hq {2} Hkv {3} D {4}",
                          f.b, f.s, f.hq, f.hkv, f.d));
      rates[i] = flops[i] / seconds[i];
      // Per CPU-second of the cluster's threads: per cluster-second.
      samples[i].push_back(
          {flops[i], f.scores(), seconds[i] / double(cores), f.rows()});
      if (f.efficiencyShape)
        sums[i] += rates[i] / perCorePeak[i];
    }
    efficiencyShapes += f.efficiencyShape;
    llvm::errs() << llvm::formatv(
        "  Halide attention B {0} S {1} Hq {2} Hkv {3} D {4}: forward "
        "{5:f1} GFLOP/s, backward {6:f1}; bf16 forward {7:f1}, backward "
        "{8:f1}\n",
        f.b, f.s, f.hq, f.hkv, f.d, rates[0] / 1e9, rates[1] / 1e9,
        rates[2] / 1e9, rates[3] / 1e9);
    notes << llvm::formatv(
        "#  [M]   B {0}, S {1}, Hq {2}, Hkv {3}, D {4} ({5}): forward "
        "{6:f1} GFLOP/s per core = {7:f3}, backward {8:f1} = {9:f3} of the "
        "FP32 peak; bf16 forward {10:f1} = {11:f3}, backward {12:f1} = "
        "{13:f3} of the bf16 peak\n",
        f.b, f.s, f.hq, f.hkv, f.d, f.what, rates[0] / 1e9,
        rates[0] / fp32PeakPerCore, rates[1] / 1e9, rates[1] / fp32PeakPerCore,
        rates[2] / 1e9, rates[2] / bf16PeakPerCore, rates[3] / 1e9,
        rates[3] / bf16PeakPerCore);
  }
  double *efficiencies[4] = {&result.forward, &result.backward,
                             &result.forwardF16, &result.backwardF16};
  for (int i = 0; i < 4; ++i)
    *efficiencies[i] = std::clamp(sums[i] / efficiencyShapes, 0.05, 1.0);
  struct {
    const char *key;
    KernelTimeFit &fit;
    double peak;
  } fits[4] = {{"attention_forward_fit.f32", result.forwardFit.f32,
                fp32PeakPerCore * double(cores)},
               {"attention_backward_fit.f32", result.backwardFit.f32,
                fp32PeakPerCore * double(cores)},
               {"attention_forward_fit.f16", result.forwardFit.f16,
                bf16PeakPerCore * double(cores)},
               {"attention_backward_fit.f16", result.backwardFit.f16,
                bf16PeakPerCore * double(cores)}};
  for (int i = 0; i < 4; ++i)
    if (std::optional<double> worst =
            fitAndReport(fits[i].key, samples[i], fits[i].peak, fits[i].fit))
      notes << llvm::formatv("#  [M]   {0}: the {1} attention shapes above, "
                             "worst shape {2:f1}%\n",
                             fits[i].key, samples[i].size(), *worst * 100);
  return llvm::Error::success();
}

std::optional<double>
ratrain::calibrate::fitAndReport(llvm::StringRef label,
                                 llvm::ArrayRef<KernelTimeSample> samples,
                                 double peak, KernelTimeFit &fit) {
  llvm::Expected<KernelTimeFit> fitted = fitKernelTime(samples, peak);
  if (!fitted) {
    llvm::errs() << "  warning: no " << label << ": "
                 << llvm::toString(fitted.takeError()) << "\n";
    return std::nullopt;
  }
  fit = *fitted;
  double worst = maxRelativeError(fit, samples, peak);
  std::string rows =
      fit.rowSeconds > 0
          ? llvm::formatv("{0:f1} ns per row, ", fit.rowSeconds * 1e9).str()
          : std::string();
  llvm::errs() << llvm::formatv("  {0} ({1} shapes): efficiency {2:f3}, "
                                "{3:f3} ns per element, {4}{5:f2} us per "
                                "call; worst shape {6:f1}%\n",
                                label, samples.size(), fit.efficiency,
                                fit.elementSeconds * 1e9, rows,
                                fit.callSeconds * 1e6, worst * 100);
  return worst;
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

double ratrain::calibrate::measureOptimizerUpdate(int64_t n, int reps,
                                                  unsigned threads,
                                                  bool sixteenBit) {
  struct Arrays {
    std::vector<float> p, g, m, v;
    std::vector<uint16_t> g16, view;
  };
  std::vector<Arrays> arrays(threads);
  for (unsigned t = 0; t < threads; ++t) {
    Arrays &a = arrays[t];
    a.p = randomFloats(n, 7 + t);
    a.g = randomFloats(n, 8 + t);
    a.m.assign(n, 0.0f);
    a.v.assign(n, 0.0f);
    if (sixteenBit) {
      a.g16.resize(n);
      a.view.resize(n);
      kn::toHalf(kn::Half::BF16, n, a.g.data(), a.g16.data());
      std::vector<float>().swap(a.g);
    }
  }
  kn::AdamWParams params;
  auto call = [&](unsigned t) {
    Arrays &a = arrays[t];
    if (sixteenBit)
      return kn::adamw(n, a.p.data(), a.g16.data(), kn::Half::BF16, a.m.data(),
                       a.v.data(), params, a.view.data(), kn::Half::BF16);
    return kn::adamw(n, a.p.data(), a.g.data(), a.m.data(), a.v.data(), params);
  };
  const double work = (sixteenBit ? 26.0 : 28.0) * double(n);
  const int inner = int(std::clamp(5e9 / work, 1.0, 50.0));
  return bestConcurrentRate(threads, reps, inner, work,
                            [&](unsigned t, int) { return call(t); });
}

std::pair<double, double> ratrain::calibrate::measureOptimizerBandwidths(
    int64_t n, int reps, unsigned clusters, bool sixteenBit) {
  double alone = measureOptimizerUpdate(n, reps, 1, sixteenBit);
  double together = clusters > 1
                        ? measureOptimizerUpdate(n, reps, clusters, sixteenBit)
                        : alone;
  if (alone <= 0 || together <= 0)
    return {0, 0};
  return {std::min(together, alone), alone};
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
