//===- EmittedProgramKernels.cpp - Compute kernels of emitted programs ---===//
//
// The compute helpers of EmittedProgram.h and their fp32 staging
// (EmittedProgramStaging.h): each runs one host kernel of runtime/kernels.
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/EmittedProgram.h"
#include "ratrain/runtime/EmittedProgramStaging.h"

#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/ReduceLoops.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ratrain::rt::emit {
namespace k = ratrain::kernels;

//===--- staging ----------------------------------------------------------===//
float *Staging::acquire(uint64_t n) {
  if (depth == slots.size())
    slots.emplace_back();
  Slot &slot = slots[depth++];
  if (slot.capacity < n) {
    slot.data.reset(new float[n]); // uninitialized: every use overwrites
    slot.capacity = n;
  }
  return slot.data.get();
}

Staging &staging() {
  static thread_local Staging pool;
  return pool;
}

bool isHalf(ElemType t) { return t == ElemType::BF16 || t == ElemType::F16; }
k::Half half(ElemType t) {
  return t == ElemType::F16 ? k::Half::F16 : k::Half::BF16;
}
bool overlaps(const Tensor &a, const Tensor &b) {
  return a.buf.data < b.buf.data + b.buf.bytes &&
         b.buf.data < a.buf.data + a.buf.bytes;
}

void check(int status, const char *kernel) {
  if (status != 0)
    fatal(std::string("kernel ") + kernel + " failed with status " +
          std::to_string(status));
  if (Runtime *r = Runtime::current())
    r->poll();
}

std::optional<k::Half>
commonHalf(std::initializer_list<const Tensor *> tensors) {
  std::optional<ElemType> type;
  for (const Tensor *t : tensors) {
    if (!isHalf(t->type) || (type && *type != t->type))
      return std::nullopt;
    type = t->type;
  }
  if (!type)
    return std::nullopt;
  return half(*type);
}

HalfIn::HalfIn(const Tensor &t, std::initializer_list<const Tensor *> outputs) {
  p = t.buf.as<uint16_t>();
  if (std::none_of(outputs.begin(), outputs.end(),
                   [&](const Tensor *out) { return overlaps(t, *out); }))
    return;
  uint64_t n = t.numel();
  // A float slot holds two 16-bit values.
  uint16_t *copy =
      reinterpret_cast<uint16_t *>(copied.emplace((n + 1) / 2).data());
  std::memcpy(copy, p, n * sizeof(uint16_t));
  p = copy;
}

In::In(const Tensor &t, bool copy) {
  uint64_t n = t.numel();
  if (t.type == ElemType::F32 && !copy) {
    p = t.buf.as<float>();
    return;
  }
  if (t.type != ElemType::F32 && !isHalf(t.type))
    fatal("a kernel operand is not a floating-point buffer");
  float *tmp = staged.emplace(n).data();
  if (t.type == ElemType::F32)
    std::memcpy(tmp, t.buf.as<float>(), n * sizeof(float));
  else
    check(k::fromHalf(half(t.type), int64_t(n), t.buf.as<uint16_t>(), tmp),
          "fromHalf");
  p = tmp;
}

Out::Out(const Tensor &tensor, bool load) : t(tensor) {
  if (t.type == ElemType::F32) {
    p = t.buf.as<float>();
    return;
  }
  if (!isHalf(t.type))
    fatal("a kernel result is not a floating-point buffer");
  p = staged.emplace(t.numel()).data();
  if (load)
    check(
        k::fromHalf(half(t.type), int64_t(t.numel()), t.buf.as<uint16_t>(), p),
        "fromHalf");
}

Out::~Out() {
  if (staged)
    check(k::toHalf(half(t.type), int64_t(t.numel()), p, t.buf.as<uint16_t>()),
          "toHalf");
}

