//===- CollectiveLevelsE2E.cpp - Runtime traffic per level vs the model ---===//
//
// Run under mpirun with RATRAIN_LEVELS (or RATRAIN_RANKS_PER_NODE) emulating
// network levels (see CMakeLists.txt):
//   ratrain-collective-levels-e2e --pp P --dp D
// On the Data group it runs every collective the mt3k dialect names that the
// simulator models (all-reduce in and out of place, f32 sum, bf16 average,
// f16 sum; reduce-scatter; all-gather) with every algorithm (ring, tree,
// hierarchical, and MPI's own), checks the values against the definition,
// and compares the bytes the runtime counted per network level with the
// simulator's planCollective on the same levels (acceptance: the runtime
// runs every algorithm as the model counts it). Ring and hierarchical:
// every rank's rounds and sent bytes equal the model's steps. Tree: the
// root's rounds equal the model's steps (its critical path), no rank counts
// more, and the Data group sends what it receives. Then collectives of every
// kind and algorithm in flight at once. With the quantization kernels, the
// quantized all-gather (qwZ) and reduce-scatter (qgZ) with int8 and int4
// wires under every algorithm: the wire bytes the runtime counted per level
// (Runtime::quantizedCounters) equal the model's quantized steps
// (planCollective with the spec's wire format and the runtime's block
// size), on ragged sizes whose last quantization block is short. Every
// failed check is fatal.
//
//===----------------------------------------------------------------------===//

#include "E2ECommon.h"
#include "ratrain/Simulator/Simulator.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Half.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ratrain::rt;
using namespace ratrain::rt::e2e;

namespace {

ratrain::CollectiveKind modelKind(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return ratrain::CollectiveKind::AllReduce;
  case CollectiveKind::ReduceScatter:
    return ratrain::CollectiveKind::ReduceScatter;
  case CollectiveKind::AllGather:
    return ratrain::CollectiveKind::AllGather;
  }
  return ratrain::CollectiveKind::AllReduce;
}

const char *kindName(CollectiveKind kind) {
  return ratrain::stringifyCollectiveKind(modelKind(kind)).data();
}

/// The algorithm a request runs as: hierarchical needs an even split of the
/// Data group over the levels.
CollectiveAlgorithm ranAs(Runtime &rt, CollectiveAlgorithm algorithm) {
  if (algorithm == CollectiveAlgorithm::Hierarchical && !rt.dataLevelsRegular())
    return CollectiveAlgorithm::Auto;
  return algorithm;
}

/// The simulator's bytes per level for `kind` of an n-byte buffer on the
/// Data group, on the runtime's levels, with `wire` (elements of
/// `elementBytes`, the runtime's quantization block). MPI's own collectives
/// are counted as rings.
std::array<double, kMaxLevels>
modelBytes(Runtime &rt, CollectiveKind kind, uint64_t n,
           CollectiveAlgorithm algorithm,
           ratrain::WireFormat wire = ratrain::WireFormat::Native,
           unsigned elementBytes = 4) {
  ratrain::sim::CollectiveSpec spec;
  spec.kind = modelKind(kind);
  spec.bytes = int64_t(n);
  spec.groupSize = rt.groupSize(Group::Data);
  spec.membersPerNode = rt.groupSize(Group::DataNodeLocal);
  for (int l = 0; l < rt.numLevels(); ++l)
    spec.membersPerLevel[size_t(l)] = rt.dataLevelMembers(l);
  switch (algorithm) {
  case CollectiveAlgorithm::Auto:
  case CollectiveAlgorithm::Ring:
    spec.algorithm = ratrain::CollectiveAlgorithm::Ring;
    break;
  case CollectiveAlgorithm::Tree:
    spec.algorithm = ratrain::CollectiveAlgorithm::Tree;
    break;
  case CollectiveAlgorithm::Hierarchical:
    spec.algorithm = ratrain::CollectiveAlgorithm::Hierarchical;
    break;
  }
  spec.wire = wire;
  spec.elementBytes = int64_t(elementBytes);
  spec.wireBlock = int64_t(rt.options().quantBlockSize);
  std::array<double, kMaxLevels> bytes{};
  for (const ratrain::sim::CollectiveStep &step :
       ratrain::sim::planCollective(spec))
    bytes[step.level] += step.bytes;
  return bytes;
}

