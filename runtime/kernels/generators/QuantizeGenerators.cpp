//===- QuantizeGenerators.cpp - Block-wise quantization for communication -===//
//
// ZeRO++'s block-wise symmetric quantization (qwZ weights, qgZ gradients):
// a flat array of n values is cut into blocks of B consecutive elements (the
// last block may be short); block b gets one fp32 scale
//   scale_b = absmax_b * (1 / qmax),   qmax = 127 (int8) or 7 (int4),
// (the fp32 reciprocal of qmax, i.e. absmax_b / qmax within an ulp),
// and element i of block b the code q_i = round(x_i / scale_b) (to nearest,
// ties to even; 0 when scale_b = 0), clamped to [-qmax, qmax]. Decoding is
// q_i * scale_b, so |x_i - decoded| <= scale_b / 2.
//
// Codes are bytes: int8 codes are one two's-complement byte per element;
// int4 codes are packed two per byte, element 2j in the low nibble of byte j
// and element 2j + 1 in the high nibble (a missing last element is 0).
//
// Three pipelines, each with the code width (`bits`, 8 | 4) as a
// GeneratorParam and the block size as a runtime argument:
//   ratrain_quantize_blocks      x (f32 | bf16 | f16, `input`) -> codes, scales
//   ratrain_dequantize_blocks    codes, scales -> y (f32 | bf16 | f16,
//   `output`) ratrain_dequantize_accumulate codes, scales, acc -> acc + decoded
//   (fp32)
//
// All are memory-bound and scheduled like the other elementwise kernels:
// 16-lane vectors, chunks of elements handed to cores; the block absmax is a
// per-block reduction computed in parallel over blocks.
//
//===----------------------------------------------------------------------===//

#include "ElementType.h"
#include "Halide.h"

using namespace Halide;
using ratrain::kernels::generators::Elem;
using ratrain::kernels::generators::elemNames;
using ratrain::kernels::generators::narrow;
using ratrain::kernels::generators::widen;

namespace {

constexpr int kLanes = 16; // fp32 lanes of a zmm register

/// Rejects a code width other than 8 and 4 at generator time.
void checkBits(int bits) {
  _halide_user_assert(bits == 8 || bits == 4)
      << "bits must be 8 or 4, got " << bits << "\n";
}

/// The largest code magnitude of a code width.
float maxCode(int bits) { return bits == 4 ? 7.0f : 127.0f; }

/// The signed code of element i: a byte (int8) or a nibble of byte i / 2
/// (int4), sign-extended to int32.
Expr decodeCode(Func codes, Expr i, int bits) {
  if (bits == 8)
    return cast<int32_t>(reinterpret<int8_t>(codes(i)));
  Expr byte = cast<int32_t>(codes(i / 2));
  Expr nibble = select(i % 2 == 0, byte & 0xF, byte >> 4);
  return (nibble ^ 8) - 8;
}

void scheduleElements(Func f, Var i) {
  f.vectorize(i, kLanes, TailStrategy::GuardWithIf)
      .parallel(i, 1 << 14, TailStrategy::GuardWithIf);
}

/// x -> (codes, scales). codes has n (int8) or ceil(n / 2) (int4) bytes,
/// scales ceil(n / B) floats.
class QuantizeBlocks : public Generator<QuantizeBlocks> {
public:
  GeneratorParam<int> bits{"bits", 8}; // 8 | 4
  GeneratorParam<Elem> input{"input", Elem::F32, elemNames()};
  Input<Buffer<>> x{"x", 1};
  Input<int32_t> blockSize{"block_size"};
  Output<Buffer<float>> scales{"scales", 1};
  Output<Buffer<uint8_t>> codes{"codes", 1};

  void generate() {
    const int nbits = bits;
    checkBits(nbits);
    Var b("b"), i("i");
    Expr n = x.dim(0).extent();
    Expr B = max(blockSize, 1);
    Func value("value");
    value(i) = widen(x(clamp(i, 0, n - 1)), input);

    RDom r(0, B, "r");
    Expr idx = b * B + r;
    Func absmax("absmax");
    absmax(b) = 0.0f;
    absmax(b) = max(absmax(b), select(idx < n, abs(value(idx)), 0.0f));
    // Halide turns a division by a constant into a multiplication by its
    // reciprocal: spell that out (the reference and the docs say the same).
    scales(b) = absmax(b) * (1.0f / maxCode(nbits));

    // round(x / scale) in [-qmax, qmax]; 0 for an all-zero block.
    Func code("code");
    Expr s = scales(clamp(i / B, 0, (n - 1) / B));
    Expr q = select(s > 0.0f, round(value(i) / s), 0.0f);
    code(i) = cast<int32_t>(clamp(q, -maxCode(nbits), maxCode(nbits)));
    if (nbits == 8) {
      codes(i) = cast<uint8_t>(code(i) & 0xFF);
    } else {
      Expr lo = code(2 * i) & 0xF;
      Expr hi = select(2 * i + 1 < n, code(2 * i + 1) & 0xF, 0);
      codes(i) = cast<uint8_t>(lo | (hi << 4));
    }

    scales.parallel(b, 8, TailStrategy::GuardWithIf);
    absmax.compute_at(scales, b);
    absmax.update().atomic().vectorize(r, kLanes, TailStrategy::GuardWithIf);
    scheduleElements(codes, i);
  }
};

/// (codes, scales) -> y with y.extent = n elements; y is f32, or the uint16
/// bit patterns of bf16 / f16 (`output`, rounded to nearest even).
class DequantizeBlocks : public Generator<DequantizeBlocks> {
public:
  GeneratorParam<int> bits{"bits", 8};
  GeneratorParam<Elem> output{"output", Elem::F32, elemNames()};
  Input<Buffer<uint8_t>> codes{"codes", 1};
  Input<Buffer<float>> scales{"scales", 1};
  Input<int32_t> blockSize{"block_size"};
  Output<Buffer<>> y{"y", 1};

  void generate() {
    const int nbits = bits;
    checkBits(nbits);
    Var i("i");
    Expr B = max(blockSize, 1);
    Expr v = cast<float>(decodeCode(codes, i, nbits)) * scales(i / B);
    y(i) = narrow(v, output);
    scheduleElements(y, i);
  }
};

/// acc_out = acc_in + decoded (fp32); pass the same buffer as acc_in and
/// acc_out to accumulate in place.
class DequantizeAccumulate : public Generator<DequantizeAccumulate> {
public:
  GeneratorParam<int> bits{"bits", 8};
  Input<Buffer<uint8_t>> codes{"codes", 1};
  Input<Buffer<float>> scales{"scales", 1};
  Input<Buffer<float>> accIn{"acc_in", 1};
  Input<int32_t> blockSize{"block_size"};
  Output<Buffer<float>> accOut{"acc_out", 1};

  void generate() {
    const int nbits = bits;
    checkBits(nbits);
    Var i("i");
    Expr B = max(blockSize, 1);
    accOut(i) =
        accIn(i) + cast<float>(decodeCode(codes, i, nbits)) * scales(i / B);
    scheduleElements(accOut, i);
  }
};

} // namespace

HALIDE_REGISTER_GENERATOR(QuantizeBlocks, ratrain_quantize_blocks)
HALIDE_REGISTER_GENERATOR(DequantizeBlocks, ratrain_dequantize_blocks)
HALIDE_REGISTER_GENERATOR(DequantizeAccumulate, ratrain_dequantize_accumulate)
