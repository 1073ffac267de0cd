//===- ElemType.cpp - Element types of runtime buffers --------------------===//

#include "ratrain/runtime/ElemType.h"

using namespace ratrain::rt;

unsigned ratrain::rt::getElemBytes(ElemType type) {
  switch (type) {
  case ElemType::F32:
  case ElemType::I32:
    return 4;
  case ElemType::BF16:
  case ElemType::F16:
    return 2;
  case ElemType::I64:
    return 8;
  case ElemType::U8:
    return 1;
  }
  return 1;
}

llvm::StringRef ratrain::rt::stringifyElemType(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return "f32";
  case ElemType::BF16:
    return "bf16";
  case ElemType::F16:
    return "f16";
  case ElemType::I32:
    return "i32";
  case ElemType::I64:
    return "i64";
  case ElemType::U8:
    return "u8";
  }
  return "?";
}
