//===- QuantizedCommE2E.cpp - Quantized all-gather / reduce-scatter -------===//
//
// Run under mpirun (see CMakeLists.txt), optionally with
// RATRAIN_RANKS_PER_NODE emulating nodes and RATRAIN_QUANT_BLOCK:
//   ratrain-quantized-comm-e2e --pp P --dp D
// On the Data group, for int8 and int4 wires, flat and hierarchical:
//  - qwZ all-gather (f32 and bf16): every element within half a
//    quantization step (scale / 2, the scale computed here from the known
//    inputs) of the exact value;
//  - qgZ reduce-scatter (f32 and bf16, sum and avg): within the error bound
//    of the levels the runtime runs (per level and contributor, half the
//    scale of the block holding the element, derived from the known inputs
//    and the partial sums), zeros exactly zero;
//  - the wire bytes counted per level equal the formula from the sizes, the
//    block size and the code width, and are below the native collective's;
//  - several quantized collectives in flight with native ones.
// Every failed check is fatal.
//
//===----------------------------------------------------------------------===//

#include "E2ECommon.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Half.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ratrain::rt;
using namespace ratrain::rt::e2e;

namespace {

float qmax(WireType wire) { return wire == WireType::Int8 ? 127.0f : 7.0f; }

/// Input element o of block d on rank r: magnitudes vary per quantization
/// window; window 1 of block 0 is zero on every rank.
float inputValue(int r, int d, uint64_t o, uint64_t block) {
  uint64_t w = o / block;
  if (d == 0 && w == 1)
    return 0.0f;
  uint64_t h = (uint64_t(r) * 7919u + uint64_t(d) * 104729u + o * 31u) % 2001u;
  float mag = 0.5f + float((uint64_t(d) * 3 + w + uint64_t(r)) % 5);
  return (float(h) - 1000.0f) / 1000.0f * mag;
}

/// The levels the runtime runs a collective on the Data group over
/// (innermost first, levels of one member left out).
std::vector<int> levelsOf(Runtime &rt, bool hierarchical) {
  int c = rt.groupSize(Group::DataNodeLocal);
  int g = rt.groupSize(Group::DataCrossNode);
  std::vector<int> sizes;
  if (hierarchical && c > 1 && g > 1)
    return {c, g};
  if (rt.groupSize(Group::Data) > 1)
    sizes.push_back(rt.groupSize(Group::Data));
  return sizes;
}

uint64_t payloadBytes(WireType wire, uint64_t n, uint64_t block) {
  uint64_t codes = wire == WireType::Int8 ? n : (n + 1) / 2;
  return (n + block - 1) / block * 4 + codes;
}

/// Expected wire bytes per level: an all-gather sends, at level l (outermost
/// first), its k_l - 1 peers the payloads of prod_{j > l} k_j blocks; a
/// reduce-scatter sends, at level l, k_l - 1 chunks of m prod_{j > l} k_j
/// elements.
std::vector<uint64_t> expectedWire(CollectiveKind kind, WireType wire,
                                   const std::vector<int> &sizes, uint64_t m,
                                   uint64_t block) {
  std::vector<uint64_t> bytes(sizes.size());
  for (size_t l = 0; l < sizes.size(); ++l) {
    uint64_t outer = 1;
    for (size_t j = l + 1; j < sizes.size(); ++j)
      outer *= uint64_t(sizes[j]);
    uint64_t peers = uint64_t(sizes[l] - 1);
    bytes[l] = kind == CollectiveKind::AllGather
                   ? peers * outer * payloadBytes(wire, m, block)
                   : peers * payloadBytes(wire, m * outer, block);
  }
  return bytes;
}

void checkWireCounters(Runtime &rt, CollectiveKind kind, WireType wire,
                       const std::vector<int> &sizes, uint64_t m,
                       uint64_t block, const char *label) {
  std::vector<uint64_t> phases = expectedWire(kind, wire, sizes, m, block);
  // Phases count at their network level: a hierarchical collective's phase
  // l at level l, a flat one at the outermost level the group spans.
  std::vector<uint64_t> want(kMaxWireLevels, 0);
  if (sizes.size() == 1)
    want[unsigned(rt.groupOuterLevel(Group::Data))] = phases[0];
  else
    for (size_t l = 0; l < phases.size(); ++l)
      want[l] = phases[l];
  const WireCounters &got = rt.quantizedCounters();
  for (unsigned l = 0; l < kMaxWireLevels; ++l) {
    uint64_t expected = want[l];
    CHECK(got.get(kind, wire, l) == expected,
          "{0}: level {1} sent {2} B, want {3}", label, l,
          got.get(kind, wire, l), expected);
  }
  // Native counters untouched by quantized collectives.
  const CollectiveCounters &native = rt.collectiveCounters();
  for (unsigned a = 0; a < kNumAlgorithms; ++a)
    for (unsigned level = 0; level < kMaxLevels; ++level)
      CHECK(native.bytes[unsigned(kind)][a][level] == 0 &&
                native.sent[unsigned(kind)][a][level] == 0,
            "{0}: native counters changed", label);
}

/// Absmax of values(p) for p in the quantization block of position `pos` of
/// a chunk of n positions.
template <typename F>
float blockAbsmax(uint64_t pos, uint64_t n, uint64_t block, F values) {
  float absmax = 0.0f;
  uint64_t lo = pos / block * block, hi = std::min(lo + block, n);
  for (uint64_t p = lo; p < hi; ++p)
    absmax = std::max(absmax, std::fabs(values(p)));
  return absmax;
}

float toFloat(ElemType type, const void *data, uint64_t i) {
  if (type == ElemType::F32)
    return static_cast<const float *>(data)[i];
  return bf16ToFloat(static_cast<const uint16_t *>(data)[i]);
}

void fill(ElemType type, void *data, uint64_t i, float v) {
  if (type == ElemType::F32)
    static_cast<float *>(data)[i] = v;
  else
    static_cast<uint16_t *>(data)[i] = floatToBF16(v);
}

/// The input as the collective sees it (rounded to bf16 for bf16 buffers).
float seen(ElemType type, float v) {
  return type == ElemType::F32 ? v : bf16ToFloat(floatToBF16(v));
}

struct Setup {
  Runtime &rt;
  int k = 1;      ///< Data group size
  int me = 0;     ///< Data rank
  uint64_t block; ///< RATRAIN_QUANT_BLOCK or 256
  uint64_t offset = 0;
};

void runAllGather(Setup &s, WireType wire, ElemType type, bool hierarchical) {
  Runtime &rt = s.rt;
  // Two full blocks and a short one.
  uint64_t m = 2 * s.block + s.block / 2 + 1;
  unsigned eb = getElemBytes(type);
  Buffer send = rt.ddr().buffer(0, m * eb);
  Buffer recv = rt.ddr().buffer(1 << 20, uint64_t(s.k) * m * eb);
  for (uint64_t o = 0; o < m; ++o)
    fill(type, send.data, o, inputValue(0, s.me, o, s.block));
  rt.resetCollectiveCounters();
  rt.wait(rt.allGather(Group::Data, send, recv, type,
                       hierarchical ? CollectiveAlgorithm::Hierarchical
                                    : CollectiveAlgorithm::Auto,
                       wire));
  std::string label = llvm::formatv(
      "all-gather {0} {1}{2}", stringifyWireType(wire), stringifyElemType(type),
      hierarchical ? " hierarchical" : "");
  for (int d = 0; d < s.k; ++d) {
    auto x = [&](uint64_t o) {
      return seen(type, inputValue(0, d, o, s.block));
    };
    for (uint64_t o = 0; o < m; ++o) {
      float scale = blockAbsmax(o, m, s.block, x) * (1.0f / qmax(wire));
      float got = toFloat(type, recv.data, uint64_t(d) * m + o);
      // Half a quantization step, plus the fp32 rounding of code * scale
      // (an ulp of the value).
      float bound = scale * 0.5f + std::fabs(x(o)) * 0x1p-23f;
      if (type != ElemType::F32) // rounding of the decoded value to bf16
        bound += std::fabs(x(o)) * 0x1p-8f + scale * 0x1p-8f;
      CHECK(std::fabs(got - x(o)) <= bound,
            "{0}: block {1} element {2}: got {3:e}, exact {4:e}, bound {5:e}",
            label, d, o, got, x(o), bound);
      if (x(o) == 0.0f)
        CHECK(got == 0.0f, "{0}: zero became {1}", label, got);
    }
  }
  checkWireCounters(rt, CollectiveKind::AllGather, wire,
                    levelsOf(rt, hierarchical), m, s.block, label.c_str());
}

/// The error bounds of this rank's reduce-scatter result (block me of every
/// rank's input, m elements per block) over `levels`, per element.
std::vector<float> reduceScatterBounds(Setup &s, ElemType type, WireType wire,
                                       const std::vector<int> &levels,
                                       uint64_t m) {
  float q = qmax(wire);
  auto x = [&](int r, int d, uint64_t i) {
    return seen(type, inputValue(r, d, i, s.block));
  };
  std::vector<float> bound(m, 0.0f);
  if (levels.size() <= 1) {
    // One all-to-all: every contributor's block `me`, quantized alone.
    for (int r = 0; r < s.k; ++r) {
      std::vector<float> values(m);
      for (uint64_t i = 0; i < m; ++i)
        values[i] = x(r, s.me, i);
      for (uint64_t o = 0; o < m; ++o)
        bound[o] +=
            blockAbsmax(o, m, s.block, [&](uint64_t p) { return values[p]; }) /
            q * 0.5f;
    }
    return bound;
  }
  // Two levels, c members per node, G nodes; Data rank = g * c + l.
  int c = levels[0], G = levels[1];
  int l = s.me % c;
  uint64_t chunk = uint64_t(G) * m;
  for (int node = 0; node < G; ++node) {
    // Level 0: member r of the node quantizes its chunk for local index l,
    // the blocks g * c + l side by side (G m positions); e0[i] bounds the
    // error of the node's partial sum at element i of block me.
    std::vector<float> e0(m, 0.0f), partial(m, 0.0f);
    for (int lr = 0; lr < c; ++lr) {
      int r = node * c + lr;
      std::vector<float> values(chunk);
      for (uint64_t p = 0; p < chunk; ++p)
        values[p] = x(r, int(p / m) * c + l, p % m);
      uint64_t at = uint64_t(s.me / c) * m;
      for (uint64_t i = 0; i < m; ++i) {
        e0[i] += blockAbsmax(at + i, chunk, s.block,
                             [&](uint64_t p) { return values[p]; }) /
                 q * 0.5f;
        partial[i] += values[at + i];
      }
    }
    // Level 1: the node's partial sums of block me, quantized on their own;
    // their absmax is at most the exact one plus the level-0 error.
    std::vector<float> worst(m);
    for (uint64_t i = 0; i < m; ++i)
      worst[i] = std::fabs(partial[i]) + e0[i];
    for (uint64_t o = 0; o < m; ++o)
      bound[o] += e0[o] + blockAbsmax(o, m, s.block,
                                      [&](uint64_t p) { return worst[p]; }) /
                              q * 0.5f;
  }
  return bound;
}

void runReduceScatter(Setup &s, WireType wire, ElemType type, ReduceOp op,
                      bool hierarchical, uint64_t m) {
  Runtime &rt = s.rt;
  unsigned eb = getElemBytes(type);
  Buffer send = rt.ddr().buffer(0, uint64_t(s.k) * m * eb);
  Buffer recv = rt.ddr().buffer(1 << 20, m * eb);
  for (int d = 0; d < s.k; ++d)
    for (uint64_t o = 0; o < m; ++o)
      fill(type, send.data, uint64_t(d) * m + o,
           inputValue(s.me, d, o, s.block));
  rt.resetCollectiveCounters();
  rt.wait(rt.reduceScatter(Group::Data, send, recv, type, op,
                           hierarchical ? CollectiveAlgorithm::Hierarchical
                                        : CollectiveAlgorithm::Auto,
                           wire));
  std::string label = llvm::formatv(
      "reduce-scatter {0} {1} {2} m={3}{4}", stringifyWireType(wire),
      stringifyElemType(type), stringifyReduceOp(op), m,
      hierarchical ? " hierarchical" : "");
  std::vector<int> levels = levelsOf(rt, hierarchical);
  float divide = op == ReduceOp::Avg ? float(s.k) : 1.0f;
  std::vector<float> bounds = reduceScatterBounds(s, type, wire, levels, m);
  for (uint64_t o = 0; o < m; ++o) {
    float exact = 0.0f, magnitude = 0.0f;
    for (int r = 0; r < s.k; ++r) {
      float v = seen(type, inputValue(r, s.me, o, s.block));
      exact += v;
      magnitude += std::fabs(v);
    }
    float bound = bounds[o];
    // fp32 summation and the division; bf16 rounding of the result.
    bound = (bound + 1e-6f * magnitude * float(s.k)) / divide;
    float got = toFloat(type, recv.data, o);
    if (type != ElemType::F32)
      bound += (std::fabs(exact) / divide + bound) * 0x1p-8f;
    CHECK(std::fabs(got - exact / divide) <= bound,
          "{0}: element {1}: got {2}, exact {3}, bound {4}", label, o, got,
          exact / divide, bound);
    if (s.me == 0 && o / s.block == 1)
      CHECK(got == 0.0f, "{0}: zero became {1} at {2}", label, got, o);
  }
  checkWireCounters(rt, CollectiveKind::ReduceScatter, wire, levels, m, s.block,
                    label.c_str());
}

/// The quantized collectives send fewer bytes per level than the native
/// ones (f32).
void checkShrink(Setup &s, bool hierarchical) {
  Runtime &rt = s.rt;
  uint64_t m = 4 * s.block;
  CollectiveAlgorithm algorithm = hierarchical
                                      ? CollectiveAlgorithm::Hierarchical
                                      : CollectiveAlgorithm::Auto;
  Buffer a = rt.ddr().buffer(0, uint64_t(s.k) * m * 4);
  Buffer b = rt.ddr().buffer(1 << 20, m * 4);
  rt.resetCollectiveCounters();
  rt.wait(rt.reduceScatter(Group::Data, a, b, ElemType::F32, ReduceOp::Sum,
                           algorithm));
  CollectiveCounters native = rt.collectiveCounters();
  uint64_t nativeTotal = 0;
  for (unsigned a = 0; a < kNumAlgorithms; ++a)
    for (unsigned l = 0; l < kMaxLevels; ++l)
      nativeTotal += native.sent[unsigned(CollectiveKind::ReduceScatter)][a][l];
  for (WireType wire : {WireType::Int8, WireType::Int4}) {
    rt.resetCollectiveCounters();
    rt.wait(rt.reduceScatter(Group::Data, a, b, ElemType::F32, ReduceOp::Sum,
                             algorithm, wire));
    const WireCounters &q = rt.quantizedCounters();
    uint64_t quantTotal = 0;
    for (unsigned l = 0; l < kMaxWireLevels; ++l)
      quantTotal += q.get(CollectiveKind::ReduceScatter, wire, l);
    // int8 codes + fp32 scales: just over a quarter of fp32; int4 an eighth.
    double ratio = double(quantTotal) / double(nativeTotal);
    double want =
        (wire == WireType::Int8 ? 0.25 : 0.125) + 1.0 / double(s.block);
    CHECK(ratio <= want + 1e-9,
          "{0} reduce-scatter sent {1} of the native bytes, want <= {2}",
          stringifyWireType(wire), ratio, want);
  }
}

/// Quantized collectives in flight together with native ones, all waited
/// for at the end; values checked against the same collectives run alone.
void runOverlapped(Setup &s, bool hierarchical) {
  Runtime &rt = s.rt;
  uint64_t m = 2 * s.block;
  CollectiveAlgorithm algorithm = hierarchical
                                      ? CollectiveAlgorithm::Hierarchical
                                      : CollectiveAlgorithm::Auto;
  uint64_t base = 1 << 21;
  auto buf = [&](uint64_t index, uint64_t bytes) {
    return rt.ddr().buffer(base + index * (256 << 10), bytes);
  };
  Buffer agSend = buf(0, m * 4), agRecv = buf(1, uint64_t(s.k) * m * 4);
  Buffer rsSend = buf(2, uint64_t(s.k) * m * 4), rsRecv = buf(3, m * 4);
  Buffer arData = buf(4, 4096 * 4);
  Buffer agRecv2 = buf(5, uint64_t(s.k) * m * 4), rsRecv2 = buf(6, m * 4);
  for (uint64_t o = 0; o < m; ++o)
    agSend.as<float>()[o] = inputValue(1, s.me, o, s.block);
  for (uint64_t i = 0; i < uint64_t(s.k) * m; ++i)
    rsSend.as<float>()[i] = inputValue(s.me, 1, i, s.block);
  for (int i = 0; i < 4096; ++i)
    arData.as<float>()[i] = float(s.me + i);
  // Alone first (the reference), then all in flight.
  rt.wait(rt.allGather(Group::Data, agSend, agRecv2, ElemType::F32, algorithm,
                       WireType::Int8));
  rt.wait(rt.reduceScatter(Group::Data, rsSend, rsRecv2, ElemType::F32,
                           ReduceOp::Sum, algorithm, WireType::Int4));
  Token t1 = rt.allGather(Group::Data, agSend, agRecv, ElemType::F32, algorithm,
                          WireType::Int8);
  Token t2 = rt.allReduce(Group::Data, arData, ElemType::F32);
  Token t3 = rt.reduceScatter(Group::Data, rsSend, rsRecv, ElemType::F32,
                              ReduceOp::Sum, algorithm, WireType::Int4);
  Token t4 = rt.allGather(Group::Data, agSend, agRecv2, ElemType::F32,
                          algorithm, WireType::Int8);
  rt.waitAll({t3, t2, t1, t4});
  for (uint64_t i = 0; i < uint64_t(s.k) * m; ++i)
    CHECK(agRecv.as<float>()[i] == agRecv2.as<float>()[i],
          "overlapped all-gather element {0}", i);
  for (uint64_t i = 0; i < m; ++i)
    CHECK(rsRecv.as<float>()[i] == rsRecv2.as<float>()[i],
          "overlapped reduce-scatter element {0}", i);
  float sumRanks = float(s.k * (s.k - 1) / 2);
  for (int i = 0; i < 4096; ++i)
    CHECK(arData.as<float>()[i] == sumRanks + float(s.k) * float(i),
          "overlapped all-reduce element {0}", i);
}

} // namespace

