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
///   - KC (k-depth of one staged panel): the NR x KC micro-panel of B that a
///     core re-reads for every micro-tile of its A block stays in the core's
///     AM: a quarter of AM, rounded to a multiple of 64 and clamped to
///     [128, 2048]. Deep panels matter: every panel costs one read-modify-
///     write pass over the C block and one round of packing, and measured on
///     the host, KC = 2048 instead of 512 is 1.13x faster for fp32 and 1.55x
///     for bf16. (Host, AM = 1 MiB: fp32 2048, bf16 2048 (4096 clamped);
///     MT-3000, 768 KiB: 1536 and 2048.)
///   - NB (columns of the B panel staged once per (n-block, k-panel) and
///     shared by all cores): the NB x KC panel takes half of GSM.
///   - MB (rows of the per-core A block, packed into AM): the MB x KC block
///     takes a quarter of AM, capped so that every core gets at least a few
///     blocks of a 2048-row problem (load balance).
struct GemmTiles {
  int mr, nr, kc, nb, mb;
};

inline GemmTiles gemmTiles(int64_t gsmBytes, int64_t amBytes, int cores,
                           int elemBytes) {
  GemmTiles t;
  t.mr = 12;
  t.nr = 32;
  // The micro-kernel accumulates in fp32, packed panels hold elemBytes.
  int64_t kc = amBytes / 4 / (t.nr * elemBytes);
  t.kc = clampInt((kc / 64) * 64, 128, 2048);
  int64_t nb = gsmBytes / 2 / (int64_t(t.kc) * elemBytes);
  t.nb = clampInt((nb / t.nr) * t.nr, t.nr * 4, 4096);
  int64_t mb = amBytes / 4 / (int64_t(t.kc) * elemBytes);
  // At least 4 blocks per core on a 2048-row problem.
  int64_t balanced = 2048 / (4 * std::max(cores, 1));
  mb = std::min(mb, std::max<int64_t>(balanced, t.mr));
  t.mb = clampInt((mb / t.mr) * t.mr, t.mr, 1024);
  return t;
}

} // namespace ratrain::kernels::tiling

#endif // RATRAIN_KERNELS_GENERATORS_TILING_H
