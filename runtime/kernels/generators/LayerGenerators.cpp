//===- LayerGenerators.cpp - The non-GEMM kernels of a LLaMA layer
//---------===//
//
// RMSNorm, rotary embedding, SwiGLU, residual add, embedding lookup and its
// gradient, fused softmax cross-entropy, AdamW with the 16-bit view write,
// and the fp32 <-> bf16/fp16 conversions.
//
// RMSNorm, RoPE, SwiGLU, the residual add, the embedding lookup and the
// cross-entropy take the activations' element type as the GeneratorParam `elem`
// (f32 | bf16 | f16, ElementType.h): the 16-bit variants read and write bf16 /
// fp16 directly, fp32 inside, so a bf16 run needs no fp32 staging copies around
// them.
//
// All of these are memory-bound, so the schedules are simple and the same:
// one row (token) of the activation is the unit of work, rows are split into
// chunks that are handed to cores (parallel), a row is processed with 16-lane
// vectors (one zmm), and a row's reductions (RMS, max, log-sum-exp) are
// computed at the row and stay in registers/AM while the row is written. A
// row of even the largest model (8192 fp32 = 32 KiB, a 32000-entry logit row
// = 125 KiB) is far below the AM budget, so no tiling beyond the row is
// needed; the row-chunk size is derived from AM in CMake (`rows_per_task`).
//
// Transcendentals use Halide's fast_exp (vectorizes cleanly, ~1e-6
// relative error) with the argument clamped to the range where it is valid.
//
//===----------------------------------------------------------------------===//

#include "ElementType.h"
#include "Halide.h"
#include "SafeExp.h"

#include <type_traits>

using namespace Halide;
using ratrain::kernels::generators::Elem;
using ratrain::kernels::generators::elemNames;
using ratrain::kernels::generators::narrow;
using ratrain::kernels::generators::roundToBf16;
using ratrain::kernels::generators::safeExp;
using ratrain::kernels::generators::setStorageType;
using ratrain::kernels::generators::storageType;
using ratrain::kernels::generators::widen;

namespace {

constexpr int kLanes = 16; // fp32 lanes of a zmm register

/// Common schedule for a per-row output f(h, t): parallel row chunks, rows
/// vectorized.
void scheduleRows(Func f, Var h, Var t, int rowsPerTask) {
  f.vectorize(h, kLanes, TailStrategy::GuardWithIf)
      .parallel(t, rowsPerTask, TailStrategy::GuardWithIf);
}

/// y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps), per token row.
class RmsNormForward : public Generator<RmsNormForward> {
public:
  GeneratorParam<int> rowsPerTask{"rows_per_task", 8};
  GeneratorParam<Elem> elem{"elem", Elem::F32, elemNames()};
  Input<Buffer<>> x{"x", 2}; // (h, t)
  Input<Buffer<>> w{"w", 1}; // (h)
  Input<float> eps{"eps"};
  Output<Buffer<>> y{"y", 2};
  Output<Buffer<float>> rstd{"rstd", 1}; // (t), saved for backward

  void configure() { setStorageType(elem, x, w, y); }

  void generate() {
    Var h("h"), t("t");
    Expr H = x.dim(0).extent();
    RDom r(0, H, "r");
    Func ss("ss");
    ss(t) = 0.0f;
    Expr xr = widen(x(r, t), elem);
    ss(t) += xr * xr;
    rstd(t) = 1.0f / sqrt(ss(t) / cast<float>(H) + eps);
    // y consumes the rstd output, which is realized first.
    y(h, t) = narrow(widen(x(h, t), elem) * rstd(t) * widen(w(h), elem), elem);

    scheduleRows(y, h, t, rowsPerTask);
    rstd.parallel(t, rowsPerTask, TailStrategy::GuardWithIf);
    ss.compute_at(rstd, t);
    ss.update().atomic().vectorize(r, kLanes);
  }
};

/// dx = rstd*w*dy - x * rstd^3 / H * sum_h(dy*w*x);  dw += sum_t dy*x*rstd.
class RmsNormBackward : public Generator<RmsNormBackward> {
public:
  GeneratorParam<int> rowsPerTask{"rows_per_task", 8};
  GeneratorParam<Elem> elem{"elem", Elem::F32, elemNames()};
  Input<Buffer<>> x{"x", 2};
  Input<Buffer<>> w{"w", 1};
  Input<Buffer<float>> rstd{"rstd", 1};
  Input<Buffer<>> dy{"dy", 2};
  Input<Buffer<>> dwIn{"dw_in", 1};
  Output<Buffer<>> dx{"dx", 2};
  Output<Buffer<>> dw{"dw", 1}; // dw_in + gradient (in place)