int main(int argc, char **argv) {
  Dims dims =
      parseDims(argc, argv, 1, "ratrain-quantized-comm-e2e [--pp P] [--dp D]");
  RuntimeOptions options;
  options.pp = dims.pp;
  options.dp = dims.dp;
  options.ddrBytes = 8 << 20;
  options.gsmBytes = 64 << 10;
  options.amBytes = 16 << 10;
  Runtime rt(argc, argv, options);
  Setup s{rt};
  s.k = rt.groupSize(Group::Data);
  s.me = rt.groupRank(Group::Data);
  s.block = rt.options().quantBlockSize;
  for (bool hierarchical : {false, true}) {
    for (WireType wire : {WireType::Int8, WireType::Int4}) {
      for (ElemType type : {ElemType::F32, ElemType::BF16}) {
        runAllGather(s, wire, type, hierarchical);
        // Blocks of whole quantization blocks, and a ragged size whose
        // level-0 chunks have blocks straddling two ranks' blocks.
        runReduceScatter(s, wire, type, ReduceOp::Sum, hierarchical,
                         3 * s.block);
        runReduceScatter(s, wire, type, ReduceOp::Avg, hierarchical,
                         s.block + s.block / 3 + 1);
      }
    }
    checkShrink(s, hierarchical);
    runOverlapped(s, hierarchical);
  }
  rt.wait(rt.barrier(Group::World));
  if (rt.rank() == 0)
    std::printf("e2e quantized comm pp=%d dp=%d levels %d: all checks "
                "passed\n",
                options.pp, options.dp, int(levelsOf(rt, true).size()));
  return 0;
}
