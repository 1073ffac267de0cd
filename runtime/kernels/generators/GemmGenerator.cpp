//===- GemmGenerator.cpp - Tiled GEMM for the three training forms
//----------===//
//
// C[M,N] = beta * C[M,N] + op(A) * op(B), fp32 accumulation, in the three
// forms training needs (all matrices row-major):
//
//   form=nt  C = A[M,K]   * B[N,K]^T   forward:  Y  = X  * W^T
//   form=nn  C = A[M,K]   * B[K,N]     backward: dX = dY * W
//   form=tn  C = A[K,M]^T * B[K,N]     backward: dW = dY^T * X
//
// elem = f32 | bf16 | f16 (the 16-bit types arrive as uint16 bit patterns).
// beta is the fused epilogue: beta = 1 accumulates (gradient accumulation
// over micro-batches, residual add after the output projection), beta = 0
// overwrites (C is then never read).
//
// Schedule (GotoBLAS loop order, tiles from Tiling.h, i.e. from the machine
// file's GSM/AM sizes):
//
//   for nb in N step NB                       (B panel: GSM)
//     for ko in K step KC
//       pack B[nb.., ko..] -> Bp (NB x KC)     parallel over NR-strips
//       parallel for mb in M step MB           (one core)
//         pack A[mb.., ko..] -> Ap (MB x KC)   (AM)
//         for mt in MB step MR                 (A micro-panel: L1)
//           for nt in NB step NR               (B micro-panels: AM)
//             MR x NR register tile over KC    (registers)
//             C[mt, nt] += tile
//
// Into a 16-bit C (one k panel) A is packed once per group of blocks (the
// group's packed rows take at most half of GSM) and shared by every B panel:
//
//   for mg in M step (group)                  pack A[mg..] -> Ap (all K)
//     for nb in N step NB                     pack B[nb..] -> Bp
//       parallel for mb in mg step MB         ... as above
//
// The packed panels are laid out micro-tile by micro-tile so the inner loop
// reads both operands with unit stride; padding beyond M, N, K is zero or
// clamped, so ragged sizes run the same code. For bf16 the panels keep
// pairs of k adjacent and the register tile is a VectorReduce of factor 2,
// which Halide lowers to vdpbf16ps (avx512_sapphirerapids, i.e. the
// AVX512-BF16 extension; Zen 4 has it). fp16 has no dot instruction on this
// CPU (no AVX512-FP16), so fp16 panels are widened to fp32 while packing;
// so are bf16 panels with elem=bf16 in this generator (the `_bf16w`
// libraries: CPUs whose vdpbf16ps is slower than two fp32 FMAs, Kernels.h
// bf16Products).
//
//===----------------------------------------------------------------------===//

#include "ElementType.h"
#include "Halide.h"
#include "Tiling.h"

#include <optional>
#include <type_traits>

using namespace Halide;
using ratrain::kernels::generators::Elem;
using ratrain::kernels::generators::roundToBf16;
using ratrain::kernels::generators::widen;

