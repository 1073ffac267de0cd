//===- ReduceLoops.cpp - The arithmetic of reducing collectives -----------===//
//
// The loops are written branch-free (the NaN test of the bf16 rounding is a
// select) so the compiler vectorizes them, and compiled three times: for
// the baseline of the build, for AVX2 and for AVX-512BW (16-bit lanes). The
// first call picks the widest the CPU runs (`__builtin_cpu_supports`). The
// runtime is built for the baseline, so without the dispatch a bf16
// reduction ran at ~0.7 ns an element on the communication thread, which
// shares the rank's cores with the kernels; with AVX-512BW it takes ~0.2 ns.
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/ReduceLoops.h"
#include "ratrain/runtime/Half.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

using namespace ratrain::rt;

namespace {

/// One set of the loops; `dst` may equal an input.
struct Loops {
  void (*bf16Sum)(uint16_t *, const uint16_t *, const uint16_t *, uint64_t);
  void (*f32Sum)(float *, const float *, const float *, uint64_t);
  void (*bf16Divide)(uint16_t *, const uint16_t *, uint64_t, float);
  void (*bf16Scale)(uint16_t *, const uint16_t *, uint64_t, float);
  void (*f32Divide)(float *, const float *, uint64_t, float);
  void (*f32Scale)(float *, const float *, uint64_t, float);
  /// dst = (a + b) / d and (a + b) * s: the sum rounded, then the division
  /// or scaling, in one pass.
  void (*bf16SumDivide)(uint16_t *, const uint16_t *, const uint16_t *,
                        uint64_t, float);
  void (*bf16SumScale)(uint16_t *, const uint16_t *, const uint16_t *, uint64_t,
                       float);
  void (*f32SumDivide)(float *, const float *, const float *, uint64_t, float);
  void (*f32SumScale)(float *, const float *, const float *, uint64_t, float);
  const char *isa;
};

/// The element operations.
struct AddBF16 {
  uint16_t operator()(uint16_t a, uint16_t b) const {
    return floatToBF16(bf16ToFloat(a) + bf16ToFloat(b));
  }
};
struct AddF32 {
  float operator()(float a, float b) const { return a + b; }
};
struct DivideBF16 {
  float d;
  uint16_t operator()(uint16_t x) const {
    return floatToBF16(bf16ToFloat(x) / d);
  }
};
struct ScaleBF16 {
  float s;
  uint16_t operator()(uint16_t x) const {
    return floatToBF16(bf16ToFloat(x) * s);
  }
};
struct DivideF32 {
  float d;
  float operator()(float x) const { return x / d; }
};
struct ScaleF32 {
  float s;
  float operator()(float x) const { return x * s; }
};
/// `Then` applied to the rounded sum `Add` (the bits of the two passes).
template <typename Add, typename Then> struct SumThen {
  Then then;
  auto operator()(decltype(Add{}(0, 0)) a, decltype(Add{}(0, 0)) b) const {
    return then(Add{}(a, b));
  }
};

// The loops take `dst` aliasing an input as its own case, each a loop over
// arrays that do not overlap (`__restrict`): compilers vectorize those
// without a run-time overlap check, which clang fails for dst == a and then
// runs the scalar loop (2.2 ns an element against 0.2).

/// dst[i] = op(a[i], b[i]); `dst` may be `a` or `b`, no other overlap.
template <typename T, typename Op>
[[gnu::always_inline]] inline void binaryLoop(T *dst, const T *a, const T *b,
                                              uint64_t n, Op op) {
  if (dst == a) {
    T *__restrict x = dst;
    const T *__restrict y = b;
    for (uint64_t i = 0; i < n; ++i)
      x[i] = op(x[i], y[i]);
  } else if (dst == b) {
    T *__restrict y = dst;
    const T *__restrict x = a;
    for (uint64_t i = 0; i < n; ++i)
      y[i] = op(x[i], y[i]);
  } else {
    T *__restrict z = dst;
    const T *__restrict x = a;
    const T *__restrict y = b;
    for (uint64_t i = 0; i < n; ++i)
      z[i] = op(x[i], y[i]);
  }
}

/// dst[i] = op(src[i]); `dst` may be `src`, no other overlap.
template <typename T, typename Op>
[[gnu::always_inline]] inline void unaryLoop(T *dst, const T *src, uint64_t n,
                                             Op op) {
  if (dst == src) {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = op(dst[i]);
  } else {
    T *__restrict y = dst;
    const T *__restrict x = src;
    for (uint64_t i = 0; i < n; ++i)
      y[i] = op(x[i]);
  }
}

#define RATRAIN_REDUCE_LOOPS(NAME, ISA, ATTR)                                  \
  ATTR void bf16Sum##NAME(uint16_t *dst, const uint16_t *a, const uint16_t *b, \
                          uint64_t n) {                                        \
    binaryLoop(dst, a, b, n, AddBF16{});                                       \
  }                                                                            \
  ATTR void f32Sum##NAME(float *dst, const float *a, const float *b,           \
                         uint64_t n) {                                         \
    binaryLoop(dst, a, b, n, AddF32{});                                        \
  }                                                                            \
  ATTR void bf16Divide##NAME(uint16_t *dst, const uint16_t *src, uint64_t n,   \
                             float d) {                                        \
    unaryLoop(dst, src, n, DivideBF16{d});                                     \
  }                                                                            \
  ATTR void bf16Scale##NAME(uint16_t *dst, const uint16_t *src, uint64_t n,    \
                            float s) {                                         \
    unaryLoop(dst, src, n, ScaleBF16{s});                                      \
  }                                                                            \
  ATTR void f32Divide##NAME(float *dst, const float *src, uint64_t n,          \
                            float d) {                                         \
    unaryLoop(dst, src, n, DivideF32{d});                                      \
  }                                                                            \
  ATTR void f32Scale##NAME(float *dst, const float *src, uint64_t n,           \
                           float s) {                                          \
    unaryLoop(dst, src, n, ScaleF32{s});                                       \
  }                                                                            \
  ATTR void bf16SumDivide##NAME(uint16_t *dst, const uint16_t *a,              \
                                const uint16_t *b, uint64_t n, float d) {      \
    binaryLoop(dst, a, b, n, SumThen<AddBF16, DivideBF16>{{d}});               \
  }                                                                            \
  ATTR void bf16SumScale##NAME(uint16_t *dst, const uint16_t *a,               \
                               const uint16_t *b, uint64_t n, float s) {       \
    binaryLoop(dst, a, b, n, SumThen<AddBF16, ScaleBF16>{{s}});                \
  }                                                                            \
  ATTR void f32SumDivide##NAME(float *dst, const float *a, const float *b,     \
                               uint64_t n, float d) {                          \
    binaryLoop(dst, a, b, n, SumThen<AddF32, DivideF32>{{d}});                 \
  }                                                                            \
  ATTR void f32SumScale##NAME(float *dst, const float *a, const float *b,      \
                              uint64_t n, float s) {                           \
    binaryLoop(dst, a, b, n, SumThen<AddF32, ScaleF32>{{s}});                  \
  }                                                                            \
  constexpr Loops loops##NAME = {bf16Sum##NAME,                                \
                                 f32Sum##NAME,                                 \
                                 bf16Divide##NAME,                             \
                                 bf16Scale##NAME,                              \
                                 f32Divide##NAME,                              \
                                 f32Scale##NAME,                               \
                                 bf16SumDivide##NAME,                          \
                                 bf16SumScale##NAME,                           \
                                 f32SumDivide##NAME,                           \
                                 f32SumScale##NAME,                            \
                                 ISA};

