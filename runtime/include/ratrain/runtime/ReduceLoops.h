//===- ReduceLoops.h - The arithmetic of reducing collectives --*- C++ -*-===//
//
// The element loops the communication engine runs on received blocks:
// dst (op)= src, and the division of an average. bf16 and fp32 take
// vectorized loops (AVX-512BW, AVX2 or baseline, chosen once from the CPU);
// the results are bit for bit those of the scalar definitions (Half.h:
// fp32 arithmetic, rounded to nearest-even, NaN kept a NaN; of two NaNs
// summed, which one's payload survives is the compiler's operand order).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_REDUCELOOPS_H
#define RATRAIN_RUNTIME_REDUCELOOPS_H

#include "ratrain/runtime/ElemType.h"
#include "ratrain/runtime/Runtime.h"

#include <cstdint>
#include <string_view>

namespace ratrain::rt {

/// dst[i] = dst[i] (op) src[i] for `count` elements of `type` (Avg adds:
/// the division is divideInto's); bf16 and f16 are added in fp32 and
/// rounded to nearest-even, as the MPI operations do.
void reduceInto(void *dst, const void *src, uint64_t count, ElemType type,
                ReduceOp op);

/// dst[i] = a[i] (op) b[i], as reduceInto; `dst` may be `a` or `b` but
/// overlap neither otherwise.
void reduceFrom(void *dst, const void *a, const void *b, uint64_t count,
                ElemType type, ReduceOp op);

/// dst[i] = src[i] / n for `count` elements (an average over n ranks);
/// `dst` may be `src` (in place) but no other overlap. Integers divide
/// with truncation; bf16 and f16 in fp32, rounded once. For n a power of
/// two the division is a multiplication by 1/n, which is exact (the same
/// bits).
void divideInto(void *dst, const void *src, uint64_t count, ElemType type,
                int n);

/// dst[i] = (a[i] + b[i]) / n: the bits of reduceFrom (Sum) and then
/// divideInto, in one pass over the elements. `dst` may be `a` or `b` but
/// overlap neither otherwise.
void averageFrom(void *dst, const void *a, const void *b, uint64_t count,
                 ElemType type, int n);

/// The instruction set the vectorized loops run with on this CPU:
/// "avx512bw", "avx2" or "baseline".
const char *reduceLoopsIsa();

/// Runs the loops compiled for `isa` ("avx512bw", "avx2" or "baseline")
/// from now on; false (and no change) when this CPU cannot. For tests and
/// measurements; the default is the widest the CPU runs.
bool useReduceLoops(std::string_view isa);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_REDUCELOOPS_H