  void configure() { setStorageType(elem, x, w, dy, dwIn, dx, dw); }

  void generate() {
    Var h("h"), t("t");
    Expr H = x.dim(0).extent();
    Expr T = x.dim(1).extent();
    auto X = [&](Expr hh, Expr tt) { return widen(x(hh, tt), elem); };
    auto W = [&](Expr hh) { return widen(w(hh), elem); };
    auto DY = [&](Expr hh, Expr tt) { return widen(dy(hh, tt), elem); };
    RDom r(0, H, "r");
    Func c("c");
    c(t) = 0.0f;
    c(t) += DY(r, t) * W(r) * X(r, t);
    Expr rs = rstd(t);
    dx(h, t) = narrow(rs * W(h) * DY(h, t) -
                          X(h, t) * (rs * rs * rs / cast<float>(H)) * c(t),
                      elem);
    RDom rt(0, T, "rt");
    Func dwSum("dwSum");
    dwSum(h) = 0.0f;
    dwSum(h) += DY(h, rt) * X(h, rt) * rstd(rt);
    // dw accumulates: the caller passes the same buffer as dw_in and dw.
    // (Reading an output inside an update makes Halide 14 assume the
    // caller's pointer is vector-aligned, so the old value comes in as an
    // input instead.)
    dw(h) = narrow(widen(dwIn(h), elem) + dwSum(h), elem);

    scheduleRows(dx, h, t, rowsPerTask);
    c.compute_at(dx, t);
    c.update().atomic().vectorize(r, kLanes);
    Var ho("ho"), hi("hi");
    dw.split(h, ho, hi, 4 * kLanes, TailStrategy::GuardWithIf)
        .vectorize(hi, kLanes, TailStrategy::GuardWithIf)
        .parallel(ho);
    dwSum.compute_at(dw, ho).vectorize(h, kLanes, TailStrategy::GuardWithIf);
    dwSum.update().reorder(h, rt).vectorize(h, kLanes,
                                            TailStrategy::GuardWithIf);
  }
};

/// Rotary embedding on (i, half, head, t) views of a [T, heads, D] tensor:
///   y0 = x0*cos - dir*x1*sin,  y1 = x1*cos + dir*x0*sin,
/// dir = +1 forward, -1 backward (the inverse rotation).
class Rope : public Generator<Rope> {
public:
  GeneratorParam<int> rowsPerTask{"rows_per_task", 8};
  GeneratorParam<Elem> elem{"elem", Elem::F32, elemNames()};
  Input<Buffer<>> x{"x", 4};            // (i, part, head, t)
  Input<Buffer<int32_t>> pos{"pos", 1}; // (t)
  Input<Buffer<float>> cosT{"cos", 2};  // (i, position)
  Input<Buffer<float>> sinT{"sin", 2};  // (i, position)
  Input<float> dir{"dir"};
  Output<Buffer<>> y{"y", 4};

  void configure() { setStorageType(elem, x, y); }

