//===- Bf16Products.cpp - Dot product or widening for bf16 products -------===//
//
// Which of the two bf16 kernel families a process runs (Kernels.h,
// bf16Products): the vdpbf16ps ones (packed k-pair panels, the bf16
// attention generators) or the widening ones (operands widened to fp32 where
// they are packed or staged, fp32 FMA). Both accumulate in fp32; they differ
// in summation order, in the dot attention's bf16 rounding of P and dS, and
// in subnormals (vdpbf16ps flushes them to zero). The choice is made once from
// the CPU's identity (or RATRAIN_BF16_PRODUCTS), never from a timing, so that
// two runs on one machine compute the same bits.
//
//===----------------------------------------------------------------------===//

#include "ratrain/kernels/Kernels.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace ratrain::kernels;

namespace {
/// -1: not chosen yet, else a Bf16Products value.
std::atomic<int> chosen{-1};

Bf16Products chooseForThisCpu() {
  if (const char *value = std::getenv("RATRAIN_BF16_PRODUCTS")) {
    if (std::optional<Bf16Products> named = parseBf16Products(value))
      return *named;
    // Programs check the variable first (runProgram, with the rank in the
    // message); this is for the tools and benchmarks.
    std::fprintf(stderr, "error: RATRAIN_BF16_PRODUCTS=%s: %s\n", value,
                 kBf16ProductsExpected);
    std::exit(1);
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // AMD's AVX-512 (Zen 4, Zen 5) issues vdpbf16ps at the fp32 FMA's
  // instruction rate, so its 2 products per lane double the FLOP rate;
  // Intel's (Cooper Lake, Sapphire, Emerald and Granite Rapids) reaches half
  // the FMA's FLOP rate with it.
  if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_is("amd"))
    return Bf16Products::Dot;
#endif
  return Bf16Products::Widen;
}
} // namespace

Bf16Products ratrain::kernels::bf16Products() {
  int value = chosen.load(std::memory_order_acquire);
  if (value < 0) {
    // Two threads may both choose (the same); a setBf16Products in between
    // wins.
    int expected = -1;
    if (!chosen.compare_exchange_strong(expected, int(chooseForThisCpu()),
                                        std::memory_order_acq_rel))
      return Bf16Products(expected);
    value = chosen.load(std::memory_order_acquire);
  }
  return Bf16Products(value);
}

std::optional<Bf16Products>
ratrain::kernels::parseBf16Products(const char *name) {
  if (std::strcmp(name, "dot") == 0)
    return Bf16Products::Dot;
  if (std::strcmp(name, "widen") == 0)
    return Bf16Products::Widen;
  return std::nullopt;
}

const char *ratrain::kernels::bf16ProductsName(Bf16Products products) {
  return products == Bf16Products::Dot ? "dot" : "widen";
}

void ratrain::kernels::setBf16Products(Bf16Products products) {
  chosen.store(int(products), std::memory_order_release);
}