namespace {

/// Splits a GEMM output stage over (n, m) into NR x MR register tiles
/// (ni, mi) grouped into NB x MB blocks (nb, mb; tiles nto, mto within a
/// block). Tiles are split first, so a ragged block (N < NB, M % MB != 0)
/// only shortens the tile loops and only the last ragged tile takes the
/// guarded path.
template <typename Stage>
Stage splitIntoBlocks(Stage stage, const Var &n, const Var &m, const Var &ni,
                      const Var &mi, const Var &nb, const Var &nto,
                      const Var &mb, const Var &mto, int NR, int NB, int MR,
                      int MB) {
  Var nn("nn"), mm("mm");
  stage.split(n, nn, ni, NR, TailStrategy::GuardWithIf)
      .split(nn, nb, nto, NB / NR, TailStrategy::GuardWithIf)
      .split(m, mm, mi, MR, TailStrategy::GuardWithIf)
      .split(mm, mb, mto, MB / MR, TailStrategy::GuardWithIf);
  return stage;
}

/// The MR x NR register tile `partial` of every GEMM here, computed per
/// output tile `mto` of `c` on the stack (a few KiB; no malloc per tile),
/// its NR lanes vectorized and both axes unrolled into registers.
void computeRegisterTileAt(Func partial, Func c, const Var &mto, const Var &ni,
                           const Var &mi, int NR, int MR) {
  const int V = 16; // fp32 lanes of a zmm register
  partial.compute_at(c, mto)
      .bound(ni, 0, NR)
      .bound(mi, 0, MR)
      .store_in(MemoryType::Stack)
      .vectorize(ni, V)
      .unroll(ni)
      .unroll(mi);
}

/// C (and the C it accumulates into) is row-major, unit stride in dim 0, and
/// starts at (0, 0) (the caller's dense arrays): then n % NR and m % MR of an
/// output element are its lane and row in the register tile, and the
/// epilogue reads the tile with dense vector loads instead of one scalar load
/// per element.
template <typename CInput, typename COutput>
void constrainC(CInput &cIn, COutput &c) {
  for (int d = 0; d < 2; ++d) {
    cIn.dim(d).set_min(0);
    c.dim(d).set_min(0);
  }
  cIn.dim(0).set_stride(1);
  c.dim(0).set_stride(1);
}

class Gemm : public Generator<Gemm> {
public:
  GeneratorParam<std::string> form{"form", "nt"};
  GeneratorParam<std::string> elem{"elem", "f32"};
  GeneratorParam<int> gsmBytes{"gsm_bytes", 6 << 20};
  GeneratorParam<int> amBytes{"am_bytes", 768 << 10};
  GeneratorParam<int> cores{"cores", 2};
  /// Optional overrides (0 = derive from the machine parameters).
  GeneratorParam<int> kcOverride{"kc", 0};
  GeneratorParam<int> mbOverride{"mb", 0};
  /// C's element: f32, or bf16 (uint16 bits; elem=bf16 only): C is read,
  /// accumulated in fp32 and rounded once in the epilogue, which needs the
  /// whole K in one panel (K <= KC, checked by the caller), as
  /// ratrain_gemm_bf16_packed_to_bf16 on the dot product.
  GeneratorParam<std::string> out{"out", "f32"};

  /// Types come from "a.type"/"b.type" (float32 or uint16).
  Input<Buffer<>> a{"a", 2};
  Input<Buffer<>> b{"b", 2};
  /// The previous C (read only when beta != 0; may alias `c`).
  Input<Buffer<>> cIn{"c_in", 2};
  Input<float> beta{"beta"};
  Output<Buffer<>> c{"c", 2};

  bool halfC() const { return std::string(out) == "bf16"; }

  void configure() {
    if (std::string(out) != "f32" &&
        !(std::string(out) == "bf16" && std::string(elem) == "bf16"))
      throw CompileError("ratrain_gemm: out=" + std::string(out) +
                         " needs out=f32, or out=bf16 with elem=bf16");
    Type cType = halfC() ? UInt(16) : Float(32);
    cIn.set_type(cType);
    c.set_type(cType);
  }

  /// Element (k, row) of op(A) as a Halide Expr of the element type.
  Expr loadA(Expr k, Expr m) {
    Expr v = (std::string(form) == "tn") ? a(m, k) : a(k, m);
    return asElem(v);
  }
  /// Element (k, col) of op(B).
  Expr loadB(Expr k, Expr n) {
    Expr v = (std::string(form) == "nt") ? b(k, n) : b(n, k);
    return asElem(v);
  }
  Expr asElem(Expr v) {
    auto it = ratrain::kernels::generators::elemNames().find(elem);
    _halide_user_assert(it != ratrain::kernels::generators::elemNames().end())
        << "elem must be f32, bf16 or f16, not " << std::string(elem) << "\n";
    return widen(v, it->second);
  }