  void generate() {
    Var i("i"), p("p"), hh("hh"), t("t");
    Expr P = clamp(pos(t), 0, cosT.dim(1).extent() - 1);
    Expr c = cosT(i, P), s = sinT(i, P) * dir;
    Expr x0 = widen(x(i, 0, hh, t), elem), x1 = widen(x(i, 1, hh, t), elem);
    y(i, p, hh, t) =
        narrow(select(p == 0, x0 * c - x1 * s, x1 * c + x0 * s), elem);

    y.bound(p, 0, 2)
        .reorder(i, p, hh, t)
        .unroll(p)
        .vectorize(i, kLanes, TailStrategy::GuardWithIf)
        .parallel(t, rowsPerTask, TailStrategy::GuardWithIf);
  }
};

/// SwiGLU forward: h = silu(g) * u = g * sigmoid(g) * u.
class SwiGluForward : public Generator<SwiGluForward> {
public:
  GeneratorParam<int> rowsPerTask{"rows_per_task", 8};
  GeneratorParam<Elem> elem{"elem", Elem::F32, elemNames()};
  Input<Buffer<>> g{"g", 2}; // (f, t)
  Input<Buffer<>> u{"u", 2};
  Output<Buffer<>> h{"h", 2};

  void configure() { setStorageType(elem, g, u, h); }

  void generate() {
    Var f("f"), t("t");
    Expr gv = widen(g(f, t), elem);
    Expr sig = 1.0f / (1.0f + safeExp(-gv));
    h(f, t) = narrow(gv * sig * widen(u(f, t), elem), elem);
    scheduleRows(h, f, t, rowsPerTask);
  }
};

/// SwiGLU backward: dg = dh*u*s*(1 + g*(1 - s)), du = dh*g*s, s = sigmoid(g).
/// The (dg, du) tuple's element types are fixed when the generator is
/// declared, so the storage type is a template parameter: `float` (f32) or
/// `uint16_t` (bf16 / fp16, chosen by `elem`).
template <typename Storage>
class SwiGluBackward : public Generator<SwiGluBackward<Storage>> {
public:
  template <typename T>
  using GP = typename Generator<SwiGluBackward>::template GeneratorParam<T>;
  template <typename T>
  using In = typename Generator<SwiGluBackward>::template Input<T>;
  template <typename T>
  using Out = typename Generator<SwiGluBackward>::template Output<T>;
  static constexpr bool kHalf = std::is_same_v<Storage, uint16_t>;

  GP<int> rowsPerTask{"rows_per_task", 8};
  GP<Elem> elem{"elem", kHalf ? Elem::BF16 : Elem::F32, elemNames()};
  In<Buffer<Storage>> g{"g", 2};
  In<Buffer<Storage>> u{"u", 2};
  In<Buffer<Storage>> dh{"dh", 2};
  Out<Func> out{"out", {type_of<Storage>(), type_of<Storage>()}, 2}; // dg, du

  void generate() {
    _halide_user_assert((Elem(elem) == Elem::F32) == !kHalf)
        << "elem must match the storage type\n";
    Var f("f"), t("t");
    Expr gv = widen(g(f, t), elem), uv = widen(u(f, t), elem),
         d = widen(dh(f, t), elem);
    Expr sig = 1.0f / (1.0f + safeExp(-gv));
    out(f, t) = Tuple(narrow(d * uv * sig * (1.0f + gv * (1.0f - sig)), elem),
                      narrow(d * gv * sig, elem));
    scheduleRows(out, f, t, rowsPerTask);
  }
};

/// out = a + b (elementwise, on a flat array).
class Add : public Generator<Add> {
public:
  GeneratorParam<Elem> elem{"elem", Elem::F32, elemNames()};
  Input<Buffer<>> a{"a", 1};
  Input<Buffer<>> b{"b", 1};
  Output<Buffer<>> out{"out", 1};

  void configure() { setStorageType(elem, a, b, out); }