RATRAIN_REDUCE_LOOPS(Baseline, "baseline", )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RATRAIN_REDUCE_LOOPS_X86 1
RATRAIN_REDUCE_LOOPS(Avx2, "avx2", __attribute__((target("avx2"))))
RATRAIN_REDUCE_LOOPS(Avx512bw, "avx512bw",
                     __attribute__((target("avx512f,avx512bw"))))
#endif

/// The loop sets this CPU runs, widest first.
std::vector<const Loops *> supportedLoops() {
  std::vector<const Loops *> sets;
#ifdef RATRAIN_REDUCE_LOOPS_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bw"))
    sets.push_back(&loopsAvx512bw);
  if (__builtin_cpu_supports("avx2"))
    sets.push_back(&loopsAvx2);
#endif
  sets.push_back(&loopsBaseline);
  return sets;
}

std::atomic<const Loops *> chosenLoops{nullptr};

const Loops &loops() {
  const Loops *chosen = chosenLoops.load(std::memory_order_acquire);
  if (!chosen) {
    chosen = supportedLoops().front();
    chosenLoops.store(chosen, std::memory_order_release);
  }
  return *chosen;
}

template <typename T, typename Op>
void apply(void *dst, const void *a, const void *b, uint64_t count, Op op) {
  T *to = static_cast<T *>(dst);
  const T *x = static_cast<const T *>(a);
  const T *y = static_cast<const T *>(b);
  for (uint64_t i = 0; i < count; ++i)
    to[i] = op(x[i], y[i]);
}

template <typename T>
void reduceTyped(void *dst, const void *a, const void *b, uint64_t count,
                 ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return apply<T>(dst, a, b, count, [](T x, T y) { return T(x + y); });
  case ReduceOp::Max:
    return apply<T>(dst, a, b, count, [](T x, T y) { return std::max(x, y); });
  case ReduceOp::Min:
    return apply<T>(dst, a, b, count, [](T x, T y) { return std::min(x, y); });
  }
}