  void generate() {
    // 16-bit operands are widened while packing, so the panels hold 4-byte
    // floats.
    const int panelBytes = 4;
    ratrain::kernels::tiling::GemmTiles t = ratrain::kernels::tiling::gemmTiles(
        gsmBytes, amBytes, cores, panelBytes);
    if (kcOverride > 0)
      t.kc = kcOverride;
    if (mbOverride > 0)
      t.mb = mbOverride;
    const int MR = t.mr, NR = t.nr, KC = t.kc, NB = t.nb, MB = t.mb;

    const bool isTN = std::string(form) == "tn";
    const bool isNT = std::string(form) == "nt";
    Expr M = isTN ? a.dim(0).extent() : a.dim(1).extent();
    Expr K = isTN ? a.dim(1).extent() : a.dim(0).extent();
    Expr N = isNT ? b.dim(1).extent() : b.dim(0).extent();

    Var n("n"), m("m"), k("k"), ni("ni"), mi("mi"), nt("ntile"), mt("mtile"),
        ko("ko");

    // Packed panels, micro-tile major, zero beyond K and clamped beyond M, N.
    Func Ap("Ap"), Bp("Bp");
    Func partial("partial");
    // K is cut into nPanels panels of kcEff <= KC (a multiple of 8), as
    // even as possible, so a K just above a multiple of KC does not pay for
    // a mostly-zero panel.
    // A 16-bit C takes the whole K in one panel (correct for any K; the
    // caller keeps K <= KC for speed).
    Expr nPanels = halfC() ? Expr(1) : (K + KC - 1) / KC;
    Expr kcEff = ((K + nPanels - 1) / nPanels + 7) / 8 * 8;
    RDom r1(0, kcEff, "r1");
    Expr rowA = min(mt * MR + mi, M - 1);
    Ap(mi, k, mt) =
        select(k < K, cast<float>(loadA(min(k, K - 1), rowA)), 0.0f);
    Expr colB = min(nt * NR + ni, N - 1);
    Bp(ni, k, nt) =
        select(k < K, cast<float>(loadB(min(k, K - 1), colB)), 0.0f);
    partial(ni, mi, nt, mt, ko) = 0.0f;
    partial(ni, mi, nt, mt, ko) +=
        Ap(mi, ko * kcEff + r1, mt) * Bp(ni, ko * kcEff + r1, nt);

    RDom rko(0, nPanels, "rko");
    // The first k panel folds in beta * C, so there is no separate pass
    // over C (beta == 0 never reads it).
    Expr previous = halfC() ? widen(cIn(n, m), Elem::BF16) : Expr(cIn(n, m));
    Expr first = select(beta == 0.0f, 0.0f, beta * previous);
    if (halfC()) {
      // One panel: the sum is complete here, rounded once.
      c(n, m) = ratrain::kernels::generators::narrow(
          first + partial(n % NR, m % MR, n / NR, m / MR, 0), Elem::BF16);
    } else {
      c(n, m) = undef<float>();
      c(n, m) = select(rko == 0, first, c(n, m)) +
                partial(n % NR, m % MR, n / NR, m / MR, rko);
    }

    // ---- schedule ----
    const int V = 16; // fp32 lanes of a zmm register
    Var nb("nb"), mb("mb"), nto("nto"), mto("mto"), mg("mg"), mbi("mbi");
    auto block = [&](auto stage) {
      return splitIntoBlocks(stage, n, m, ni, mi, nb, nto, mb, mto, NR, NB, MR,
                             MB);
    };
    if (halfC()) {
      // One k panel, so A need not be packed again for every B panel: the
      // blocks come in groups whose packed rows (K deep) take at most half
      // of GSM, each group packed once and multiplied by every B panel.
      Func cF = c;
      Expr groupBlocks =
          max(1, (int(gsmBytes) / 2 / (panelBytes * MB)) / max(K, 1));
      block(cF)
          .split(mb, mg, mbi, groupBlocks, TailStrategy::GuardWithIf)
          .reorder(ni, mi, nto, mto, mbi, nb, mg)
          .vectorize(ni, V)
          .parallel(mbi);
    } else {
      block(c.update())
          .reorder(ni, mi, nto, mto, mb, rko, nb)
          .vectorize(ni, V)
          .parallel(mb);
    }

    computeRegisterTileAt(partial, c, mto, ni, mi, NR, MR);
    partial.update().reorder(ni, mi, r1).vectorize(ni, V).unroll(ni).unroll(mi);
    if (halfC())
      Ap.compute_at(c, mg).parallel(mt);
    else
      Ap.compute_at(c, mb);
    Ap.bound(mi, 0, MR).vectorize(mi, 4).unroll(mi);
    // One B panel per k panel (per column block when C is 16-bit: one
    // panel).
    if (halfC())
      Bp.compute_at(c, nb);
    else
      Bp.compute_at(c, rko);
    Bp.bound(ni, 0, NR);
    if (std::string(form) == "nn") {
      // B is [K, N] row-major, so one NR-column strip is a walk down K rows
      // N elements apart (a new page every row or two). Packing 64 rows
      // across all strips before the next 64 keeps a tile's lines and pages
      // together: the 85M model's dX GEMMs 1-7% faster (one core, operands
      // in cache or evicted). For NT (rows of B are k-contiguous) and TN
      // (K = the micro-batch's tokens, short) it measured no better.
      Var kTile("kTile"), kRow("kRow");
      Bp.split(k, kTile, kRow, 64, TailStrategy::GuardWithIf)
          .reorder(ni, kRow, nt, kTile)
          .vectorize(ni, V)
          .unroll(ni)
          .parallel(kTile);
    } else {
      Bp.vectorize(ni, V).unroll(ni).parallel(nt);
    }

    // Row-major 2D buffers: unit stride in dim 0.
    a.dim(0).set_stride(1);
    b.dim(0).set_stride(1);
    constrainC(cIn, c);
  }
};

/// bf16 operand packing for the vdpbf16ps micro-kernel: lays a bf16 matrix
/// out as dst(kk, i, kp, tile) = op(X)[k = 2*kp + kk][row = tile*W + i],
/// zero beyond K and beyond the last row, so that every KC-deep panel of a
/// W-wide strip is one contiguous block and each k-pair of a row is one
/// 32-bit word (the unit vdpbf16ps multiplies). Runs with the generic AVX-512
/// target: its transposing loads need 16-bit inserts, which must not be
/// compiled for the sapphirerapids CPU model (LLVM would use AVX512-FP16's
/// vmovw, which Zen 4 lacks). A k_inner operand with an even K is packed by
/// the kernels library's word transpose instead (lib/PackWords.cpp).
class PackPairs : public Generator<PackPairs> {
public:
  /// "k_inner": src(k, row) (row-major [rows, K]); "k_outer": src(row, k).
  GeneratorParam<std::string> layout{"layout", "k_inner"};
  GeneratorParam<int> width{"width", 32};
  Input<Buffer<uint16_t>> src{"src", 2};
  Output<Buffer<uint16_t>> dst{"dst", 4};