namespace {
/// Runs one compute kernel call, adds its time to this rank's kernel seconds
/// of the step (StepTimers: wall and thread CPU clock reads, no allocation)
/// and, in a traced step, records it (Trace.h) with the shape `describe()`
/// returns (called only then), then checks its status. fp32 staging
/// conversions around it count as overhead.
template <typename Call, typename Describe>
void kernel(const char *name, Call &&call, Describe &&describe) {
  using Clock = StepTimers::Clock;
  // The CPU clock reads lie inside the wall-clock span: a read of the
  // thread's CPU clock settles its run time, where the scheduler may end its
  // turn on the core, and that wait belongs to the kernel call.
  Clock::time_point start = Clock::now();
  int64_t cpuStart = StepTimers::threadCpuNanoseconds();
  int status = call();
  int64_t cpuEnd = StepTimers::threadCpuNanoseconds();
  Clock::time_point end = Clock::now();
  if (Runtime *r = Runtime::current()) {
    r->stepTimers().addKernel(end - start, cpuEnd - cpuStart);
    if (r->tracer().recording())
      r->tracer().kernel(name, start, end, describe());
  }
  check(status, name);
}

template <typename Call> void kernel(const char *name, Call &&call) {
  kernel(name, std::forward<Call>(call), [] { return std::string(); });
}

/// A GEMM kernel call: traced with its shape, "NT 256x688x256" (form,
/// M x N x K).
template <typename Call>
void gemmKernel(const char *name, k::GemmForm form, int64_t M, int64_t N,
                int64_t K, Call &&call) {
  kernel(name, std::forward<Call>(call), [&] {
    const char *forms[] = {"NT", "NN", "TN"};
    return llvm::formatv("{0} {1}x{2}x{3}", forms[unsigned(form)], M, N, K)
        .str();
  });
}

/// The ALiBi slopes of `heads` heads (computed once per head count), or
/// null without `alibi`.
const float *alibiSlopes(bool alibi, int64_t heads) {
  if (!alibi)
    return nullptr;
  static std::vector<std::pair<int64_t, std::vector<float>>> cache;
  for (const auto &[n, slopes] : cache)
    if (n == heads)
      return slopes.data();
  std::vector<float> slopes(heads);
  k::alibiSlopes(heads, slopes.data());
  cache.emplace_back(heads, std::move(slopes));
  return cache.back().second.data();
}

/// Rotary tables and positions (t mod S) of one (S, D, theta, scaling),
/// built once.
struct Rope {
  int64_t S, D;
  double theta;
  std::optional<RopeScaling> scaling;
  std::vector<float> cosTable, sinTable;
  std::vector<int32_t> pos;
};
const Rope &ropeTables(int64_t T, int64_t S, int64_t D, double theta,
                       const std::optional<RopeScaling> &scaling) {
  static std::vector<std::unique_ptr<Rope>> cache;
  for (auto &r : cache)
    if (r->S == S && r->D == D && r->theta == theta && r->scaling == scaling &&
        int64_t(r->pos.size()) >= T)
      return *r;
  auto r = std::make_unique<Rope>();
  r->S = S;
  r->D = D;
  r->theta = theta;
  r->scaling = scaling;
  r->cosTable.resize(uint64_t(S) * uint64_t(D / 2));
  r->sinTable.resize(uint64_t(S) * uint64_t(D / 2));
  if (scaling) {
    std::vector<double> invFreq(uint64_t(D / 2));
    for (int64_t i = 0; i < D / 2; ++i)
      invFreq[uint64_t(i)] = scaling->invFreq(i, D, theta);
    k::ropeTables(S, D, invFreq.data(), r->cosTable.data(), r->sinTable.data());
  } else {
    k::ropeTables(S, D, theta, r->cosTable.data(), r->sinTable.data());
  }
  r->pos.resize(uint64_t(T));
  for (int64_t t = 0; t < T; ++t)
    r->pos[uint64_t(t)] = int32_t(t % S);
  cache.push_back(std::move(r));
  return *cache.back();
}

void ropeImpl(const Tensor &x, const Tensor &y, int64_t B, int64_t S,
              int64_t heads, int64_t D, double theta, bool backward,
              const std::optional<RopeScaling> &scaling) {
  int64_t T = B * S;
  const Rope &r = ropeTables(T, S, D, theta, scaling);
  if (std::optional<k::Half> t = commonHalf({&x, &y})) {
    HalfIn xi(x, {&y});
    uint16_t *yo = y.buf.as<uint16_t>();
    if (backward)
      kernel("ropeBackward", [&] {
        return k::ropeBackward(*t, T, heads, D, r.pos.data(), S,
                               r.cosTable.data(), r.sinTable.data(), xi.p, yo);
      });
    else
      kernel("ropeForward", [&] {
        return k::ropeForward(*t, T, heads, D, r.pos.data(), S,
                              r.cosTable.data(), r.sinTable.data(), xi.p, yo);
      });
    return;
  }
  In xi(x, overlaps(x, y));
  Out yo(y, false);
  if (backward)
    kernel("ropeBackward", [&] {
      return k::ropeBackward(T, heads, D, r.pos.data(), S, r.cosTable.data(),
                             r.sinTable.data(), xi.p, yo.p);
    });
  else
    kernel("ropeForward", [&] {
      return k::ropeForward(T, heads, D, r.pos.data(), S, r.cosTable.data(),
                            r.sinTable.data(), xi.p, yo.p);
    });
}

/// dst = beta dst + op(a) op(b) into fp32 `dst`: the 16-bit GEMM when a
/// and b share a 16-bit type, else the fp32 GEMM on staged operands.
void gemmInto(const Tensor &a, const Tensor &b, float *dst, k::GemmForm form,
              int64_t M, int64_t N, int64_t K, float beta) {
  if (isHalf(a.type) && a.type == b.type) {
    gemmKernel("gemm16", form, M, N, K, [&] {
      return k::gemm16(form, half(a.type), M, N, K, a.buf.as<uint16_t>(),
                       b.buf.as<uint16_t>(), dst, beta);
    });
    return;
  }
  In ai(a), bi(b);
  gemmKernel("gemm", form, M, N, K,
             [&] { return k::gemm(form, M, N, K, ai.p, bi.p, dst, beta); });
}
} // namespace

