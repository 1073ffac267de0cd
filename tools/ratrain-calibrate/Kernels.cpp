//===- Kernels.cpp - Measurement kernels of ratrain-calibrate -------------===//

#include "Kernels.h"

#include <cmath>
#include <immintrin.h>

using namespace ratrain::calibrate;

const char *ratrain::calibrate::fmaIsaName() {
#if defined(__AVX512F__)
  return "avx512f";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2+fma";
#else
  return "scalar";
#endif
}

bool ratrain::calibrate::hasBF16Kernel() {
#if defined(__AVX512BF16__)
  return true;
#else
  return false;
#endif
}

double ratrain::calibrate::fp32FmaKernel(int64_t iterations, float *sink) {
#if defined(__AVX512F__)
  // 16 independent accumulators hide the FMA latency on two FMA pipes.
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm512_set1_ps(0.001f * i);
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  }
  __m512 total = acc[0];
  for (int i = 1; i < kChains; ++i)
    total = _mm512_add_ps(total, acc[i]);
  *sink += _mm512_reduce_add_ps(total);
  return double(iterations) * kChains * 16 * 2;
#elif defined(__AVX2__) && defined(__FMA__)
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm256_set1_ps(0.001f * i);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  float lanes[8];
  __m256 total = acc[0];
  for (int i = 1; i < kChains; ++i)
    total = _mm256_add_ps(total, acc[i]);
  _mm256_storeu_ps(lanes, total);
  for (float l : lanes)
    *sink += l;
  return double(iterations) * kChains * 8 * 2;
#else
  constexpr int kChains = 8;
  float acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = 0.001f * i;
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i)
      acc[i] = std::fma(acc[i], 0.999999f, 1e-7f);
  for (float a : acc)
    *sink += a;
  return double(iterations) * kChains * 2;
#endif
}

double ratrain::calibrate::bf16DotKernel(int64_t iterations, float *sink) {
#if defined(__AVX512BF16__)
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm512_set1_ps(0.001f * i);
  const __m512bh a =
      _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
  const __m512bh b =
      _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i)
      acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 total = acc[0];
  for (int i = 1; i < kChains; ++i)
    total = _mm512_add_ps(total, acc[i]);
  *sink += _mm512_reduce_add_ps(total);
  // 16 FP32 lanes x (2 multiplies + 2 adds).
  return double(iterations) * kChains * 16 * 4;
#else
  (void)iterations;
  (void)sink;
  return 0;
#endif
}

double ratrain::calibrate::triadKernel(float *a, const float *b, const float *c,
                                       size_t n, float s) {
#if defined(__AVX512F__)
  const __m512 vs = _mm512_set1_ps(s);
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(a + i, _mm512_fmadd_ps(_mm512_loadu_ps(c + i), vs,
                                            _mm512_loadu_ps(b + i)));
  for (; i < n; ++i)
    a[i] = b[i] + s * c[i];
#else
  for (size_t i = 0; i < n; ++i)
    a[i] = b[i] + s * c[i];
#endif
  return 12.0 * double(n);
}

double ratrain::calibrate::adamKernel(float *master, float *m, float *v,
                                      const float *grad, size_t n) {
  const float beta1 = 0.9f, beta2 = 0.999f, lr = 1e-4f, eps = 1e-8f;
#if defined(__AVX512F__)
  const __m512 b1 = _mm512_set1_ps(beta1), nb1 = _mm512_set1_ps(1 - beta1);
  const __m512 b2 = _mm512_set1_ps(beta2), nb2 = _mm512_set1_ps(1 - beta2);
  const __m512 vlr = _mm512_set1_ps(lr), veps = _mm512_set1_ps(eps);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 g = _mm512_loadu_ps(grad + i);
    __m512 mi =
        _mm512_fmadd_ps(b1, _mm512_loadu_ps(m + i), _mm512_mul_ps(nb1, g));
    __m512 vi = _mm512_fmadd_ps(b2, _mm512_loadu_ps(v + i),
                                _mm512_mul_ps(nb2, _mm512_mul_ps(g, g)));
    __m512 step = _mm512_div_ps(mi, _mm512_add_ps(_mm512_sqrt_ps(vi), veps));
    _mm512_storeu_ps(master + i,
                     _mm512_fnmadd_ps(vlr, step, _mm512_loadu_ps(master + i)));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
  }
  for (; i < n; ++i) {
#else
  for (size_t i = 0; i < n; ++i) {
#endif
    float g = grad[i];
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    master[i] -= lr * m[i] / (std::sqrt(v[i]) + eps);
  }
  return 28.0 * double(n);
}