  void generate() {
    Var i("i");
    out(i) = narrow(widen(a(i), elem) + widen(b(i), elem), elem);
    out.vectorize(i, kLanes, TailStrategy::GuardWithIf)
        .parallel(i, 1 << 14, TailStrategy::GuardWithIf);
  }
};

/// Embedding lookup: out(h, t) = table(h, ids(t)).
/// A row is copied as stored: the 16-bit variants move bits.
class EmbeddingForward : public Generator<EmbeddingForward> {
public:
  GeneratorParam<int> rowsPerTask{"rows_per_task", 8};
  GeneratorParam<Elem> elem{"elem", Elem::F32, elemNames()};
  Input<Buffer<>> table{"table", 2};    // (h, vocab)
  Input<Buffer<int32_t>> ids{"ids", 1}; // (t)
  Output<Buffer<>> out{"out", 2};

  void configure() { setStorageType(elem, table, out); }

  void generate() {
    Var h("h"), t("t");
    Expr id = clamp(ids(t), 0, table.dim(1).extent() - 1);
    out(h, t) = table(h, id);
    scheduleRows(out, h, t, rowsPerTask);
  }
};

/// Embedding gradient: dtable(h, ids(t)) += dout(h, t), in place.
class EmbeddingBackward : public Generator<EmbeddingBackward> {
public:
  Input<Buffer<int32_t>> ids{"ids", 1};
  Input<Buffer<float>> dout{"dout", 2}; // (h, t)
  Output<Buffer<float>> dtable{"dtable", 2};

  void generate() {
    Var h("h"), v("v"), ho("ho"), hi("hi");
    RDom r(0, dout.dim(1).extent(), "r");
    dtable(h, v) = undef<float>();
    Expr id = clamp(ids(r), 0, dtable.dim(1).extent() - 1);
    dtable(h, id) += dout(h, r);
    // Columns are independent: each core owns a column strip and walks the
    // tokens in order, so duplicate ids accumulate without races.
    dtable.update()
        .split(h, ho, hi, 4 * kLanes, TailStrategy::GuardWithIf)
        .reorder(hi, r, ho)
        .vectorize(hi, kLanes, TailStrategy::GuardWithIf)
        .parallel(ho);
  }
};

/// Fused softmax cross-entropy, forward and backward in one pass:
///   loss(t)       = lse(t) - logits(target(t), t)           (0 if ignored)
///   dlogits(v, t) = gradScale * (softmax(v, t) - [v == target(t)])
/// Rows with target < 0 are ignored (loss 0, gradient 0). dlogits may alias
/// logits: a row's statistics are computed before the row is overwritten.
class CrossEntropy : public Generator<CrossEntropy> {
public:
  GeneratorParam<int> rowsPerTask{"rows_per_task", 4};
  GeneratorParam<Elem> elem{"elem", Elem::F32, elemNames()};
  Input<Buffer<>> logits{"logits", 2};          // (v, t)
  Input<Buffer<int32_t>> targets{"targets", 1}; // (t)
  Input<float> gradScale{"grad_scale"};
  Output<Buffer<float>> loss{"loss", 1};
  Output<Buffer<>> dlogits{"dlogits", 2};

  void configure() { setStorageType(elem, logits, dlogits); }