//===--- kernels ----------------------------------------------------------===//
/// c (+)= alpha op(a) op(b); M, N, K of the kernel's GemmForm.
void gemm(const Tensor &a, const Tensor &b, const Tensor &c, k::GemmForm form,
          int64_t M, int64_t N, int64_t K, bool accumulate, double alpha) {
  if (alpha == 1.0 && isHalf(c.type) && a.type == c.type && b.type == c.type &&
      !overlaps(c, a) && !overlaps(c, b)) {
    // All three 16-bit of one type: the kernel reads, accumulates and rounds
    // c itself (no fp32 copy of c outside the kernel).
    gemmKernel("gemm16", form, M, N, K, [&] {
      return k::gemm16To16(form, half(c.type), M, N, K, a.buf.as<uint16_t>(),
                           b.buf.as<uint16_t>(), c.buf.as<uint16_t>(),
                           accumulate ? 1.0f : 0.0f);
    });
    return;
  }
  if (alpha == 1.0) {
    // The kernel accumulates (beta = 1) into c itself (fp32) or into c's
    // staged fp32 copy (16-bit: loaded first, rounded back once).
    Out co(c, accumulate);
    gemmInto(a, b, co.p, form, M, N, K, accumulate ? 1.0f : 0.0f);
    return;
  }
  uint64_t elements = uint64_t(M) * uint64_t(N);
  Scratch product(elements);
  gemmInto(a, b, product.data(), form, M, N, K, 0.0f);
  Out co(c, accumulate);
  float s = float(alpha);
  for (uint64_t i = 0; i < elements; ++i)
    co.p[i] = (accumulate ? co.p[i] : 0.0f) + s * product.data()[i];
}

/// `alibi`: the scores get the ALiBi bias (mt3k.attention_fwd alibi).
void attentionFwd(const Tensor &q, const Tensor &kk, const Tensor &v,
                  const Tensor &o, const Tensor &lse, int64_t B, int64_t S,
                  int64_t Hq, int64_t Hkv, int64_t D, double scale, bool alibi,
                  int64_t window) {
  const float *slopes = alibiSlopes(alibi, Hq);
  std::optional<k::Half> t = commonHalf({&q, &kk, &v, &o});
  if (t && lse.type == ElemType::F32) {
    HalfIn qi(q, {&o, &lse}), ki(kk, {&o, &lse}), vi(v, {&o, &lse});
    kernel("attentionForward", [&] {
      return k::attentionForward(*t, B, S, Hq, Hkv, D, qi.p, ki.p, vi.p,
                                 float(scale), o.buf.as<uint16_t>(),
                                 lse.buf.as<float>(), slopes, window);
    });
    return;
  }
  In qi(q), ki(kk), vi(v);
  Out oo(o, false), lo(lse, false);
  kernel("attentionForward", [&] {
    return k::attentionForward(B, S, Hq, Hkv, D, qi.p, ki.p, vi.p, float(scale),
                               oo.p, lo.p, slopes, window);
  });
}

void attentionBwd(const Tensor &q, const Tensor &kk, const Tensor &v,
                  const Tensor &o, const Tensor &dout, const Tensor &lse,
                  const Tensor &dq, const Tensor &dk, const Tensor &dv,
                  int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                  double scale, bool alibi, int64_t window) {
  const float *slopes = alibiSlopes(alibi, Hq);
  std::optional<k::Half> t =
      commonHalf({&q, &kk, &v, &o, &dout, &dq, &dk, &dv});
  if (t && lse.type == ElemType::F32 && !overlaps(lse, dq) &&
      !overlaps(lse, dk) && !overlaps(lse, dv)) {
    // dq is written before dk and dv are computed: every input that shares
    // memory with a result is copied first.
    std::initializer_list<const Tensor *> outs = {&dq, &dk, &dv};
    HalfIn qi(q, outs), ki(kk, outs), vi(v, outs), oi(o, outs), di(dout, outs);
    kernel("attentionBackward", [&] {
      return k::attentionBackward(*t, B, S, Hq, Hkv, D, qi.p, ki.p, vi.p, oi.p,
                                  di.p, lse.buf.as<float>(), float(scale),
                                  dq.buf.as<uint16_t>(), dk.buf.as<uint16_t>(),
                                  dv.buf.as<uint16_t>(), slopes, window);
    });
    return;
  }
  In qi(q), ki(kk), vi(v), oi(o), di(dout), li(lse);
  Out dqo(dq, false), dko(dk, false), dvo(dv, false);
  kernel("attentionBackward", [&] {
    return k::attentionBackward(B, S, Hq, Hkv, D, qi.p, ki.p, vi.p, oi.p, di.p,
                                li.p, float(scale), dqo.p, dko.p, dvo.p, slopes,
                                window);
  });
}