  void generate() {
    const bool kInner = std::string(layout) == "k_inner";
    const int W = width;
    Var kk("kk"), i("i"), kp("kp"), tile("tile");
    Expr K = kInner ? src.dim(0).extent() : src.dim(1).extent();
    Expr R = kInner ? src.dim(1).extent() : src.dim(0).extent();
    Expr k = 2 * kp + kk, row = tile * W + i;
    Expr kc = clamp(k, 0, K - 1), rc = clamp(row, 0, R - 1);
    Expr val = kInner ? src(kc, rc) : src(rc, kc);
    dst(kk, i, kp, tile) = select(k < K && row < R, val, cast<uint16_t>(0));
    dst.bound(kk, 0, 2).bound(i, 0, W).unroll(kk).vectorize(i, W % 16 == 0 ? 16
                                                                           : 4);
    if (kInner) {
      dst.reorder(kk, i, kp, tile).parallel(tile);
    } else {
      // src is [K, rows] row-major: a tile's strip walks down K rows that
      // are `rows` elements apart (4 KiB for 2048 rows, one L1 set). Packing
      // 8 k-pairs (16 source rows) across every tile before the next 8
      // reads each row once as a stream: the 85M model's k-outer operands
      // packed 1.4-2x faster on the Zen 5 host (one core, evicted: 768 x
      // 2048 11.4 -> 19.7 GB/s, 512 x 2048 8.8 -> 15.9; 16 k-pairs a
      // block measured as slow as none).
      Var kpo("kpo"), kpi("kpi");
      dst.split(kp, kpo, kpi, 8, TailStrategy::GuardWithIf)
          .reorder(kk, i, kpi, tile, kpo)
          .parallel(kpo);
    }
    src.dim(0).set_stride(1);
    dst.dim(0).set_stride(1).set_extent(2).set_min(0);
    dst.dim(1).set_stride(2).set_extent(W).set_min(0);
  }
};

/// bf16 GEMM on pre-packed operands (see PackPairs): C[M,N] = beta*C +
/// A*B^T with ap(kk, mi, kp, mt) (MR-wide strips of A's rows) and
/// bp(kk, ni, kp, nt) (NR-wide strips of B's columns), K padded to a
/// multiple of KC. The register tile is MR x NR fp32 accumulators fed by
/// vdpbf16ps (32 bf16 products per instruction); the loop nest and the
/// GSM/AM blocking are those of ratrain_gemm.
///
/// `CStorage` is C's element: `float`, or `uint16_t` holding bf16 bits
/// (ratrain_gemm_bf16_packed_to_bf16). A bf16 C is read, accumulated in
/// fp32 and rounded once (to nearest even) in the epilogue, so the result
/// never makes a round trip through an fp32 copy; that needs the whole K in
/// one panel (kc_eff / 2 = ap's k-pair extent: K <= KC, every GEMM of a
/// model with hidden and FFN sizes up to KC), which the caller checks.
template <typename CStorage>
class GemmBf16PackedBase : public Generator<GemmBf16PackedBase<CStorage>> {
  static constexpr bool kHalfC = std::is_same_v<CStorage, uint16_t>;
  template <typename T> using Input = GeneratorInput<T>;
  template <typename T> using Output = GeneratorOutput<T>;

public:
  GeneratorParam<int> gsmBytes{"gsm_bytes", 6 << 20};
  GeneratorParam<int> amBytes{"am_bytes", 768 << 10};
  GeneratorParam<int> cores{"cores", 2};
  GeneratorParam<int> kcOverride{"kc", 0};
  GeneratorParam<int> mbOverride{"mb", 0};