  void generate() {
    Var v("v"), t("t");
    Expr V = logits.dim(0).extent();
    auto logit = [&](Expr vv, Expr tt) { return widen(logits(vv, tt), elem); };
    RDom r(0, V, "r");
    Func mx("mx"), se("se"), stats("stats");
    mx(t) = -std::numeric_limits<float>::infinity();
    mx(t) = max(mx(t), logit(r, t));
    se(t) = 0.0f;
    se(t) += safeExp(logit(r, t) - mx(t));
    Expr tgt = targets(t);
    Expr valid = tgt >= 0 && tgt < V;
    Expr lse = mx(t) + log(se(t));
    Expr picked = logit(clamp(tgt, 0, V - 1), t);
    stats(t) = Tuple(lse, select(valid, lse - picked, 0.0f));
    loss(t) = stats(t)[1];
    Expr p = safeExp(logit(v, t) - stats(t)[0]);
    dlogits(v, t) = narrow(
        select(valid, gradScale * (p - select(v == tgt, 1.0f, 0.0f)), 0.0f),
        elem);

    stats.compute_root().parallel(t, rowsPerTask, TailStrategy::GuardWithIf);
    mx.compute_at(stats, t);
    mx.update().atomic().vectorize(r, kLanes);
    se.compute_at(stats, t);
    se.update().atomic().vectorize(r, kLanes);
    loss.vectorize(t, kLanes, TailStrategy::GuardWithIf);
    scheduleRows(dlogits, v, t, rowsPerTask);
  }
};

/// Elements of a parallel chunk of the AdamW updates that write a view or
/// stage their gradient (widened or averaged, AdamWBase::gradIn) before
/// reading it: 4 KiB of fp32 staging, which stays in L1 while the update
/// reads it back, the gradient's loads interleaved with the update's
/// streams. (Staged 16 Ki elements a chunk, 64 KiB read back from L2, the
/// averaged bf16 update of 3.5M parameters took 5-25% longer on the Zen 5
/// host; docs/kernels.md, "AdamW".)
inline constexpr int kUpdateChunk = 1 << 10;

/// AdamW (decoupled weight decay, PyTorch semantics), in place, plus the
/// 16-bit parameter view the next forward will read:
///   g' = g * gradScale
///   p  = p - lr * wd * p
///   m  = b1 m + (1 - b1) g'          v = b2 v + (1 - b2) g'^2
///   p  = p - lr * (m / bc1) / (sqrt(v / bc2) + eps)
///   view = to16(p)                                   (view = bf16 | f16)
/// One loop nest writes all outputs, so p/m/v may be updated in place.
///
/// With `average` the gradient arrives in two parts, as a reduce-scatter
/// that left its last reduction to the update leaves it (mt3k.reduce_scatter
/// `leave_own`): `g`, the sum of the other members' contributions to this
/// rank's shard, and `own`, this rank's contribution; the update reads
///   g = round(round(g + own) / members)
/// (round: to the gradient's element; nothing for fp32), the bits of the
/// runtime's average (ReduceLoops.cpp, averageFrom), so the update is the
/// one it would have made after the reduce-scatter's own average, without
/// that pass over the shard. fp32 and bf16 gradients.
template <typename Self> class AdamWBase : public Generator<Self> {
public:
  template <typename T> using In = typename Generator<Self>::template Input<T>;
  /// The gradient's element: f32, or the bf16 / f16 bits of a 16-bit
  /// model's gradients, widened in the kernel (AdamWView schedules how).
  GeneratorParam<Elem> grad{"grad", Elem::F32, elemNames()};
  /// The gradient is the average of `g` and `own` over `members` (above).
  GeneratorParam<bool> average{"average", false};
  In<Buffer<float>> p{"p", 1};
  In<Buffer<>> g{"g", 1};
  In<Buffer<float>> m{"m", 1};
  In<Buffer<float>> v{"v", 1};
  In<float> lr{"lr"};
  In<float> beta1{"beta1"};
  In<float> beta2{"beta2"};
  In<float> eps{"eps"};
  In<float> weightDecay{"weight_decay"};
  In<float> bc1{"bc1"};
  In<float> bc2{"bc2"};
  In<float> gradScale{"grad_scale"};

  /// With `average`: this rank's contribution (the gradient's element) and
  /// the number of members the average is over.
  GeneratorInput<Buffer<>> *own = nullptr;
  GeneratorInput<float> *members = nullptr;

  void configure() {
    setStorageType(grad, g);
    if (!average)
      return;
    _halide_user_assert(Elem(grad) != Elem::F16)
        << "the averaged update takes fp32 or bf16 gradients\n";
    own = this->template add_input<Buffer<>>("own", storageType(grad), 1);
    members = this->template add_input<float>("members");
  }

  /// The gradient in fp32, staged a chunk at a time where it is not g
  /// itself: a 16-bit gradient widened, or the average of the two parts
  /// (undefined for a plain fp32 gradient).
  Func gradIn{"grad_in"};

  /// The gradient as the update reads it at i.
  Expr gradient(Var i) {
    if (!average)
      return widen(g(i), grad);
    Expr sum = widen(g(i), grad) + widen((*own)(i), grad);
    if (Elem(grad) == Elem::F32)
      return sum / *members;
    Expr mean = widen(roundToBf16(sum), grad) / *members;
    return widen(roundToBf16(mean), grad);
  }

  /// The updated (p, m, v) at i.
  std::vector<Expr> update(Var i) {
    Expr gi = g(i);
    if (Elem(grad) != Elem::F32 || average) {
      gradIn(i) = gradient(i);
      gi = gradIn(i);
    }
    Expr gs = gi * gradScale;
    Expr mn = beta1 * m(i) + (1.0f - beta1) * gs;
    Expr vn = beta2 * v(i) + (1.0f - beta2) * gs * gs;
    Expr pd = p(i) - lr * weightDecay * p(i);
    Expr pn = pd - lr * (mn / bc1) / (sqrt(vn / bc2) + eps);
    return {pn, mn, vn};
  }
};

class AdamW : public AdamWBase<AdamW> {
public:
  Output<Func> out{"out", {Float(32), Float(32), Float(32)}, 1};
  void generate() {
    Var i("i");
    out(i) = Tuple(update(i));
    if (!average) {
      out.vectorize(i, kLanes, TailStrategy::GuardWithIf)
          .parallel(i, 1 << 14, TailStrategy::GuardWithIf);
      return;
    }
    // The averaged gradient is staged a chunk at a time and loaded, as the
    // plain kernel loads g: the update's arithmetic is contracted alike
    // (see AdamWView), so the same bits.
    Var io("io"), ii("ii"), chunk("chunk"), vec("vec");
    out.split(i, io, ii, kLanes, TailStrategy::GuardWithIf)
        .split(io, chunk, vec, kUpdateChunk / kLanes, TailStrategy::GuardWithIf)
        .vectorize(ii)
        .parallel(chunk);
    gradIn.compute_at(out, chunk)
        .vectorize(i, kLanes, TailStrategy::GuardWithIf);
  }
};

class AdamWView : public AdamWBase<AdamWView> {
public:
  GeneratorParam<std::string> view{"view", "bf16"}; // bf16 | f16
  Output<Func> out{"out", {Float(32), Float(32), Float(32), UInt(16)}, 1};
  void generate() {
    Var i("i"), io("io"), ii("ii");
    // The view rounds the stored master: the update is computed once into
    // `updated` and both outputs read it. (Written as one Tuple expression,
    // the 16-bit cast's lowering repeated the update expression and LLVM
    // contracted the copies differently, so a few elements per million,
    // near-cancelling updates and rounding ties, got a view that was not
    // the stored master rounded: a resumed run, which rebuilds the views
    // from the masters, then differed from the uninterrupted one.)
    Func updated("updated");
    updated(i) = Tuple(update(i));
    Type t16 = std::string(view) == "bf16" ? BFloat(16) : Float(16);
    out(i) = Tuple(updated(i)[0], updated(i)[1], updated(i)[2],
                   reinterpret<uint16_t>(cast(t16, updated(i)[0])));
    Var chunk("chunk"), vec("vec");
    out.split(i, io, ii, kLanes, TailStrategy::GuardWithIf)
        .split(io, chunk, vec, kUpdateChunk / kLanes, TailStrategy::GuardWithIf)
        .vectorize(ii)
        .parallel(chunk);
    updated.compute_at(out, vec).vectorize(i, kLanes,
                                           TailStrategy::GuardWithIf);
    // A 16-bit gradient is widened a chunk at a time into a buffer the
    // update then loads, as the fp32 kernel loads its gradient: the same
    // arithmetic, contracted alike by LLVM, so the same bits. (Widened
    // inline, LLVM fused the other product of the first moment's update into
    // an FMA: 1-ulp differences.)
    if (Elem(grad) != Elem::F32 || average)
      gradIn.compute_at(out, chunk)
          .vectorize(i, kLanes, TailStrategy::GuardWithIf);
  }
};

/// Partial sums of squares for the global gradient norm (clipping): chunk c
/// of `chunk` elements sums x^2 in 16 fp32 lanes; the caller adds the
/// ceil(n / chunk) chunk sums in double.
class SumSquares : public Generator<SumSquares> {
public:
  GeneratorParam<int> chunk{"chunk", 1 << 14};
  /// x's element: f32, or bf16 / f16 bits widened in the kernel.
  GeneratorParam<Elem> elem{"elem", Elem::F32, elemNames()};
  Input<Buffer<>> x{"x", 1};
  Output<Buffer<float>> sums{"sums", 1};