void rmsnormFwd(const Tensor &x, const Tensor &w, const Tensor &y,
                const Tensor &rstd, int64_t T, int64_t H, double eps) {
  std::optional<k::Half> t = commonHalf({&x, &w, &y});
  if (t && rstd.type == ElemType::F32) {
    HalfIn xi(x, {&rstd}), wi(w, {&y, &rstd});
    kernel("rmsnormForward", [&] {
      return k::rmsnormForward(*t, T, H, xi.p, wi.p, float(eps),
                               y.buf.as<uint16_t>(), rstd.buf.as<float>());
    });
    return;
  }
  In xi(x), wi(w);
  Out yo(y, false), ro(rstd, false);
  kernel("rmsnormForward", [&] {
    return k::rmsnormForward(T, H, xi.p, wi.p, float(eps), yo.p, ro.p);
  });
}

/// The kernel accumulates dw; without `accumulate` dw is zeroed first.
void rmsnormBwd(const Tensor &x, const Tensor &w, const Tensor &rstd,
                const Tensor &dy, const Tensor &dx, const Tensor &dw, int64_t T,
                int64_t H, bool accumulate) {
  std::optional<k::Half> t = commonHalf({&x, &w, &dy, &dx, &dw});
  if (t && rstd.type == ElemType::F32 && !overlaps(rstd, dx) &&
      !overlaps(rstd, dw)) {
    HalfIn xi(x, {&dx, &dw}), wi(w, {&dx, &dw}), di(dy, {&dx, &dw});
    uint16_t *dwo = dw.buf.as<uint16_t>();
    if (!accumulate)
      std::fill(dwo, dwo + dw.numel(), uint16_t(0)); // +0.0 in bf16 and fp16
    kernel("rmsnormBackward", [&] {
      return k::rmsnormBackward(*t, T, H, xi.p, wi.p, rstd.buf.as<float>(),
                                di.p, dx.buf.as<uint16_t>(), dwo);
    });
    return;
  }
  In xi(x), wi(w), ri(rstd), di(dy, overlaps(dy, dx));
  Out dxo(dx, false), dwo(dw, accumulate);
  if (!accumulate)
    std::fill(dwo.p, dwo.p + dw.numel(), 0.0f);
  kernel("rmsnormBackward", [&] {
    return k::rmsnormBackward(T, H, xi.p, wi.p, ri.p, di.p, dxo.p, dwo.p);
  });
}

/// x, y [B, S, heads, D]; in place allowed (the input is copied).
void rope(const Tensor &x, const Tensor &y, int64_t B, int64_t S, int64_t heads,
          int64_t D, double theta, bool backward) {
  ropeImpl(x, y, B, S, heads, D, theta, backward, std::nullopt);
}

void rope(const Tensor &x, const Tensor &y, int64_t B, int64_t S, int64_t heads,
          int64_t D, double theta, bool backward,
          const ratrain::RopeScaling &scaling) {
  ropeImpl(x, y, B, S, heads, D, theta, backward, scaling);
}

void swiglu(const Tensor &g, const Tensor &u, const Tensor &h, int64_t T,
            int64_t F) {
  if (std::optional<k::Half> t = commonHalf({&g, &u, &h})) {
    HalfIn gi(g, {&h}), ui(u, {&h});
    kernel("swigluForward", [&] {
      return k::swigluForward(*t, T, F, gi.p, ui.p, h.buf.as<uint16_t>());
    });
    return;
  }
  In gi(g, overlaps(g, h)), ui(u, overlaps(u, h));
  Out ho(h, false);
  kernel("swigluForward",
         [&] { return k::swigluForward(T, F, gi.p, ui.p, ho.p); });
}

