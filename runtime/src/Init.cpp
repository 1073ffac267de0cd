//===- Init.cpp - Deterministic parameter initialization ------------------===//

#include "ratrain/runtime/Init.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Half.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

using namespace ratrain::rt;

namespace {
uint64_t splitMix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float normalFor(uint64_t seed, uint64_t index, double std) {
  uint64_t a = splitMix(seed + 2 * index);
  uint64_t b = splitMix(seed + 2 * index + 1);
  // u1 in (0, 1], u2 in [0, 1).
  double u1 = (double(a >> 11) + 1.0) / double(1ull << 53);
  double u2 = double(b >> 11) / double(1ull << 53);
  return float(std * std::sqrt(-2.0 * std::log(u1)) *
               std::cos(6.283185307179586 * u2));
}
} // namespace

namespace {
uint64_t seedMix = 0;
/// The stream of parameter `param`.
uint64_t paramSeed(llvm::StringRef param) {
  return llvm::xxh3_64bits(param) ^ seedMix;
}
} // namespace

void ratrain::rt::setInitSeed(uint64_t seed) {
  seedMix = seed ? splitMix(seed) : 0;
}

float ratrain::rt::initialValue(llvm::StringRef param, uint64_t index,
                                double std) {
  return normalFor(paramSeed(param), index, std);
}

void ratrain::rt::initParam(Buffer dest, ElemType type, InitKind kind,
                            llvm::StringRef param, double std,
                            uint64_t elementOffset) {
  if (type != ElemType::F32 && type != ElemType::BF16 && type != ElemType::F16)
    fatal(llvm::formatv("init_param of '{0}': element type {1} is not a "
                        "float type",
                        param, stringifyElemType(type)));
  uint64_t count = dest.bytes / getElemBytes(type);
  uint64_t seed = paramSeed(param);
  for (uint64_t i = 0; i < count; ++i) {
    float value = kind == InitKind::Zeros ? 0.0f
                  : kind == InitKind::Ones
                      ? 1.0f
                      : normalFor(seed, elementOffset + i, std);
    switch (type) {
    case ElemType::F32:
      dest.as<float>()[i] = value;
      break;
    case ElemType::BF16:
      dest.as<uint16_t>()[i] = floatToBF16(value);
      break;
    default:
      dest.as<uint16_t>()[i] = floatToF16(value);
      break;
    }
  }
}