  void configure() { setStorageType(elem, x); }

  void generate() {
    const int CH = chunk;
    Var c("c"), l("l");
    Expr n = x.dim(0).extent();
    RDom r(0, CH / kLanes, "r");
    Expr idx = c * CH + r * kLanes + l;
    Expr v = widen(x(min(idx, n - 1)), elem);
    Func lanes("lanes");
    lanes(l, c) = 0.0f;
    lanes(l, c) += select(idx < n, v * v, 0.0f);
    RDom rl(0, kLanes, "rl");
    sums(c) = 0.0f;
    sums(c) += lanes(rl, c);
    sums.parallel(c);
    lanes.compute_at(sums, c).bound(l, 0, kLanes).vectorize(l);
    lanes.update().vectorize(l);
  }
};

/// fp32 -> bf16/fp16 (round to nearest even) and back, as uint16 bits.
class Convert : public Generator<Convert> {
public:
  GeneratorParam<Elem> to{"to", Elem::BF16, elemNames()};
  GeneratorParam<Elem> from{"from", Elem::F32, elemNames()};
  Input<Buffer<>> in{"in", 1};
  Output<Buffer<>> out{"out", 1};

  void generate() {
    Var i("i");
    // The same conversions as the 16-bit kernels' loads and stores.
    out(i) = Elem(to) == Elem::F32 ? widen(in(i), from) : narrow(in(i), to);
    out.vectorize(i, kLanes, TailStrategy::GuardWithIf)
        .parallel(i, 1 << 14, TailStrategy::GuardWithIf);
  }
};

} // namespace