/// Compares the counters (reset before the collective) with the model and
/// prints both on world rank 0.
void compareCounters(Runtime &rt, CollectiveKind kind, uint64_t n,
                     CollectiveAlgorithm requested, const char *label) {
  const CollectiveCounters counters = rt.collectiveCounters();
  CollectiveAlgorithm algorithm = ranAs(rt, requested);
  std::array<double, kMaxLevels> want = modelBytes(rt, kind, n, algorithm);
  // Nothing is counted under another kind or algorithm.
  uint64_t total = 0, here = 0, sent = 0;
  for (auto &perKind : counters.bytes)
    for (auto &perAlgorithm : perKind)
      for (uint64_t bytes : perAlgorithm)
        total += bytes;
  std::string got, model;
  bool tree = algorithm == CollectiveAlgorithm::Tree;
  bool root = rt.groupRank(Group::Data) == 0;
  for (int l = 0; l < rt.numLevels(); ++l) {
    uint64_t bytes = counters.get(kind, algorithm, unsigned(l));
    uint64_t out = counters.getSent(kind, algorithm, unsigned(l));
    here += bytes;
    sent += out;
    got += llvm::formatv(" {0}", bytes).str();
    model += llvm::formatv(" {0}", want[size_t(l)]).str();
    if (!tree || root)
      CHECK(double(bytes) == want[size_t(l)],
            "{0} ({1} as {2}, {3}) of {4} bytes at level {5}: the runtime "
            "counted {6}, the model {7}",
            kindName(kind), stringifyCollectiveAlgorithm(requested),
            stringifyCollectiveAlgorithm(algorithm), label, n, l, bytes,
            want[size_t(l)]);
    else
      CHECK(double(bytes) <= want[size_t(l)],
            "{0} (tree, {1}) at level {2}: a non-root rank counted {3}, more "
            "than the root's {4}",
            kindName(kind), label, l, bytes, want[size_t(l)]);
    if (!tree)
      CHECK(out == bytes, "{0} ({1}, {2}) at level {3}: sent {4}, rounds {5}",
            kindName(kind), stringifyCollectiveAlgorithm(algorithm), label, l,
            out, bytes);
  }
  if (rt.rank() == 0)
    std::printf("levels: %-14s %-12s %-13s n=%-6llu k=%d  runtime%s  "
                "model%s\n",
                kindName(kind), stringifyCollectiveAlgorithm(requested).data(),
                label, (unsigned long long)n, rt.groupSize(Group::Data),
                got.c_str(), model.c_str());
  CHECK(total == here, "{0} ({1}, {2}): bytes counted elsewhere ({3} of {4})",
        kindName(kind), stringifyCollectiveAlgorithm(algorithm), label,
        total - here, total);
  if (tree) {
    // A tree round either sends or receives: received = rounds - sent. The
    // stage's Data group sends what it receives.
    std::vector<double> all =
        rt.allGatherDoublePairs(double(sent), double(here - sent));
    double out = 0, in = 0;
    for (int r = 0; r < rt.worldSize(); ++r)
      if (rt.layout().stageOf(r) == rt.stage()) {
        out += all[size_t(2 * r)];
        in += all[size_t(2 * r + 1)];
      }
    CHECK(out == in,
          "{0} (tree, {1}): the Data group sent {2} bytes and "
          "received {3}",
          kindName(kind), label, out, in);
  }
}

/// A small integer that makes every sum exact in f32 and bf16.
float value(int member, uint64_t i) { return float((member + 1) * (i % 7)); }

