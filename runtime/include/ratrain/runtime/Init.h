//===- Init.h - Deterministic parameter initialization ----------*- C++ -*-===//
//
// mt3k.init_param: the initial value of element i of parameter `param`
// depends only on (param, i, kind, std), so every schedule and every sharding
// (a ZeRO shard passes its global element offset) starts from the same
// weights. Normal values come from a counter-based generator: SplitMix64 of
// (xxh3(param) + i) gives two uniforms, Box-Muller turns them into a normal.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_INIT_H
#define RATRAIN_RUNTIME_INIT_H

#include "ratrain/runtime/Arena.h"
#include "ratrain/runtime/ElemType.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace ratrain::rt {

enum class InitKind : unsigned char { Zeros, Ones, Normal };

/// The initialization seed (--init-seed): 0, the default, is the original
/// stream of every parameter; another seed gives every parameter another
/// stream (xxh3(param) xor SplitMix64(seed)), still independent of the
/// layout. Set once, before the prologue.
void setInitSeed(uint64_t seed);

/// The normal(0, std) value of element `index` of parameter `param`.
float initialValue(llvm::StringRef param, uint64_t index, double std);

/// Writes elements [elementOffset, elementOffset + count) of parameter
/// `param` into `dest` (count = dest.bytes / element size) as `type`
/// (F32, BF16 or F16; others are fatal). `std` is used by Normal only.
void initParam(Buffer dest, ElemType type, InitKind kind, llvm::StringRef param,
               double std = 0.0, uint64_t elementOffset = 0);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_INIT_H
