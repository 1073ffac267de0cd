//===- CollectiveLevelsE2E.cpp - Runtime traffic per level vs the model ---===//
//
// Run under mpirun with RATRAIN_RANKS_PER_NODE emulating nodes (see
// CMakeLists.txt):
//   ratrain-collective-levels-e2e --pp P --dp D
// On the Data group it runs every collective the mt3k dialect names that the
// simulator models (all-reduce in and out of place, reduce-scatter,
// all-gather; f32 and bf16) flat (ring) and hierarchical, checks the values
// against the flat definition, and compares the bytes the runtime counted per
// link level with the simulator's planCollective (the per-level traffic the
// cost model and the simulator charge). Then several hierarchical
// collectives of every kind in flight at once. Every failed check is fatal.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Simulator/Simulator.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Half.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ratrain::rt;

namespace {

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      fatal(llvm::formatv("check failed: {0}: {1}", #cond,                     \
                          llvm::formatv(__VA_ARGS__).str()));                  \
  } while (0)

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

/// The simulator's bytes per link level for `kind` of an n-byte buffer on the
/// Data group.
std::pair<double, double> modelBytes(Runtime &rt, CollectiveKind kind,
                                     uint64_t n, bool hierarchical) {
  ratrain::sim::CollectiveSpec spec;
  spec.kind = modelKind(kind);
  spec.bytes = int64_t(n);
  spec.groupSize = rt.groupSize(Group::Data);
  spec.membersPerNode = rt.groupSize(Group::DataNodeLocal);
  spec.algorithm = hierarchical ? ratrain::CollectiveAlgorithm::Hierarchical
                                : ratrain::CollectiveAlgorithm::Ring;
  double intra = 0, inter = 0;
  for (const ratrain::sim::CollectiveStep &step :
       ratrain::sim::planCollective(spec))
    (step.level == 0 ? intra : inter) += step.bytes;
  return {intra, inter};
}

/// Compares the counters (reset before the collective) with the model and
/// prints both on Data rank 0 of stage 0.
void compareCounters(Runtime &rt, CollectiveKind kind, uint64_t n,
                     bool hierarchical, const char *label) {
  const CollectiveCounters &counters = rt.collectiveCounters();
  // Where the Data group lies in one node, or one member per node, the
  // hierarchical algorithm is the flat one (the model's as well).
  int perNode = rt.groupSize(Group::DataNodeLocal);
  bool ranHierarchical =
      hierarchical && perNode > 1 && perNode < rt.groupSize(Group::Data);
  uint64_t intra = counters.get(kind, ranHierarchical, LinkLevel::IntraNode);
  uint64_t inter = counters.get(kind, ranHierarchical, LinkLevel::InterNode);
  auto [wantIntra, wantInter] = modelBytes(rt, kind, n, hierarchical);
  // Nothing is counted under the other execution or another kind.
  uint64_t total = 0;
  for (auto &perKind : counters.bytes)
    for (auto &perExecution : perKind)
      for (uint64_t bytes : perExecution)
        total += bytes;
  if (rt.rank() == 0)
    std::printf("levels: %-14s %-12s %-5s n=%-6llu k=%d c=%d  runtime "
                "intra %llu inter %llu  model intra %.0f inter %.0f\n",
                kindName(kind), hierarchical ? "hierarchical" : "ring", label,
                (unsigned long long)n, rt.groupSize(Group::Data),
                rt.groupSize(Group::DataNodeLocal), (unsigned long long)intra,
                (unsigned long long)inter, wantIntra, wantInter);
  CHECK(double(intra) == wantIntra && double(inter) == wantInter,
        "{0} ({1}, {2}) of {3} bytes: the runtime counted intra {4} inter {5}, "
        "the model {6} and {7}",
        kindName(kind), hierarchical ? "hierarchical" : "ring", label, n, intra,
        inter, wantIntra, wantInter);
  CHECK(total == intra + inter, "{0}: bytes counted elsewhere ({1} of {2})",
        kindName(kind), total - intra - inter, total);
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

  for (bool hierarchical : {false, true}) {
    CollectiveAlgorithm algorithm = hierarchical
                                        ? CollectiveAlgorithm::Hierarchical
                                        : CollectiveAlgorithm::Ring;
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
      compareCounters(rt, CollectiveKind::AllReduce, n * 4, hierarchical,
                      inPlace ? "f32 in place" : "f32");
    }
    // All-reduce average, bf16.
    for (uint64_t i = 0; i < n; ++i)
      src.as<uint16_t>()[i] = floatToBF16(float(k) * value(me, i));
    rt.resetCollectiveCounters();
    rt.wait(rt.allReduce(Group::Data, src.slice(0, n * 2), dst.slice(0, n * 2),
                         ElemType::BF16, ReduceOp::Avg, algorithm));
    for (uint64_t i = 0; i < n; ++i)
      CHECK(bf16ToFloat(dst.as<uint16_t>()[i]) == memberSum * float(i % 7),
            "bf16 avg all-reduce ({0}) element {1}: {2}", int(algorithm), i,
            bf16ToFloat(dst.as<uint16_t>()[i]));
    compareCounters(rt, CollectiveKind::AllReduce, n * 2, hierarchical, "bf16");

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
    compareCounters(rt, CollectiveKind::ReduceScatter, n * 4, hierarchical,
                    "f32");

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
    compareCounters(rt, CollectiveKind::AllGather, n * 4, hierarchical,
                    "bytes");
  }

  // Hierarchical collectives of every kind in flight together (their later
  // phases share the private communicators), with flat ones in between,
  // waited in reverse order.
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
    CollectiveAlgorithm algorithm =
        r % 2 ? CollectiveAlgorithm::Ring : CollectiveAlgorithm::Hierarchical;
    tokens.push_back(rt.allReduce(Group::Data, arBuf, arBuf, ElemType::F32,
                                  ReduceOp::Sum, algorithm));
    tokens.push_back(rt.reduceScatter(Group::Data, rsIn, rsOut, ElemType::F32,
                                      ReduceOp::Sum,
                                      CollectiveAlgorithm::Hierarchical));
    tokens.push_back(rt.allGather(Group::Data, agIn, agOut,
                                  CollectiveAlgorithm::Hierarchical));
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

} // namespace

int main(int argc, char **argv) {
  RuntimeOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--pp")
      options.pp = value;
    else if (flag == "--dp")
      options.dp = value;
    else
      fatal("unknown flag " + flag + " (usage: --pp P --dp D)");
  }
  options.ddrBytes = 1 << 20;
  options.gsmBytes = 4 << 10;
  options.amBytes = 4 << 10;
  Runtime rt(argc, argv, options);
  runLevels(rt);
  return 0;
}