  Input<Buffer<uint16_t>> ap{"ap", 4};
  Input<Buffer<uint16_t>> bp{"bp", 4};
  /// Depth of one k panel (even, <= KC); ap/bp hold K padded to a multiple.
  Input<int> kcEff{"kc_eff"};
  Input<Buffer<CStorage>> cIn{"c_in", 2};
  Input<float> beta{"beta"};
  Output<Buffer<CStorage>> c{"c", 2};

  void generate() {
    ratrain::kernels::tiling::GemmTiles t =
        ratrain::kernels::tiling::gemmTiles(gsmBytes, amBytes, cores, 2);
    if (kcOverride > 0)
      t.kc = kcOverride;
    if (mbOverride > 0)
      t.mb = mbOverride;
    const int MR = t.mr, NR = t.nr, NB = t.nb, MB = t.mb;
    // K / 2 padded to nPanels * kcEff / 2 (see ratrain_gemm), kcEff even.
    Expr KP = ap.dim(2).extent();
    Expr kcHalf = kcEff / 2;

    Var n("n"), m("m"), ni("ni"), mi("mi"), nt("ntile"), mt("mtile"), ko("ko");
    Func partial("partial");
    RDom r(0, 2, 0, kcHalf, "r");
    partial(ni, mi, nt, mt, ko) = 0.0f;
    partial(ni, mi, nt, mt, ko) +=
        cast<float>(
            reinterpret(BFloat(16), ap(r.x, mi, ko * kcHalf + r.y, mt))) *
        cast<float>(
            reinterpret(BFloat(16), bp(r.x, ni, ko * kcHalf + r.y, nt)));
    // The first k panel folds in beta * C, so there is no separate pass
    // over C (beta == 0 never reads it).
    Expr previous = kHalfC ? widen(cIn(n, m), Elem::BF16) : Expr(cIn(n, m));
    Expr first = select(beta == 0.0f, 0.0f, beta * previous);
    std::optional<RDom> rko;
    if constexpr (kHalfC) {
      // One panel: the sum is complete here, rounded once.
      c(n, m) = roundToBf16(first + partial(n % NR, m % MR, n / NR, m / MR, 0));
    } else {
      rko.emplace(0, KP / kcHalf, "rko");
      c(n, m) = undef<float>();
      c(n, m) = select(*rko == 0, first, c(n, m)) +
                partial(n % NR, m % MR, n / NR, m / MR, *rko);
    }

    const int V = 16;
    Var nb("nb"), mb("mb"), nto("nto"), mto("mto");
    auto block = [&](auto stage) {
      return splitIntoBlocks(stage, n, m, ni, mi, nb, nto, mb, mto, NR, NB, MR,
                             MB);
    };
    if constexpr (kHalfC) {
      Func cF = c;
      block(cF).reorder(ni, mi, nto, mto, mb, nb).vectorize(ni, V).parallel(mb);
    } else {
      block(c.update())
          .reorder(ni, mi, nto, mto, mb, *rko, nb)
          .vectorize(ni, V)
          .parallel(mb);
    }
    computeRegisterTileAt(partial, c, mto, ni, mi, NR, MR);
    partial.update()
        .reorder(r.x, ni, mi, r.y)
        .atomic()
        .vectorize(r.x)
        .vectorize(ni, V)
        .unroll(ni)
        .unroll(mi);

    ap.dim(0).set_stride(1).set_extent(2).set_min(0);
    ap.dim(1).set_stride(2).set_extent(MR).set_min(0);
    bp.dim(0).set_stride(1).set_extent(2).set_min(0);
    bp.dim(1).set_stride(2).set_extent(NR).set_min(0);
    constrainC(cIn, c);
  }
};

/// fp32 operand packing of a k-outer operand (src(row, k), row-major
/// [K, rows]: B of NN and TN, A of TN) for ratrain_gemm_f32_packed:
/// dst(i, k, tile) = src(tile * W + i, k), zero beyond the rows and beyond
/// K (dst's k extent may be padded). 16 source rows (k) across every tile
/// before the next 16, so each row is read once as a stream (the k-outer
/// bf16 pack's order).
class PackF32KOuter : public Generator<PackF32KOuter> {
public:
  GeneratorParam<int> width{"width", 32};
  Input<Buffer<float>> src{"src", 2};
  Output<Buffer<float>> dst{"dst", 3};