void swigluBwd(const Tensor &g, const Tensor &u, const Tensor &dh,
               const Tensor &dg, const Tensor &du, int64_t T, int64_t F) {
  if (std::optional<k::Half> t = commonHalf({&g, &u, &dh, &dg, &du})) {
    HalfIn gi(g, {&dg, &du}), ui(u, {&dg, &du}), hi(dh, {&dg, &du});
    kernel("swigluBackward", [&] {
      return k::swigluBackward(*t, T, F, gi.p, ui.p, hi.p,
                               dg.buf.as<uint16_t>(), du.buf.as<uint16_t>());
    });
    return;
  }
  bool alias = overlaps(g, dg) || overlaps(g, du) || overlaps(u, dg) ||
               overlaps(u, du) || overlaps(dh, dg) || overlaps(dh, du);
  In gi(g, alias), ui(u, alias), hi(dh, alias);
  Out dgo(dg, false), duo(du, false);
  kernel("swigluBackward", [&] {
    return k::swigluBackward(T, F, gi.p, ui.p, hi.p, dgo.p, duo.p);
  });
}

void residualAdd(const Tensor &a, const Tensor &b, const Tensor &c) {
  // Elementwise: c may alias a or b.
  if (std::optional<k::Half> t = commonHalf({&a, &b, &c})) {
    kernel("add", [&] {
      return k::add(*t, int64_t(c.numel()), a.buf.as<uint16_t>(),
                    b.buf.as<uint16_t>(), c.buf.as<uint16_t>());
    });
    return;
  }
  In ai(a), bi(b);
  Out co(c, false);
  kernel("add", [&] { return k::add(int64_t(c.numel()), ai.p, bi.p, co.p); });
}

void embedding(const Tensor &table, const Tensor &ids, const Tensor &x,
               int64_t T, int64_t V, int64_t H) {
  if (std::optional<k::Half> t = commonHalf({&table, &x})) {
    HalfIn ti(table, {&x});
    kernel("embeddingForward", [&] {
      return k::embeddingForward(*t, T, V, H, ids.buf.as<int32_t>(), ti.p,
                                 x.buf.as<uint16_t>());
    });
    return;
  }
  In ti(table);
  Out xo(x, false);
  kernel("embeddingForward", [&] {
    return k::embeddingForward(T, V, H, ids.buf.as<int32_t>(), ti.p, xo.p);
  });
}

namespace {
/// The 16-bit embedding gradient over the rows the tokens name only: those
/// rows are gathered and widened, every token's gradient row is added in
/// token order (the order in which the fp32 kernel adds into each element,
/// so the sums are the same), and the rows are rounded back once. Staging
/// the whole table instead would convert V x H elements (and hold them as
/// fp32) for at most T touched rows.
int embeddingBwdTouchedRows(k::Half type, const int32_t *ids,
                            const uint16_t *dout, uint16_t *table, int64_t T,
                            int64_t V, int64_t H) {
  // Tokens by row, then by position (grow-only: no allocation per step).
  static thread_local std::vector<std::pair<int32_t, int32_t>> byRow;
  byRow.resize(size_t(T));
  for (int64_t t = 0; t < T; ++t)
    byRow[size_t(t)] = {int32_t(std::clamp<int64_t>(ids[t], 0, V - 1)),
                        int32_t(t)};
  std::sort(byRow.begin(), byRow.end());
  // Whether the i-th token in row order is the first of its row.
  auto startsRow = [&](int64_t i) {
    return i == 0 || byRow[size_t(i)].first != byRow[size_t(i - 1)].first;
  };
  int64_t rows = 0;
  for (int64_t i = 0; i < T; ++i)
    rows += startsRow(i);
  uint64_t n = uint64_t(rows) * uint64_t(H);
  Scratch sums(n), grads(uint64_t(T) * uint64_t(H)), bits((n + 1) / 2);
  uint16_t *gathered = reinterpret_cast<uint16_t *>(bits.data());
  for (int64_t i = 0, r = -1; i < T; ++i)
    if (startsRow(i))
      std::memcpy(gathered + uint64_t(++r) * uint64_t(H),
                  table + uint64_t(byRow[size_t(i)].first) * uint64_t(H),
                  uint64_t(H) * sizeof(uint16_t));
  if (int status = k::fromHalf(type, int64_t(n), gathered, sums.data()))
    return status;
  if (int status = k::fromHalf(type, T * H, dout, grads.data()))
    return status;
  for (int64_t i = 0, r = -1; i < T; ++i) {
    r += startsRow(i);
    float *sum = sums.data() + uint64_t(r) * uint64_t(H);
    const float *g =
        grads.data() + uint64_t(byRow[size_t(i)].second) * uint64_t(H);
    for (int64_t h = 0; h < H; ++h)
      sum[h] += g[h];
  }
  if (int status = k::toHalf(type, int64_t(n), sums.data(), gathered))
    return status;
  for (int64_t i = 0, r = -1; i < T; ++i)
    if (startsRow(i))
      std::memcpy(table + uint64_t(byRow[size_t(i)].first) * uint64_t(H),
                  gathered + uint64_t(++r) * uint64_t(H),
                  uint64_t(H) * sizeof(uint16_t));
  return 0;
}
} // namespace

