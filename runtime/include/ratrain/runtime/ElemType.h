//===- ElemType.h - Element types of runtime buffers ------------*- C++ -*-===//

#ifndef RATRAIN_RUNTIME_ELEMTYPE_H
#define RATRAIN_RUNTIME_ELEMTYPE_H

#include "llvm/ADT/StringRef.h"

namespace ratrain::rt {

/// Element types of collectives and kernels' buffers. BF16 and F16 travel as
/// 16-bit integers and are summed by a user-defined MPI operation that adds
/// each pair in fp32 and rounds to nearest-even.
enum class ElemType : unsigned char { F32, BF16, F16, I32, I64, U8 };
unsigned getElemBytes(ElemType type);
llvm::StringRef stringifyElemType(ElemType type);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_ELEMTYPE_H