void runLevels(Runtime &rt) {
  const int k = rt.groupSize(Group::Data);
  const int me = rt.groupRank(Group::Data);
  const float memberSum = float(k * (k + 1) / 2);
  Arena &ddr = rt.ddr();
  const uint64_t block = 96; // Elements per member: divisible by c.
  const uint64_t n = block * uint64_t(k);
  Buffer src = ddr.buffer(0, n * 4);
  Buffer dst = ddr.buffer(n * 4, n * 4);
  Buffer part = ddr.buffer(2 * n * 4, block * 4);

  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::Auto, CollectiveAlgorithm::Ring,
        CollectiveAlgorithm::Tree, CollectiveAlgorithm::Hierarchical}) {
    // All-reduce out of place and in place, f32.
    for (bool inPlace : {false, true}) {
      for (uint64_t i = 0; i < n; ++i)
        src.as<float>()[i] = value(me, i);
      Buffer out = inPlace ? src : dst;
      rt.resetCollectiveCounters();
      rt.wait(rt.allReduce(Group::Data, src, out, ElemType::F32, ReduceOp::Sum,
                           algorithm));
      for (uint64_t i = 0; i < n; ++i)
        CHECK(out.as<float>()[i] == memberSum * float(i % 7),
              "all-reduce ({0}, in place {1}) element {2}: {3}", int(algorithm),
              inPlace, i, out.as<float>()[i]);
      compareCounters(rt, CollectiveKind::AllReduce, n * 4, algorithm,
                      inPlace ? "f32 in place" : "f32");
    }
    // All-reduce average, bf16: every partial sum a multiple of k (i % 7)
    // of at most 8 bits, exact in bf16 for k <= 8.
    for (uint64_t i = 0; i < n; ++i)
      src.as<uint16_t>()[i] = floatToBF16(float(k) * float(i % 7));
    rt.resetCollectiveCounters();
    rt.wait(rt.allReduce(Group::Data, src.slice(0, n * 2), dst.slice(0, n * 2),
                         ElemType::BF16, ReduceOp::Avg, algorithm));
    for (uint64_t i = 0; i < n; ++i)
      CHECK(bf16ToFloat(dst.as<uint16_t>()[i]) == float(k) * float(i % 7),
            "bf16 avg all-reduce ({0}) element {1}: {2}", int(algorithm), i,
            bf16ToFloat(dst.as<uint16_t>()[i]));
    compareCounters(rt, CollectiveKind::AllReduce, n * 2, algorithm,
                    "bf16 avg");
    // All-reduce sum, f16.
    for (uint64_t i = 0; i < n; ++i)
      src.as<uint16_t>()[i] = floatToF16(value(me, i));
    rt.resetCollectiveCounters();
    rt.wait(rt.allReduce(Group::Data, src.slice(0, n * 2), dst.slice(0, n * 2),
                         ElemType::F16, ReduceOp::Sum, algorithm));
    for (uint64_t i = 0; i < n; ++i)
      CHECK(f16ToFloat(dst.as<uint16_t>()[i]) == memberSum * float(i % 7),
            "f16 all-reduce ({0}) element {1}: {2}", int(algorithm), i,
            f16ToFloat(dst.as<uint16_t>()[i]));
    compareCounters(rt, CollectiveKind::AllReduce, n * 2, algorithm, "f16");

    // Reduce-scatter: block r of the sum on Data rank r.
    for (uint64_t i = 0; i < n; ++i)
      src.as<float>()[i] = value(me, i) + float(i / block);
    rt.resetCollectiveCounters();
    rt.wait(rt.reduceScatter(Group::Data, src, part, ElemType::F32,
                             ReduceOp::Sum, algorithm));
    for (uint64_t i = 0; i < block; ++i) {
      uint64_t global = uint64_t(me) * block + i;
      float want = memberSum * float(global % 7) + float(k) * float(me);
      CHECK(part.as<float>()[i] == want,
            "reduce-scatter ({0}) element {1}: {2}, want {3}", int(algorithm),
            i, part.as<float>()[i], want);
    }
    compareCounters(rt, CollectiveKind::ReduceScatter, n * 4, algorithm, "f32");

    // Reduce-scatter average, f32, of blocks longer than the chunks in which
    // the last round reduces and divides (CommEngine::reduceAndAverage):
    // member r contributes k (r + 1) (i % 7), so the average is the exact
    // integer memberSum (i % 7).
    {
      const uint64_t longBlock = 5000; // one 4096-element chunk and a rest
      const uint64_t m = longBlock * uint64_t(k);
      Buffer in = ddr.buffer(64 << 10, m * 4);
      Buffer out = ddr.buffer((64 << 10) + m * 4, longBlock * 4);
      for (uint64_t i = 0; i < m; ++i)
        in.as<float>()[i] = float(k) * value(me, i);
      rt.resetCollectiveCounters();
      rt.wait(rt.reduceScatter(Group::Data, in, out, ElemType::F32,
                               ReduceOp::Avg, algorithm));
      for (uint64_t i = 0; i < longBlock; ++i) {
        uint64_t global = uint64_t(me) * longBlock + i;
        float want = memberSum * float(global % 7);
        CHECK(out.as<float>()[i] == want,
              "avg reduce-scatter ({0}) element {1}: {2}, want {3}",
              int(algorithm), i, out.as<float>()[i], want);
      }
      compareCounters(rt, CollectiveKind::ReduceScatter, m * 4, algorithm,
                      "f32 avg");
    }

    // All-gather: Data rank r's block at r.
    for (uint64_t i = 0; i < block; ++i)
      part.as<float>()[i] = float(me * 1000) + float(i);
    rt.resetCollectiveCounters();
    rt.wait(rt.allGather(Group::Data, part, dst, algorithm));
    for (uint64_t i = 0; i < n; ++i) {
      float want = float((i / block) * 1000 + i % block);
      CHECK(dst.as<float>()[i] == want,
            "all-gather ({0}) element {1}: {2}, want {3}", int(algorithm), i,
            dst.as<float>()[i], want);
    }
    compareCounters(rt, CollectiveKind::AllGather, n * 4, algorithm, "bytes");
  }

  // Collectives of every kind and algorithm in flight together (explicit
  // ones share the private communicators, told apart by their tags), waited
  // in reverse order.
  const int rounds = 4;
  const uint64_t stride = 4 * n + 4 * block;
  std::vector<Token> tokens;
  for (int r = 0; r < rounds; ++r) {
    uint64_t base = 3 * n * 4 + uint64_t(r) * stride * 4;
    Buffer arBuf = ddr.buffer(base, n * 4);
    Buffer rsIn = ddr.buffer(base + n * 4, n * 4);
    Buffer rsOut = ddr.buffer(base + 2 * n * 4, block * 4);
    Buffer agIn = ddr.buffer(base + 2 * n * 4 + block * 4, block * 4);
    Buffer agOut = ddr.buffer(base + 2 * n * 4 + 2 * block * 4, n * 4);
    for (uint64_t i = 0; i < n; ++i) {
      arBuf.as<float>()[i] = value(me, i) * float(r + 1);
      rsIn.as<float>()[i] = value(me, i) + float(r);
    }
    for (uint64_t i = 0; i < block; ++i)
      agIn.as<float>()[i] = float(me * 100 + r);
    const CollectiveAlgorithm algorithms[] = {
        CollectiveAlgorithm::Hierarchical, CollectiveAlgorithm::Ring,
        CollectiveAlgorithm::Tree, CollectiveAlgorithm::Auto};
    tokens.push_back(rt.allReduce(Group::Data, arBuf, arBuf, ElemType::F32,
                                  ReduceOp::Sum, algorithms[r % 4]));
    tokens.push_back(rt.reduceScatter(Group::Data, rsIn, rsOut, ElemType::F32,
                                      ReduceOp::Sum, algorithms[(r + 1) % 4]));
    tokens.push_back(
        rt.allGather(Group::Data, agIn, agOut, algorithms[(r + 2) % 4]));
  }
  for (auto it = tokens.rbegin(); it != tokens.rend(); ++it)
    rt.wait(*it);
  for (int r = 0; r < rounds; ++r) {
    uint64_t base = 3 * n * 4 + uint64_t(r) * stride * 4;
    const float *ar = ddr.get<float>(base, n);
    const float *rs = ddr.get<float>(base + 2 * n * 4, block);
    const float *ag = ddr.get<float>(base + 2 * n * 4 + 2 * block * 4, n);
    for (uint64_t i = 0; i < n; ++i) {
      CHECK(ar[i] == memberSum * float(i % 7) * float(r + 1),
            "round {0} all-reduce element {1}: {2}", r, i, ar[i]);
      CHECK(ag[i] == float(int(i / block) * 100 + r),
            "round {0} all-gather element {1}: {2}", r, i, ag[i]);
    }
    for (uint64_t i = 0; i < block; ++i) {
      uint64_t global = uint64_t(me) * block + i;
      CHECK(rs[i] == memberSum * float(global % 7) + float(k * r),
            "round {0} reduce-scatter element {1}: {2}", r, i, rs[i]);
    }
  }
}