/// Scatter-add into dtable (accumulated).
void embeddingBwd(const Tensor &ids, const Tensor &dx, const Tensor &dtable,
                  int64_t T, int64_t V, int64_t H) {
  std::optional<k::Half> t = commonHalf({&dx, &dtable});
  if (t && T > 0 && V > 0 && H > 0 && !overlaps(dx, dtable)) {
    kernel("embeddingBackward", [&] {
      return embeddingBwdTouchedRows(*t, ids.buf.as<int32_t>(),
                                     dx.buf.as<uint16_t>(),
                                     dtable.buf.as<uint16_t>(), T, V, H);
    });
    return;
  }
  In di(dx);
  Out to(dtable, true);
  kernel("embeddingBackward", [&] {
    return k::embeddingBackward(T, V, H, ids.buf.as<int32_t>(), di.p, to.p);
  });
}

/// loss = the mean token loss over the rows whose label is in [0, V).
void crossEntropy(const Tensor &logits, const Tensor &labels,
                  const Tensor &loss, int64_t T, int64_t V) {
  Scratch perToken(static_cast<uint64_t>(T));
  const int32_t *y = labels.buf.as<int32_t>();
  uint64_t elements = static_cast<uint64_t>(T) * static_cast<uint64_t>(V);
  if (isHalf(logits.type)) {
    // The fused kernel also writes the (unused) gradient: 16-bit, so half
    // the scratch, and the logits are read as they are.
    Scratch grad((elements + 1) / 2);
    kernel("crossEntropy", [&] {
      return k::crossEntropy(half(logits.type), T, V, logits.buf.as<uint16_t>(),
                             y, 0.0f, perToken.data(),
                             reinterpret_cast<uint16_t *>(grad.data()));
    });
  } else {
    In li(logits);
    Scratch grad(elements);
    kernel("crossEntropy", [&] {
      return k::crossEntropy(T, V, li.p, y, 0.0f, perToken.data(), grad.data());
    });
  }
  double sum = 0;
  int64_t count = 0;
  for (int64_t t = 0; t < T; ++t)
    if (y[t] >= 0 && y[t] < V) {
      sum += perToken.data()[t];
      ++count;
    }
  *loss.buf.as<float>() = count ? float(sum / double(count)) : 0.0f;
}

/// dlogits = (softmax(logits) - onehot(labels)) * scale; may be logits.
void crossEntropyBwd(const Tensor &logits, const Tensor &labels,
                     const Tensor &dlogits, int64_t T, int64_t V,
                     double scale) {
  // The kernel computes a row's statistics before it overwrites the row, so
  // dlogits may be logits.
  if (std::optional<k::Half> t = commonHalf({&logits, &dlogits});
      t &&
      (!overlaps(logits, dlogits) || logits.buf.data == dlogits.buf.data)) {
    Scratch perToken(static_cast<uint64_t>(T));
    kernel("crossEntropy", [&] {
      return k::crossEntropy(*t, T, V, logits.buf.as<uint16_t>(),
                             labels.buf.as<int32_t>(), float(scale),
                             perToken.data(), dlogits.buf.as<uint16_t>());
    });
    return;
  }
  In li(logits);
  Out go(dlogits, false);
  Scratch perToken(static_cast<uint64_t>(T));
  kernel("crossEntropy", [&] {
    return k::crossEntropy(T, V, li.p, labels.buf.as<int32_t>(), float(scale),
                           perToken.data(), go.p);
  });
}

/// Element type conversion or copy (same shape).
void cast(const Tensor &x, const Tensor &y) {
  if (x.type == y.type) {
    if (x.buf.data != y.buf.data)
      std::memmove(y.buf.data, x.buf.data, y.buf.bytes);
    return;
  }
  // fp32 <-> 16-bit: one conversion kernel, no staged copy.
  int64_t n = int64_t(y.numel());
  if (x.type == ElemType::F32 && isHalf(y.type) && !overlaps(x, y)) {
    check(k::toHalf(half(y.type), n, x.buf.as<float>(), y.buf.as<uint16_t>()),
          "toHalf");
    return;
  }
  if (isHalf(x.type) && y.type == ElemType::F32 && !overlaps(x, y)) {
    check(k::fromHalf(half(x.type), n, x.buf.as<uint16_t>(), y.buf.as<float>()),
          "fromHalf");
    return;
  }
  In xi(x);
  Out yo(y, false);
  std::copy(xi.p, xi.p + y.numel(), yo.p);
}