HALIDE_REGISTER_GENERATOR(RmsNormForward, ratrain_rmsnorm_fwd)
HALIDE_REGISTER_GENERATOR(RmsNormBackward, ratrain_rmsnorm_bwd)
HALIDE_REGISTER_GENERATOR(Rope, ratrain_rope)
HALIDE_REGISTER_GENERATOR(SwiGluForward, ratrain_swiglu_fwd)
HALIDE_REGISTER_GENERATOR(SwiGluBackward<float>, ratrain_swiglu_bwd)
HALIDE_REGISTER_GENERATOR(SwiGluBackward<uint16_t>, ratrain_swiglu_bwd_16)
HALIDE_REGISTER_GENERATOR(Add, ratrain_add)
HALIDE_REGISTER_GENERATOR(EmbeddingForward, ratrain_embedding_fwd)
HALIDE_REGISTER_GENERATOR(EmbeddingBackward, ratrain_embedding_bwd)
HALIDE_REGISTER_GENERATOR(CrossEntropy, ratrain_cross_entropy)
HALIDE_REGISTER_GENERATOR(AdamW, ratrain_adamw)
HALIDE_REGISTER_GENERATOR(AdamWView, ratrain_adamw_view)
HALIDE_REGISTER_GENERATOR(Convert, ratrain_convert)
HALIDE_REGISTER_GENERATOR(SumSquares, ratrain_sum_squares)