#ifdef RATRAIN_LEVELS_E2E_QUANTIZED
ratrain::WireFormat modelWire(WireType wire) {
  return wire == WireType::Int8 ? ratrain::WireFormat::Int8
                                : ratrain::WireFormat::Int4;
}

/// Compares the quantized counters (reset before the collective) with the
/// model's quantized steps; the native counters stay zero.
void compareWire(Runtime &rt, CollectiveKind kind, WireType wire, uint64_t n,
                 ElemType type, CollectiveAlgorithm requested) {
  CollectiveAlgorithm algorithm = ranAs(rt, requested);
  std::array<double, kMaxLevels> want =
      modelBytes(rt, kind, n, algorithm, modelWire(wire), getElemBytes(type));
  const WireCounters counters = rt.quantizedCounters();
  std::string got, model;
  for (unsigned l = 0; l < kMaxLevels; ++l) {
    uint64_t bytes = counters.get(kind, wire, l);
    if (int(l) < rt.numLevels()) {
      got += llvm::formatv(" {0}", bytes).str();
      model += llvm::formatv(" {0}", want[l]).str();
    }
    CHECK(double(bytes) == want[l],
          "quantized {0} ({1} wire, {2} as {3}, {4}) of {5} bytes at level "
          "{6}: the runtime sent {7}, the model {8}",
          kindName(kind), stringifyWireType(wire),
          stringifyCollectiveAlgorithm(requested),
          stringifyCollectiveAlgorithm(algorithm), stringifyElemType(type), n,
          l, bytes, want[l]);
  }
  const CollectiveCounters native = rt.collectiveCounters();
  for (auto &perKind : native.bytes)
    for (auto &perAlgorithm : perKind)
      for (uint64_t bytes : perAlgorithm)
        CHECK(bytes == 0, "quantized {0}: native counters moved",
              kindName(kind));
  if (rt.rank() == 0)
    std::printf("wire:   %-14s %-4s %-12s %-4s n=%-6llu k=%d  runtime%s  "
                "model%s\n",
                kindName(kind), stringifyWireType(wire).data(),
                stringifyCollectiveAlgorithm(requested).data(),
                stringifyElemType(type).data(), (unsigned long long)n,
                rt.groupSize(Group::Data), got.c_str(), model.c_str());
}