void scale(const Tensor &x, const Tensor &y, double factor) {
  In xi(x);
  Out yo(y, false);
  float s = float(factor);
  for (uint64_t i = 0, n = y.numel(); i < n; ++i)
    yo.p[i] = xi.p[i] * s;
}

namespace {
/// The part of a gradient a reduce-scatter left to the update (mt3k.adamw's
/// `own`): the gradient is (g + own) / members, rounded as the runtime's
/// average.
struct OwnPart {
  const Tensor *own = nullptr;
  int members = 0;
};

/// One AdamW step on `g`, or on g and its own part averaged.
void adamwUpdate(Session &session, const Tensor &g, OwnPart part,
                 const Tensor &p, const Tensor &m, const Tensor &v,
                 const Tensor &viewOut, double lr, double beta1, double beta2,
                 double eps, double weightDecay, double gradScale,
                 const NoDecay &noDecay) {
  // A validation step learns nothing: the view is refreshed from the
  // unchanged master (as the update would write it), m and v are untouched.
  if (session.evaluating()) {
    cast(p, viewOut);
    return;
  }
  if (part.own) {
    const Tensor &own = *part.own;
    if (own.type != g.type || own.numel() != g.numel() || part.members < 2)
      fatal(llvm::formatv("adamw: the own part of the gradient must match it "
                          "({0} {1} elements, got {2} {3}) and be averaged "
                          "over 2 or more members (got {4})",
                          stringifyElemType(g.type), g.numel(),
                          stringifyElemType(own.type), own.numel(),
                          part.members));
    // The kernels average fp32 gradients, and bf16 ones of a bf16 view;
    // others are averaged first, as the reduce-scatter would have.
    bool fused = g.type == ElemType::F32 ? !isHalf(viewOut.type)
                                         : g.type == ElemType::BF16 &&
                                               viewOut.type == ElemType::BF16;
    if (!fused) {
      Scratch averaged((g.buf.bytes + sizeof(float) - 1) / sizeof(float));
      averageFrom(averaged.data(), own.buf.data, g.buf.data, g.numel(), g.type,
                  part.members);
      Tensor whole{g.buf, g.type};
      whole.buf.data = reinterpret_cast<std::byte *>(averaged.data());
      adamwUpdate(session, whole, {}, p, m, v, viewOut, lr, beta1, beta2, eps,
                  weightDecay, gradScale, noDecay);
      return;
    }
  }
  // A 16-bit model's gradients are read as they are (the same update, bit
  // for bit); others, and those of a model with an fp32 view, are staged.
  const bool halfGrad = isHalf(g.type) && g.type == viewOut.type;
  std::optional<HalfIn> g16;
  std::optional<In> g32;
  if (halfGrad)
    g16.emplace(g, std::initializer_list<const Tensor *>{&p, &m, &v, &viewOut});
  else
    g32.emplace(g);
  k::AdamWParams params;
  params.lr = float(session.learningRate(lr));
  params.beta1 = float(beta1);
  params.beta2 = float(beta2);
  params.eps = float(eps);
  params.weightDecay = float(weightDecay);
  params.gradScale = float(gradScale);
  params.step = int64_t(session.step());
  int64_t n = int64_t(p.numel());
  float *master = p.buf.as<float>();
  bool halfView = isHalf(viewOut.type);
  // Elements [begin, end) with or without the weight decay.
  auto run = [&](int64_t begin, int64_t end, bool decayed) {
    k::AdamWParams piece = params;
    if (!decayed)
      piece.weightDecay = 0;
    kernel("adamw", [&] {
      float *mo = m.buf.as<float>() + begin, *vo = v.buf.as<float>() + begin;
      if (part.own && halfGrad)
        return k::adamwAveraged(end - begin, master + begin, g16->p + begin,
                                part.own->buf.as<uint16_t>() + begin,
                                half(g.type), part.members, mo, vo, piece,
                                viewOut.buf.as<uint16_t>() + begin,
                                half(viewOut.type));
      if (part.own)
        return k::adamwAveraged(end - begin, master + begin, g32->p + begin,
                                part.own->buf.as<float>() + begin, part.members,
                                mo, vo, piece);
      if (halfGrad)
        return k::adamw(end - begin, master + begin, g16->p + begin,
                        half(g.type), mo, vo, piece,
                        viewOut.buf.as<uint16_t>() + begin, half(viewOut.type));
      if (halfView)
        return k::adamw(end - begin, master + begin, g32->p + begin, mo, vo,
                        piece, viewOut.buf.as<uint16_t>() + begin,
                        half(viewOut.type));
      return k::adamw(end - begin, master + begin, g32->p + begin, mo, vo,
                      piece);
    });
  };
  if (noDecay.ranges.empty() || weightDecay == 0) {
    run(0, n, true);
  } else {
    // This call's elements in the layer's flat parameters.
    int64_t base = noDecay.firstElement;
    if (noDecay.shardElements)
      base += int64_t(Runtime::current()->shardIndex()) * noDecay.shardElements;
    int64_t at = 0;
    for (size_t i = 0; i + 1 < noDecay.ranges.size() && at < n; i += 2) {
      int64_t begin = std::clamp(noDecay.ranges[i] - base, at, n);
      int64_t end = std::clamp(noDecay.ranges[i + 1] - base, at, n);
      if (begin >= end)
        continue;
      if (at < begin)
        run(at, begin, true);
      run(begin, end, false);
      at = end;
    }
    if (at < n)
      run(at, n, true);
  }
  if (!halfView && viewOut.buf.data != p.buf.data)
    std::memcpy(viewOut.buf.data, p.buf.data, p.buf.bytes);
}
} // namespace