template <typename T>
void divideIntegers(void *dst, const void *src, uint64_t count, int n) {
  T *a = static_cast<T *>(dst);
  const T *b = static_cast<const T *>(src);
  for (uint64_t i = 0; i < count; ++i)
    a[i] = T(b[i] / n); // in int or wider: no narrowed divisor
}

} // namespace

void ratrain::rt::reduceFrom(void *dst, const void *a, const void *b,
                             uint64_t count, ElemType type, ReduceOp op) {
  switch (type) {
  case ElemType::F32:
    if (op == ReduceOp::Sum || op == ReduceOp::Avg)
      return loops().f32Sum(static_cast<float *>(dst),
                            static_cast<const float *>(a),
                            static_cast<const float *>(b), count);
    return reduceTyped<float>(dst, a, b, count, op);
  case ElemType::I32:
    return reduceTyped<int32_t>(dst, a, b, count, op);
  case ElemType::I64:
    return reduceTyped<int64_t>(dst, a, b, count, op);
  case ElemType::U8:
    return reduceTyped<uint8_t>(dst, a, b, count, op);
  case ElemType::BF16:
    return loops().bf16Sum(static_cast<uint16_t *>(dst),
                           static_cast<const uint16_t *>(a),
                           static_cast<const uint16_t *>(b), count);
  case ElemType::F16:
    return apply<uint16_t>(dst, a, b, count, [](uint16_t x, uint16_t y) {
      return floatToF16(f16ToFloat(x) + f16ToFloat(y));
    });
  }
}

void ratrain::rt::reduceInto(void *dst, const void *src, uint64_t count,
                             ElemType type, ReduceOp op) {
  reduceFrom(dst, dst, src, count, type, op);
}

void ratrain::rt::divideInto(void *dst, const void *src, uint64_t count,
                             ElemType type, int n) {
  // x / 2^k and x * 2^-k round the same real number: the same bits.
  const bool powerOfTwo = n > 0 && (n & (n - 1)) == 0;
  const float d = float(n);
  switch (type) {
  case ElemType::F32: {
    auto *to = static_cast<float *>(dst);
    const auto *from = static_cast<const float *>(src);
    if (powerOfTwo)
      return loops().f32Scale(to, from, count, 1.0f / d);
    return loops().f32Divide(to, from, count, d);
  }
  case ElemType::BF16: {
    auto *to = static_cast<uint16_t *>(dst);
    const auto *from = static_cast<const uint16_t *>(src);
    if (powerOfTwo)
      return loops().bf16Scale(to, from, count, 1.0f / d);
    return loops().bf16Divide(to, from, count, d);
  }
  case ElemType::F16: {
    auto *to = static_cast<uint16_t *>(dst);
    const auto *from = static_cast<const uint16_t *>(src);
    for (uint64_t i = 0; i < count; ++i)
      to[i] = floatToF16(f16ToFloat(from[i]) / d);
    return;
  }
  case ElemType::I32:
    return divideIntegers<int32_t>(dst, src, count, n);
  case ElemType::I64:
    return divideIntegers<int64_t>(dst, src, count, n);
  case ElemType::U8:
    return divideIntegers<uint8_t>(dst, src, count, n);
  }
}

void ratrain::rt::averageFrom(void *dst, const void *a, const void *b,
                              uint64_t count, ElemType type, int n) {
  const bool powerOfTwo = n > 0 && (n & (n - 1)) == 0;
  const float d = float(n);
  switch (type) {
  case ElemType::F32: {
    auto *to = static_cast<float *>(dst);
    const auto *x = static_cast<const float *>(a);
    const auto *y = static_cast<const float *>(b);
    if (powerOfTwo)
      return loops().f32SumScale(to, x, y, count, 1.0f / d);
    return loops().f32SumDivide(to, x, y, count, d);
  }
  case ElemType::BF16: {
    auto *to = static_cast<uint16_t *>(dst);
    const auto *x = static_cast<const uint16_t *>(a);
    const auto *y = static_cast<const uint16_t *>(b);
    if (powerOfTwo)
      return loops().bf16SumScale(to, x, y, count, 1.0f / d);
    return loops().bf16SumDivide(to, x, y, count, d);
  }
  default:
    reduceFrom(dst, a, b, count, type, ReduceOp::Sum);
    return divideInto(dst, dst, count, type, n);
  }
}

const char *ratrain::rt::reduceLoopsIsa() { return loops().isa; }

bool ratrain::rt::useReduceLoops(std::string_view isa) {
  for (const Loops *set : supportedLoops())
    if (isa == set->isa) {
      chosenLoops.store(set, std::memory_order_release);
      return true;
    }
  return false;
}