/// Quantized all-gather and reduce-scatter of every algorithm and wire:
/// values near the exact ones (the error bounds are QuantizedCommE2E's
/// subject; here within a quantization step per contributor), wire bytes
/// per level equal to the model's.
void runQuantizedLevels(Runtime &rt) {
  const int k = rt.groupSize(Group::Data);
  const int me = rt.groupRank(Group::Data);
  Arena &ddr = rt.ddr();
  // Elements per member: not a multiple of the block (a short last block).
  const uint64_t count = rt.options().quantBlockSize + 37;
  const uint64_t n = count * uint64_t(k);
  Buffer whole = ddr.buffer(0, n * 4);
  Buffer shard = ddr.buffer(n * 4, count * 4);
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::Auto, CollectiveAlgorithm::Ring,
        CollectiveAlgorithm::Tree, CollectiveAlgorithm::Hierarchical}) {
    for (WireType wire : {WireType::Int8, WireType::Int4}) {
      const float qmax = wire == WireType::Int8 ? 127.0f : 7.0f;
      for (ElemType type : {ElemType::F32, ElemType::BF16}) {
        const unsigned eb = getElemBytes(type);
        auto put = [&](Buffer b, uint64_t i, float v) {
          if (type == ElemType::F32)
            b.as<float>()[i] = v;
          else
            b.as<uint16_t>()[i] = floatToBF16(v);
        };
        auto get = [&](Buffer b, uint64_t i) {
          return type == ElemType::F32 ? b.as<float>()[i]
                                       : bf16ToFloat(b.as<uint16_t>()[i]);
        };
        // All-gather: member r's shard holds (r + 1) (i % 7).
        for (uint64_t i = 0; i < count; ++i)
          put(shard, i, value(me, i));
        rt.resetCollectiveCounters();
        rt.wait(rt.allGather(Group::Data, shard.slice(0, count * eb),
                             whole.slice(0, n * eb), type, algorithm, wire));
        for (uint64_t i = 0; i < n; ++i) {
          float exact = value(int(i / count), i % count);
          float step = 6.0f * float(i / count + 1) / qmax;
          CHECK(std::fabs(get(whole, i) - exact) <= step,
                "quantized all-gather ({0}, {1}) element {2}: {3}, exact {4}",
                stringifyCollectiveAlgorithm(algorithm),
                stringifyWireType(wire), i, get(whole, i), exact);
        }
        compareWire(rt, CollectiveKind::AllGather, wire, n * eb, type,
                    algorithm);
        // Reduce-scatter: the sum of every member's (r + 1) (i % 7).
        for (uint64_t i = 0; i < n; ++i)
          put(whole, i, value(me, i));
        rt.resetCollectiveCounters();
        rt.wait(rt.reduceScatter(Group::Data, whole.slice(0, n * eb),
                                 shard.slice(0, count * eb), type,
                                 ReduceOp::Sum, algorithm, wire));
        const float memberSum = float(k * (k + 1) / 2);
        for (uint64_t i = 0; i < count; ++i) {
          uint64_t global = uint64_t(me) * count + i;
          float exact = memberSum * float(global % 7);
          // A quantization step of the largest partial sum per contributor.
          float bound = float(k) * memberSum * 6.0f / qmax + 0.01f * exact;
          CHECK(std::fabs(get(shard, i) - exact) <= bound,
                "quantized reduce-scatter ({0}, {1}) element {2}: {3}, exact "
                "{4}",
                stringifyCollectiveAlgorithm(algorithm),
                stringifyWireType(wire), i, get(shard, i), exact);
        }
        compareWire(rt, CollectiveKind::ReduceScatter, wire, n * eb, type,
                    algorithm);
      }
    }
  }
}
#endif // RATRAIN_LEVELS_E2E_QUANTIZED

} // namespace

int main(int argc, char **argv) {
  Dims dims = parseDims(argc, argv, 1, "--pp P --dp D");
  RuntimeOptions options;
  options.pp = dims.pp;
  options.dp = dims.dp;
  options.ddrBytes = 1 << 20;
  options.gsmBytes = 4 << 10;
  options.amBytes = 4 << 10;
  Runtime rt(argc, argv, options);
  runLevels(rt);
#ifdef RATRAIN_LEVELS_E2E_QUANTIZED
  runQuantizedLevels(rt);
#endif
  return 0;
}