void adamw(Session &session, const Tensor &g, const Tensor &p, const Tensor &m,
           const Tensor &v, const Tensor &viewOut, double lr, double beta1,
           double beta2, double eps, double weightDecay, double gradScale,
           const NoDecay &noDecay) {
  adamwUpdate(session, g, {}, p, m, v, viewOut, lr, beta1, beta2, eps,
              weightDecay, gradScale, noDecay);
}

void adamwAveraged(Session &session, const Tensor &others, const Tensor &own,
                   int64_t members, const Tensor &p, const Tensor &m,
                   const Tensor &v, const Tensor &viewOut, double lr,
                   double beta1, double beta2, double eps, double weightDecay,
                   double gradScale, const NoDecay &noDecay) {
  adamwUpdate(session, others, {&own, int(members)}, p, m, v, viewOut, lr,
              beta1, beta2, eps, weightDecay, gradScale, noDecay);
}

void adamwClipped(Session &session, const Tensor &g, const Tensor &p,
                  const Tensor &m, const Tensor &v, const Tensor &viewOut,
                  double lr, double beta1, double beta2, double eps,
                  double weightDecay, double gradScale,
                  const Tensor &squaredNorm, double maxGradNorm,
                  const NoDecay &noDecay) {
  if (squaredNorm.type != ElemType::F32 || squaredNorm.numel() != 1)
    fatal("adamw: the gradient norm is not an f32 scalar");
  double norm =
      std::sqrt(std::max(0.0, double(squaredNorm.buf.as<float>()[0])));
  if (!session.evaluating())
    session.recordGradNorm(norm);
  double factor = std::min(1.0, maxGradNorm / (norm + 1e-6));
  adamw(session, g, p, m, v, viewOut, lr, beta1, beta2, eps, weightDecay,
        gradScale * factor, noDecay);
}

void sumSquares(const Tensor &x, const Tensor &acc, double weight) {
  if (acc.type != ElemType::F32 || acc.numel() != 1)
    fatal("sum_squares: the accumulator is not an f32 scalar");
  double sum = 0;
  if (isHalf(x.type)) {
    // 16-bit gradients: squared in fp32 inside the kernel, no fp32 copy.
    kernel("sumSquares", [&] {
      return k::sumSquares(int64_t(x.numel()), x.buf.as<uint16_t>(),
                           half(x.type), &sum);
    });
  } else {
    In xi(x);
    kernel("sumSquares",
           [&] { return k::sumSquares(int64_t(x.numel()), xi.p, &sum); });
  }
  float *out = acc.buf.as<float>();
  out[0] = float(double(out[0]) + weight * sum);
}

void fill(const Tensor &t, double value) {
  uint64_t n = t.numel();
  switch (t.type) {
  case ElemType::F32:
    std::fill(t.buf.as<float>(), t.buf.as<float>() + n, float(value));
    return;
  case ElemType::I32:
    std::fill(t.buf.as<int32_t>(), t.buf.as<int32_t>() + n, int32_t(value));
    return;
  case ElemType::I64:
    std::fill(t.buf.as<int64_t>(), t.buf.as<int64_t>() + n, int64_t(value));
    return;
  case ElemType::U8:
    std::fill(t.buf.as<uint8_t>(), t.buf.as<uint8_t>() + n, uint8_t(value));
    return;
  default: {
    float f = float(value);
    uint16_t bits = 0;
    check(k::toHalf(half(t.type), 1, &f, &bits), "toHalf");
    std::fill(t.buf.as<uint16_t>(), t.buf.as<uint16_t>() + n, bits);
  }
  }
}

} // namespace ratrain::rt::emit
