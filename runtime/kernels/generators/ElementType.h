//===- ElementType.h - Element types of the kernels' tensors ----*- C++ -*-===//
//
// The memory-bound kernels read and write their activations in the training
// run's element type: fp32, or bf16 / fp16 stored as uint16 bit patterns
// (the same storage as the GEMM operands and the runtime's 16-bit buffers).
// Arithmetic is fp32 inside: an operand is widened where it is loaded and a
// result narrowed (round to nearest even, as `ratrain_convert` does) where
// it is stored, so a native 16-bit kernel gives the same bits as the fp32
// kernel between the two conversions, without the fp32 copies.
//
// A generator takes the type as the typed GeneratorParam `elem` (f32 | bf16
// | f16) and sets the storage type of its unspecified-type buffers from it in
// configure().
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_KERNELS_GENERATORS_ELEMENTTYPE_H
#define RATRAIN_KERNELS_GENERATORS_ELEMENTTYPE_H

#include "Halide.h"

#include <map>
#include <string>

namespace ratrain::kernels::generators {

/// The element type of a kernel's activation tensors.
enum class Elem { F32, BF16, F16 };

/// The names of `Elem` for GeneratorParam<Elem> (`elem=bf16`).
inline const std::map<std::string, Elem> &elemNames() {
  static const std::map<std::string, Elem> names = {
      {"f32", Elem::F32}, {"bf16", Elem::BF16}, {"f16", Elem::F16}};
  return names;
}

/// How a tensor of `elem` is stored: fp32, or the uint16 bits of a 16-bit
/// float.
inline Halide::Type storageType(Elem elem) {
  return elem == Elem::F32 ? Halide::Float(32) : Halide::UInt(16);
}

/// Gives the generator inputs and outputs `ios` (declared without a type)
/// the storage type of `elem`; for a generator's configure().
template <typename... IOs> void setStorageType(Elem elem, IOs &...ios) {
  (ios.set_type(storageType(elem)), ...);
}

/// The fp32 value of a stored element. A bf16 value is its fp32 bits' high
/// half, so it widens by a shift. Written as the shift rather than a cast
/// from Halide's bfloat16 type: through the cast Halide's simplifier sees a
/// bf16 operand and moves comparisons with bf16-exact constants into bf16
/// (min(float(b), 64.0f) becomes float(min(b, bf16(64)))), which x86 lacks
/// and emulates with a rounding after each of them: SwiGLU's clamp before
/// its exp ran two roundings (8 instructions of ~45 a vector) that change
/// no result.
inline Halide::Expr widen(const Halide::Expr &stored, Elem elem) {
  switch (elem) {
  case Elem::BF16:
    return Halide::reinterpret<float>(Halide::cast<uint32_t>(stored) << 16);
  case Elem::F16:
    return Halide::cast<float>(Halide::reinterpret(Halide::Float(16), stored));
  case Elem::F32:
    break;
  }
  return stored;
}

/// The stored form of an fp32 value (round to nearest even).
inline Halide::Expr narrow(const Halide::Expr &value, Elem elem) {
  switch (elem) {
  case Elem::BF16:
    return Halide::reinterpret<uint16_t>(
        Halide::cast(Halide::BFloat(16), value));
  case Elem::F16:
    return Halide::reinterpret<uint16_t>(
        Halide::cast(Halide::Float(16), value));
  case Elem::F32:
    break;
  }
  return value;
}

/// fp32 -> bf16 bits, round to nearest even, in integer arithmetic: the
/// bits ratrain_convert and the runtime's floatToBF16 give, subnormals
/// included. (A plain cast compiled for the sapphirerapids target may become
/// vcvtneps2bf16, which flushes subnormal inputs to zero.) NaNs stay NaNs
/// (quiet, sign and top payload bits kept).
inline Halide::Expr roundToBf16(const Halide::Expr &value) {
  using namespace Halide;
  Expr bits = reinterpret<uint32_t>(value);
  Expr rounded = (bits + (((bits >> 16) & 1) + 0x7fff)) >> 16;
  Expr nan = (bits & 0x7fffffff) > 0x7f800000;
  return cast<uint16_t>(select(nan, (bits >> 16) | 0x40, rounded));
}

} // namespace ratrain::kernels::generators

#endif // RATRAIN_KERNELS_GENERATORS_ELEMENTTYPE_H
