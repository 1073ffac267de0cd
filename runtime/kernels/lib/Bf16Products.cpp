//===- Bf16Products.cpp - Dot product or widening for bf16 products -------===//
//
// Which of the two bf16 kernel families a process runs (Kernels.h,
// bf16Products): the vdpbf16ps ones (packed k-pair panels, the bf16
// attention generators) or the widening ones (operands widened to fp32 where
// they are packed or staged, fp32 FMA). Both accumulate in fp32; they differ
// in summation order only. The choice is made once from the CPU's identity
// (or RATRAIN_BF16_PRODUCTS), never from a timing, so that two runs on one
// machine compute the same bits.
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
    if (std::strcmp(value, "dot") == 0)
      return Bf16Products::Dot;
    if (std::strcmp(value, "widen") == 0)
      return Bf16Products::Widen;
    std::fprintf(stderr,
                 "error: RATRAIN_BF16_PRODUCTS=%s: expected 'dot' (vdpbf16ps) "
                 "or 'widen' (fp32 FMA on widened operands)\n",
                 value);
    std::exit(1);
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // AMD's AVX-512 (Zen 4, Zen 5) issues vdpbf16ps at the fp32 FMA's
  // instruction rate, so its 2 products per lane double the FLOPs; Intel's
  // (Cooper Lake, Sapphire, Emerald and Granite Rapids) at half of it.
  if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_is("amd"))
    return Bf16Products::Dot;
#endif
  return Bf16Products::Widen;
}
} // namespace

Bf16Products ratrain::kernels::bf16Products() {
  int value = chosen.load(std::memory_order_acquire);
  if (value < 0) {
    // Two threads may both choose; they choose the same.
    value = int(chooseForThisCpu());
    chosen.store(value, std::memory_order_release);
  }
  return Bf16Products(value);
}

const char *ratrain::kernels::bf16ProductsName(Bf16Products products) {
  return products == Bf16Products::Dot ? "dot" : "widen";
}

void ratrain::kernels::setBf16Products(Bf16Products products) {
  chosen.store(int(products), std::memory_order_release);
}