  void generate() {
    const int W = width;
    Var i("i"), k("k"), tile("tile"), ko("ko"), ki("ki");
    Func s = BoundaryConditions::constant_exterior(src, 0.0f);
    dst(i, k, tile) = s(tile * W + i, k);
    dst.bound(i, 0, W)
        .vectorize(i, W % 16 == 0 ? 16 : 4)
        .split(k, ko, ki, 16, TailStrategy::GuardWithIf)
        .reorder(i, ki, tile, ko)
        .parallel(ko);
    src.dim(0).set_stride(1);
    dst.dim(0).set_stride(1).set_extent(W).set_min(0);
  }
};

/// fp32 GEMM on pre-packed operands (kernels::gemm): C[M,N] = beta*C +
/// A*B^T with ap(mi, k, mt) (MR-wide strips of A's rows) and bp(ni, k, nt)
/// (NR-wide strips of B's columns), K padded to a multiple of kc_eff; the
/// loop nest, blocking and register tile of ratrain_gemm_bf16_packed with
/// fp32 FMAs. The operands are packed by the word transpose (k-inner,
/// lib/PackWords.cpp) or ratrain_pack_f32_kouter, which Halide's in-pipeline
/// packing of ratrain_gemm did with gathers: on the Zen 5 host (one core,
/// operands evicted) 4-10% faster on the 85M model's NT shapes, the same
/// bits.
class GemmF32Packed : public Generator<GemmF32Packed> {
public:
  GeneratorParam<int> gsmBytes{"gsm_bytes", 6 << 20};
  GeneratorParam<int> amBytes{"am_bytes", 768 << 10};
  GeneratorParam<int> cores{"cores", 2};
  GeneratorParam<int> mbOverride{"mb", 0};

