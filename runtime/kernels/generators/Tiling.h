//===- Tiling.h - Tile sizes derived from the machine file ------*- C++ -*-===//
//
// The kernels tile for an explicit two-level memory hierarchy, the one the
// RATrain machine model describes for a compute cluster:
//
//   GSM  (global shared memory, shared by every core of a cluster; 6 MiB on
//        MT-3000, the analog of the L3 here)
//   AM   (array memory, private to one core; ~768 KiB on MT-3000, the analog
//        of the private L2 here)
//   registers (the vector register file; 32 x 512-bit on AVX-512)
//
// The three numbers come from the machine file at *generator* time: CMake
// reads `cluster: gsm_bytes / am_bytes_per_core / cores` from
// examples/machines/host.yaml and passes them as GeneratorParams. Every
// generator derives its tiles from them with the helpers below, so a new
// machine file gives new schedules without touching a generator.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_KERNELS_GENERATORS_TILING_H
#define RATRAIN_KERNELS_GENERATORS_TILING_H

#include <algorithm>
#include <cstdint>

namespace ratrain::kernels::tiling {

/// Largest multiple of `step` that is <= `value`, and at least `step`.
inline int floorToMultiple(int64_t value, int step) {
  int64_t v = (value / step) * step;
  return static_cast<int>(std::max<int64_t>(v, step));
}

/// Clamps `value` into [lo, hi].
inline int clampInt(int64_t value, int lo, int hi) {
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(value, lo), hi));
}

/// GEMM blocking (GotoBLAS-style, mapped onto GSM/AM):
///   - A register micro-tile is MR x NR accumulators (fixed by the register
///     file: 12 x 32 fp32 = 24 zmm accumulators of 32).
///   - KC (k-depth of one staged panel): the NR x KC micro-panel of B takes
///     an eighth of AM, rounded to a multiple of 64 and clamped to
///     [128, 2048], so that the B panels a core streams stay in AM next to
///     the A block. (Host, AM = 1 MiB: fp32 1024, bf16 2048; MT-3000,
///     768 KiB: 768 and 1536.)
///   - The register tiles run A micro-panel by A micro-panel: each MR x KC
///     A micro-panel (MR / NR of a B micro-panel; 18 KiB for the
///     85M model's bf16 K of 768) stays in L1 while the B micro-panels of
///     the packed block stream past it from AM. Measured on a Zen 4 host
///     (one core and both, the 85M model's six GEMM shapes, the two orders
///     alternating call by call): 1-2% faster than holding the B
///     micro-panel across the A tiles, in bf16, fp16 and fp32 alike
///     (docs/kernels.md).
///   - MB (rows of the per-core A block, packed into AM): the MB x KC block
///     takes half of AM, capped so that every core gets at least a few
///     blocks of a 2048-row problem (load balance).
///   - NB (columns of the B panel staged once per (n-block, k-panel) and
///     shared by all cores): the NB x KC panel takes half of GSM, but no
///     more than the AM of the cores that share it (one AM on a one-core
///     cluster), so the panel is written and re-read in the cores' own
///     memory instead of making a round trip through GSM. Measured on the
///     Intel host (one core, the 85M model's 512-row GEMMs, all three forms,
///     bf16 and fp32; docs/kernels.md): NB 256 (one AM) against 2048 (half
///     of GSM) 5-15% faster with the operands coming from memory, as in a
///     training step, and -5..+10% with them in cache.
///   - KC1 (`kcOnePanel`): the deepest K a GEMM into a 16-bit C takes in one
///     panel (it rounds once in its epilogue, so it cannot split K): up to
///     2 KC, at most 2048.
///   - Packed B block (`packedBColumns`, the kernels library's loop around
///     the packed micro-kernels): B is packed and multiplied a block of
///     columns at a time, every k panel of the block taking at most half of
///     AM, so the micro-kernel reads the panels the pack just wrote from the
///     core's own memory instead of the whole packed B making a round trip
///     through GSM. Measured on the host (Zen 5, both cores busy, the 85M
///     model's 12 layers of bf16 GEMMs with their operands from memory,
///     docs/kernels.md): 1-4% faster than packing all of B first, the
///     forward's 512 x 2048 x 768 up to 8%.
///   Measured on an Intel host (2 MiB L2, 48 KiB L1; one core, each variant
///   the best of 12 interleaved runs, docs/kernels.md): KC 1024 / MB 120 runs
///   the LLaMA-shaped GEMMs at 69-81% of the FMA peak against 61-74% for
///   KC 2048 / MB 24 (the earlier quarter-of-AM rule, whose B micro-panel
///   served 2 micro-tiles before the next came from L3), and 57-70% before
///   the epilogue read the register tile with dense loads.
struct GemmTiles {
  int mr, nr, kc, nb, mb, kcOnePanel;
  int64_t packedBBytes;
};

inline GemmTiles gemmTiles(int64_t gsmBytes, int64_t amBytes, int cores,
                           int elemBytes) {
  GemmTiles t;
  t.mr = 12;
  t.nr = 32;
  // The micro-kernel accumulates in fp32, packed panels hold elemBytes.
  int64_t kc = amBytes / 8 / (t.nr * elemBytes);
  t.kc = clampInt((kc / 64) * 64, 128, 2048);
  t.kcOnePanel = std::max(t.kc, std::min(2 * t.kc, 2048));
  int64_t panelBytes =
      std::min<int64_t>(gsmBytes / 2, amBytes * std::max(cores, 1));
  int64_t nb = panelBytes / (int64_t(t.kc) * elemBytes);
  t.nb = clampInt((nb / t.nr) * t.nr, t.nr * 4, 4096);
  int64_t mb = amBytes / 2 / (int64_t(t.kc) * elemBytes);
  // At least 4 blocks per core on a 2048-row problem.
  int64_t balanced = 2048 / (4 * std::max(cores, 1));
  mb = std::min(mb, std::max<int64_t>(balanced, t.mr));
  t.mb = clampInt((mb / t.mr) * t.mr, t.mr, 1024);
  t.packedBBytes = amBytes / 2;
  return t;
}

/// Columns of B packed and multiplied at a time (see GemmTiles): a multiple
/// of NR whose panels, `paddedK` deep in `elemBytes`, take at most
/// `packedBBytes`; at least one NR strip.
inline int64_t packedBColumns(const GemmTiles &t, int64_t paddedK,
                              int elemBytes) {
  int64_t columns = t.packedBBytes / std::max<int64_t>(paddedK * elemBytes, 1);
  return std::max<int64_t>(columns / t.nr * t.nr, t.nr);
}

} // namespace ratrain::kernels::tiling

#endif // RATRAIN_KERNELS_GENERATORS_TILING_H
