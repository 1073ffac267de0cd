//===- PartitionGroupsE2E.cpp - Partition groups compose ------------------===//
//
// Run under mpirun with RATRAIN_LEVELS (or RATRAIN_RANKS_PER_NODE) emulating
// network levels (see CMakeLists.txt):
//   ratrain-partition-groups-e2e --pp P --dp D
// For every level L and every algorithm (MPI's own, ring, tree,
// hierarchical), native and with an int8 wire: an all-gather of this rank's
// shard (block partitionIndex() of a known vector) across level L and then
// inside it re-assembles the whole vector, and a reduce-scatter of every
// rank's vector inside level L and then across it leaves block
// partitionIndex() of the sum (docs/runtime.md, "Partition groups"). The
// inside and across groups of a level multiply to the Data group. Every
// failed check is fatal.
//
//===----------------------------------------------------------------------===//

#include "E2ECommon.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace ratrain::rt;
using namespace ratrain::rt::e2e;

namespace {

/// Element i of the whole vector (small integers: every sum is exact).
float element(uint64_t i) { return float(int(i % 13) - 6); }
/// Element i of data rank r's gradient.
float contribution(int r, uint64_t i) { return float((r + 1) * int(i % 5)); }

void runPartitions(Runtime &rt) {
  const int dp = rt.groupSize(Group::Data);
  const int shard = rt.partitionIndex();
  const uint64_t block = 512; // Elements of one shard: 2 quantization blocks.
  const uint64_t n = block * uint64_t(dp);
  Arena &ddr = rt.ddr();
  Buffer mine = ddr.buffer(0, block * 4);
  Buffer secondary = ddr.buffer(block * 4, n * 4);
  Buffer full = ddr.buffer((block + n) * 4, n * 4);
  Buffer gradient = ddr.buffer((block + 2 * n) * 4, n * 4);

  // The shard indices are a permutation of the dp indices.
  std::vector<double> all = rt.allGatherDoubles(double(shard));
  std::vector<bool> seen(size_t(dp), false);
  for (int r = 0; r < rt.worldSize(); ++r)
    if (rt.layout().stageOf(r) == rt.stage()) {
      int index = int(all[size_t(r)]);
      CHECK(index >= 0 && index < dp && !seen[size_t(index)],
            "rank {0} has partition index {1} (dp {2})", r, index, dp);
      seen[size_t(index)] = true;
    }

  for (int level = 0; level < rt.numLevels(); ++level) {
    Group inside = dataInsideGroup(level), across = dataAcrossGroup(level);
    const int g = rt.groupSize(inside), a = rt.groupSize(across);
    CHECK(g * a == dp, "level {0}: {1} inside x {2} across != dp {3}", level, g,
          a, dp);
    for (WireType wire : {WireType::Native, WireType::Int8})
      for (CollectiveAlgorithm algorithm :
           {CollectiveAlgorithm::Auto, CollectiveAlgorithm::Ring,
            CollectiveAlgorithm::Tree, CollectiveAlgorithm::Hierarchical}) {
        // Weights: across, then inside.
        for (uint64_t i = 0; i < block; ++i)
          mine.as<float>()[i] = element(uint64_t(shard) * block + i);
        Buffer part = secondary.slice(0, block * uint64_t(a) * 4);
        rt.wait(
            rt.allGather(across, mine, part, ElemType::F32, algorithm, wire));
        rt.wait(
            rt.allGather(inside, part, full, ElemType::F32, algorithm, wire));
        // int8 with a scale per 256 elements of |x| <= 6: error <= 6/254.
        double bound = wire == WireType::Native ? 0 : 6.0 / 254 + 1e-6;
        for (uint64_t i = 0; i < n; ++i)
          CHECK(std::fabs(full.as<float>()[i] - element(i)) <= bound,
                "level {0} {1} {2}: all-gather element {3} is {4}, want {5}",
                level, stringifyCollectiveAlgorithm(algorithm), int(wire), i,
                full.as<float>()[i], element(i));
        // Gradients: inside, then across.
        for (uint64_t i = 0; i < n; ++i)
          gradient.as<float>()[i] = contribution(rt.dpIndex(), i);
        rt.wait(rt.reduceScatter(inside, gradient, part, ElemType::F32,
                                 ReduceOp::Sum, algorithm, wire));
        rt.wait(rt.reduceScatter(across, part, mine, ElemType::F32,
                                 ReduceOp::Sum, algorithm, wire));
        const double members = double(dp) * (dp + 1) / 2;
        // int4 / int8 partial sums: a relative bound per element.
        double slack = wire == WireType::Native ? 0 : 0.05;
        for (uint64_t i = 0; i < block; ++i) {
          uint64_t at = uint64_t(shard) * block + i;
          double want = members * double(at % 5);
          CHECK(std::fabs(mine.as<float>()[i] - want) <=
                    slack * (std::fabs(want) + members * 4),
                "level {0} {1} {2}: reduce-scatter element {3} is {4}, want "
                "{5}",
                level, stringifyCollectiveAlgorithm(algorithm), int(wire), at,
                mine.as<float>()[i], want);
        }
      }
    if (rt.rank() == 0)
      std::printf("partition groups: level %d: %d inside x %d across, every "
                  "algorithm composes\n",
                  level, g, a);
  }
}

} // namespace

int main(int argc, char **argv) {
  Dims dims = parseDims(argc, argv, 1, "--pp P --dp D");
  RuntimeOptions options;
  options.pp = dims.pp;
  options.dp = dims.dp;
  options.ddrBytes = 1 << 20;
  options.gsmBytes = 4 << 10;
  options.amBytes = 4 << 10;
  options.partitionedShards = true;
  Runtime rt(argc, argv, options);
  CHECK(rt.shardIndex() == rt.partitionIndex(), "shard index {0} != {1}",
        rt.shardIndex(), rt.partitionIndex());
  runPartitions(rt);
  return 0;
}