  Input<Buffer<float>> ap{"ap", 3};
  Input<Buffer<float>> bp{"bp", 3};
  Input<int> kcEff{"kc_eff"};
  Input<Buffer<float>> cIn{"c_in", 2};
  Input<float> beta{"beta"};
  Output<Buffer<float>> c{"c", 2};

  void generate() {
    ratrain::kernels::tiling::GemmTiles t =
        ratrain::kernels::tiling::gemmTiles(gsmBytes, amBytes, cores, 4);
    if (mbOverride > 0)
      t.mb = mbOverride;
    const int MR = t.mr, NR = t.nr, NB = t.nb, MB = t.mb;
    Expr KP = ap.dim(1).extent();

    Var n("n"), m("m"), ni("ni"), mi("mi"), nt("ntile"), mt("mtile"), ko("ko");
    Func partial("partial");
    RDom r(0, kcEff, "r");
    partial(ni, mi, nt, mt, ko) = 0.0f;
    partial(ni, mi, nt, mt, ko) +=
        ap(mi, ko * kcEff + r, mt) * bp(ni, ko * kcEff + r, nt);
    Expr first = select(beta == 0.0f, 0.0f, beta * cIn(n, m));
    RDom rko(0, KP / kcEff, "rko");
    c(n, m) = undef<float>();
    c(n, m) = select(rko == 0, first, c(n, m)) +
              partial(n % NR, m % MR, n / NR, m / MR, rko);

    const int V = 16;
    Var nb("nb"), mb("mb"), nto("nto"), mto("mto");
    splitIntoBlocks(c.update(), n, m, ni, mi, nb, nto, mb, mto, NR, NB, MR, MB)
        .reorder(ni, mi, nto, mto, mb, rko, nb)
        .vectorize(ni, V)
        .parallel(mb);
    computeRegisterTileAt(partial, c, mto, ni, mi, NR, MR);
    partial.update().reorder(ni, mi, r).vectorize(ni, V).unroll(ni).unroll(mi);

    ap.dim(0).set_stride(1).set_extent(MR).set_min(0);
    bp.dim(0).set_stride(1).set_extent(NR).set_min(0);
    constrainC(cIn, c);
  }
};

using GemmBf16Packed = GemmBf16PackedBase<float>;
using GemmBf16PackedToBf16 = GemmBf16PackedBase<uint16_t>;

} // namespace

HALIDE_REGISTER_GENERATOR(Gemm, ratrain_gemm)
HALIDE_REGISTER_GENERATOR(PackPairs, ratrain_pack_pairs)
HALIDE_REGISTER_GENERATOR(GemmBf16Packed, ratrain_gemm_bf16_packed)
HALIDE_REGISTER_GENERATOR(GemmF32Packed, ratrain_gemm_f32_packed)
HALIDE_REGISTER_GENERATOR(PackF32KOuter, ratrain_pack_f32_kouter)
HALIDE_REGISTER_GENERATOR(GemmBf16PackedToBf16,
                          ratrain_gemm_bf16_packed_to_bf16)
